"""fairseq's sentence_prediction criterion for a score per example (``--regression-target``, MSE),
plus Pearson's r at validation (BIOSSES).

The stock criterion logs Pearson only with --report-pearson-and-spearman, rounded to 0.1 point:
too coarse to choose a checkpoint on BIOSSES' 16 dev pairs. Here every validation prediction and
target is kept (concatenated over the whole set) and ``pearson`` is derived from them as a
percentage to 2 decimals (bio_roberta_core.metrics.pearson, scipy's r), for
``--best-checkpoint-metric pearson --maximize-best-checkpoint-metric``.
"""

from fairseq.criterions import register_criterion
from fairseq.criterions.sentence_prediction import (
    SentencePredictionConfig,
    SentencePredictionCriterion,
)

from bio_roberta_core.metrics import PEARSON, pearson
from user_dir.criterions._finetune_metrics import log_percentage


@register_criterion("regression", dataclass=SentencePredictionConfig)
class RegressionCriterion(SentencePredictionCriterion):
    def __init__(self, cfg: SentencePredictionConfig, task):
        if not cfg.regression_target:
            raise ValueError(
                "the regression criterion scores numbers read from label/{split}.label: "
                "pass --regression-target (and --num-classes 1)"
            )
        super().__init__(cfg, task)
        # the parent then logs every validation prediction and target ("pred", "targ")
        self.keep_pred_and_targ = True

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
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
