"""Binary cross-entropy per label for multi-label classification, and HOC F1 at validation.

HOC is scored per abstract (the union of its sentences' labels), which is not a sum of per-batch
counts: validation keeps every example's group, gold and predicted labels (concatenated over the
validation set) and derives from them ``hoc_abstract_f1`` (BLUE's, the recipe's) and
``hoc_micro_f1`` (BLURB's), both of bio_roberta_core.metrics. A validation split converted with
--long-inputs windows is scored over documents, each sentence's labels from its windows' pooled
logits, as test is (user_dir/criterions/_document_validation.py).
"""

from functools import partial

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion

from bio_roberta_core.metrics import (
    HOC_ABSTRACT_F1,
    HOC_MICRO_F1,
    group_label_sets,
    hoc_abstract_f1,
    hoc_micro_f1,
)
from user_dir.criterions._document_validation import (
    DocumentValidationConfig,
    ValidationWindows,
    log_document_scores,
    window_logging_output,
)
from user_dir.criterions._finetune_metrics import log_loss, log_percentage, trainer_logging_output

VALIDATION_TENSORS = ("group", "gold", "predicted")


def _label_sets(rows: torch.Tensor) -> list[set]:
    return [set(row.nonzero().flatten().tolist()) for row in rows]


def abstract_score_of_tensors(
    score, groups: torch.Tensor, gold: torch.Tensor, predicted: torch.Tensor
) -> float:
    """score(gold, predicted) of the abstracts' label sets, from per-sentence tensors."""
    group_list = groups.tolist()
    return score(
        group_label_sets(group_list, _label_sets(gold)),
        group_label_sets(group_list, _label_sets(predicted)),
    )


@register_criterion("multilabel_classification", dataclass=DocumentValidationConfig)
class MultilabelClassificationCriterion(FairseqCriterion):
    """Sum over labels of BCE with logits; the gradient is normalised by the number of examples."""

    def __init__(self, cfg: DocumentValidationConfig, task):
        super().__init__(task)
        self.head_name = task.cfg.classification_head_name
        self.windows = ValidationWindows.of(task.cfg.data, cfg.valid_subset, pooled=True)

    def forward(self, model, sample, reduce=True):
        logits, _ = model(
            **sample["net_input"], features_only=True, classification_head_name=self.head_name
        )
        target = sample["target"]
        loss = F.binary_cross_entropy_with_logits(logits.float(), target.float(), reduction="sum")
        sample_size = target.size(0)
        logging_output = trainer_logging_output(loss, sample, sample_size)
        if not model.training and self.windows is not None:
            outputs = zip(
                logits.detach().float().cpu(), target.bool().cpu(), sample["group"].tolist()
            )
            logging_output.update(window_logging_output(self.windows, sample, list(outputs)))
        elif not model.training:
            logging_output.update(
                group=sample["group"].cpu(), gold=target.bool().cpu(), predicted=(logits > 0).cpu()
            )
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        log_loss(logging_outputs)
        scores = {
            name: partial(abstract_score_of_tensors, score)
            for name, score in ((HOC_ABSTRACT_F1, hoc_abstract_f1), (HOC_MICRO_F1, hoc_micro_f1))
        }
        if log_document_scores(logging_outputs, scores, document_tensors):
            return
        validation = [log for log in logging_outputs if "group" in log]
        if validation:
            for key in VALIDATION_TENSORS:
                metrics.log_concat_tensor("_" + key, torch.cat([log[key] for log in validation]))
            for name, score in scores.items():
                log_percentage(
                    name,
                    lambda meters, score=score: score(
                        *(meters["_" + k].tensor for k in VALIDATION_TENSORS)
                    ),
                )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return False


def document_tensors(documents) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(group, gold, predicted) of the documents (HOC's sentences), each predicted from its
    windows' pooled logits (> 0), as abstract_score_of_tensors reads them."""
    return (
        torch.tensor([group for _, _, group in documents]),
        torch.stack([gold for _, gold, _ in documents]),
        torch.stack([pooled > 0 for pooled, _, _ in documents]),
    )
