"""The unpadded route's layout of a batch (user_dir/models/fused_roberta_encoder.py, ``unpadded``):
its real tokens as one N x C matrix for every per-token operation, and attention on the rows of
the batch sorted by length and cut into groups, each padded to its own longest row only; and the
positions a sentence head reads (sentence_heads_read_first_position).

Not registered itself (the leading underscore keeps user_dir/__init__.py from importing it as a
component).
"""

import torch
import torch.nn.functional as F
from fairseq.models.roberta.model import RobertaClassificationHead


def attend(qkv, keep, heads, dropout_p):
    """Attention of a g x L x 3C projection (queries, keys, values side by side) under ``keep``
    (None or the g x 1 x 1 x L mask of the keys to attend to): g x L x C."""
    batch, length, _ = qkv.shape
    q, k, v = qkv.view(batch, length, 3, heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
    attention = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=dropout_p)
    return attention.transpose(1, 2).reshape(batch, length, -1)


# What one more group costs RealTokens' attention, in squared row lengths x model width (a row of
# a group of longest row L costs L^2 x width): one scaled_dot_product_attention call forward and
# backward on the 2-core CPU took about as long as the attention of a 40-token row at width 256
# (roberta 4 x 256, 4 heads; the call's own cost does not grow with the width, the scores' does).
GROUP_COST = 40**2 * 256


def length_groups(lengths: list[int], group_cost: float) -> list[int]:
    """Where to cut rows sorted by length, longest first, into groups (the end of each) so that
    the attention of the groups, each padded to its longest row, costs least:
    sum over groups of group_cost + rows x longest^2 (group_cost: GROUP_COST / width)."""
    best, cut = [0], []  # best[i]: the least cost of the first i rows; cut[i - 1]: its last start
    for end in range(1, len(lengths) + 1):
        cost, start = min(
            (best[start] + group_cost + (end - start) * lengths[start] ** 2, start)
            for start in range(end)
        )
        best.append(cost)
        cut.append(start)
    ends, end = [], len(lengths)
    while end:
        ends.append(end)
        end = cut[end - 1]
    return ends[::-1]


class RealTokens:
    """Where a padded B x T batch's real tokens are, and the layout attention sees them in.

    ``gather`` takes their rows out of a B x T x C tensor as N x C, ``scatter`` puts N x C rows
    back, zeros at padding. The N rows are ordered row by row, the batch's rows sorted by length
    (longest first, stable), and those rows cut into groups (length_groups); ``attend`` runs
    attention group by group, each in its own g x L layout, L its longest row, where each row's
    real tokens come first (a row's tokens attend to the same tokens in the same order, so the
    result is the padded batch's). ``reading`` says which of the N rows are at given positions."""

    def __init__(self, padding: torch.Tensor, width: int):
        self.shape = (*padding.shape, width)
        batch, length = padding.shape
        real = ~padding
        counts = real.sum(1).tolist()
        order = sorted(range(batch), key=lambda row: -counts[row])
        rows = torch.tensor(order, device=padding.device)
        positions = rows[:, None] * length + torch.arange(length, device=padding.device)
        self.index = positions[real[rows]]
        lengths = [counts[row] for row in order]
        starts = [0]
        for count in lengths:
            starts.append(starts[-1] + count)
        self.groups = []  # (first token, end token, rows, longest, slots or None, keep or None)
        begin = 0
        for end in length_groups(lengths, GROUP_COST / width):
            group = lengths[begin:end]
            longest = group[0]
            slots = keep = None
            if group[-1] < longest:  # shorter rows: their tokens' slots and the keys to keep
                slots = torch.cat(
                    [row * longest + torch.arange(count) for row, count in enumerate(group)]
                ).to(padding.device)
                keep = (torch.arange(longest) < torch.tensor(group)[:, None]).to(padding.device)
                keep = keep[:, None, None, :]
            self.groups.append((starts[begin], starts[end], end - begin, longest, slots, keep))
            begin = end

    def gather(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(0, 1).index_select(0, self.index)

    def scatter(self, rows: torch.Tensor, read=None) -> torch.Tensor:
        """B x T x C of the N x C rows, or of the rows ``read`` (reading) alone: zeros elsewhere."""
        batch, length, _ = self.shape
        index = self.index if read is None else self.index.index_select(0, read)
        padded = rows.new_zeros(batch * length, rows.size(-1))
        return padded.index_copy(0, index, rows).view(batch, length, -1)

    def reading(self, positions: torch.Tensor) -> torch.Tensor:
        """Which of the N rows are at the B x T mask's positions (its padding ones are none)."""
        return positions.flatten().index_select(0, self.index).nonzero().squeeze(1)

    def attend(self, qkv, heads, dropout_p) -> torch.Tensor:
        """Attention of the N x 3C projection of the real tokens: N x C."""
        outputs = []
        for first, end, rows, longest, slots, keep in self.groups:
            part = qkv[first:end]
            if slots is not None:
                part = part.new_zeros(rows * longest, part.size(-1)).index_copy(0, slots, part)
            output = attend(part.view(rows, longest, -1), keep, heads, dropout_p).flatten(0, 1)
            outputs.append(output.index_select(0, slots) if slots is not None else output)
        return torch.cat(outputs) if len(outputs) > 1 else outputs[0]


def sentence_heads_read_first_position(model, args, kwargs):
    """The fused model's forward pre-hook: a call through a sentence classification head that
    reads the first position only (fairseq's RobertaClassificationHead) asks the encoder for that
    position's features only (``features_at``; fairseq's encoder takes and ignores it). The tokens
    come positionally or, as fairseq's criteria pass the sample's net_input, as ``src_tokens``."""
    name = kwargs.get("classification_head_name")
    if name is None or kwargs.get("return_all_hiddens"):
        return None
    if type(model.classification_heads[name]).forward is not RobertaClassificationHead.forward:
        return None
    src_tokens = args[0] if args else kwargs.get("src_tokens")
    if src_tokens is None:
        return None
    first = torch.zeros_like(src_tokens, dtype=torch.bool)
    first[:, 0] = True
    return args, {**kwargs, "features_at": first}
