"""`bio-roberta blurb-suite` end to end: a BLURB data root in LinkBERT's layout -> convert ->
sweep (real fairseq fine-tuning of a tiny RoBERTa, one seed) -> Table 6's report,
leaderboard.json and the submission of test predictions keyed by the release's ids, which
`bio-roberta rescore` scores against the release to the leaderboard's number; re-run resumes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.suite import BLURB, BLURB_DATASETS
from bio_roberta.conversion.finetune_bin import convert_task
from bio_roberta.tasks.registry import get_task
from blurb_toy import write_linkbert
from conftest import shared_data_path
from tiny_finetune import POSITIONS, TINY, tiny_vocab
from tiny_training import pretrain_tiny_roberta

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TOY = ("chemprot-blurb", "biosses")


def blurb_suite(*args):
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "blurb-suite", *map(str, args)], capture_output=True, text=True
    )
    return run, run.stdout + run.stderr


@pytest.mark.real_data
def test_blurb_suite_converts_sweeps_reports_and_resumes(tmp_path):
    """Real NCBI-disease from LinkBERT's release (BLURB's split by content) and two toy datasets
    (not BLURB's split: their sizes) under one root: the score is partial, over NCBI-disease,
    naming the twelve datasets it lacks; a re-run converts and trains nothing again."""
    root = tmp_path / "blurb"
    shutil.copytree(
        shared_data_path("blurb_linkbert", "tokcls", "NCBI-disease_hf"),
        root / BLURB["ncbi-disease"].linkbert_dir,
        ignore=shutil.ignore_patterns("SOURCE.txt"),
    )
    for task in TOY:
        write_linkbert(root, task, sizes=(24, 8, 8))
    vocab = tiny_vocab(tmp_path, "Identification of APC2 , a homologue of the tumour suppressor .")
    work = tmp_path / "work"
    # a tiny RoBERTa with the vocabulary's dictionary, pretrained on one converted dataset (which
    # the suite then keeps: converted before from the same files)
    out = work / "finetune-bin" / "ncbi-disease"
    ncbi = root / BLURB["ncbi-disease"].linkbert_dir
    convert_task(get_task("ncbi-disease"), ncbi, vocab, out, max_positions=POSITIONS)
    pretrained = pretrain_tiny_roberta(
        out / "input0", tmp_path / "pretrained", max_update=3, tokens_per_sample=POSITIONS
    )
    args = [
        "--data",
        root,
        "--vocab",
        vocab,
        "--pretrained",
        pretrained,
        "--work",
        work,
        "--seeds",
        "1",
    ]
    args += ["--max-positions", POSITIONS, *TINY, "max_update=3"]
    run, output = blurb_suite(*args)
    assert run.returncode == 0, output[-3000:]
    assert "ncbi-disease: converted before, kept" in output
    missing = [d.task for d in BLURB_DATASETS if d.task not in ("ncbi-disease", *TOY)]
    assert f"not under {root}: {', '.join(missing)}" in output

    board = json.loads((work / "leaderboard.json").read_text())
    ncbi = board["datasets"]["NCBI-disease"]
    assert ncbi["why_no_score"] is None and ncbi["runs"] == 1 and 0 <= ncbi["score"] <= 100
    assert board["blurb_score"] == ncbi["score"] and board["partial"]
    # the submission: NCBI-disease's test sentences keyed by LinkBERT's ids (the longer ones cut
    # for 32 positions and joined back) re-score against the release to the leaderboard's score
    ids = json.loads((out / "manifest.json").read_text())["example_ids"]["test"]
    assert ids["distinct_ids"] == 940 < ids["lines"]
    rescored = subprocess.run(
        [str(BIN / "bio-roberta"), "rescore", work / "submission", "--data", root],
        capture_output=True,
        text=True,
    )
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    entry = json.loads((work / "submission" / "rescore.json").read_text())["datasets"]
    entry = entry["NCBI-disease"]
    assert (entry["scored"], entry["missing"]) == (940, 0)
    assert entry["score"] == entry["run_test_score"]
    assert round(100 * entry["score"], 2) == ncbi["score"]
    assert board["missing"] == [d.display for d in BLURB_DATASETS if d.task != "ncbi-disease"]
    assert board["task_types"]["NER"] == ncbi["score"] and board["task_types"]["PICO"] is None
    assert board["datasets"]["ChemProt"]["why_no_score"].startswith(
        "ChemProt: train/dev/test examples 24/8/8, BLURB's split has 18035/11268/15745"
    )
    assert board["datasets"]["BC2GM"]["why_no_score"] == "no runs"
    report = (work / "report" / "report.md").read_text()
    assert "partial: 1/13 datasets" in report
    assert f"BLURB score: {board['blurb_score']} (partial: 1/13 datasets, missing BC5-chem" in (
        run.stdout
    )
    # NCBI-disease's split checked BLURB's by its content: the one score is comparable
    assert board["comparable"] and board["not_comparable"] == {}
    assert ncbi["split_check"] == {"checked_by": "content hash", "outcome": "BLURB's", "why": None}
    assert "; every scored split checked BLURB's; untuned (one setting); each run keeps its " in (
        run.stdout
    )
    assert board["protocol"] == ncbi["protocol"] == "untuned (one setting)"
    assert board["grid"] is None and ncbi["picked"] in ncbi["settings"]

    converted = {t: (work / "finetune-bin" / t / "manifest.json").read_bytes() for t in TOY}
    results = sorted((work / "results").rglob("result.json"))
    assert len(results) == 3
    stamps = {path: path.stat().st_mtime_ns for path in results}
    run, output = blurb_suite(*args)
    assert run.returncode == 0, output[-3000:]
    assert all(f"{t}: converted before, kept" in output for t in ("ncbi-disease", *TOY))
    assert converted == {t: (work / "finetune-bin" / t / "manifest.json").read_bytes() for t in TOY}
    assert {path: path.stat().st_mtime_ns for path in results} == stamps  # no run again
    assert json.loads((work / "leaderboard.json").read_text()) == board


def test_a_root_without_blurbs_folders_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    run, _ = blurb_suite(
        "--data",
        tmp_path / "empty",
        "--vocab",
        tmp_path,
        "--pretrained",
        tmp_path / "x.pt",
        "--work",
        tmp_path,
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        (
            f"bio-roberta blurb-suite: error: {tmp_path / 'empty'}: no BLURB dataset folder; "
            "expected LinkBERT's release (<root>/tokcls/BC5CDR-chem_hf, ...) or one folder per "
            "task (<root>/bc5cdr-chem, ...)"
        )
    ]


def test_a_work_dir_is_held_for_the_whole_suite(tmp_path):
    """A re-run of a blurb-suite whose first run goes on (its sweep was left training after a kill
    -9 of the suite) rewrote the report with "no dataset scored". Now the suite holds its work dir
    from conversion to report (and takes its sweep along when killed: processes.run_owned); a
    second one is refused at once, naming the first."""
    import os

    from bio_roberta_core.output_dir import output_lock

    work = (tmp_path / "work").resolve()
    with output_lock(work):
        run, output = blurb_suite(
            "--data",
            tmp_path,
            "--vocab",
            tmp_path,
            "--pretrained",
            tmp_path / "x.pt",
            "--work",
            work,
        )
    assert run.returncode == 2 and "Traceback" not in output, output[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(
        f"bio-roberta blurb-suite: error: {work}: another run is writing it: pid {os.getpid()} on "
    ), line
