"""BLURB's new kinds end to end at toy size: source files we write -> convert-task -> real
fairseq fine-tuning (bio_roberta.finetuning.job) from a tiny RoBERTa pretrained on the converted
text -> prediction file -> the registry's score, for regression (BIOSSES) and multi-element tagging
(EBM-PICO). The validation metric the criterion logs is the one the prediction file gives, and
the test predictions keyed by example id re-score against the source files to the run's score."""

import shutil
from pathlib import Path

import pytest
from scipy.stats import pearsonr

from bio_roberta.blurb_run.rescore import rescore
from bio_roberta.prediction.predictions import predict, score_prediction_file
from bio_roberta.readers.formats.biosses_blue_rowdata import BIOSSES_BLURB_SPLIT
from bio_roberta.report.tensorboard_curves import read_scalars
from bio_roberta.tasks.registry import get_task
from bio_roberta_core.metrics import pico_macro_word_f1
from test_blurb_readers import EBM_TOKENS, SENTENCES, write_biosses, write_ebm_nlp
from tiny_finetune import fine_tune, tiny_vocab

pytestmark = pytest.mark.slow


def rescored(tmp_path: Path, task: str, data: Path, record: dict) -> dict:
    """`bio-roberta rescore`'s entry for the run's test predictions keyed by example id, against
    its source files (data) as <root>/<task>."""
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / task).symlink_to(data.resolve())
    (tmp_path / "submission").mkdir()
    shutil.copy(record["predictions_by_id"]["path"], tmp_path / "submission")
    (entry,) = rescore(tmp_path / "submission", tmp_path / "root")["datasets"].values()
    return entry


def test_regression_biosses_fine_tunes_predicts_and_scores_pearson(tmp_path):
    data = write_biosses(tmp_path / "biosses")
    manifest, record = fine_tune(
        tmp_path, "biosses", data, tiny_vocab(tmp_path, " ".join(SENTENCES))
    )
    out = tmp_path / "finetune-bin" / "biosses"
    assert manifest["counts"] == {"train": 64, "valid": 16, "test": 20}
    assert manifest["labels"] == []
    # placed by BLURB's own pair numbers, which the ids then cannot disprove: unknown (issue 26)
    assert manifest["blurb_split_check"].startswith(
        "BIOSSES: split unknown (its reader placed the examples by BLURB's pair numbers"
    )
    assert not (out / "label" / "dict.txt").exists()
    # one score a line, as written in the source row of each test pair (write_biosses: pair n
    # has old_index n - 1 and score ((n - 1) % 9) / 2)
    expected = [f"{((n - 1) % 9) / 2:.1f}" for n in BIOSSES_BLURB_SPLIT["test"]]
    assert (out / "label" / "test.label").read_text().splitlines() == expected
    args = record["config"]["fairseq_args"]
    assert args[args.index("--criterion") + 1] == "regression" and "--regression-target" in args
    assert args[args.index("--best-checkpoint-metric") + 1] == "pearson"

    # the test score is the prediction file's Pearson, which is scipy's
    predictions = Path(record["predictions"]["path"])
    gold, predicted = get_task("biosses").task_kind.predictions.read(predictions)
    assert len(gold) == 20 and len(set(predicted)) > 1
    assert gold == [float(line) for line in (out / "label" / "test.label").read_text().split()]
    assert record["test_score"] == pytest.approx(pearsonr(predicted, gold)[0], abs=1e-9)
    entry = rescored(tmp_path, "biosses", data, record)
    assert (entry["task"], entry["scored"], entry["missing"]) == ("biosses", 20, 0)
    # the source's gold scores as written, the run's through float32 targets: equal to 1e-6
    assert entry["score"] == pytest.approx(record["test_score"], abs=1e-6)

    # the criterion's logged validation Pearson = scipy's on the checkpoint's valid predictions
    checkpoint = Path(record["checkpoint"]["path"])
    logged = read_scalars(checkpoint.parent.parent / "tensorboard" / "valid")  # and TensorBoard's
    assert max(v for _, v in logged["pearson"]) == pytest.approx(
        100 * record["valid_score"], abs=0.01
    )
    valid = predict(checkpoint, out, tmp_path / "valid.tsv", split="valid")
    valid_gold, valid_predicted = get_task("biosses").task_kind.predictions.read(
        tmp_path / "valid.tsv"
    )
    expected = 100 * pearsonr(valid_predicted, valid_gold)[0]
    assert 100 * record["valid_score"] == pytest.approx(expected, abs=1e-4)  # float32 sums
    assert valid.score == pytest.approx(expected / 100, abs=1e-9)


def test_multi_element_tagging_ebm_pico_fine_tunes_predicts_and_scores(tmp_path):
    data = write_ebm_nlp(tmp_path / "ebm-nlp", train=range(1, 41), gold=(50, 51, 52))
    manifest, record = fine_tune(tmp_path, "ebm-pico", data, tiny_vocab(tmp_path, EBM_TOKENS))
    out = tmp_path / "finetune-bin" / "ebm-pico"
    assert manifest["tagging_scheme"] is None and "I-PAR+I-INT" in manifest["labels"]
    assert manifest["blurb_split_check"].startswith("EBM PICO: train is starting_spans train")
    assert manifest["split_details"]["test"]["read"]["counts"]["words_in_several_elements"] == 3
    args = record["config"]["fairseq_args"]
    assert args[args.index("--task") + 1] == "multi_element_tagging"
    assert args[args.index("--best-checkpoint-metric") + 1] == "pico_macro_word_f1"

    # predictions: a set of elements per word, the overlapping gold kept as read
    predictions = Path(record["predictions"]["path"])
    gold, predicted = get_task("ebm-pico").task_kind.predictions.read(predictions)
    assert sum(len(s) for s in gold) == 3 * len(EBM_TOKENS.split())
    assert gold[0][7] == "I-PAR+I-INT"
    assert record["test_score"] == pytest.approx(pico_macro_word_f1(gold, predicted))
    assert score_prediction_file(predictions, get_task("ebm-pico")) == record["test_score"]
    entry = rescored(tmp_path, "ebm-pico", data, record)
    assert (entry["score"], entry["scored"]) == (record["test_score"], len(gold))

    # the criterion's logged validation F1 = the prediction file's on valid
    checkpoint = Path(record["checkpoint"]["path"])
    valid = predict(checkpoint, out, tmp_path / "valid.conll", split="valid")
    assert record["valid_score"] == pytest.approx(valid.score, abs=1e-9)
