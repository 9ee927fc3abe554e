"""BLURB's metrics (Gu et al. 2021, Table 3), reusing bio_roberta_core.metrics where the metric is one.

pearson             Pearson's r of predicted and gold similarity scores (BIOSSES), as
                    scipy.stats.pearsonr
pico_macro_word_f1  EBM-PICO: for each element (P, I, O), F1 of the words predicted in it against
                    the words annotated with it, over every word of the split; then the mean of
                    the three (macro). A word may carry several elements (PICO_SEPARATOR): it counts
                    once for each. Equal to sklearn's per-class f1_score on the word x element
                    indicator matrix, and on single tags when no word carries two elements.
                    Words, not entities: no span needs to match whole. BLURB's released
                    files keep one element a word (blurb_release_tags); scoring through them
                    gives the number its files give.
micro_f1            ChemProt, DDI, GAD: one F1 over the positive classes pooled (true positives,
                    predictions and gold of every class but the negative one summed), as
                    bio_roberta_core.metrics.micro_f1. For GAD, with one positive class, this is the
                    positive class's F1 (the registry's binary_f1).
hoc_micro_f1        HoC: each abstract's hallmarks are the union of its sentences' labels; one F1
                    over every (abstract, hallmark) decision pooled, as LinkBERT's utils_hoc.py
                    scores BLURB's HoC (and SciFive matches the leaderboard with). Not BLUE's
                    eval_hoc (the registry's hoc_abstract_f1), which averages per-abstract precision
                    and recall first.
accuracy            PubMedQA, BioASQ: bio_roberta_core.metrics.accuracy
entity_f1           NER: bio_roberta_core.metrics.entity_f1, unchanged

Scores are fractions in [0, 1], as in bio_roberta_core.metrics.
"""

from __future__ import annotations

import math
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from bio_roberta_core import metrics

# EBM-PICO tags: O, or the elements a word carries joined by PICO_SEPARATOR in PICO_ELEMENTS'
# order ("I-PAR+I-INT" for a participant word inside an intervention span).
PICO_ELEMENTS = ("I-PAR", "I-INT", "I-OUT")
PICO_OUTSIDE = "O"
PICO_SEPARATOR = "+"


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


# --- EBM-PICO ---------------------------------------------------------------------------------


def pico_elements(tag: str) -> frozenset[str]:
    """The elements of one word's tag: 'O' -> {}, 'I-PAR+I-INT' -> {'I-PAR', 'I-INT'}."""
    if tag == PICO_OUTSIDE:
        return frozenset()
    elements = tag.split(PICO_SEPARATOR)
    unknown = [e for e in elements if e not in PICO_ELEMENTS]
    if unknown or len(set(elements)) != len(elements):
        raise ValueError(
            f"not an EBM-PICO tag: {tag!r} (O, or elements of "
            f"{', '.join(PICO_ELEMENTS)} joined by {PICO_SEPARATOR!r})"
        )
    return frozenset(elements)


def pico_tag(elements) -> str:
    """The tag of a word carrying these elements (PICO_ELEMENTS order; O when none)."""
    elements = set(elements)
    unknown = elements - set(PICO_ELEMENTS)
    if unknown:
        raise ValueError(f"unknown EBM-PICO elements {sorted(unknown)}")
    return PICO_SEPARATOR.join(e for e in PICO_ELEMENTS if e in elements) or PICO_OUTSIDE


def blurb_release_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """The single tags BLURB's released EBM-PICO files give these words (its preprocessor, after
    EBM-NLP's build_data.py): of a word's elements the last in P, I, O order, so an outcome wins
    over an intervention and both over a participant. Scoring through these reproduces the gold
    of BLURB's files, which drops the ~3% overlaps; pico_macro_word_f1 keeps them."""
    return tuple(
        next((e for e in reversed(PICO_ELEMENTS) if e in pico_elements(tag)), PICO_OUTSIDE)
        for tag in tags
    )


def pico_element_counts(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]):
    """Arrays (true positives, predicted, gold) of words per element, PICO_ELEMENTS order, over
    sentences of tags."""
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
    f1s = metrics.label_f1s(*pico_element_counts(gold, predicted))
    return {element: float(f1) for element, f1 in zip(PICO_ELEMENTS, f1s)}


def pico_macro_word_f1(gold, predicted) -> float:
    return metrics.macro_f1_from_counts(*pico_element_counts(gold, predicted))


# --- HoC --------------------------------------------------------------------------------------


def hoc_micro_f1(gold: Mapping[Hashable, set], predicted: Mapping[Hashable, set]) -> float:
    """Micro-F1 over (abstract, hallmark) decisions of label sets keyed by abstract
    (bio_roberta_core.metrics.group_label_sets builds them from sentences)."""
    if gold.keys() != predicted.keys():
        raise ValueError("gold and predicted label sets cover different abstracts")
    if not gold:
        raise ValueError("HoC F1 of an empty set of abstracts")
    true_positives = sum(len(gold[k] & predicted[k]) for k in gold)
    n_predicted = sum(len(labels) for labels in predicted.values())
    n_gold = sum(len(labels) for labels in gold.values())
    return metrics.micro_f1_from_counts(true_positives, n_predicted, n_gold)


# --- one scorer per BLURB metric -----------------------------------------------------------------


def _micro_f1(spec, gold, predicted) -> float:
    return metrics.micro_f1(gold, predicted, spec.labels_in_score)


# metric name (bio_roberta.blurb.suite.BlurbDataset.metric) -> score(spec, gold, predicted), the
# gold and predicted values as bio_roberta_core.metrics.score takes them for that kind of task.
BLURB_SCORERS: dict[str, Callable] = {
    "entity_f1": lambda spec, gold, predicted: metrics.entity_f1(gold, predicted),
    "pico_macro_word_f1": lambda spec, gold, predicted: pico_macro_word_f1(gold, predicted),
    "micro_f1": _micro_f1,
    "pearson": lambda spec, gold, predicted: pearson(gold, predicted),
    "hoc_micro_f1": lambda spec, gold, predicted: hoc_micro_f1(gold, predicted),
    "accuracy": lambda spec, gold, predicted: metrics.accuracy(gold, predicted),
}
