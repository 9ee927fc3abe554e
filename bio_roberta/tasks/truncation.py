"""What happens to an input longer than the model's positions: its route (LongInputs: truncate,
pieces or windows; each kind's default is TaskKind.long_inputs in bio_roberta/tasks/kinds.py,
chosen by convert-task's --long-inputs), and the rules of each route.

Truncation: how an example of two texts is cut to the model's positions, a column of the kinds
table (``TaskKind.truncate``), applied by convert.py when the pair's BPE tokens exceed the budget
(the positions less the special tokens <s> a </s></s> b </s>). Each rule takes (first, second,
budget, example id) and returns the two token lists kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from bio_roberta_core.windows import WINDOWS


def truncate_longest_first(
    first: Sequence[int], second: Sequence[int], budget: int, example_id: str
) -> tuple[list[int], list[int]]:
    """Cut the longer text from its end until both fit in budget (the sentence pairs of NLI and
    similarity, and single texts, whose second sequence is empty), as transformers' fast
    tokenizers cut a pair with truncation="longest_first" (tokenizers' truncate_encodings): the
    shorter text is kept whole if it fills at most half the budget, else the two get half each
    and an odd budget's extra token goes to the longer text (the second if they are as long)."""
    shorter, longer = sorted((len(first), len(second)))
    if shorter + longer <= budget:
        return list(first), list(second)
    longer = shorter if shorter > budget else max(shorter, budget - shorter)
    if shorter + longer > budget:
        shorter, longer = budget // 2, budget // 2 + budget % 2
    first_kept, second_kept = (longer, shorter) if len(first) > len(second) else (shorter, longer)
    return list(first[:first_kept]), list(second[:second_kept])


def truncate_context(
    question: Sequence[int], context: Sequence[int], budget: int, example_id: str
) -> tuple[list[int], list[int]]:
    """A question + context pair (PubMedQA, BioASQ) cut as a reader reads it: the question kept
    whole, the context cut from its end until both fit.

    This is Hugging Face's truncation="only_second"; Gu et al. truncate QA inputs to 512 tokens
    (§5.2). PubMedQA's context is the abstract without its conclusion, in the abstract's order, so
    a cut context keeps its background and methods and loses the end of its results; at 512
    positions few are cut (13 of PubMedQA's 1,000 have more than 350 words). A question with no
    room left for context is an error naming the example.
    """
    if len(question) >= budget:
        raise ValueError(
            f"{example_id}: the question alone has {len(question)} tokens, the budget "
            f"is {budget}: no room for its context; convert with more --max-positions"
        )
    return list(question), list(context[: budget - len(question)])


# --- Inputs longer than the positions: the route a conversion takes (the manifest's long_inputs)
# truncate: classification's text (pair) cut by its kind's rule above (the papers' route, and the
#   default of every classification kind, so Table 2 stays comparable);
# pieces: a tagged sentence cut at word boundaries into consecutive pieces, each word in one
#   (the default of the word-tagging kinds, as convert-task has always cut them);
# windows: overlapping windows --window-stride tokens apart, every window an example to train on;
#   a word is predicted from the window where it has the most context, a text's class from its
#   windows' logits pooled (the merge rule: bio_roberta_core/windows.py, which predictions and the
#   criteria's validation both read).
TRUNCATE, PIECES = "truncate", "pieces"  # WINDOWS: bio_roberta_core/windows.py


@dataclass(frozen=True)
class LongInputs:
    """How a conversion treats an input longer than the positions; recorded in the manifest so
    that fine-tuning, predictions and `predict` take the same route."""

    route: str  # TRUNCATE, PIECES or WINDOWS
    stride: Optional[int] = None  # WINDOWS: tokens from one window's start to the next's
    pooling: Optional[str] = None  # WINDOWS of a classification kind: "mean" or "max" of logits

    def as_dict(self) -> dict:
        return {"route": self.route, "stride": self.stride, "pooling": self.pooling}

    @classmethod
    def from_dict(cls, record: Optional[dict], default_route: str) -> "LongInputs":
        """A manifest's long_inputs; a manifest written before it has its kind's default."""
        if not record:
            return cls(default_route)
        return cls(record["route"], record.get("stride"), record.get("pooling"))

    def describe(self) -> str:
        """One phrase for reports and logs."""
        if self.route != WINDOWS:
            return self.route
        merge = f"{self.pooling} of the windows' logits" if self.pooling else "most-context window"
        return f"windows (stride {self.stride} tokens, {merge})"


def window_spans(lengths: Sequence[int], width: int, stride: int) -> list[tuple[int, int]]:
    """(start, end) unit indices of the windows over units of the given token lengths (a word's
    subwords; 1 for a token), each window as many whole units as fit in `width` tokens.

    A window starts at the first unit at least `stride` tokens after the previous window's start,
    and never after the previous window's end, so no unit is skipped; the last window ends at the
    last unit. With stride == width these are consecutive pieces (PIECES). Each unit must fit in
    width (convert.py cuts a longer word).
    """
    if not 1 <= stride <= width:
        raise ValueError(f"window stride {stride} must be between 1 and the window's {width}")
    offsets = [0]
    for length in lengths:
        offsets.append(offsets[-1] + length)
    spans, start = [], 0
    while start < len(lengths):
        end = start
        while end < len(lengths) and offsets[end + 1] - offsets[start] <= width:
            end += 1
        if end == start:
            raise ValueError(f"a unit of {lengths[start]} tokens does not fit a window of {width}")
        spans.append((start, end))
        if end == len(lengths):
            break
        following = start + 1
        while following < end and offsets[following] < offsets[start] + stride:
            following += 1
        start = following
    return spans
