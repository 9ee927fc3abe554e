"""Cross-entropy over the tagged positions (word starts) and entity counts for validation F1.

A validation split converted with --long-inputs windows is scored over documents, each word from
the window where it has the most context, as test is (user_dir/criterions/_document_validation.py).
"""

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import register_criterion

from bio_roberta_core.metrics import ENTITY_F1, entity_counts, entity_f1, f1_from_counts
from user_dir.criterions._document_validation import DocumentValidationConfig
from user_dir.criterions._finetune_metrics import log_count_scores, trainer_logging_output
from user_dir.criterions._word_tagging import WordTaggingCriterion

ENTITY_COUNTS = ("entity_tp", "entity_predicted", "entity_gold")
TAG_ACCURACY = "tag_accuracy"


def word_ids(class_ids: torch.Tensor, target: torch.Tensor) -> list[list[int]]:
    """The class ids of each sequence's tagged positions (target >= 0), one list per sequence."""
    return [row[mask].tolist() for row, mask in zip(class_ids, target >= 0)]


def word_tags(class_ids: torch.Tensor, target: torch.Tensor, tags: list[str]) -> list[list[str]]:
    """The tags of each sequence's tagged positions (target >= 0), one list per sequence."""
    return [[tags[i] for i in ids] for ids in word_ids(class_ids, target)]


def word_accuracy(gold: list[list], predicted: list[list]) -> float:
    """The fraction of the documents' words (gold labels, predicted labels by document) tagged as
    gold."""
    words = sum(len(labels) for labels in gold)
    right = sum(g == p for labels, guesses in zip(gold, predicted) for g, p in zip(labels, guesses))
    return right / max(words, 1)


@register_criterion("sequence_labeling", dataclass=DocumentValidationConfig)
class SequenceLabelingCriterion(WordTaggingCriterion):
    """Loss summed over tagged words (the gradient is normalised by their number).

    At validation it also counts entities (conlleval rules, bio_roberta_core.metrics) so that
    reduce_metrics derives ``entity_f1`` from counts summed over the whole validation set; over
    windows, it logs each window's tags and the documents are scored when whole.
    """

    def __init__(self, cfg: DocumentValidationConfig, task):
        super().__init__(cfg, task)
        self.tags = task.tags

    def forward(self, model, sample, reduce=True):
        target = sample["target"]
        tagged = target >= 0  # the positions read below: the loss's and the word tags'
        logits = self.head_logits(model, sample, tagged)
        loss = F.cross_entropy(logits[tagged].float(), target[tagged], reduction="sum")
        sample_size = int(tagged.sum())
        logging_output = trainer_logging_output(loss, sample, sample_size)
        if not model.training:
            predicted = logits.argmax(dim=-1)
            if self.windows is not None:
                gold_ids, predicted_ids = word_ids(target, target), word_ids(predicted, target)
                logging_output.update(self.window_words(sample, gold_ids, predicted_ids, self.tags))
            else:
                logging_output["ncorrect"] = int((predicted[tagged] == target[tagged]).sum())
                counts = entity_counts(
                    word_tags(target, target, self.tags), word_tags(predicted, target, self.tags)
                )
                logging_output.update(zip(ENTITY_COUNTS, counts))
        return loss, sample_size, logging_output

    document_scores = {TAG_ACCURACY: word_accuracy, ENTITY_F1: entity_f1}

    @staticmethod
    def reduce_outputs(logging_outputs, sample_size: int) -> None:
        if any("ncorrect" in log for log in logging_outputs):
            ncorrect = sum(log.get("ncorrect", 0) for log in logging_outputs)
            metrics.log_scalar(
                TAG_ACCURACY, 100.0 * ncorrect / max(sample_size, 1), sample_size, round=2
            )
            entity_scores = {ENTITY_F1: lambda counts: f1_from_counts(*counts)}
            log_count_scores(logging_outputs, [ENTITY_COUNTS], entity_scores)
