"""Issue 21's evidence end to end: `bio-roberta blurb-suite` over toy copies of all 13 BLURB
datasets in LinkBERT's layout (tests/blurb_toy.py; real fairseq fine-tuning of a tiny RoBERTa, one
seed, a few updates each). Their splits are not BLURB's (sizes, content hash) or cannot be checked
(EBM PICO): left out of the BLURB score by default, scored with --score-any-split and then marked
not comparable with Table 6, each dataset's split check named. Completeness and comparability are
separate statements. Issue 26's: the submission dir of each dataset's chosen run's test predictions,
keyed by the release's ids, re-scores against the release files to exactly its run's result.json
and the leaderboard's numbers.

One sweep serves three runs of the suite: the root without two datasets (partial score naming
exactly them), the two added and run without the flag (no score, each dataset says why), then with
the flag (complete: 13/13 datasets, 6 task types; nothing converted or trained again)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.split_evidence import BLURB_DIGESTS, BLURB_ID_DIGESTS
from bio_roberta.blurb.suite import BLURB, BLURB_DATASETS, TASK_TYPES
from bio_roberta.conversion.finetune_bin import convert_task
from bio_roberta.finetuning.results import read_record
from bio_roberta.tasks.registry import get_task
from blurb_toy import toy_text, write_blurb_toy, write_linkbert
from test_report import blurb_markdown_rows
from tiny_finetune import POSITIONS, TINY
from tiny_training import pretrain_tiny_roberta

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
LEFT_OUT = ("ddi", "biosses")  # BIOSSES is Sentence Similarity's one dataset: a type goes too
SIZES = (8, 4, 6)
# how convert-task checks each toy split: by the digests of BLURB's files where recorded, else
# by BLURB's sizes
CHECKED_BY = {task: "content hash" for task in BLURB_DIGESTS}
CHECKED_BY.update({task: "content hash + ids" for task in BLURB_ID_DIGESTS})
UNKNOWN = {"ebm-pico": "none possible: unknown"}


def split_check(task: str) -> str:
    return UNKNOWN.get(task, f"{CHECKED_BY.get(task, 'sizes')}: not BLURB's")


def blurb_suite(*args):
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "blurb-suite", *map(str, args)], capture_output=True, text=True
    )
    return run, run.stdout + run.stderr


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory):
    """(dir, vocabulary, pretrained checkpoint): a vocabulary covering the toy files' words, so 32
    positions hold a PubMedQA question, and a tiny RoBERTa with its dictionary."""
    tmp = tmp_path_factory.mktemp("blurb_toy_model")
    from preprocess.learn_vocab import learn_vocabulary

    write_blurb_toy(tmp / "all", SIZES)
    (tmp / "corpus.txt").write_text(toy_text(tmp / "all") * 3)
    learn_vocabulary("gpt2", [tmp / "corpus.txt"], tmp / "vocab", vocab_size=1000)
    # masked-LM updates on toy NER text
    text = write_linkbert(tmp / "pretrain", "ncbi-disease", sizes=(48, 2, 2))
    convert_task(get_task("ncbi-disease"), text, tmp / "vocab", tmp / "pretrain-bin")
    pretrained = pretrain_tiny_roberta(
        tmp / "pretrain-bin" / "input0",
        tmp / "pretrained",
        max_update=3,
        tokens_per_sample=POSITIONS,
    )
    return tmp, tmp / "vocab", pretrained


def suite_args(root, work, toy_model) -> list:
    _, vocab, pretrained = toy_model
    args = ["--data", root, "--vocab", vocab, "--pretrained", pretrained, "--work", work]
    return args + ["--seeds", 1, "--max-positions", POSITIONS]


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory, toy_model):
    """{phase: (stdout, leaderboard record, report.md, result.json mtimes)} of the three runs."""
    tmp = tmp_path_factory.mktemp("blurb_toy")
    root, work = tmp / "blurb", tmp / "work"
    assert write_blurb_toy(root, SIZES, leave_out=LEFT_OUT)
    args = suite_args(root, work, toy_model)
    overrides = [*TINY, "max_update=2"]
    runs = {}

    def run(phase, *flags):
        done, output = blurb_suite(*args, *flags, *overrides)
        assert done.returncode == 0, output[-4000:]
        print(phase, next(line for line in done.stdout.splitlines() if "BLURB score" in line))
        runs[phase] = (
            output,
            json.loads((work / "leaderboard.json").read_text()),
            (work / "report" / "report.md").read_text(),
            {p: p.stat().st_mtime_ns for p in (work / "results").rglob("result.json")},
        )

    run("partial", "--score-any-split")
    for task in LEFT_OUT:
        write_linkbert(root, task, SIZES)
    run("default")
    run("complete", "--score-any-split")
    runs["dirs"] = (root, work)
    return runs


def test_two_datasets_missing_give_a_partial_score_naming_exactly_them(toy_runs):
    output, board, report, results = toy_runs["partial"]
    missing = [BLURB[task].display for task in LEFT_OUT]
    assert board["partial"] and board["missing"] == missing
    assert len(results) == 11
    assert board["task_types"]["Sentence Similarity"] is None
    assert sum(v is not None for v in board["task_types"].values()) == 5
    scored = {
        name: entry for name, entry in board["datasets"].items() if entry["score"] is not None
    }
    assert len(scored) == 11 and not set(missing) & set(scored)
    assert not board["comparable"] and board["score_any_split"]
    assert (
        f"BLURB score: {board['blurb_score']} (partial: 11/13 datasets, missing DDI, BIOSSES; "
        "not comparable with Table 6 or BLURB's leaderboard: splits not BLURB's or unchecked: "
        "BC5-chem (content hash: not BLURB's), BC5-disease (content hash: not BLURB's), "
    ) in output
    score_row = blurb_markdown_rows(report)["BLURB score"]
    assert "partial: 11/13 datasets, missing DDI, BIOSSES" in score_row


def test_without_the_flag_no_split_that_is_not_blurbs_is_scored_and_each_says_why(toy_runs):
    output, board, report, results = toy_runs["default"]
    assert len(results) == 13  # the two added datasets trained
    assert board["blurb_score"] is None and board["partial"] and not board["comparable"]
    assert not board["score_any_split"]
    lines = blurb_markdown_rows(report)
    for dataset in BLURB_DATASETS:
        entry = board["datasets"][dataset.display]
        assert entry["score"] is None and entry["runs"] == 1, dataset.task
        assert entry["split_check"]["checked_by"] == split_check(dataset.task).split(":")[0]
        assert entry["why_no_score"] == entry["split_check"]["why"], dataset.task
        assert entry["why_no_score"].startswith(f"{dataset.display}: "), dataset.task
        line = lines[dataset.display]
        assert f"| {split_check(dataset.task)} |" in line and "not BLURB's: " in line
    assert board["datasets"]["EBM PICO"]["split_check"]["outcome"] == "unknown"
    assert board["datasets"]["EBM PICO"]["why_no_score"].startswith(
        "EBM PICO: split unknown (no sizes to compare"
    )
    assert board["datasets"]["ChemProt"]["why_no_score"].startswith(
        "ChemProt: train/dev/test examples 8/4/6, BLURB's split has 18035/11268/15745"
    )
    assert (
        "BLURB score: none (no dataset scored; left out, their split or metric not BLURB's: "
        + ", ".join(d.display for d in BLURB_DATASETS)
        + " (why: report.md, leaderboard.json; --score-any-split scores a split not BLURB's))"
    ) in output
    assert "| BLURB score | none: no dataset has a BLURB result |" in lines["BLURB score"]


def test_the_flag_gives_a_complete_score_marked_not_comparable(toy_runs):
    output, board, report, results = toy_runs["complete"]
    assert results == toy_runs["default"][3]  # nothing trained again
    assert all(f"{d.task}: converted before, kept" in output for d in BLURB_DATASETS)
    assert not board["partial"] and board["missing"] == []
    assert all(board["task_types"][t] is not None for t in TASK_TYPES)
    assert all(0 <= entry["score"] <= 100 for entry in board["datasets"].values())
    assert board["score_any_split"] and not board["comparable"]
    assert set(board["not_comparable"]) == {d.display for d in BLURB_DATASETS}
    for dataset in BLURB_DATASETS:
        entry = board["datasets"][dataset.display]
        check = entry["split_check"]
        assert f"{check['checked_by']}: {check['outcome']}" == split_check(dataset.task)
        assert board["not_comparable"][dataset.display] == (
            f"{split_check(dataset.task)}: {check['why']}"
        )
    assert board["datasets"]["NCBI-disease"]["split_check"]["why"].startswith(
        "NCBI-disease: train/dev/test mentions 8/4/6, BLURB's split has 5134/787/960"
    )
    score = board["blurb_score"]
    assert (
        f"BLURB score: {score} (complete: 13/13 datasets, 6 task types; not comparable with "
        "Table 6 or BLURB's leaderboard: splits not BLURB's or unchecked: BC5-chem (content hash: "
        "not BLURB's), "
    ) in output
    assert "EBM PICO (none possible: unknown), ChemProt (sizes: not BLURB's)" in output
    assert "partial" not in output.split("BLURB score:")[1]
    lines = blurb_markdown_rows(report)
    assert lines["BLURB score"].startswith(f"| BLURB score | {score:.2f} (complete: 13/13")
    assert "not comparable with Table 6" in lines["BLURB score"]
    for dataset in BLURB_DATASETS:
        assert f"| {split_check(dataset.task)} |" in lines[dataset.display]
    assert "Scored with --score-any-split: not comparable with Table 6" in report


def test_the_submission_rescores_to_each_runs_record_and_the_leaderboard(toy_runs):
    root, work = toy_runs["dirs"]
    board = toy_runs["complete"][1]
    submission = work / "submission"
    rescored = subprocess.run(
        [str(BIN / "bio-roberta"), "rescore", submission, "--data", root],
        capture_output=True,
        text=True,
    )
    assert rescored.returncode == 0, rescored.stderr[-4000:]
    record = json.loads((submission / "rescore.json").read_text())
    assert json.loads(rescored.stdout) == record["datasets"]
    manifest = json.loads((submission / "manifest.json").read_text())
    assert manifest["without_predictions"] == {}
    assert set(record["datasets"]) == {d.display for d in BLURB_DATASETS}
    for dataset in BLURB_DATASETS:
        entry = record["datasets"][dataset.display]
        run = read_record(Path(manifest["datasets"][dataset.display]["run"]["result"]))
        assert (entry["missing"], entry["scored"]) == (0, run.test_examples), dataset.task
        assert entry["run_test_score"] == run.test_score
        published = board["datasets"][dataset.display]["score"]
        if dataset.task == "biosses":  # the run's gold scores went through float32 targets
            assert entry["score"] == pytest.approx(run.test_score, abs=1e-6)
            assert 100 * entry["score"] == pytest.approx(published, abs=0.005 + 1e-4)
        else:
            assert entry["score"] == run.test_score, dataset.task
            assert round(100 * entry["score"], 2) == published, dataset.task


# the tuned suite's datasets: one of each kind of head (token tags, a class, a number)
TUNED = ("ncbi-disease", "chemprot-blurb", "biosses")


def test_tune_picks_each_datasets_setting_by_dev_and_writes_every_settings_dev_score(
    toy_model, tmp_path
):
    """Issue 26's evidence: `blurb-suite --tune` over a 2-setting grid (the tiny batch size
    replaces BLURB's batch axis; two lrs) runs each setting into its own dirs, scores per dataset
    the setting with the best dev score and reports its test score; leaderboard.json and
    report.md hold the grid, every setting's dev score and the pick."""
    root, work = tmp_path / "blurb", tmp_path / "work"
    for task in TUNED:
        write_linkbert(root, task, SIZES)
    args = suite_args(root, work, toy_model) + ["--score-any-split", "--tune"]
    done, output = blurb_suite(*args, *TINY, "max_update=2", "hparams.lr=0.0001,0.001")
    assert done.returncode == 0, output[-4000:]
    board = json.loads((work / "leaderboard.json").read_text())
    assert board["protocol"] == "tuned on dev"
    assert board["grid"] == [
        {"lr": lr, "batch_size": 8, "max_epoch": 3, "validate_interval_updates": 4}
        for lr in (0.0001, 0.001)
    ]
    report = (work / "report" / "report.md").read_text()
    settings_table = report.split("## Hyperparameter settings")[1].split("## Failed runs")[0]
    for task in TUNED:
        records = {
            record["setting"]["lr"]: record
            for record in map(
                json.loads, map(Path.read_text, (work / "results" / task).rglob("result.json"))
            )
            if "setting" in record
        }
        assert set(records) == {0.0001, 0.001}, task  # two run dirs, neither overwritten
        entry = board["datasets"][BLURB[task].display]
        assert entry["protocol"] == "tuned on dev"
        dev = {record["setting"]["lr"]: 100 * record["valid_score"] for record in records.values()}
        by_lr = {setting["hparams"]["lr"]: setting for setting in entry["settings"].values()}
        assert {lr: s["dev"] for lr, s in by_lr.items()} == pytest.approx(dev, abs=0.005)
        best = max(dev.values())
        picked = entry["settings"][entry["picked"]]
        assert picked["dev"] == pytest.approx(best, abs=0.005), task
        if len({round(v, 6) for v in dev.values()}) == 1:  # a tie: the first name
            assert entry["picked"] == min(entry["settings"]), task
        picked_record = records[picked["hparams"]["lr"]]
        assert entry["score"] == pytest.approx(100 * picked_record["test_score"], abs=0.005)
        for label, setting in entry["settings"].items():
            assert f"| {task} | tuned on dev | {label} |" in settings_table
            # a setting's name is its run dir's
            run = Path(records[setting["hparams"]["lr"]]["log"]).parent
            assert run.parent.name == label and run.parent.parent.name == task
    # the protocol line: tuned, the one schedule each run keeps its best-dev checkpoint of, and
    # the toy lrs, which BLURB's grid does not hold
    assert "; tuned on dev; each run keeps its best-dev checkpoint of one fixed-length " in output
    assert re.search(r"BIOSSES outside BLURB's grid \(lr 0\.0+1, batch_size 8\)", output)
