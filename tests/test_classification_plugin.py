"""Classification plugin: single-label (fairseq's sentence_prediction task with the
single_label_classification criterion) and multi-label (HOC) fine-tuned from a pretrained
roberta_tiny; validation logs the task's own metric from whole-set counts, the checkpoint it picks
re-scores to the same number from its prediction file, and test predictions score like sklearn."""

import csv
import re

import pytest
from sklearn.metrics import f1_score

from bio_roberta.prediction.predictions import predict
from bio_roberta.tasks.registry import get_task
from bio_roberta_core import metrics
from finetune_data import SPLITS, build_classification, fine_tune_selecting_best

pytestmark = pytest.mark.slow


def fine_tune(tmp_path, checkpoint, task, metric, *options):
    data = tmp_path / "bin"
    gold = build_classification(data, checkpoint.parent / "dict.txt", task)
    log = fine_tune_selecting_best(
        data,
        tmp_path,
        checkpoint,
        metric,
        *options,
        validate_interval=4,
        max_update=16,
        min_validations=3,
        valid_output="valid.tsv",
    )
    return data, gold, log


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_single_label_chemprot_macro_f1_without_the_negative_class(
    tiny_roberta_checkpoint, tmp_path
):
    spec = get_task("chemprot")
    data, gold_labels, log = fine_tune(
        tmp_path,
        tiny_roberta_checkpoint,
        "chemprot",
        "macro_f1",
        "--task",
        "sentence_prediction",
        "--criterion",
        "single_label_classification",
        "--negative-label",
        spec.negative_label,
        "--num-classes",
        str(len(spec.labels)),
        "--init-token",
        "0",
    )
    assert re.search(r"valid on 'valid' subset .*\| accuracy [\d.]+ .*\| micro_f1 [\d.]+", log)
    result = predict(tmp_path / "checkpoints" / "checkpoint_best.pt", data, tmp_path / "test.tsv")
    rows = read_rows(tmp_path / "test.tsv")
    assert [r["id"] for r in rows] == [f"test:{i}" for i in range(SPLITS["test"])]
    gold, predicted = [r["gold"] for r in rows], [r["predicted"] for r in rows]
    assert gold == [labels[0] for labels in gold_labels["test"]]
    assert set(predicted) <= set(spec.labels)
    assert result.score == f1_score(
        gold, predicted, labels=list(spec.labels_in_score), average="macro", zero_division=0
    )
    assert result.metric == "macro_f1" and result.examples == SPLITS["test"]


def test_single_label_binary_f1_for_gad(tiny_roberta_checkpoint, tmp_path):
    fine_tune(
        tmp_path,
        tiny_roberta_checkpoint,
        "gad",
        "binary_f1",
        "--task",
        "sentence_prediction",
        "--criterion",
        "single_label_classification",
        "--negative-label",
        "0",
        "--num-classes",
        "2",
        "--init-token",
        "0",
    )


def test_multilabel_hoc_scores_at_abstract_level(tiny_roberta_checkpoint, tmp_path):
    data, gold_labels, _log = fine_tune(
        tmp_path,
        tiny_roberta_checkpoint,
        "hoc",
        "hoc_abstract_f1",
        "--task",
        "multilabel_classification",
        "--criterion",
        "multilabel_classification",
    )
    result = predict(tmp_path / "checkpoints" / "checkpoint_best.pt", data, tmp_path / "test.tsv")
    rows = read_rows(tmp_path / "test.tsv")
    assert len({r["group"] for r in rows}) == SPLITS["test"] // 4

    def cells(column):
        return [set(filter(None, r[column].split(","))) for r in rows]

    groups = [r["group"] for r in rows]
    expected = metrics.hoc_abstract_f1(
        metrics.group_label_sets(groups, cells("gold")),
        metrics.group_label_sets(groups, cells("predicted")),
    )
    assert cells("gold") == [set(labels) for labels in gold_labels["test"]]
    assert result.score == expected and result.metric == "hoc_abstract_f1"
