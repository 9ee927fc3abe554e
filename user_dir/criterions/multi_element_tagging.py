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
from fairseq.criterions import FairseqCriterion, register_criterion

from bio_roberta_core.metrics import PICO_MACRO_WORD_F1, macro_f1_from_counts, pico_macro_word_f1
from bio_roberta_core.tagging import PICO_ELEMENTS, pico_tag
from user_dir.criterions._document_validation import (
    DocumentValidationConfig,
    ValidationWindows,
    WindowedValidation,
    gold_and_predicted,
    log_document_score,
    log_documents,
    window_logging_output,
)
from user_dir.criterions._finetune_metrics import (
    finetune_logging_output,
    log_loss,
    log_percentage,
    log_summed_counts,
    summed_counts,
)
from user_dir.models.token_classification_head import token_classification_logits

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
class MultiElementTaggingCriterion(WindowedValidation, FairseqCriterion):
    """BCE with logits summed over words and elements; the gradient is normalised by words."""

    def __init__(self, cfg: DocumentValidationConfig, task):
        super().__init__(task)
        self.head_name = task.cfg.classification_head_name
        self.windows = ValidationWindows.of(task.cfg.data, cfg.valid_subset)

    def forward(self, model, sample, reduce=True):
        logits = token_classification_logits(
            model, self.head_name, sample["net_input"]["src_tokens"]
        )
        target = sample["target"]
        tagged = target[..., 0] >= 0
        gold = target[tagged]
        word_logits = logits[tagged].float()
        loss = F.binary_cross_entropy_with_logits(word_logits, gold, reduction="sum")
        sample_size = int(tagged.sum())
        logging_output = finetune_logging_output(loss, sample, sample_size)
        if not model.training and self.windows is not None:
            sets = zip(word_element_sets(target > 0, target), word_element_sets(logits > 0, target))
            logging_output.update(window_logging_output(self.windows, sample, list(sets), SET_TAGS))
        elif not model.training:
            predicted, gold = word_logits > 0, gold > 0
            for keys, counts in zip(
                ELEMENT_COUNTS, ((predicted & gold).sum(0), predicted.sum(0), gold.sum(0))
            ):
                logging_output.update(zip(keys, counts.tolist()))
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        log_loss(logging_outputs)
        if log_documents(logging_outputs):
            log_document_score(
                PICO_MACRO_WORD_F1,
                lambda documents: pico_macro_word_f1(*gold_and_predicted(documents)),
            )
        elif any(ELEMENT_COUNTS[0][0] in log for log in logging_outputs):
            for keys in ELEMENT_COUNTS:
                log_summed_counts(logging_outputs, keys)
            log_percentage(
                PICO_MACRO_WORD_F1,
                lambda meters: macro_f1_from_counts(
                    *(summed_counts(meters, keys) for keys in ELEMENT_COUNTS)
                ),
            )
