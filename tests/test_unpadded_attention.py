"""The unpadded encoder's attention in groups of rows of similar length, and its last layer run
at the positions the caller reads alone (a sentence head's first position, sequence labelling's
tagged ones; user_dir/models/fused_roberta_encoder.py), compute fairseq's RoBERTa: the same
logits and gradients for the same weights and batch (fp32, dropout off), on batches whose rows
fall into several groups, with padding inside a group and with padding that is not at a row's
end. Tolerances as tests/test_fused_encoder.py's."""

import copy

import pytest
import torch
import torch.nn.functional as F

from test_fused_encoder import assert_close_to_largest, forward_backward, tiny_roberta
from user_dir.models._real_tokens import GROUP_COST, RealTokens, length_groups
from user_dir.models.fused_roberta_encoder import use_fused_encoder

TOLERANCE = 1e-5
PAD = 1


def varied_batch(vocab=300):
    """16 rows of 3 to 62 real tokens (<s> first), right-padded; row 7 also has padding inside."""
    generator = torch.Generator().manual_seed(2)
    lengths = [62, 60, 3, 58, 45, 44, 12, 61, 7, 30, 11, 28, 5, 13, 43, 29]
    tokens = torch.randint(4, vocab, (len(lengths), 62), generator=generator)
    tokens[:, 0] = 0
    for row, length in enumerate(lengths):
        tokens[row, length:] = PAD
    tokens[7, 20:26] = PAD
    masked = (torch.rand(tokens.shape, generator=generator) < 0.3) & tokens.ne(PAD)
    return tokens, masked


def test_rows_are_cut_into_groups_of_similar_length_where_that_costs_less():
    assert length_groups([40, 40, 40, 40], 1600) == [4]  # one call, no padding
    assert length_groups([120, 118, 30, 29, 28, 5], 1600) == [2, 6]  # 5 pads to 30 for less
    assert length_groups([120, 118, 30, 29, 28, 5], 10**9) == [6]  # calls cost most
    tokens, _ = varied_batch()
    rows = RealTokens(tokens.eq(PAD), 64)
    assert GROUP_COST / 64 == 6400  # the tiny model's width: 80 tokens of scores a call
    assert [group[2] for group in rows.groups] == [4, 6, 6]
    assert any(slots is not None for *_, slots, _ in rows.groups)  # padding inside a group
    assert sum(group[2] for group in rows.groups) == len(tokens)
    assert rows.index.numel() == int(tokens.ne(PAD).sum())


def test_unpadded_groups_give_fairseq_s_logits_states_and_gradients():
    stock = tiny_roberta()
    unpadded = copy.deepcopy(stock)
    use_fused_encoder(unpadded, "unpadded")
    tokens, masked = varied_batch()
    loss, logits, states, grads = forward_backward(stock, tokens, masked)
    ours_loss, ours_logits, ours_states, ours_grads = forward_backward(unpadded, tokens, masked)
    assert ours_loss.item() == pytest.approx(loss.item(), rel=TOLERANCE)
    assert_close_to_largest(ours_logits, logits)
    not_padding = tokens.ne(PAD).T
    for ours_state, state in zip(ours_states, states):
        assert_close_to_largest(ours_state[not_padding], state[not_padding])
    largest_gradient = max(g.abs().max() for g in grads.values())
    for name, grad in grads.items():
        assert (ours_grads[name] - grad).abs().max() <= TOLERANCE * largest_gradient, name


def classify(model, tokens, labels, call="net_input"):
    """Sentence classification: its logits, the parameters' gradients, and the features the head
    read. ``call``: "net_input" as fairseq's sentence_prediction criterion calls the model (the
    sample's net_input as keywords), "positional" as a user's script does (the tokens first)."""
    read = []
    head = model.classification_heads["sentence"]
    hook = head.register_forward_pre_hook(lambda _module, inputs: read.append(inputs[0].detach()))
    model.zero_grad(set_to_none=True)
    if call == "net_input":
        net_input = {"src_tokens": tokens, "src_lengths": tokens.ne(PAD).sum(1)}
        logits, _ = model(**net_input, features_only=True, classification_head_name="sentence")
    else:
        logits, _ = model(tokens, features_only=True, classification_head_name="sentence")
    hook.remove()
    F.cross_entropy(logits, labels).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return logits, grads, read[0]


def assert_same_gradients(ours, grads):
    largest_gradient = max(g.abs().max() for g in grads.values())
    assert grads.keys() == ours.keys()
    for name, grad in grads.items():
        assert (ours[name] - grad).abs().max() <= TOLERANCE * largest_gradient, name


@pytest.mark.parametrize("layers, call", [(1, "net_input"), (2, "net_input"), (2, "positional")])
def test_a_sentence_head_reads_the_first_position_computed_alone_as_fairseq_computes_it(
    layers, call
):
    stock = tiny_roberta(encoder_layers=layers)
    stock.register_classification_head("sentence", num_classes=3)
    stock.eval()  # the head's dropout off, as the encoder's
    ours = copy.deepcopy(stock)
    use_fused_encoder(ours, "unpadded")
    tokens, _ = varied_batch()
    labels = torch.arange(len(tokens)) % 3
    logits, grads, stock_read = classify(stock, tokens, labels, call)
    ours_logits, ours_grads, ours_read = classify(ours, tokens, labels, call)
    assert stock_read[:, 1:][tokens[:, 1:].ne(PAD)].abs().sum() > 0
    assert ours_read[:, 1:].abs().sum() == 0  # the last layer ran at the first position alone
    assert_close_to_largest(ours_logits, logits)
    assert_same_gradients(ours_grads, grads)


def test_a_row_starting_with_padding_reads_what_it_read_before():
    """A left-padded row's first position is padding, whose features the unpadded route makes
    zeros, with or without the first position asked for alone."""
    model = tiny_roberta()
    model.register_classification_head("sentence", num_classes=3)
    model.eval()
    use_fused_encoder(model, "unpadded")
    tokens, _ = varied_batch()
    tokens[9] = torch.cat([tokens[9, 30:], tokens[9, :30]])  # 32 pads, then the row
    labels = torch.zeros(len(tokens), dtype=torch.long)
    logits, _, read = classify(model, tokens, labels)
    model.first_position_hook.remove()
    every_position, _, _ = classify(model, tokens, labels)
    assert read[9, 0].abs().sum() == 0
    assert_close_to_largest(logits, every_position)


def test_sequence_labelling_reads_its_tagged_positions_computed_alone_as_fairseq_computes_them():
    from user_dir.models.token_classification_head import (
        add_token_classification_head,
        token_classification_logits,
    )

    stock = tiny_roberta()
    add_token_classification_head(stock, "tags", 5)
    stock.eval()
    ours = copy.deepcopy(stock)
    use_fused_encoder(ours, "unpadded")
    tokens, tagged = varied_batch()  # a third of the real tokens tagged
    targets = tokens[tagged] % 5

    def tag(model):
        model.zero_grad(set_to_none=True)
        logits = token_classification_logits(model, "tags", tokens, tagged)
        F.cross_entropy(logits[tagged], targets).backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        return logits.detach(), grads

    logits, grads = tag(stock)
    ours_logits, ours_grads = tag(ours)
    assert_close_to_largest(ours_logits[tagged], logits[tagged])
    bias = ours.token_classification_heads["tags"].out_proj.bias
    assert torch.equal(ours_logits[~tagged], bias.detach().expand_as(ours_logits[~tagged]))
    assert_same_gradients(ours_grads, grads)
