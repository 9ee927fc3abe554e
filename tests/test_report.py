"""`bio-roberta report`: medians over seeds with their spread beside the paper, summary rows over
the tasks present, marks for medians over fewer seeds or folds than asked, failed runs listed.
Records here are written in the result schema by hand (the sweep test makes real ones)."""

import csv
import dataclasses
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.split_check import BY_CONTENT, BY_SIZES
from bio_roberta.blurb.suite import BLURB_DATASETS, TABLE6_BLURB_SCORES
from bio_roberta.finetuning.results import (
    EVALUATION,
    MODEL_SELECTION,
    RESULT_SCHEMA,
    SINGLE,
    ResultRecordError,
    load_records,
    run_dir,
)
from bio_roberta.report import ReportError, write_report
from bio_roberta.report.blurb import blurb_rows, blurb_summary
from bio_roberta.report.lewis import summary_rows
from bio_roberta.report.seed_results import task_results
from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta.tasks.spec import TEN_SEEDS
from bio_roberta_core.provenance import atomic_write_json, file_record

BIN = Path(sys.executable).parent
NCBI = {10: 0.80, 42: 0.90, 1234: 0.85, 12345: 0.70, 666: 0.95}
CHEMPROT = {10: 0.60, 42: 0.70}
GAD_FOLDS = {2: 0.70, 3: 0.90, 4: 0.80}


def write(
    results,
    task,
    seed,
    score,
    fold=None,
    role=SINGLE,
    status="ok",
    error=None,
    metric="m",
    manifest=None,
    pretrained="/runs/checkpoints/distilled/checkpoint_last.pt",
):
    """A result record; manifest: the data manifest's path, recorded as finetune.py records it."""
    record = {
        "schema": RESULT_SCHEMA,
        "task": task,
        "seed": seed,
        "fold": fold,
        "role": role,
        "metric": metric,
        "status": status,
        "test_score": score,
        "error": error,
        "log": f"{task}/{seed}/train.log",
        "pretrained": {"path": pretrained, "sha256": "abc"},
        "git_revision": "rev",
    }
    if manifest is not None:
        record["data"] = {"manifest": file_record(manifest)}
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
    rows = {row.task: row for row in summary_rows(by_task)}
    assert rows["Seq. Lab."].tasks == "1/11" and rows["Seq. Lab."].median == 0.85
    assert rows["Classif."].tasks == "2/7"
    assert rows["Classif."].median == pytest.approx(statistics.mean([0.65, 0.80]))
    assert rows["Classif."].paper["Lewis et al. base"] == pytest.approx((75.4 + 82.2) / 2)
    assert rows["Clinical"].tasks == "0/5" and rows["Clinical"].median is None
    assert rows["All"].tasks == "3/18"


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


def test_the_report_names_our_model_and_the_papers_apart(results, tmp_path):
    markdown = (write_report(results, tmp_path / "report")["markdown"]).read_text()
    assert (
        "| Task | Metric | distilled/checkpoint_last.pt (median) | min-max | seeds | RoBERTa-base "
        "| BioBERT | Lewis et al. base | RoBERTa-large | Lewis et al. large |" in markdown
    )
    assert "| Group | tasks present | distilled/checkpoint_last.pt | RoBERTa-base |" in markdown
    assert "Ours" not in markdown


def test_scores_png_shows_every_seed_in_one_panel_per_metric(tmp_path):
    from bio_roberta.report.lewis import lewis_results
    from bio_roberta.report.scores_figure import default_references, lewis_panels, scores_figure

    root = tmp_path / "results"
    for seed, score in {10: 0.80, 42: 0.80, 1234: 0.90}.items():
        write(root, "ncbi-disease", seed, score)
    for seed in (10, 42, 1234):
        write(root, "chemprot", seed, 0.60)  # three equal scores
    lewis = lewis_results(task_results(load_records(root)))
    lewis_reference, _ = default_references()
    panels = lewis_panels({"distilled/checkpoint_last.pt": lewis}, lewis_reference)
    figure = scores_figure(panels, "the title")
    assert figure.get_suptitle() == "the title"
    panels = figure.get_axes()
    assert [(axes.get_title(), axes.get_ylabel()) for axes in panels] == [
        ("Lewis et al. (2020) tasks: entity_f1", "entity_f1 x100"),
        ("Lewis et al. (2020) tasks: macro_f1", "macro_f1 x100"),
    ]
    for axes, scores in zip(panels, ([80.0, 80.0, 90.0], [60.0, 60.0, 60.0])):
        seeds = [
            tuple(point)
            for collection in axes.collections
            if collection.get_label() == "distilled/checkpoint_last.pt: one seed"
            for point in collection.get_offsets()
        ]
        assert sorted(y for _, y in seeds) == sorted(scores)
        assert len(set(seeds)) == 3  # equal scores side by side, none hidden
    legend = [text.get_text() for text in panels[0].get_legend().get_texts()]
    assert legend == [
        "distilled/checkpoint_last.pt: one seed",
        "distilled/checkpoint_last.pt: median",
        "Lewis et al. base (Table 2)",
    ]


def test_csv_columns_are_the_row_fields_so_a_field_is_a_column():
    """A CSV's columns are its row classes' fields, each once, then the reference columns; a
    fraction field is written x100, any float to 0.01, a field a row lacks left empty."""
    from bio_roberta.report.blurb import BlurbDatasetRow, BlurbScoreRow, BlurbTypeAverageRow
    from bio_roberta.report.csv_table import csv_columns, csv_text, fraction_column
    from bio_roberta.report.csv_table import reference_columns as references
    from bio_roberta.report.lewis import LewisSummaryRow, LewisTaskRow

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Row:
        name: str
        median: float = fraction_column()
        paper: dict = references(("A", "B"))

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Total:
        name: str
        tasks: str
        paper: dict = references(("B", "C"))

    rows = [Row(name="x", median=0.8512, paper={"A": 1.0, "B": None})]
    rows.append(Total(name="all", tasks="1/2", paper={"B": 2.3456, "C": 3.0}))
    assert csv_text([Row, Total], rows) == (
        "name,median,tasks,A,B,C\r\nx,85.12,,1.0,,\r\nall,,1/2,,2.35,3.0\r\n"
    )
    assert ",".join(csv_columns([LewisTaskRow, LewisSummaryRow])) == (
        "task,domain,metric,median,min,max,seeds,short,note,tasks,RoBERTa-base,BioBERT,"
        "Lewis et al. base,RoBERTa-large,Lewis et al. large"
    )
    assert ",".join(csv_columns([BlurbDatasetRow, BlurbTypeAverageRow, BlurbScoreRow])) == (
        "dataset,task,type,metric,median,min,max,mean,seeds,short,reason,note,split_checked_by,"
        "split_outcome,split_why,PubMedBERT,BioBERT"
    )


def test_report_errors(tmp_path):
    with pytest.raises(ResultRecordError, match="run `bio-roberta sweep` first"):
        load_records(tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "result.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(ResultRecordError, match="schema"):
        load_records(tmp_path)
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "report", str(tmp_path / "none"), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "no such results dir" in run.stderr


def data_manifest(root, task, **fields):
    """A finetune-bin manifest for task (convert-task writes blurb_split_check into it, and how it
    checked: BLURB's split by content, or another one by sizes, unless fields say)."""
    if "blurb_split_check" in fields:
        by = BY_CONTENT if fields["blurb_split_check"] is None else BY_SIZES
        fields.setdefault("blurb_split_checked_by", by)
    path = root / "finetune-bin" / task / "manifest.json"
    atomic_write_json(path, {"task": task, **fields})
    return path


def blurb_markdown_rows(markdown):
    table = markdown.split("## BLURB")[1]
    return {
        line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")
    }


@pytest.fixture
def blurb_results(tmp_path, monkeypatch):
    """Runs of some BLURB datasets: scored ones, short ones, and ones whose split or metric is not
    BLURB's. biosses is given the registry's ten seeds (its entry comes with the kinds branch)."""
    monkeypatch.setitem(
        TASKS,
        "biosses",
        dataclasses.replace(get_task("mednli"), name="biosses", paper={}, seeds=TEN_SEEDS),
    )
    root = tmp_path / "results"
    # convert-task found BLURB's split (issue 21: without a manifest a split is unchecked)
    checked = {
        task: data_manifest(tmp_path, task, blurb_split_check=None)
        for task in ("ncbi-disease", "bc5cdr-chem", "biosses", "gad-blurb", "pubmedqa")
    }
    for seed, score in NCBI.items():
        write(
            root, "ncbi-disease", seed, score, metric="entity_f1", manifest=checked["ncbi-disease"]
        )
    for seed, score in {10: 0.90, 42: 0.94, 1234: 0.92}.items():
        write(root, "bc5cdr-chem", seed, score, metric="entity_f1", manifest=checked["bc5cdr-chem"])
    for seed, score in zip(TEN_SEEDS, (0.80, 0.90, 0.85, 0.88, 0.70, 0.95, 0.86, 0.84, 0.83, 0.89)):
        write(root, "biosses", seed, score, metric="pearson", manifest=checked["biosses"])
    for seed, score in {10: 0.81, 42: 0.83}.items():
        # GAD's F1 = BLURB's micro-F1
        write(root, "gad-blurb", seed, score, metric="binary_f1", manifest=checked["gad-blurb"])
    for seed, score in {10: 0.50, 42: 0.60, 1234: 0.58}.items():
        write(root, "pubmedqa", seed, score, metric="accuracy", manifest=checked["pubmedqa"])
    write(root, "chemprot-blurb", 10, 0.70, metric="macro_f1")  # Lewis et al.'s metric
    write(root, "chemprot", 10, 0.70, metric="macro_f1")  # Lewis et al.'s ChemProt and HOC
    write(root, "hoc", 10, 0.80, metric="hoc_abstract_f1")
    write(root, "ddi", 10, 0.80, metric="micro_f1")  # no data manifest: split unchecked
    hoc = data_manifest(
        tmp_path, "hoc-blurb", blurb_split_check="HoC: train/dev/test abstracts 1/2/3"
    )
    write(root, "hoc-blurb", 10, 0.80, metric="hoc_micro_f1", manifest=hoc)
    no_check = data_manifest(tmp_path, "bioasq")  # written before convert-task checked splits
    write(root, "bioasq", 10, 0.80, metric="accuracy", manifest=no_check)
    return root


def test_blurb_rows_reasons_and_partial_score(blurb_results):
    records = load_records(blurb_results)
    rows = {row.task: row for row in blurb_rows(records, task_results(records), None)}
    assert [row.dataset for row in rows.values()] == [d.display for d in BLURB_DATASETS]
    ncbi = rows["ncbi-disease"]
    assert (ncbi.median, ncbi.min, ncbi.max, str(ncbi.seeds)) == (0.85, 0.70, 0.95, "5/5")
    assert ncbi.mean == pytest.approx(statistics.fmean(NCBI.values())) and not ncbi.short
    assert str(rows["bc5cdr-chem"].seeds) == "3/5" and rows["bc5cdr-chem"].short
    assert str(rows["biosses"].seeds) == "10/10" and rows["biosses"].median == pytest.approx(0.855)
    assert rows["gad-blurb"].mean == pytest.approx(0.82) and rows["gad-blurb"].reason is None
    assert rows["pubmedqa"].reason is None and rows["pubmedqa"].mean == pytest.approx(0.56)
    assert rows["chemprot-blurb"].reason.startswith("scored by macro_f1 here, by micro_f1 in BLURB")
    assert rows["ddi"].reason.startswith("split unchecked: no data manifest")
    assert rows["hoc-blurb"].reason == "HoC: train/dev/test abstracts 1/2/3"
    assert rows["bioasq"].reason.startswith("split unchecked: no data manifest")
    for task in ("chemprot-blurb", "ddi", "hoc-blurb", "bioasq"):
        assert rows[task].median is None and rows[task].mean is None
    assert str(rows["jnlpba"].seeds) == "0/5" and rows["jnlpba"].reason is None

    ours = blurb_summary(list(rows.values())).ours
    scored = {t: 100 * rows[t].mean for t in ("ncbi-disease", "bc5cdr-chem", "gad-blurb")}
    scored |= {t: 100 * rows[t].mean for t in ("biosses", "pubmedqa")}
    ner = (scored["ncbi-disease"] + scored["bc5cdr-chem"]) / 2
    by_hand = (ner + scored["gad-blurb"] + scored["biosses"] + scored["pubmedqa"]) / 4
    assert ours.score == pytest.approx(by_hand) and ours.partial
    assert set(ours.missing) == {d.task for d in BLURB_DATASETS} - set(scored)


def test_report_suite_blurb_files(blurb_results, tmp_path):
    out = tmp_path / "report"
    paths = write_report(blurb_results, out, suite="blurb")
    assert set(paths) == {"markdown", "blurb_csv", "png"}
    markdown = (out / "report.md").read_text()
    assert "Lewis et al. (2020) Table 2" not in markdown and not (out / "report.csv").exists()
    lines = blurb_markdown_rows(markdown)
    assert (
        "| NCBI-disease | NER | entity_f1 | 85.00 | 70.00-95.00 | 5/5 | 84.00 | 87.82 | 89.13 |"
        in (lines["NCBI-disease"])
    )
    assert "| 92.00* | 90.00-94.00 | 3/5 |" in lines["BC5-chem"]
    assert "| not BLURB's: HoC: train/dev/test abstracts 1/2/3 |  | 1/5 |  |" in lines["HoC"]
    assert "| no runs |  | 0/5 |  | 80.06 | 79.35 |" in lines["JNLPBA"]
    assert "| not BLURB's: split unchecked: no data manifest" in lines["DDI"]
    score = lines["BLURB score"]
    assert (
        "(partial: 5/13 datasets, missing BC5-disease, BC2GM, JNLPBA, EBM PICO, ChemProt, DDI, "
        in (score)
    )
    assert score.endswith(
        "HoC, BioASQ (compare with Table 6 over the same datasets)) | 81.10 | 80.29 |"
    )
    # the split check column: how each split was checked and what that found
    assert lines["NCBI-disease"].endswith("| 87.82 | 89.13 | content hash: BLURB's |")
    assert lines["HoC"].endswith("| sizes: not BLURB's |")
    assert lines["DDI"].endswith("| not recorded: unknown |")
    assert lines["JNLPBA"].endswith("| 80.06 | 79.35 |  |")
    assert "| NER | 88.00 |" in lines["NER"] and "PICO" not in lines
    assert "| Table 6 over the same datasets | |" in markdown
    rows = {row["dataset"]: row for row in csv.DictReader((out / "blurb.csv").open())}
    assert rows["NCBI-disease"]["mean"] == "84.0" and rows["BC5-chem"]["short"] == "True"
    assert rows["HoC"]["reason"] == "HoC: train/dev/test abstracts 1/2/3"
    assert rows["BLURB score"]["note"].startswith("partial: 5/13 datasets")
    assert rows["BLURB score"]["PubMedBERT"] == "81.1" and rows["NER"]["type"] == "type average"
    assert (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table6_pubmedbert_results_give_81_10_through_the_report(
    tmp_path, without_parse_dependencies
):
    """Every dataset's runs average to Table 6's PubMedBERT result, every split checked as BLURB's
    by its manifest: the report's BLURB score is Table 6's 81.10, not partial."""
    root = tmp_path / "results"
    for dataset in BLURB_DATASETS:
        manifest = data_manifest(tmp_path, dataset.task, blurb_split_check=None)
        value = dataset.table6["PubMedBERT"] / 100
        for seed, spread in ((10, -0.01), (42, 0.0), (1234, 0.01)):
            write(
                root, dataset.task, seed, value + spread, metric=dataset.metric, manifest=manifest
            )
    out = tmp_path / "report"
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "report", str(root), "--out", str(out), "--suite", "blurb"],
        capture_output=True,
        text=True,
        env=without_parse_dependencies,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = blurb_markdown_rows((out / "report.md").read_text())
    printed = TABLE6_BLURB_SCORES["PubMedBERT"]
    assert lines["BLURB score"].startswith(
        f"| BLURB score | {printed:.2f} | {printed:.2f} | 80.29 |"
    )
    assert "| 87.82* | 86.82-88.82 | 3/5 | 87.82 | 87.82 | 89.13 |" in lines["NCBI-disease"]
    rows = {row["dataset"]: row for row in csv.DictReader((out / "blurb.csv").open())}
    assert float(rows["BLURB score"]["mean"]) == printed and rows["BLURB score"]["note"] == ""


def test_report_suite_both_holds_both_tables(blurb_results, tmp_path):
    lewis = write_report(blurb_results, tmp_path / "lewis")
    both = write_report(blurb_results, tmp_path / "both", suite="both")
    assert set(both) == {"markdown", "csv", "blurb_csv", "png"}
    lewis_md, both_md = lewis["markdown"].read_text(), both["markdown"].read_text()
    assert both_md.startswith(
        lewis_md.split("\n## Hyperparameter settings")[0] + "\n## BLURB (Gu et al. 2021)"
    )
    assert lewis["csv"].read_text() == both["csv"].read_text()
    lewis_table = lewis_md.split("\n## Hyperparameter settings")[0]
    lewis_tasks = {line.split("|")[1].strip() for line in lewis_table.splitlines() if "| " in line}
    assert {"NCBI-disease", "ChemProt", "HOC"} <= lewis_tasks
    assert not {"BIOSSES", "GAD", "PubMedQA", "gad-blurb", "biosses"} & lewis_tasks


def test_unreadable_or_changed_manifests(blurb_results, tmp_path):
    manifest = tmp_path / "finetune-bin" / "pubmedqa" / "manifest.json"
    manifest.write_text("{not json")
    write(blurb_results, "pubmedqa", 10, 0.5, metric="accuracy", manifest=manifest)
    with pytest.raises(
        ReportError,
        match=r"pubmedqa/manifest.json \(data manifest of .*pubmedqa/seed10/result.json\): not ",
    ):
        write_report(blurb_results, tmp_path / "out", suite="blurb")
    atomic_write_json(manifest, {"blurb_split_check": 3})
    write(blurb_results, "pubmedqa", 10, 0.5, metric="accuracy", manifest=manifest)
    with pytest.raises(ReportError, match="blurb_split_check 3 is neither null nor a reason"):
        write_report(blurb_results, tmp_path / "out", suite="blurb")
    atomic_write_json(manifest, {"blurb_split_check": None})
    write(blurb_results, "pubmedqa", 10, 0.5, metric="accuracy", manifest=manifest)
    manifest.write_text(json.dumps({"blurb_split_check": None, "changed": True}))
    records = load_records(blurb_results)
    row = next(r for r in blurb_rows(records, task_results(records), None) if r.task == "pubmedqa")
    assert "gone or changed since the run: split unchecked" in row.note
    assert row.reason.startswith("split unchecked")  # unknown, never BLURB's (issue 21)


def test_report_dir_is_replaced_whole_and_an_out_file_is_refused(results, tmp_path):
    out = tmp_path / "report"
    report = [str(BIN / "bio-roberta"), "report", str(results), "--out"]
    both = subprocess.run([*report, str(out), "--suite", "both"], capture_output=True, text=True)
    assert both.returncode == 0, both.stderr[-2000:]
    assert (out / "blurb.csv").is_file()
    # a Lewis report in its place: no blurb.csv of the earlier report stays beside it
    lewis = subprocess.run([*report, str(out)], capture_output=True, text=True)
    assert lewis.returncode == 0, lewis.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["report.csv", "report.md", "scores.png"]
    a_file = subprocess.run([*report, str(out / "report.md")], capture_output=True, text=True)
    assert a_file.returncode == 2 and "Traceback" not in a_file.stderr
    assert a_file.stderr.strip().splitlines() == [
        (
            f"bio-roberta report: error: {(out / 'report.md').resolve()}: exists and is not a "
            "directory; pass a directory for --out"
        )
    ]


def report_cli(results, out):
    return subprocess.run(
        [str(BIN / "bio-roberta"), "report", str(results), "--out", str(out)],
        capture_output=True,
        text=True,
    )


def test_broken_records_are_one_line_errors_naming_the_file(results, tmp_path):
    path = run_dir(results, "ncbi-disease", 10) / "result.json"
    good = json.loads(path.read_text())
    broken = {
        b"[1, 2]": "a JSON list, not a result record (an object)",
        json.dumps({k: v for k, v in good.items() if k != "seed"}).encode(): (
            "no seed: not a whole result record"
        ),
        json.dumps({**good, "test_score": "0.8"}).encode(): (
            "status ok but test_score '0.8' is not a number"
        ),
        json.dumps({**good, "test_score": None}).encode(): (
            "status ok but test_score None is not a number"
        ),
        json.dumps({**good, "test_score": 87.5}).encode(): (
            "test_score 87.5 is outside [-1, 1], the range of a fraction (score_unit unset: "
            "fractions); give its score_unit"
        ),
        b'{"schema": "bio-roberta/result/1", "task": "caf\xe9"}': (
            "not UTF-8 ('utf-8' codec can't decode byte 0xe9 in position 47: invalid "
            "continuation byte); not a result record"
        ),
        json.dumps({**good, "task": "ncbi_disease"}).encode(): (
            "task 'ncbi_disease' is not a registry task (bio-roberta convert-task --help lists "
            "them); a task of your own: pass its --task-file; else fix the record or move it out"
        ),
        json.dumps({**good, "seed": "ten"}).encode(): "seed 'ten' is not an integer",
        json.dumps({**good, "fold": 1.5}).encode(): "fold 1.5 is not an integer",
    }
    for data, reason in broken.items():
        path.write_bytes(data)
        run = report_cli(results, tmp_path / "out")
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
        assert run.stderr.strip() == f"bio-roberta report: error: {path}: {reason}"
    path.unlink()
    odd = run_dir(results, "ncbi-disease", 11) / "result.json"  # beside seed 10's
    odd.parent.mkdir(parents=True)
    for make, what in (
        (lambda: odd.mkdir(), "a directory"),
        (
            lambda: odd.symlink_to(tmp_path / "gone.json"),
            f"a dangling symlink (to {tmp_path / 'gone.json'})",
        ),
    ):
        make()
        run = report_cli(results, tmp_path / "out")
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
        assert run.stderr.strip() == (
            f"bio-roberta report: error: {odd}: {what}, not a result record; remove it or "
            "move it out of the results dir"
        )
        odd.rmdir() if odd.is_dir() and not odd.is_symlink() else odd.unlink()


def test_declared_percentages_nan_scores_and_a_second_record_of_a_run(results, tmp_path):
    path = run_dir(results, "ncbi-disease", 10) / "result.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "test_score": 87.5, "score_unit": "percent"}))
    nan = run_dir(results, "chemprot", 42) / "result.json"
    nan.write_text(json.dumps({**json.loads(nan.read_text()), "test_score": float("nan")}))
    by_task = task_results(load_records(results))
    assert by_task["ncbi-disease"].seed_scores[10] == 0.875
    assert by_task["chemprot"].seed_scores == {10: 0.60}
    run = report_cli(results, tmp_path / "out")
    assert run.returncode == 0, run.stderr[-3000:]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert (
        "- chemprot seed 42: test_score is NaN: the metric is undefined on its predictions (all "
        "equal, or NaN)"
    ) in markdown
    assert "8750" not in markdown and not re.search(r"\bnan\b", markdown)

    copy = results / "old" / "ncbi-disease" / "seed10" / "result.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(path.read_text())
    with pytest.raises(ResultRecordError) as error:
        load_records(results)
    assert str(error.value) == (
        f"{copy}: a second record of ncbi-disease seed 10 (the first: {path}); move one out of "
        f"{results}"
    )


def test_own_tasks_are_reported_as_theirs_not_as_the_papers(tmp_path, monkeypatch):
    """Issue 43: a report of task-file tasks only titled its panel "Lewis et al. (2020) tasks",
    showed five empty paper columns and 0/18 summary rows, and zoomed a one-seed panel to a
    tenth of a point."""
    from bio_roberta.report.scores_figure import lewis_panels, scores_figure
    from bio_roberta.tasks.registry import DECLARED
    from bio_roberta.tasks.task_file import TASK_FILES_ENV, declare_task_files
    from task_file_data import conll_ner

    monkeypatch.setenv(TASK_FILES_ENV, "")
    saved = dict(DECLARED)
    try:
        (spec,) = declare_task_files([conll_ner(tmp_path / "ner")])
        root = tmp_path / "results"
        write(root, spec.name, 10, 0.039)
        paths = write_report(root, tmp_path / "report")
        (panel,) = lewis_panels({"ours": task_results(load_records(root))}, {})
    finally:
        DECLARED.clear()
        DECLARED.update(saved)
    markdown = paths["markdown"].read_text()
    assert "Tasks of your own (task files)" in markdown
    assert "Lewis et al. (2020) Table 2" not in markdown and "0/18" not in markdown
    assert "| my-ner |  | entity_f1 | 3.9* | 3.9-3.9 | 1/5 |" in markdown.splitlines()
    rows = list(csv.DictReader(paths["csv"].open()))
    assert [row["task"] for row in rows] == ["my-ner"]

    assert panel.title == "Your own tasks (task files): entity_f1"
    figure = scores_figure([panel], "t")
    low, high = figure.axes[0].get_ylim()
    assert low == 0 and high >= 10 and figure.axes[0].get_title() == panel.title
