"""What the word-tagging criteria (sequence_labeling, multi_element_tagging) share (not
registered: the leading underscore): the head's logits at each position, and over a validation
split converted with --long-inputs windows each word's gold and predicted label id logged by
document, the documents scored when whole (user_dir/criterions/_document_validation.py)."""

import abc
from typing import Callable, Optional, Sequence

import torch
from fairseq.criterions import FairseqCriterion

from user_dir.criterions._document_validation import (
    DocumentValidationConfig,
    ValidationWindows,
    WindowedValidation,
    log_document_scores,
    window_logging_output,
)
from user_dir.criterions._finetune_metrics import log_loss
from user_dir.models.token_classification_head import token_classification_logits


class WordTaggingCriterion(WindowedValidation, FairseqCriterion, metaclass=abc.ABCMeta):
    """A criterion of the task's token-classification head, validated over documents where its
    validation split is windowed."""

    # the metrics of the documents merged from windows: name -> score(each document's gold labels,
    # each document's predicted labels)
    document_scores: dict[str, Callable[[list, list], float]] = {}

    def __init__(self, cfg: DocumentValidationConfig, task):
        super().__init__(task)
        self.head_name = task.cfg.classification_head_name
        self.windows = ValidationWindows.of(task.cfg.data, cfg.valid_subset)

    def head_logits(self, model, sample, positions: Optional[torch.Tensor] = None):
        """The head's logits at each position of the batch (token_classification_logits)."""
        return token_classification_logits(
            model, self.head_name, sample["net_input"]["src_tokens"], positions
        )

    def window_words(self, sample, gold: list, predicted: list, labels: Sequence[str]) -> dict:
        """The logging-output entries of a validation batch of the windowed split: each example's
        words' gold and predicted label ids (one list per example), and the label of each id."""
        return window_logging_output(self.windows, sample, list(zip(gold, predicted)), labels)

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        """The loss, then the metrics of the whole documents (a windowed split: document_scores)
        or of the batches' own outputs (reduce_outputs)."""
        sample_size = log_loss(logging_outputs)
        if not log_document_scores(logging_outputs, cls.document_scores, gold_and_predicted):
            cls.reduce_outputs(logging_outputs, sample_size)

    @staticmethod
    @abc.abstractmethod
    def reduce_outputs(logging_outputs, sample_size: int) -> None:
        """The validation metrics of a split without windows, from its batches' outputs (each
        criterion its own)."""


def gold_and_predicted(documents: list[tuple]) -> tuple[list, list]:
    """(each document's gold labels, each document's predicted labels) of merged documents."""
    return [gold for gold, _ in documents], [predicted for _, predicted in documents]
