"""Task kinds: what a task's kind decides about converting, fine-tuning and predicting it.

Like fairseq's registries (fairseq/registry.py), a table from a name to its parts: a TaskSpec
names its kind (bio_roberta/tasks/registry.py), and conversion, fine-tuning, predictions and the
report read the kind's row rather than testing its name. A new kind is one row in KINDS; its
fairseq task and criterion are plugin components (user_dir/tasks, user_dir/criterions), its
prediction file one of bio_roberta/prediction_files.py (or a new one there), and the metrics its
criterion logs rows of bio_roberta_core/metrics.py's METRICS.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from bio_roberta.prediction_files import LABEL_SETS, SINGLE_LABELS, TAGGED_WORDS, PredictionFile
from bio_roberta_core.tagging import BIO, entity_types, scheme_tags

NER = "ner"  # token tagging, entity F1
MULTILABEL = "multilabel"  # several labels per document (HOC)
RELATION = "relation"  # single-label sentence classification with a negative class
BINARY_RELATION = "binary_relation"  # 0/1 relation, 10 cross-validation folds (GAD, EU-ADR)
NLI = "nli"  # sentence-pair classification (MedNLI)


# The functions of a row take the TaskSpec (bio_roberta/tasks/registry.py imports this table).
def no_options(spec) -> list[str]:
    return []


def sentence_prediction_options(spec) -> list[str]:
    """fairseq's sentence_prediction: the number of classes and RoBERTa's <s> and </s> ids; and
    the negative label, which single_label_classification's F1s leave out."""
    options = [
        "--num-classes",
        str(len(spec.labels)),
        "--init-token",
        "0",
        "--separator-token",
        "2",
    ]
    if spec.negative_label is not None:
        options += ["--negative-label", spec.negative_label]
    return options


@dataclass(frozen=True)
class TaskKind:
    """One row of KINDS."""

    fairseq_task: str  # --task, registered by fairseq or user_dir/tasks
    criterion: str  # --criterion (user_dir/criterions); logs the validation metric
    inputs: int  # texts per example: 1 (input0/) or a pair, 2 (input0/, input1/)
    tags_words: bool  # labels: a tag per word in a tagging scheme, else per example
    predictions: PredictionFile  # how predictions are written and read back for the score
    # further fairseq-train options of the task and criterion for a TaskSpec of this kind
    fairseq_options: Callable[..., list[str]] = no_options


_SENTENCE_PREDICTION = TaskKind(
    "sentence_prediction",
    "single_label_classification",
    inputs=1,
    tags_words=False,
    predictions=SINGLE_LABELS,
    fairseq_options=sentence_prediction_options,
)

KINDS: dict[str, TaskKind] = {
    NER: TaskKind(
        "sequence_labeling",
        "sequence_labeling",
        inputs=1,
        tags_words=True,
        predictions=TAGGED_WORDS,
    ),
    MULTILABEL: TaskKind(
        "multilabel_classification",
        "multilabel_classification",
        inputs=1,
        tags_words=False,
        predictions=LABEL_SETS,
    ),
    RELATION: _SENTENCE_PREDICTION,
    BINARY_RELATION: _SENTENCE_PREDICTION,
    NLI: dataclasses.replace(_SENTENCE_PREDICTION, inputs=2),
}


def label_symbols(spec, scheme: str = BIO) -> tuple[str, ...]:
    """The label dictionary of a task (finetune-bin/<task>/label/dict.txt), class ids in order.

    Word tags: the scheme's tags over the registry's entity types. Otherwise the registry's labels
    with spaces written as '_' (a fairseq dictionary symbol cannot hold a space).
    """
    if spec.task_kind.tags_words:
        return scheme_tags(entity_types(spec.labels), scheme)
    return tuple(label.replace(" ", "_") for label in spec.labels)
