"""Our scorers equal the reference implementations exactly (seqeval, sklearn, BLUE eval_hoc)."""

import random

import numpy as np
import pytest
import seqeval.metrics
from sklearn.metrics import accuracy_score, f1_score

from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta_core import metrics
from conftest import shared_data_path

CASES = 300


def random_sentences(rng, letters="BIO", types=("", "chem", "gene")):
    """Sentences of arbitrary tags, including ill-formed I- after O."""
    sentences = []
    for _ in range(rng.randint(1, 6)):
        sentence = []
        for _ in range(rng.randint(1, 10)):
            letter = rng.choice(letters)
            type_ = rng.choice(types)
            sentence.append("O" if letter == "O" else (f"{letter}-{type_}" if type_ else letter))
        sentences.append(sentence)
    return sentences


def corrupt(rng, sentences, rate, tags):
    return [[rng.choice(tags) if rng.random() < rate else t for t in s] for s in sentences]


def test_entity_f1_equals_seqeval_default_mode():
    rng = random.Random(0)
    for _ in range(CASES):
        types = rng.choice([("",), ("chem", "gene")])
        gold = random_sentences(rng, types=types)
        predicted = corrupt(rng, gold, rng.random(), ["O", "B", "I", "B-chem", "I-gene"])
        assert metrics.entity_f1(gold, predicted) == seqeval.metrics.f1_score(gold, predicted)


def test_entity_counts_sum_over_batches_to_the_whole_set_score():
    rng = random.Random(1)
    gold = random_sentences(rng) + random_sentences(rng) + random_sentences(rng)
    predicted = corrupt(rng, gold, 0.3, ["O", "B", "I-chem"])
    batches = [slice(0, 2), slice(2, 5), slice(5, None)]
    counts = np.sum([metrics.entity_counts(gold[b], predicted[b]) for b in batches], axis=0)
    assert metrics.f1_from_counts(*counts) == seqeval.metrics.f1_score(gold, predicted)


def test_entity_f1_edge_cases():
    assert metrics.entity_f1([["O", "O"]], [["O", "O"]]) == 0.0
    assert metrics.entity_f1([["B", "I"]], [["B", "I"]]) == 1.0
    # conlleval reads an I- after O as the start of an entity
    assert metrics.entity_f1([["B", "I"]], [["I", "I"]]) == 1.0
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        metrics.entity_f1([["O", "O"]], [["O"]])


def random_labels(rng, labels, n):
    weights = [rng.random() for _ in labels]
    return rng.choices(labels, weights=weights, k=n)


def test_macro_and_micro_f1_equal_sklearn_over_the_scored_labels():
    rng = random.Random(2)
    labels = ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"]
    for _ in range(CASES):
        n = rng.randint(1, 40)
        scored = rng.sample(labels, rng.randint(1, len(labels)))
        gold, predicted = random_labels(rng, labels, n), random_labels(rng, labels, n)
        for ours, average in ((metrics.macro_f1, "macro"), (metrics.micro_f1, "micro")):
            expected = f1_score(gold, predicted, labels=scored, average=average, zero_division=0)
            assert ours(gold, predicted, scored) == expected, (average, gold, predicted, scored)


def test_binary_f1_and_accuracy_equal_sklearn():
    rng = random.Random(3)
    for _ in range(CASES):
        n = rng.randint(1, 30)
        gold, predicted = random_labels(rng, ["0", "1"], n), random_labels(rng, ["0", "1"], n)
        assert metrics.binary_f1(gold, predicted, "1") == f1_score(
            gold, predicted, pos_label="1", zero_division=0
        )
        assert metrics.accuracy(gold, predicted) == accuracy_score(gold, predicted)


def blue_eval_hoc_f1(predicted: np.ndarray, gold: np.ndarray) -> float:
    """BLUE eval_hoc.py's get_p_r_f_arrary, transcribed (abstracts x labels 0/1 matrices)."""
    precisions, recalls = [], []
    for i in range(predicted.shape[0]):
        pred_set = {j for j in range(predicted.shape[1]) if predicted[i, j] == 1}
        gold_set = {j for j in range(gold.shape[1]) if gold[i, j] == 1}
        overlap = len(gold_set & pred_set)
        precisions.append(0 if not pred_set else overlap / len(pred_set))
        recalls.append(overlap / len(gold_set))
    mean_precision, mean_recall = np.mean(precisions), np.mean(recalls)
    denominator = mean_precision + mean_recall
    return 0.0 if denominator == 0 else 2 * mean_precision * mean_recall / denominator


def test_hoc_f1_equals_blue_eval_hoc_at_abstract_level():
    rng = random.Random(4)
    for _ in range(CASES):
        sentences, abstracts = rng.randint(1, 40), rng.randint(1, 8)
        groups = [f"pmid{rng.randrange(abstracts)}" for _ in range(sentences)]
        gold_rows = [set(rng.sample(range(10), rng.randint(0, 3))) for _ in groups]
        pred_rows = [set(rng.sample(range(10), rng.randint(0, 3))) for _ in groups]
        gold = metrics.group_label_sets(groups, gold_rows)
        predicted = metrics.group_label_sets(groups, pred_rows)
        if not all(gold.values()):
            continue  # BLUE divides by zero on an abstract without gold labels
        keys = list(gold)  # BLUE keeps abstracts in first-seen order

        def as_matrix(sets):
            return np.array([[int(j in sets[k]) for j in range(10)] for k in keys])

        assert metrics.hoc_abstract_f1(gold, predicted) == blue_eval_hoc_f1(
            as_matrix(predicted), as_matrix(gold)
        )


def test_hoc_f1_by_hand():
    gold = metrics.group_label_sets(["a", "a", "b"], [{1}, {2}, {3}])
    predicted = metrics.group_label_sets(["a", "a", "b"], [{1}, set(), {3, 4}])
    # a: P=1, R=1/2; b: P=1/2, R=1 -> mean P = mean R = 3/4 -> F1 = 3/4
    assert metrics.hoc_abstract_f1(gold, predicted) == 0.75
    assert metrics.hoc_abstract_f1({"a": set()}, {"a": set()}) == 0.0


def test_registry_scored_labels_are_the_labels_without_the_negative():
    """The plugin's --negative-label option reproduces each task's scored labels."""
    for spec in TASKS.values():
        if spec.negative_label is not None:
            assert spec.labels_in_score == tuple(
                label for label in spec.labels if label != spec.negative_label
            )
    assert get_task("ddi").labels_in_score == (
        "DDI-mechanism",
        "DDI-effect",
        "DDI-advise",
        "DDI-int",
    )
    assert get_task("gad").labels_in_score == ("1",)


def test_score_dispatches_on_the_registry_metric():
    rng = random.Random(5)
    for name, average in (("chemprot", "macro"), ("ddi", "micro"), ("i2b2-2010-re", "micro")):
        spec = get_task(name)
        gold, predicted = random_labels(rng, spec.labels, 50), random_labels(rng, spec.labels, 50)
        expected = f1_score(
            gold, predicted, labels=list(spec.labels_in_score), average=average, zero_division=0
        )
        assert spec.score(gold, predicted) == expected
    gold, predicted = random_labels(rng, ["0", "1"], 50), random_labels(rng, ["0", "1"], 50)
    assert get_task("euadr").score(gold, predicted) == f1_score(gold, predicted, pos_label="1")
    labels = get_task("mednli").labels
    gold, predicted = random_labels(rng, labels, 50), random_labels(rng, labels, 50)
    assert get_task("mednli").score(gold, predicted) == accuracy_score(gold, predicted)


def read_biobert_ner_tags(path):
    sentences, sentence = [], []
    for line in path.read_text().splitlines():
        if line.strip():
            sentence.append(line.split("\t")[1])
        elif sentence:
            sentences.append(sentence)
            sentence = []
    return sentences + ([sentence] if sentence else [])


@pytest.mark.real_data
def test_entity_f1_equals_seqeval_on_real_ncbi_disease_test_gold():
    gold = read_biobert_ner_tags(shared_data_path("ner", "NCBI-disease", "test.tsv"))
    assert len(gold) > 900
    rng = random.Random(6)
    for rate in (0.0, 0.02, 0.1, 0.3):
        predicted = corrupt(rng, gold, rate, ["O", "B", "I"])
        ours = metrics.entity_f1(gold, predicted)
        assert ours == seqeval.metrics.f1_score(gold, predicted)
        assert (ours == 1.0) == (rate == 0.0)
