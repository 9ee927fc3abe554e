"""`bio-roberta report`: medians over seeds with their spread beside the paper, summary rows over
the tasks present, marks for medians over fewer seeds or folds than asked, failed runs listed.
Records here are written in the result schema by hand (the sweep test makes real ones)."""

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.finetune import EVALUATION, MODEL_SELECTION, RESULT_SCHEMA, SINGLE, run_dir
from bio_roberta.report import ReportError, load_records, summary_rows, task_results
from bio_roberta_core.provenance import atomic_write_json

BIN = Path(sys.executable).parent
NCBI = {10: 0.80, 42: 0.90, 1234: 0.85, 12345: 0.70, 666: 0.95}
CHEMPROT = {10: 0.60, 42: 0.70}
GAD_FOLDS = {2: 0.70, 3: 0.90, 4: 0.80}


def write(results, task, seed, score, fold=None, role=SINGLE, status="ok", error=None):
    record = {
        "schema": RESULT_SCHEMA,
        "task": task,
        "seed": seed,
        "fold": fold,
        "role": role,
        "metric": "m",
        "status": status,
        "test_score": score,
        "error": error,
        "log": f"{task}/{seed}/train.log",
        "pretrained": {"sha256": "abc"},
        "git_revision": "rev",
    }
    atomic_write_json(run_dir(results, task, seed, fold) / "result.json", record)


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    for seed, score in NCBI.items():
        write(root, "ncbi-disease", seed, score)
    for seed, score in CHEMPROT.items():
        write(root, "chemprot", seed, score)
    write(
        root,
        "chemprot",
        1234,
        None,
        status="failed",
        error="FinetuneError: fairseq-train exited with status 1\nmore",
    )
    write(root, "gad", 10, 0.99, fold=1, role=MODEL_SELECTION)  # enters no median
    for fold, score in GAD_FOLDS.items():
        write(root, "gad", 10, score, fold=fold, role=EVALUATION)
    return root


def test_medians_spread_folds_and_summary_rows(results):
    by_task = task_results(load_records(results))
    assert list(by_task) == ["ncbi-disease", "chemprot", "gad"]  # registry order
    assert by_task["ncbi-disease"].median == 0.85
    assert by_task["chemprot"].median == pytest.approx(0.65)
    assert by_task["gad"].seed_scores == {10: 0.80} and by_task["gad"].short_folds == {
        10: "3/9 folds"
    }
    rows = {row["task"]: row for row in summary_rows(by_task)}
    assert rows["Seq. Lab."]["tasks"] == "1/11" and rows["Seq. Lab."]["median"] == 0.85
    assert rows["Classif."]["tasks"] == "2/7"
    assert rows["Classif."]["median"] == pytest.approx(statistics.mean([0.65, 0.80]))
    assert rows["Classif."]["Ours-base"] == pytest.approx((75.4 + 82.2) / 2)
    assert rows["Clinical"]["tasks"] == "0/5" and rows["Clinical"]["median"] is None
    assert rows["All"]["tasks"] == "3/18"


def test_report_files(results, tmp_path, without_parse_dependencies):
    out = tmp_path / "report"
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "report", str(results), "--out", str(out)],
        capture_output=True,
        text=True,
        env=without_parse_dependencies,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    markdown = (out / "report.md").read_text()
    lines = {
        line.split("|")[1].strip(): line for line in markdown.splitlines() if line.startswith("| ")
    }
    assert "| 85.0 | 70.0-95.0 | 5/5 | 84.7 | 87.6 | 87.7 | 87.1 | 89.0 |" in lines["NCBI-disease"]
    assert "| 65.0* | 60.0-70.0 | 2/5 |" in lines["ChemProt"]
    assert "80.0*" in lines["GAD"] and "3/9 folds" in lines["GAD"]
    assert "| 1/11 | 85.0 |" in lines["Seq. Lab."]
    failed = markdown.split("## Failed runs (1)")[1]
    assert (
        "chemprot seed 1234: FinetuneError: fairseq-train exited with status 1 "
        "(log: chemprot/1234/train.log)" in failed
    )
    rows = {row["task"]: row for row in csv.DictReader((out / "report.csv").open())}
    assert rows["NCBI-disease"]["median"] == "85.0" and rows["ChemProt"]["short"] == "True"
    assert rows["All"]["tasks"] == "3/18"
    assert (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_errors(tmp_path):
    with pytest.raises(ReportError, match="run `bio-roberta sweep` first"):
        load_records(tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "result.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(ReportError, match="schema"):
        load_records(tmp_path)
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "report", str(tmp_path / "none"), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "no such results dir" in run.stderr
