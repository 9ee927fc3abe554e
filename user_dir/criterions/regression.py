"""fairseq's sentence_prediction criterion for a score per example (``--regression-target``, MSE),
plus Pearson's r at validation (BIOSSES).

The stock criterion logs Pearson only with --report-pearson-and-spearman, rounded to 0.1 point:
too coarse to choose a checkpoint on BIOSSES' 16 dev pairs. Here every validation prediction and
target is kept (concatenated over the whole set) and ``pearson`` is derived from them as a
percentage to 2 decimals (bio_roberta_core.metrics.pearson, scipy's r), for
``--best-checkpoint-metric pearson --maximize-best-checkpoint-metric``. A validation split converted
with --long-inputs windows is scored over documents, each pair's score pooled over its windows,
as test is (user_dir/criterions/_document_validation.py).
"""

import math
from dataclasses import dataclass

from fairseq.criterions import register_criterion
from fairseq.criterions.sentence_prediction import (
    SentencePredictionConfig,
    SentencePredictionCriterion,
)

from bio_roberta_core.metrics import PEARSON, pearson
from user_dir.criterions._document_validation import (
    DocumentValidationConfig,
    ValidationWindows,
    log_document_scores,
    log_pooled_windows,
)
from user_dir.criterions._finetune_metrics import forward_keeping_head_logits, log_percentage


@dataclass
class RegressionConfig(SentencePredictionConfig, DocumentValidationConfig):
    pass


@register_criterion("regression", dataclass=RegressionConfig)
class RegressionCriterion(SentencePredictionCriterion):
    def __init__(self, cfg: RegressionConfig, task):
        if not cfg.regression_target:
            raise ValueError(
                "the regression criterion scores numbers read from label/{split}.label: "
                "pass --regression-target (and --num-classes 1)"
            )
        super().__init__(cfg, task)
        # the parent then logs every validation prediction and target ("pred", "targ")
        self.keep_pred_and_targ = True
        self.windows = ValidationWindows.of(task.cfg.data, cfg.valid_subset, pooled=True)

    def forward(self, model, sample, reduce=True):
        if model.training or self.windows is None:
            return super().forward(model, sample, reduce)
        loss, sample_size, logging_output, logits, target = forward_keeping_head_logits(
            self, model, sample, reduce
        )
        gold, per_window = target.float().tolist(), ("pred", "targ")  # the windows'
        log_pooled_windows(self.windows, sample, logging_output, logits, gold, per_window)
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
        if log_document_scores(logging_outputs, {PEARSON: document_pearson}, scored_documents):
            return
        if any("pred" in log for log in logging_outputs):
            log_percentage(
                PEARSON,
                lambda meters: pearson(
                    meters["targ"].tensor.tolist(), meters["pred"].tensor.tolist()
                ),
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return False  # lists of predictions, not sums


def scored_documents(documents) -> tuple[list[float], list[float]]:
    """(each document's gold score, its score pooled over its windows)."""
    return [target for _, target in documents], [float(pooled[0]) for pooled, _ in documents]


def document_pearson(gold: list[float], predicted: list[float]) -> float:
    """Pearson's r of the documents' pooled scores; NaN where it is undefined (fewer than two
    documents whole, as a validation batch alone may have, or constant scores)."""
    try:
        return pearson(gold, predicted)
    except ValueError:
        return math.nan
