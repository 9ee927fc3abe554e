"""The BLURB report's split-check column, --score-any-split and leaderboard.json's `comparable`
(issue 21, item 2): a split that is not BLURB's, or could not be checked, stays out of the BLURB
score by default; with the flag every dataset whose runs follow BLURB's metric is scored and the
score is marked not comparable with Table 6, naming each such dataset and why. No check possible,
or none recorded, is unknown, never a pass. Records and data manifests are written by hand."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.split_check import (
    BY_CONTENT,
    BY_IDS,
    BY_NOTHING,
    BY_SIZES,
    SplitCheck,
    check_blurb_split,
    split_digests,
)
from bio_roberta.blurb.split_evidence import BLURB_DIGESTS, UNPROVEN
from bio_roberta.blurb.suite import BLURB
from bio_roberta.blurb_run.run import (
    convert_all,
    dataset_folders,
    report,
    score_line,
    unproven_line,
)
from bio_roberta.readers.blurb_ids import blurb_id_lists
from bio_roberta.readers.source_files import BlurbSplit
from bio_roberta.report import ReportError
from blurb_toy import toy_text, write_linkbert
from test_blurb_split_content import swapped, task_data
from test_report import blurb_markdown_rows, data_manifest, write
from tiny_finetune import tiny_vocab

BIN = Path(sys.executable).parent
# what convert-task recorded before issue 26 for a split of BLURB's sizes
OLDER_BY_SIZES = "sizes: BLURB's, each number's source named in bio_roberta/blurb/suite.py"
GAD_UNKNOWN = "GAD: split unknown (sizes equal BLURB's, which cannot prove it: ...)"
SCORES = {
    "ncbi-disease": 0.80,
    "ebm-pico": 0.70,
    "chemprot-blurb": 0.60,
    "ddi": 0.75,
    "gad-blurb": 0.82,
    "pubmedqa": 0.82,
    "hoc-blurb": 0.84,
    "bioasq": 0.90,
}
# each dataset's split check and outcome as the table's column shows it
COLUMN = {
    "NCBI-disease": "content hash: BLURB's",
    "PubMedQA": "ids: BLURB's",
    "GAD": "none possible: unknown",
    "EBM PICO": "none possible: unknown",
    "HoC": "sizes: not BLURB's",
    "BioASQ": "not recorded: unknown",
    "DDI": "not recorded: unknown",
    "ChemProt": "not recorded: unknown",
}


@pytest.fixture
def work(tmp_path):
    """A blurb-suite work dir whose results hold one run of eight datasets, their manifests:
    BLURB's split by content (NCBI-disease) and by its ids (PubMedQA); BLURB's sizes, which
    cannot prove it (GAD, issue 26); no check possible, though the manifest says null (EBM PICO);
    not BLURB's by sizes (HoC); a manifest from before the check was recorded (BioASQ); no
    manifest (DDI); Lewis et al.'s metric (ChemProt)."""
    results = tmp_path / "work" / "results"
    manifests = {
        "ncbi-disease": {"blurb_split_check": None, "blurb_split_checked_by": BY_CONTENT},
        "pubmedqa": {"blurb_split_check": None, "blurb_split_checked_by": BY_IDS},
        "gad-blurb": {"blurb_split_check": GAD_UNKNOWN, "blurb_split_checked_by": BY_NOTHING},
        "ebm-pico": {"blurb_split_check": None, "blurb_split_checked_by": BY_NOTHING},
        "hoc-blurb": {
            "blurb_split_check": "HoC: train/dev/test abstracts 6/2/3, BLURB's split has ...",
            "blurb_split_checked_by": BY_SIZES,
        },
        "bioasq": {"blurb_split_check": None, "blurb_split_checked_by": None},
    }
    metrics = {"ncbi-disease": "entity_f1", "ebm-pico": "pico_macro_word_f1", "ddi": "micro_f1"}
    metrics.update({"gad-blurb": "binary_f1", "hoc-blurb": "hoc_micro_f1", "bioasq": "accuracy"})
    metrics["pubmedqa"] = "accuracy"
    metrics["chemprot-blurb"] = "macro_f1"
    for task, score in SCORES.items():
        manifest = data_manifest(tmp_path, task, **manifests[task]) if task in manifests else None
        write(results, task, 10, score, metric=metrics[task], manifest=manifest)
    return tmp_path / "work"


def test_by_default_only_splits_checked_blurbs_are_scored_and_that_is_comparable(work):
    board = report(work, "tiny", 1)
    scored = {name for name, entry in board["datasets"].items() if entry["score"] is not None}
    assert scored == {"NCBI-disease", "PubMedQA"}
    assert board["comparable"] and not board["score_any_split"] and board["partial"]
    assert board["not_comparable"] == {}
    datasets = board["datasets"]
    for name, column in COLUMN.items():
        check = datasets[name]["split_check"]
        assert f"{check['checked_by']}: {check['outcome']}" == column, name
    # no check possible is never a pass, whatever blurb_split_check says
    assert datasets["EBM PICO"]["why_no_score"] == "EBM PICO: split unchecked"
    assert datasets["BioASQ"]["why_no_score"].startswith(
        "BioASQ: the data manifest does not say how its split was checked"
    )
    assert datasets["DDI"]["why_no_score"].startswith("split unchecked: no data manifest")
    assert datasets["ChemProt"]["why_no_score"].startswith("scored by macro_f1 here")
    assert datasets["BC2GM"]["split_check"] is None and datasets["BC2GM"]["why_no_score"] == (
        "no runs"
    )
    lines = blurb_markdown_rows((work / "report" / "report.md").read_text())
    for name, column in COLUMN.items():
        assert f"| {column} |" in lines[name], name
    assert "| BLURB score | 81.00 (partial: 2/13 datasets, missing BC5-chem" in lines["BLURB score"]
    assert "not comparable" not in lines["BLURB score"].split("; ")[-1]
    assert score_line(board).startswith("BLURB score: 81.0 (partial: 2/13 datasets, missing ")
    assert score_line(board).endswith(
        "; every scored split checked BLURB's; untuned (one setting); each run keeps its "
        "best-dev checkpoint of one fixed-length schedule (its max_epoch), not BLURB's search "
        "over 2-60 epochs (--tune-epochs); DDI outside BLURB's grid (lr 2e-05))"
    )
    assert board["protocol"] == "untuned (one setting)" and board["grid"] is None
    # issue 42: the schedule a run's epochs come from, and DDI's registry lr outside the grid
    assert board["schedule"].startswith("each run keeps its best-dev checkpoint of one fixed")
    assert board["outside_grid"] == {"DDI": "lr 2e-05"}


def test_score_any_split_scores_every_blurb_metric_and_names_each_split_not_blurbs(work):
    board = report(work, "tiny", 1, score_any_split=True)
    scored = {name for name, entry in board["datasets"].items() if entry["score"] is not None}
    assert scored == {"NCBI-disease", "PubMedQA", "GAD", "EBM PICO", "HoC", "BioASQ", "DDI"}
    assert board["datasets"]["ChemProt"]["why_no_score"].startswith("scored by macro_f1 here")
    assert board["score_any_split"] and not board["comparable"] and board["partial"]
    assert list(board["not_comparable"]) == ["EBM PICO", "DDI", "GAD", "HoC", "BioASQ"]
    assert board["not_comparable"]["GAD"] == f"none possible: unknown: {GAD_UNKNOWN}"
    assert board["not_comparable"]["HoC"] == (
        "sizes: not BLURB's: HoC: train/dev/test abstracts 6/2/3, BLURB's split has ..."
    )
    assert board["not_comparable"]["EBM PICO"] == (
        "none possible: unknown: EBM PICO: split unchecked"
    )
    markdown = (work / "report" / "report.md").read_text()
    lines = blurb_markdown_rows(markdown)
    assert "| 84.00 |" in lines["HoC"] and "| sizes: not BLURB's |" in lines["HoC"]
    assert "not comparable with Table 6 or BLURB's leaderboard" in lines["BLURB score"]
    assert (
        "Scored with --score-any-split: not comparable with Table 6 or BLURB's leaderboard; "
        "splits not BLURB's or unchecked: EBM PICO (none possible: unknown: EBM PICO: split "
        "unchecked); DDI (not recorded: unknown: split unchecked: no data manifest"
    ) in markdown
    rows = {row["dataset"]: row for row in csv.DictReader((work / "report" / "blurb.csv").open())}
    hoc = rows["HoC"]
    assert (hoc["split_checked_by"], hoc["split_outcome"], hoc["mean"]) == (
        "sizes",
        "not BLURB's",
        "84.0",
    )
    assert hoc["split_why"].startswith("HoC: train/dev/test abstracts 6/2/3")
    assert "not comparable with Table 6" in rows["BLURB score"]["note"]
    line = score_line(board)
    assert line.startswith(f"BLURB score: {board['blurb_score']} (partial: 7/13 datasets, missing")
    assert line.endswith(
        "; not comparable with Table 6 or BLURB's leaderboard: splits not BLURB's or unchecked: "
        "EBM PICO (none possible: unknown), DDI (not recorded: unknown), GAD (none possible: "
        "unknown), HoC (sizes: not BLURB's), BioASQ (not recorded: unknown) (why: report.md, "
        "leaderboard.json); untuned (one setting); each run keeps its best-dev checkpoint of one "
        "fixed-length schedule (its max_epoch), not BLURB's search over 2-60 epochs "
        "(--tune-epochs); DDI outside BLURB's grid (lr 2e-05))"
    )


def test_the_report_command_takes_the_flag(work, tmp_path):
    command = [str(BIN / "bio-roberta"), "report", str(work / "results"), "--suite", "blurb"]
    for flags in ([], ["--score-any-split"]):
        out = tmp_path / f"report{len(flags)}"
        run = subprocess.run([*command, "--out", str(out), *flags], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        markdown = (out / "report.md").read_text()
        score = blurb_markdown_rows(markdown)["BLURB score"]
        assert ("not comparable with Table 6" in score) == bool(flags)
        assert ("| 84.00 |" in blurb_markdown_rows(markdown)["HoC"]) == bool(flags)
    lewis = subprocess.run(
        [*command[:3], "--out", str(tmp_path / "lewis"), "--score-any-split"],
        capture_output=True,
        text=True,
    )
    assert lewis.returncode == 2 and lewis.stderr.strip().endswith(
        "--score-any-split scores BLURB's datasets: give --suite blurb or --suite both"
    )


def test_a_manifest_whose_check_is_not_a_string_is_refused_naming_it(work, tmp_path):
    manifest = data_manifest(
        tmp_path, "ncbi-disease", blurb_split_check=None, blurb_split_checked_by=3
    )
    write(work / "results", "ncbi-disease", 42, 0.8, metric="entity_f1", manifest=manifest)
    with pytest.raises(ReportError, match=rf"{manifest} \(data manifest of .*result.json\): "):
        report(work, "tiny", 1)


def test_re_splits_with_blurbs_sizes_are_never_scored_as_comparable(tmp_path, monkeypatch):
    """Issue 26: PubMedQA's fold 1 (by its ids: these texts are ours, so its digests are set
    aside), a HoC with 50 abstracts swapped between train and test (its unswapped abstracts'
    digests registered as BLURB's, which they then pass) and BIOSSES as our reader places BLUE's
    pairs (by BLURB's own pair numbers), each with BLURB's sizes, recorded as convert-task
    records their checks, and a GAD whose manifest, written before issue 26, calls its sizes
    BLURB's: none is scored by default, and --score-any-split names each as not comparable."""
    results = tmp_path / "work" / "results"
    monkeypatch.delitem(BLURB_DIGESTS, "pubmedqa")
    pubmedqa = swapped(blurb_id_lists("pubmedqa"), "valid", "train", 50)
    pmids = [str(10_000_000 + i) for i in range(1852)]
    blurbs_hoc = {"train": pmids[:1295], "valid": pmids[1295:1481], "test": pmids[1481:]}
    registered = split_digests(task_data("hoc-blurb", blurbs_hoc, True))
    monkeypatch.setitem(BLURB_DIGESTS, "hoc-blurb", tuple(registered.values()))
    assert check_blurb_split(
        BLURB["hoc-blurb"], task_data("hoc-blurb", blurbs_hoc, True)
    ) == SplitCheck(None, BY_CONTENT)
    hoc = swapped(blurbs_hoc, "train", "test", 50)
    biosses = task_data("biosses", blurb_id_lists("biosses"))
    for split in biosses.splits.values():
        split.blurb = BlurbSplit(placed_by="BLURB's pair numbers")
    checks = {
        "pubmedqa": check_blurb_split(BLURB["pubmedqa"], task_data("pubmedqa", pubmedqa)),
        "hoc-blurb": check_blurb_split(BLURB["hoc-blurb"], task_data("hoc-blurb", hoc, True)),
        "biosses": check_blurb_split(BLURB["biosses"], biosses),
        "gad-blurb": SplitCheck(None, OLDER_BY_SIZES),
    }
    metrics = {"pubmedqa": "accuracy", "hoc-blurb": "hoc_micro_f1", "biosses": "pearson"}
    metrics["gad-blurb"] = "binary_f1"
    for task, check in checks.items():
        manifest = data_manifest(
            tmp_path, task, blurb_split_check=check.reason, blurb_split_checked_by=check.checked_by
        )
        write(results, task, 10, 0.8, metric=metrics[task], manifest=manifest)
    board = report(tmp_path / "work", "tiny", 1)
    assert all(entry["score"] is None for entry in board["datasets"].values())
    outcomes = {
        name: board["datasets"][name]["split_check"]["outcome"]
        for name in ("PubMedQA", "HoC", "BIOSSES", "GAD")
    }
    assert outcomes == {
        "PubMedQA": "not BLURB's",
        "HoC": "not BLURB's",
        "BIOSSES": "unknown",
        "GAD": "unknown",
    }
    board = report(tmp_path / "work", "tiny", 1, score_any_split=True)
    assert not board["comparable"]
    assert list(board["not_comparable"]) == ["GAD", "BIOSSES", "HoC", "PubMedQA"]
    assert board["not_comparable"]["PubMedQA"].startswith(
        "ids: not BLURB's: PubMedQA: train lacks 50 of BLURB's 450 ids"
    )
    assert board["not_comparable"]["HoC"] == (
        "content hash: not BLURB's: HoC: train/test hold other examples than BLURB's (same sizes)"
    )


def test_blurb_suite_names_each_split_it_cannot_prove_once(tmp_path, capsys):
    """Issue 42: converting, blurb-suite's line per dataset says only "split unknown" for a split
    no check can prove (EBM PICO by its file names, issue 26), and one line then names each such
    dataset, why, and --score-any-split as the route to a number; a split found not BLURB's (a toy
    GAD, by its sizes) is no unknown."""
    root = tmp_path / "blurb"
    write_linkbert(root, "ebm-pico")
    write_linkbert(root, "gad-blurb")
    found, _missing = dataset_folders(root)
    vocab = tiny_vocab(tmp_path, toy_text(root))
    manifests = convert_all(found, vocab, tmp_path / "work", 64)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("bio-roberta blurb-suite: ebm-pico: {") and lines[0].endswith(
        " (split unknown)"
    )
    assert "GAD: train/dev/test examples 6/2/3, BLURB's split has 4261/535/534" in lines[1]
    line = unproven_line(manifests, score_any_split=False)
    assert line.startswith(
        "bio-roberta blurb-suite: split unknown, so left out of the BLURB score "
        "(--score-any-split scores them, marked not comparable with Table 6): EBM PICO: split "
        "unknown (no sizes to compare"
    )
    assert line.count("EBM PICO: ") == 1 and "GAD" not in line
    assert f"what would prove it: {UNPROVEN['ebm-pico']}" in line
    assert unproven_line(manifests, score_any_split=True).startswith(
        "bio-roberta blurb-suite: split unknown, scored as --score-any-split asks"
    )
    assert unproven_line({"gad-blurb": manifests["gad-blurb"]}, score_any_split=False) is None
