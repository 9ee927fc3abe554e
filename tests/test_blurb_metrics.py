"""BLURB's metrics equal their reference implementations (scipy, sklearn) on random cases."""

import math
import random

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import accuracy_score, f1_score
from sklearn.preprocessing import MultiLabelBinarizer

from bio_roberta.blurb.suite import BLURB_DATASETS
from bio_roberta.tasks.registry import get_task
from bio_roberta_core import metrics
from bio_roberta_core.metrics import (
    METRICS,
    hoc_micro_f1,
    pearson,
    pico_macro_word_f1,
    pico_word_f1s,
)
from bio_roberta_core.tagging import PICO_ELEMENTS, blurb_release_tags, pico_elements, pico_tag

CASES = 300


def test_pearson_equals_scipy():
    rng = random.Random(0)
    for _ in range(CASES):
        n = rng.randint(2, 40)
        gold = [round(rng.uniform(0, 4), 1) for _ in range(n)]
        noise = rng.random()
        predicted = [g * rng.uniform(-1, 1) + noise * rng.gauss(0, 2) for g in gold]
        if len(set(gold)) < 2 or len(set(predicted)) < 2:
            continue
        assert pearson(gold, predicted) == pytest.approx(pearsonr(predicted, gold)[0], abs=1e-12)


def test_pearson_edge_cases():
    assert pearson([0, 1, 2], [1, 2, 3]) == pytest.approx(1.0)
    assert pearson([0, 1, 2], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="constant"):
        pearson([1.0, 1.0, 1.0], [0.1, 0.5, 0.9])
    with pytest.raises(ValueError, match="constant"):
        pearson([0.1, 0.5, 0.9], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="at least 2"):
        pearson([1.0], [1.0])
    with pytest.raises(ValueError, match="3 gold scores but 2 predicted"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        pearson([1, 2, 3], [1, math.nan, 2])


def test_accuracy_of_the_qa_tasks_equals_sklearn():
    rng = random.Random(1)
    for spec in map(get_task, ("pubmedqa", "bioasq")):
        for _ in range(CASES // 3):
            n = rng.randint(1, 60)
            gold, predicted = rng.choices(spec.labels, k=n), rng.choices(spec.labels, k=n)
            assert spec.score(gold, predicted) == accuracy_score(gold, predicted)


def random_pico_sentences(rng, overlap):
    """Sentences of EBM-PICO tags; with overlap, some words carry two or three elements."""
    sentences = []
    for _ in range(rng.randint(1, 5)):
        sentence = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.4:
                sentence.append("O")
            elif overlap and rng.random() < 0.3:
                sentence.append(pico_tag(rng.sample(PICO_ELEMENTS, rng.randint(2, 3))))
            else:
                sentence.append(rng.choice(PICO_ELEMENTS))
        sentences.append(sentence)
    return sentences


def corrupt(rng, sentences, rate, overlap):
    choices = [t for s in random_pico_sentences(rng, overlap) for t in s] + ["O", *PICO_ELEMENTS]
    return [[rng.choice(choices) if rng.random() < rate else t for t in s] for s in sentences]


def test_pico_word_f1_equals_sklearn_per_class_f1_on_single_tags():
    """No word in two elements (SciBERT's files): sklearn's per-class F1 over the flat tags."""
    rng = random.Random(2)
    for _ in range(CASES):
        gold = random_pico_sentences(rng, overlap=False)
        predicted = corrupt(rng, gold, rng.random(), overlap=False)
        flat_gold = [t for s in gold for t in s]
        flat_predicted = [t for s in predicted for t in s]
        expected = f1_score(
            flat_gold, flat_predicted, labels=list(PICO_ELEMENTS), average=None, zero_division=0
        )
        ours = pico_word_f1s(gold, predicted)
        assert [ours[e] for e in PICO_ELEMENTS] == pytest.approx(list(expected), abs=1e-12)
        macro = pico_macro_word_f1(gold, predicted)
        assert macro == pytest.approx(float(np.mean(expected)), abs=1e-12)


def test_pico_word_f1_equals_sklearn_on_the_word_element_indicator_matrix():
    """Words in several elements count once for each: sklearn's multilabel per-class F1."""
    rng = random.Random(3)
    binarizer = MultiLabelBinarizer(classes=list(PICO_ELEMENTS))
    for _ in range(CASES):
        gold = random_pico_sentences(rng, overlap=True)
        predicted = corrupt(rng, gold, rng.random(), overlap=True)
        gold_matrix, predicted_matrix = (
            binarizer.fit_transform([pico_elements(t) for s in sentences for t in s])
            for sentences in (gold, predicted)
        )
        expected = f1_score(gold_matrix, predicted_matrix, average=None, zero_division=0)
        ours = pico_word_f1s(gold, predicted)
        assert [ours[e] for e in PICO_ELEMENTS] == pytest.approx(list(expected), abs=1e-12)
        macro = f1_score(gold_matrix, predicted_matrix, average="macro", zero_division=0)
        assert pico_macro_word_f1(gold, predicted) == pytest.approx(macro, abs=1e-12)


def test_pico_word_f1_by_hand_counts_an_overlapping_word_in_each_element():
    gold = [["I-PAR", "I-PAR+I-INT", "I-INT", "O"]]
    predicted = [["I-PAR", "I-INT", "I-INT", "I-OUT"]]
    # P: tp 1, predicted 1, gold 2 -> 2/3; I: tp 2, predicted 2, gold 2 -> 1;
    # O: gold 0, predicted 1 -> 0
    expected = {"I-PAR": 2 / 3, "I-INT": 1.0, "I-OUT": 0.0}
    assert pico_word_f1s(gold, predicted) == pytest.approx(expected)
    assert pico_macro_word_f1(gold, predicted) == pytest.approx(5 / 9)


def test_blurb_release_tags_keep_the_last_of_p_i_o():
    tags = ["O", "I-PAR", "I-PAR+I-INT", "I-INT+I-OUT", "I-PAR+I-OUT", "I-PAR+I-INT+I-OUT"]
    assert blurb_release_tags(tags) == ("O", "I-PAR", "I-INT", "I-OUT", "I-OUT", "I-OUT")
    gold = [["I-PAR", "I-PAR+I-INT", "I-INT", "O"]]
    predicted = [["I-PAR", "I-PAR", "I-INT", "O"]]
    # overlaps kept: P is right on both its words, I misses the overlapping one;
    # release tags: that word is I only, so P there is a false positive
    kept = pico_word_f1s(gold, predicted)
    assert kept == pytest.approx({"I-PAR": 1.0, "I-INT": 2 / 3, "I-OUT": 0.0})
    release = pico_word_f1s([blurb_release_tags(s) for s in gold], predicted)
    assert release == pytest.approx({"I-PAR": 2 / 3, "I-INT": 2 / 3, "I-OUT": 0.0})


def test_pico_tags_and_their_errors():
    assert pico_tag({"I-OUT", "I-PAR"}) == "I-PAR+I-OUT"
    assert pico_tag(()) == "O"
    assert pico_elements("I-PAR+I-OUT") == {"I-PAR", "I-OUT"}
    for bad in ("I-COM", "B-PAR", "I-PAR+I-PAR", "I-PAR+O", ""):
        with pytest.raises(ValueError, match="not an EBM-PICO tag"):
            pico_elements(bad)
    with pytest.raises(ValueError, match="unknown EBM-PICO elements"):
        pico_tag({"I-COM"})
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        pico_macro_word_f1([["O", "O"]], [["O"]])


def test_hoc_micro_f1_equals_sklearn_micro_over_abstracts_and_hallmarks():
    rng = random.Random(4)
    hallmarks = list(range(10))
    binarizer = MultiLabelBinarizer(classes=hallmarks)
    for _ in range(CASES):
        sentences, abstracts = rng.randint(1, 40), rng.randint(1, 8)
        groups = [f"pmid{rng.randrange(abstracts)}" for _ in range(sentences)]
        gold, predicted = (
            metrics.group_label_sets(
                groups, [set(rng.sample(hallmarks, rng.randint(0, 3))) for _ in groups]
            )
            for _ in range(2)
        )
        keys = list(gold)
        expected = f1_score(
            binarizer.fit_transform([gold[k] for k in keys]),
            binarizer.fit_transform([predicted[k] for k in keys]),
            average="micro",
            zero_division=0,
        )
        assert hoc_micro_f1(gold, predicted) == pytest.approx(expected, abs=1e-12)


def test_hoc_micro_f1_differs_from_blue_eval_hoc():
    """BLURB's HoC metric is not the registry's (BLUE's, Lewis et al.'s)."""
    gold = {"a": {1, 2}, "b": {3}}
    predicted = {"a": {1}, "b": {3, 4, 5}}
    # micro: tp 2, predicted 4, gold 3 -> 4/7;
    # BLUE: mean P = (1 + 1/3)/2, mean R = (1/2 + 1)/2 -> 12/17
    assert hoc_micro_f1(gold, predicted) == pytest.approx(4 / 7)
    assert metrics.hoc_abstract_f1(gold, predicted) == pytest.approx(12 / 17)
    with pytest.raises(ValueError, match="different abstracts"):
        hoc_micro_f1({"a": {1}}, {"b": {1}})


def random_labels(rng, labels, n):
    weights = [rng.random() for _ in labels]
    return rng.choices(labels, weights=weights, k=n)


@pytest.mark.parametrize("task", ["chemprot", "ddi", "gad"])
def test_blurb_relation_extraction_is_micro_f1_over_the_positive_classes(task):
    """ChemProt (macro-F1 in Lewis et al.'s Table 1), DDI and GAD under BLURB: sklearn's micro-F1
    over every label but the negative one; for GAD that is the positive class's F1."""
    spec = get_task(task)
    positive = [label for label in spec.labels if label != spec.negative_label]
    rng = random.Random(5)
    for _ in range(CASES):
        n = rng.randint(1, 50)
        gold, predicted = random_labels(rng, spec.labels, n), random_labels(rng, spec.labels, n)
        expected = f1_score(gold, predicted, labels=positive, average="micro", zero_division=0)
        ours = METRICS["micro_f1"].score(gold, predicted, spec.labels_in_score)
        assert ours == pytest.approx(expected, abs=1e-12)
        if task == "gad":
            binary = f1_score(gold, predicted, pos_label="1", zero_division=0)
            assert expected == pytest.approx(binary)


def test_every_blurb_metric_is_a_row_of_the_metrics_table():
    assert {dataset.metric for dataset in BLURB_DATASETS} <= set(METRICS)
    tags = [["B", "I", "O"]]
    assert METRICS["entity_f1"].score(tags, [["B", "O", "O"]], ()) == 0.0
    assert METRICS["entity_f1"].score(tags, tags, ()) == 1.0
