"""fairseq's sentence_prediction criterion plus the F1 scores of bio_roberta_core.metrics at
validation.

Use with ``--task sentence_prediction``. Per-label counts (true positives, predicted, gold) are
summed over the whole validation set; ``macro_f1`` and ``micro_f1`` are derived over every label
except ``--negative-label`` (the registry's scored labels), and ``binary_f1`` when one label is
left. fairseq's own ``accuracy`` is logged as before. A validation split converted with
--long-inputs windows is scored over documents, each from its windows' pooled logits, as test is
(user_dir/criterions/_document_validation.py); ``accuracy`` is then of documents too.
"""

from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq.criterions import register_criterion
from fairseq.criterions.sentence_prediction import (
    SentencePredictionConfig,
    SentencePredictionCriterion,
)

from bio_roberta_core.metrics import (
    ACCURACY,
    BINARY_F1,
    MACRO_F1,
    MICRO_F1,
    accuracy,
    binary_f1,
    macro_f1,
    macro_f1_from_counts,
    micro_f1,
    micro_f1_from_counts,
)
from user_dir.criterions._document_validation import (
    DocumentValidationConfig,
    ValidationWindows,
    WindowedValidation,
    log_document_scores,
    log_pooled_windows,
)
from user_dir.criterions._finetune_metrics import forward_keeping_head_logits, log_count_scores

COUNTS = ("tp", "predicted", "gold")
SCORED_CLASSES = "scored_classes"  # a windowed validation batch's: the classes the F1s score


@dataclass
class SingleLabelClassificationConfig(SentencePredictionConfig, DocumentValidationConfig):
    negative_label: Optional[str] = field(
        default=None,
        metadata={"help": "label symbol left out of the F1s (TaskSpec.negative_label)"},
    )


@register_criterion("single_label_classification", dataclass=SingleLabelClassificationConfig)
class SingleLabelClassificationCriterion(WindowedValidation, SentencePredictionCriterion):
    def __init__(self, cfg: SingleLabelClassificationConfig, task):
        super().__init__(cfg, task)
        if cfg.regression_target:
            raise ValueError(
                "single_label_classification scores labels; use --criterion "
                "sentence_prediction for regression"
            )
        labels = task.label_dictionary.symbols[task.label_dictionary.nspecial :][
            : task.cfg.num_classes
        ]
        if cfg.negative_label is not None and cfg.negative_label not in labels:
            raise ValueError(
                f"--negative-label {cfg.negative_label!r} is not in label/dict.txt: {labels}"
            )
        self.scored_classes = [k for k, label in enumerate(labels) if label != cfg.negative_label]
        self.num_classes = len(labels)
        self.windows = ValidationWindows.of(task.cfg.data, cfg.valid_subset, pooled=True)

    def forward(self, model, sample, reduce=True):
        if model.training:
            return super().forward(model, sample, reduce)
        loss, sample_size, logging_output, logits, target = forward_keeping_head_logits(
            self, model, sample, reduce
        )
        if self.windows is not None:
            windows, per_window = self.windows, ("ncorrect",)  # the windows' accuracy
            log_pooled_windows(windows, sample, logging_output, logits, target.tolist(), per_window)
            logging_output[SCORED_CLASSES] = self.scored_classes
            return loss, sample_size, logging_output
        predicted = logits.argmax(dim=-1)
        counts = {
            "tp": torch.bincount(target[predicted == target], minlength=self.num_classes),
            "predicted": torch.bincount(predicted, minlength=self.num_classes),
            "gold": torch.bincount(target, minlength=self.num_classes),
        }
        for name, values in counts.items():
            logging_output.update({f"{name}_{k}": int(values[k]) for k in self.scored_classes})
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
        windowed = [log[SCORED_CLASSES] for log in logging_outputs if SCORED_CLASSES in log]
        if windowed and log_document_scores(
            logging_outputs, document_class_scores(windowed[0]), decided
        ):
            return
        classes = sorted(
            {int(key[3:]) for log in logging_outputs for key in log if key.startswith("tp_")}
        )
        if not classes:
            return
        keys = [[f"{name}_{k}" for k in classes] for name in COUNTS]  # per count, one key per class
        scores = {MACRO_F1: macro_f1_from_counts, MICRO_F1: micro_f1_from_counts}
        if len(classes) == 1:
            scores[BINARY_F1] = micro_f1_from_counts
        log_count_scores(logging_outputs, keys, scores)


def document_class_scores(scored: list[int]) -> dict:
    """The metrics of single-label classification over whole documents (of decided): accuracy,
    and the F1s over the scored classes."""
    scores = {
        ACCURACY: accuracy,
        MACRO_F1: lambda gold, predicted: macro_f1(gold, predicted, scored),
        MICRO_F1: lambda gold, predicted: micro_f1(gold, predicted, scored),
    }
    if len(scored) == 1:
        scores[BINARY_F1] = lambda gold, predicted: binary_f1(gold, predicted, scored[0])
    return scores


def decided(documents) -> tuple[list[int], list[int]]:
    """(each document's target, its class predicted from its windows' pooled logits)."""
    return [target for _, target in documents], [int(pooled.argmax()) for pooled, _ in documents]
