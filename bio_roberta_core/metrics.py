"""The task scorers named by ``TaskSpec.metric`` (the METRICS table), equal to the reference
implementations.

entity_f1        conlleval / seqeval's default (IOB2, non-strict) micro entity F1
macro_f1         sklearn's f1_score(average="macro") over the scored labels (ChemProt: 5 CPR
                 classes)
micro_f1         sklearn's f1_score(average="micro") over the scored labels (DDI: 4 types; the
                 negative class counts only through the false positives and negatives it causes)
binary_f1        sklearn's f1_score of the positive class (GAD, EU-ADR)
hoc_abstract_f1  HOC at abstract level as Peng et al. (2019, BLUE eval_hoc.py) score it: each
                 abstract's labels are the union of its sentences' labels; precision and recall per
                 abstract, averaged, and F1 of the two averages (not a label-averaged macro-F1)
hoc_micro_f1     HOC at abstract level as BLURB scores it (LinkBERT's utils_hoc.py, which matches
                 the leaderboard): each abstract's labels are the union of its sentences' labels;
                 one F1 over every (abstract, hallmark) decision pooled
accuracy         fraction of exact matches
pearson          Pearson's r of predicted and gold scores (BIOSSES), as scipy.stats.pearsonr
pico_macro_word_f1  EBM-PICO: for each element (P, I, O) the F1 of the words predicted in it
                 against the words annotated with it, over every word of the split, then the mean
                 of the three. A word may carry several elements (bio_roberta_core.tagging's
                 element-set tags) and counts once for each: sklearn's per-class F1 on the
                 word x element indicator matrix. Words, not entities: no span must match whole.

Scores are fractions in [0, 1] (the report prints them x100). Every scorer also has a form over
counts, which the fairseq plugin sums over a whole validation set before dividing (per-batch
scores averaged would be wrong).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

from bio_roberta_core.tagging import PICO_ELEMENTS, pico_elements, tag_spans


def _divide(numerator, denominator):
    """numerator / denominator, 0 where the denominator is 0 (sklearn's and seqeval's default)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator != 0)


def f1_from_counts(true_positives, predicted, gold) -> float:
    """seqeval's micro F1: precision and recall first, then their harmonic mean."""
    precision = float(_divide(true_positives, predicted))
    recall = float(_divide(true_positives, gold))
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def label_f1s(true_positives, predicted, gold) -> np.ndarray:
    """sklearn's per-label F1, 2·TP / (gold + predicted), from count arrays."""
    return _divide(2 * np.asarray(true_positives), np.asarray(gold) + np.asarray(predicted))


# --- sequence labelling ---------------------------------------------------------------------


def entity_counts(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> tuple[int, int, int]:
    """(true positives, predicted entities, gold entities) over sentences of tags."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    tp = n_predicted = n_gold = 0
    for i, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(
                f"sentence {i}: {len(gold_tags)} gold tags but {len(predicted_tags)} predicted"
            )
        gold_spans, predicted_spans = set(tag_spans(gold_tags)), set(tag_spans(predicted_tags))
        tp += len(gold_spans & predicted_spans)
        n_predicted += len(predicted_spans)
        n_gold += len(gold_spans)
    return tp, n_predicted, n_gold


def entity_f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    return f1_from_counts(*entity_counts(gold, predicted))


# --- single-label classification ------------------------------------------------------------


def label_counts(
    gold: Sequence[Hashable], predicted: Sequence[Hashable], labels: Sequence[Hashable]
):
    """Arrays (true positives, predicted, gold) per label, in the order of ``labels``."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predicted")
    position = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((3, len(labels)), dtype=np.int64)
    for g, p in zip(gold, predicted):
        if g == p and g in position:
            counts[0, position[g]] += 1
        if p in position:
            counts[1, position[p]] += 1
        if g in position:
            counts[2, position[g]] += 1
    return counts[0], counts[1], counts[2]


def macro_f1_from_counts(true_positives, predicted, gold) -> float:
    return float(np.mean(label_f1s(true_positives, predicted, gold)))


def micro_f1_from_counts(true_positives, predicted, gold) -> float:
    return float(label_f1s(np.sum(true_positives), np.sum(predicted), np.sum(gold)))


def macro_f1(gold, predicted, labels: Sequence[Hashable]) -> float:
    return macro_f1_from_counts(*label_counts(gold, predicted, labels))


def micro_f1(gold, predicted, labels: Sequence[Hashable]) -> float:
    return micro_f1_from_counts(*label_counts(gold, predicted, labels))


def binary_f1(gold, predicted, positive_label: Hashable) -> float:
    return micro_f1(gold, predicted, [positive_label])


def accuracy(gold: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predicted")
    if not gold:
        raise ValueError("accuracy of an empty set of examples")
    return sum(g == p for g, p in zip(gold, predicted)) / len(gold)


# --- multi-label classification (HOC) ---------------------------------------------------------


def group_label_sets(
    groups: Sequence[Hashable], labels: Sequence[Iterable[Hashable]]
) -> dict[Hashable, set]:
    """The union of the labels of each group's examples (HOC: an abstract's sentences)."""
    if len(groups) != len(labels):
        raise ValueError(f"{len(groups)} group ids but {len(labels)} label sets")
    union: dict[Hashable, set] = defaultdict(set)
    for group, example_labels in zip(groups, labels):
        union[group].update(example_labels)
    return dict(union)


def example_precision_recall(gold: set, predicted: set) -> tuple[float, float]:
    """One document's precision and recall as BLUE eval_hoc.py computes them (0 when undefined)."""
    overlap = len(gold & predicted)
    return (overlap / len(predicted) if predicted else 0, overlap / len(gold) if gold else 0)


def hoc_f1_from_sums(precision_sum: float, recall_sum: float, documents: int) -> float:
    """F1 of the mean precision and mean recall over documents."""
    if not documents:
        raise ValueError("HOC F1 of an empty set of documents")
    mean_precision, mean_recall = precision_sum / documents, recall_sum / documents
    return float(_divide(2 * mean_precision * mean_recall, mean_precision + mean_recall))


def hoc_abstract_f1(gold: Mapping[Hashable, set], predicted: Mapping[Hashable, set]) -> float:
    """Abstract-level HOC F1 of label sets keyed by abstract (see group_label_sets)."""
    if gold.keys() != predicted.keys():
        raise ValueError("gold and predicted label sets cover different abstracts")
    pairs = [example_precision_recall(gold[k], predicted[k]) for k in gold]
    precisions = np.array([p for p, _ in pairs], dtype=np.float64)
    recalls = np.array([r for _, r in pairs], dtype=np.float64)
    return hoc_f1_from_sums(float(np.sum(precisions)), float(np.sum(recalls)), len(pairs))


def hoc_micro_f1(gold: Mapping[Hashable, set], predicted: Mapping[Hashable, set]) -> float:
    """Micro-F1 over (abstract, hallmark) decisions of label sets keyed by abstract
    (group_label_sets builds them from sentences)."""
    if gold.keys() != predicted.keys():
        raise ValueError("gold and predicted label sets cover different abstracts")
    if not gold:
        raise ValueError("HOC F1 of an empty set of abstracts")
    true_positives = sum(len(gold[k] & predicted[k]) for k in gold)
    n_predicted = sum(len(labels) for labels in predicted.values())
    n_gold = sum(len(labels) for labels in gold.values())
    return micro_f1_from_counts(true_positives, n_predicted, n_gold)


# --- sentence-pair regression (BIOSSES) -------------------------------------------------------


def pearson(gold: Sequence[float], predicted: Sequence[float]) -> float:
    """Pearson's r; undefined (an error) for fewer than 2 pairs or constant scores."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold scores but {len(predicted)} predicted")
    if len(gold) < 2:
        raise ValueError("Pearson correlation needs at least 2 pairs")
    x = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(gold, dtype=np.float64)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("Pearson correlation of scores that are not all finite numbers")
    x, y = x - x.mean(), y - y.mean()
    norm = math.sqrt(float(np.dot(x, x)) * float(np.dot(y, y)))
    if norm == 0.0:
        raise ValueError(
            "Pearson correlation is undefined when gold or predicted scores are constant"
        )
    return max(-1.0, min(1.0, float(np.dot(x, y)) / norm))


# --- element-set tagging (EBM-PICO) -----------------------------------------------------------


def pico_element_counts(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]):
    """Arrays (true positives, predicted, gold) of words per element, PICO_ELEMENTS order, over
    sentences of element-set tags."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    counts = np.zeros((3, len(PICO_ELEMENTS)), dtype=np.int64)
    for i, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(
                f"sentence {i}: {len(gold_tags)} gold tags but {len(predicted_tags)} predicted"
            )
        for gold_tag, predicted_tag in zip(gold_tags, predicted_tags):
            gold_set, predicted_set = pico_elements(gold_tag), pico_elements(predicted_tag)
            for k, element in enumerate(PICO_ELEMENTS):
                counts[0, k] += element in gold_set and element in predicted_set
                counts[1, k] += element in predicted_set
                counts[2, k] += element in gold_set
    return counts[0], counts[1], counts[2]


def pico_word_f1s(gold, predicted) -> dict[str, float]:
    """Word-level F1 of each element."""
    f1s = label_f1s(*pico_element_counts(gold, predicted))
    return {element: float(f1) for element, f1 in zip(PICO_ELEMENTS, f1s)}


def pico_macro_word_f1(gold, predicted) -> float:
    """BLURB's EBM-PICO score: the mean of the elements' word-level F1s."""
    return float(np.mean(list(pico_word_f1s(gold, predicted).values())))


def positive_label(labels: Sequence[Hashable]) -> Hashable:
    """The one label binary F1 scores."""
    if len(labels) != 1:
        raise ValueError(f"binary_f1 scores one positive label, not {list(labels)}")
    return labels[0]


@dataclass(frozen=True)
class Metric:
    """A task metric (``TaskSpec.metric`` names it): its scorer, and the fine-tuning criterion that
    logs it at validation as a meter of the metric's name, which --best-checkpoint-metric reads."""

    # (gold, predicted, the labels the task scores) -> a fraction in [0, 1]. Gold and predicted as
    # the task kind's prediction file reads them: sentences of tags for entity_f1 and
    # pico_macro_word_f1, label sets keyed by abstract for the HOC F1s, a float per example for
    # pearson, one label per example otherwise.
    score: Callable[[Any, Any, Sequence[Hashable]], float]
    # The criterion (user_dir/criterions) by its registered name: this package imports none of ours.
    criterion: str


ENTITY_F1, HOC_ABSTRACT_F1, HOC_MICRO_F1 = "entity_f1", "hoc_abstract_f1", "hoc_micro_f1"
MACRO_F1, MICRO_F1, BINARY_F1 = "macro_f1", "micro_f1", "binary_f1"
ACCURACY = "accuracy"  # fairseq's sentence_prediction criterion logs it under this name
PEARSON, PICO_MACRO_WORD_F1 = "pearson", "pico_macro_word_f1"

METRICS: dict[str, Metric] = {
    ENTITY_F1: Metric(
        lambda gold, predicted, _labels: entity_f1(gold, predicted), "sequence_labeling"
    ),
    HOC_ABSTRACT_F1: Metric(
        lambda gold, predicted, _labels: hoc_abstract_f1(gold, predicted),
        "multilabel_classification",
    ),
    MACRO_F1: Metric(macro_f1, "single_label_classification"),
    MICRO_F1: Metric(micro_f1, "single_label_classification"),
    BINARY_F1: Metric(
        lambda gold, predicted, labels: binary_f1(gold, predicted, positive_label(labels)),
        "single_label_classification",
    ),
    ACCURACY: Metric(
        lambda gold, predicted, _labels: accuracy(gold, predicted), "single_label_classification"
    ),
    HOC_MICRO_F1: Metric(
        lambda gold, predicted, _labels: hoc_micro_f1(gold, predicted),
        "multilabel_classification",
    ),
    PEARSON: Metric(lambda gold, predicted, _labels: pearson(gold, predicted), "regression"),
    PICO_MACRO_WORD_F1: Metric(
        lambda gold, predicted, _labels: pico_macro_word_f1(gold, predicted),
        "multi_element_tagging",
    ),
}
