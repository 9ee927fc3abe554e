"""Binary cross-entropy per element per word (multi_element_tagging), and EBM-PICO's macro
word-level F1 at validation.

A word is predicted in an element when its logit is > 0 (sigmoid >= 0.5), independently of the
other elements. Validation counts words per element (true positives, predicted, gold), summed
over the whole set, and derives ``pico_macro_word_f1`` (bio_roberta_core.metrics: each element's
F1, then their mean; a word in two elements counts for each). A validation split converted with
--long-inputs windows is scored over documents, each word from the window where it has the most
context, as test is (user_dir/criterions/_document_validation.py).
"""

import torch
import torch.nn.functional as F
from fairseq.criterions import register_criterion

from bio_roberta_core.metrics import PICO_MACRO_WORD_F1, macro_f1_from_counts, pico_macro_word_f1
from bio_roberta_core.tagging import PICO_ELEMENTS, pico_tag
from user_dir.criterions._document_validation import DocumentValidationConfig
from user_dir.criterions._finetune_metrics import log_count_scores, trainer_logging_output
from user_dir.criterions._word_tagging import WordTaggingCriterion

ELEMENT_COUNTS = tuple(
    tuple(f"{count}_{k}" for k in range(len(PICO_ELEMENTS)))
    for count in ("element_tp", "element_predicted", "element_gold")
)


# A word's element set as a number: bit k for PICO_ELEMENTS[k]; the tag of each number.
ELEMENT_BITS = 1 << torch.arange(len(PICO_ELEMENTS))
SET_TAGS = tuple(
    pico_tag(e for k, e in enumerate(PICO_ELEMENTS) if number >> k & 1)
    for number in range(1 << len(PICO_ELEMENTS))
)


def word_element_sets(decisions: torch.Tensor, target: torch.Tensor) -> list[list[int]]:
    """Each word's (position whose target is not UNLABELLED) element set as a number (SET_TAGS
    names it), one list per sequence, from 0/1 decisions (batch x positions x elements)."""
    numbers = (decisions.long() * ELEMENT_BITS.to(decisions.device)).sum(-1)
    return [row[mask].tolist() for row, mask in zip(numbers, target[..., 0] >= 0)]


def word_element_tags(decisions: torch.Tensor, target: torch.Tensor) -> list[list[str]]:
    """The element-set tag of each word of each sequence."""
    return [[SET_TAGS[number] for number in row] for row in word_element_sets(decisions, target)]


@register_criterion("multi_element_tagging", dataclass=DocumentValidationConfig)
class MultiElementTaggingCriterion(WordTaggingCriterion):
    """BCE with logits summed over words and elements; the gradient is normalised by words."""

    def forward(self, model, sample, reduce=True):
        logits = self.head_logits(model, sample)
        target = sample["target"]
        tagged = target[..., 0] >= 0
        gold = target[tagged]
        word_logits = logits[tagged].float()
        loss = F.binary_cross_entropy_with_logits(word_logits, gold, reduction="sum")
        sample_size = int(tagged.sum())
        logging_output = trainer_logging_output(loss, sample, sample_size)
        if not model.training and self.windows is not None:
            gold_sets = word_element_sets(target > 0, target)
            predicted_sets = word_element_sets(logits > 0, target)
            logging_output.update(self.window_words(sample, gold_sets, predicted_sets, SET_TAGS))
        elif not model.training:
            predicted, gold = word_logits > 0, gold > 0
            for keys, counts in zip(
                ELEMENT_COUNTS, ((predicted & gold).sum(0), predicted.sum(0), gold.sum(0))
            ):
                logging_output.update(zip(keys, counts.tolist()))
        return loss, sample_size, logging_output

    document_scores = {PICO_MACRO_WORD_F1: pico_macro_word_f1}

    @staticmethod
    def reduce_outputs(logging_outputs, sample_size: int) -> None:
        if any(ELEMENT_COUNTS[0][0] in log for log in logging_outputs):
            log_count_scores(
                logging_outputs, ELEMENT_COUNTS, {PICO_MACRO_WORD_F1: macro_f1_from_counts}
            )
