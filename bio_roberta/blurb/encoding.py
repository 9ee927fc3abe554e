"""How a question + context pair (PubMedQA, BioASQ) is cut to the model's positions.

A reader reads the whole question, then the context from its start: the question is kept whole
and the context is cut from its end until both fit (the rule of Hugging Face's
truncation="only_second"; Gu et al. truncate QA inputs to 512 tokens, §5.2). PubMedQA's
context is the abstract without its conclusion, in the abstract's order, so a cut context keeps
its background and methods and loses the end of its results. With 512 positions few examples are
cut: of PubMedQA's 1,000, 13 have more than 350 words of question + context, the longest 412.
The pair is encoded in convert.py's SENTENCE_PAIR_SPECIALS layout (<s> question </s></s> context
</s>).
"""

from __future__ import annotations

from typing import Sequence


def truncate_context(
    question: Sequence[int], context: Sequence[int], budget: int, example_id: str
) -> tuple[list[int], list[int], int]:
    """(question, context cut from its end, tokens cut) so that both fit in budget tokens."""
    if len(question) >= budget:
        raise ValueError(
            f"{example_id}: the question alone has {len(question)} tokens, the budget "
            f"is {budget}: no room for its context; convert with more --max-positions"
        )
    keep = min(len(context), budget - len(question))
    return list(question), list(context[:keep]), len(context) - keep
