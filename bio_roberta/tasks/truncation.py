"""How an example of two texts is cut to the model's positions: a column of the kinds table
(bio_roberta/tasks/kinds.py, ``TaskKind.truncate``), applied by convert.py when the pair's BPE
tokens exceed the budget (the positions less the special tokens <s> a </s></s> b </s>).

Each rule takes (first, second, budget, example id) and returns the two token lists kept.
"""

from __future__ import annotations

from typing import Sequence


def truncate_longest_first(
    first: Sequence[int], second: Sequence[int], budget: int, example_id: str
) -> tuple[list[int], list[int]]:
    """Drop tokens from the end of the longer sequence until both fit in budget (the sentence
    pairs of NLI, and single texts, whose second sequence is empty)."""
    first, second = list(first), list(second)
    while len(first) + len(second) > budget:
        (first if len(first) >= len(second) else second).pop()
    return first, second


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
