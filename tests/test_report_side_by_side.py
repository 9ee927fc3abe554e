"""`bio-roberta report` over several result dirs, side by side (issue 22): hand-made records for
the layout and the CSV; then a toy sweep of an imported BERT (named BioBERT by the user), of an
imported RoBERTa (named by its checkpoint, found to be RoBERTa-base by its import source), of an
imported ModernBERT (found to be ModernBERT-base by its hub download's folder) and of a tiny fairseq
RoBERTa of ours, and one report comparing them."""

import csv
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.split_check import BY_CONTENT, BY_IDS, BY_SIZES
from bio_roberta.cli import main as cli_main
from bio_roberta.conversion.finetune_bin import convert_task
from bio_roberta.finetuning.results import ResultRecordError
from bio_roberta.report import write_report
from bio_roberta.report.models import results_argument
from bio_roberta.tasks.registry import TASKS, get_task
from conftest import SAMPLE_DIR
from test_import_hf import save_hf_model
from test_report import data_manifest, write
from test_sweep import TINY
from tiny_finetune import tiny_vocab
from tiny_training import pretrain_tiny_roberta

BIN = Path(sys.executable).parent
TASKS_SWEPT = ("ncbi-disease", "chemprot")
POSITIONS = 64
# where transformers' hub cache keeps a download of answerdotai/ModernBERT-base
MODERNBERT_DOWNLOAD = "hub/models--answerdotai--ModernBERT-base/snapshots/" + "8949b9" * 6 + "ab12"


def sweep(env, pretrained: Path, vocab: Path, tasks, seeds, out: Path) -> Path:
    """convert-task of the sample files with the model's vocabulary, then `bio-roberta sweep` of
    tasks x seeds on the CPU; returns the results dir."""
    root = out / "finetune-bin"
    for task in tasks:
        convert_task(
            get_task(task), SAMPLE_DIR / "tasks" / task, vocab, root / task, max_positions=POSITIONS
        )
    results = out / "results"
    run = subprocess.run(
        [
            str(BIN / "bio-roberta"),
            "sweep",
            "--tasks",
            ",".join(tasks),
            "--seed-list",
            ",".join(map(str, seeds)),
            "--pretrained",
            str(pretrained),
            "--data-root",
            str(root),
            "--results",
            str(results),
            *TINY,
            "cpu=true",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    return results


def markdown_rows(markdown: str) -> dict[str, list[str]]:
    """report.md's table rows by their first cell (a later table's row of the same name wins)."""
    return {
        cells[0]: cells
        for line in markdown.splitlines()
        if line.startswith("| ")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }


def csv_rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """A long CSV's rows by (model, task or dataset)."""
    with path.open() as handle:
        return {
            (row["model"], row.get("task") if "dataset" not in row else row["dataset"]): row
            for row in csv.DictReader(handle)
        }


@pytest.fixture
def three_dirs(tmp_path):
    """BioBERT's runs (a user's name), an imported RoBERTa's (named by its checkpoint; its
    import manifest says it came from the hub cache's roberta-base) and ours."""
    biobert, roberta, ours = (tmp_path / name for name in ("biobert", "roberta", "ours"))
    for seed, score in {10: 0.80, 42: 0.90}.items():
        write(biobert, "ncbi-disease", seed, score, pretrained="/runs/biobert/model.pt")
    write(biobert, "chemprot", 10, 0.60, pretrained="/runs/biobert/model.pt")
    write(
        biobert,
        "chemprot",
        42,
        None,
        status="failed",
        error="FinetuneError: fairseq-train exited with status 1",
        pretrained="/runs/biobert/model.pt",
    )
    imported = tmp_path / "imported"
    imported.mkdir()
    source = "/cache/models--FacebookAI--roberta-base/snapshots/0123abc"
    (imported / "manifest.json").write_text(json.dumps({"options": {"imported_from": source}}))
    for seed, score in {10: 0.70, 42: 0.50}.items():
        write(roberta, "chemprot", seed, score, pretrained=str(imported / "model.pt"))
    for task, score in (("ncbi-disease", 0.90), ("mednli", 0.75)):
        write(ours, task, 10, score, pretrained="/runs/pm-base/checkpoint_best.pt")
    return [f"BioBERT={biobert}", str(roberta), f"ours={ours}"]


def test_models_side_by_side_each_beside_its_paper_column(three_dirs, tmp_path):
    out = tmp_path / "report"
    write_report(three_dirs, out, suite="both")
    markdown = (out / "report.md").read_text()
    assert (
        "| Task | Metric | BioBERT (median) | min-max | seeds | BioBERT (Table 2) | "
        "imported/model.pt (median) | min-max | seeds | RoBERTa-base (Table 2) | ours (median) | "
        "min-max | seeds |" in markdown
    )
    rows = markdown_rows(markdown.split("## BLURB")[0])
    paper = {task: TASKS[task].paper for task in ("ncbi-disease", "chemprot", "mednli")}
    ncbi, chemprot, mednli = paper["ncbi-disease"], paper["chemprot"], paper["mednli"]
    assert rows["NCBI-disease"][2:] == [
        "85.0*", "80.0-90.0", "2/5", f"{ncbi['BioBERT']}",
        "", "", "", f"{ncbi['RoBERTa-base']}",
        "90.0*", "90.0-90.0", "1/5",
    ]  # fmt: skip
    assert rows["ChemProt"][2:9] == ["60.0*", "60.0-60.0", "1/5", f"{chemprot['BioBERT']}"] + [
        "60.0*",
        "50.0-70.0",
        "2/5",
    ]
    assert rows["MedNLI"][2:] == [
        "", "", "", f"{mednli['BioBERT']}",
        "", "", "", f"{mednli['RoBERTa-base']}",
        "75.0*", "75.0-75.0", "1/5",
    ]  # fmt: skip
    # summary rows: each model over the tasks it has, its paper column over the same tasks
    assert rows["Seq. Lab."][1:] == [
        "85.0",
        "1/11",
        f"{ncbi['BioBERT']}",
        "",
        "0/11",
        "",
        "90.0",
        "1/11",
    ]
    biobert_all = (ncbi["BioBERT"] + chemprot["BioBERT"]) / 2
    assert rows["All"][1:] == [
        "72.5", "2/18", f"{round(biobert_all, 2):.1f}",
        "60.0", "1/18", f"{chemprot['RoBERTa-base']:.1f}",
        "82.5", "2/18",
    ]  # fmt: skip
    models = markdown.split("## Models")[1].split("\n\n")[1]
    assert f"- BioBERT: {three_dirs[0].split('=')[1]};" in models and "named BioBERT" in models
    assert (
        "paper model: RoBERTa-base (Lewis et al. (2020) Table 2, Lewis et al. (2020) Table 7, "
        "Gu et al. (2021) Table 6;"
        in models
        and "comes from /cache/models--FacebookAI--roberta-base/snapshots/0123abc)" in models
    )
    assert "- ours: " in models and "paper model: none of the papers' models" in models
    runs = markdown.split("## Runs of BioBERT")[1].split("## Runs of")[0]
    assert "### Failed runs (1)" in runs and "chemprot seed 42: FinetuneError" in runs
    assert "### Failed runs (0)" in markdown.split("## Runs of ours")[1]

    blurb = markdown_rows(markdown.split("## BLURB")[1])
    assert (
        "| BioBERT (median) | min-max | seeds | mean | BioBERT (Table 6) | split check |"
        in markdown
    )
    assert "| RoBERTa-base (Table 6) | split check | ours (median) |" in markdown
    assert blurb["BLURB score"][1:] == [
        "none: no dataset has a BLURB result", "80.29",
        "none: no dataset has a BLURB result", "76.33",
        "none: no dataset has a BLURB result",
    ]  # fmt: skip

    lewis_csv = csv_rows(out / "report.csv")
    assert list(next(iter(csv.reader((out / "report.csv").open())))) == [
        "model", "task", "domain", "metric", "median", "min", "max", "seeds", "short", "note",
        "tasks", "paper_model", "paper",
    ]  # fmt: skip
    assert lewis_csv["BioBERT", "NCBI-disease"]["median"] == "85.0"
    assert lewis_csv["BioBERT", "NCBI-disease"]["paper"] == str(ncbi["BioBERT"])
    assert lewis_csv["imported/model.pt", "ChemProt"]["paper_model"] == "RoBERTa-base"
    assert (
        lewis_csv["ours", "MedNLI"]["paper_model"] == ""
        and lewis_csv["ours", "All"]["tasks"] == "2/18"
    )
    assert ("imported/model.pt", "NCBI-disease") not in lewis_csv
    blurb_csv = csv_rows(out / "blurb.csv")
    assert blurb_csv["BioBERT", "BLURB score"]["paper"] == "80.29"
    assert blurb_csv["ours", "BLURB score"]["paper_model"] == ""
    assert (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_expected_seeds_count_for_every_model(three_dirs, tmp_path):
    write_report(three_dirs, tmp_path / "report", expected_seeds=2)
    rows = markdown_rows((tmp_path / "report" / "report.md").read_text())
    assert rows["NCBI-disease"][2:5] == ["85.0", "80.0-90.0", "2/2"]
    assert rows["ChemProt"][6:9] == ["60.0", "50.0-70.0", "2/2"]
    assert rows["MedNLI"][-3:] == ["75.0*", "75.0-75.0", "1/2"]


def test_scores_png_draws_each_model_in_its_own_colour(three_dirs, tmp_path):
    from bio_roberta.report.models import reported_models
    from bio_roberta.report.scores_figure import lewis_panels, lewis_reference, scores_figure
    from bio_roberta.report.side_by_side import model_parts

    parts = model_parts(reported_models(three_dirs))
    series = {part.name: part.results for part in parts}
    panels = lewis_panels(series, lewis_reference("BioBERT", "x", "tab:blue"))
    (ner, classification, nli) = scores_figure(panels, "title").get_axes()
    seeds = {
        collection.get_label(): tuple(collection.get_facecolor()[0])
        for collection in classification.collections
        if collection.get_label().endswith("one seed")
    }
    assert list(seeds) == ["BioBERT: one seed", "imported/model.pt: one seed"]
    assert len(set(seeds.values())) == 2
    legend = [text.get_text() for text in ner.get_legend().get_texts()]
    assert "BioBERT (Table 2)" in legend and "ours: median" in legend


def test_two_dirs_of_one_name_must_be_named(three_dirs, tmp_path):
    roberta = three_dirs[1]
    with pytest.raises(ResultRecordError, match="named imported/model.pt: name each, NAME=DIR"):
        write_report([roberta, roberta], tmp_path / "report")
    with pytest.raises(ResultRecordError, match="give a results dir, or NAME=DIR"):
        write_report(["=" + roberta, roberta], tmp_path / "report")
    odd = tmp_path / "a=b"
    odd.mkdir()
    assert results_argument(str(odd)) == (None, odd)
    assert results_argument(f"x={odd}") == ("x", odd)


@pytest.mark.parametrize("name", ["Bio\nBERT", "Bio\tBERT", "Bio\u2028BERT", "B" * 101, "B" * 5000])
def test_a_model_name_on_several_lines_or_overlong_is_refused_in_one_short_line(name, tmp_path):
    with pytest.raises(ResultRecordError, match="the model name NAME") as refused:
        results_argument(f"{name}={tmp_path}")
    message = str(refused.value)
    assert "\n" not in message and len(message) < 300


def test_a_bar_in_a_model_name_is_escaped_in_the_tables(three_dirs, tmp_path):
    named = [f"Bio|BERT{'x' * 91}={three_dirs[0].partition('=')[2]}", *three_dirs[1:]]
    write_report(named, tmp_path / "report", suite="both")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert f"Bio\\|BERT{'x' * 91} (median)" in markdown
    for table in re.findall(r"(?:^\|.*\|$\n)+", markdown, flags=re.M):
        rows = [re.split(r"(?<!\\)\|", line) for line in table.splitlines()]
        assert len({len(row) for row in rows}) == 1, table


@pytest.fixture
def two_blurb_dirs(tmp_path):
    """Two models' BLURB runs, each with its own data manifests: A's NCBI-disease split checked
    BLURB's by content and its HoC not BLURB's by sizes; B's NCBI-disease with no manifest (not
    recorded) and its PubMedQA checked BLURB's by its ids."""
    a, b = tmp_path / "a", tmp_path / "b"
    hoc = "HoC: train/dev/test abstracts 6/2/3, BLURB's split has ..."
    for root, task, metric, score, check in (
        (a, "ncbi-disease", "entity_f1", 0.80, (None, BY_CONTENT)),
        (a, "hoc-blurb", "hoc_micro_f1", 0.84, (hoc, BY_SIZES)),
        (b, "ncbi-disease", "entity_f1", 0.70, None),
        (b, "pubmedqa", "accuracy", 0.82, (None, BY_IDS)),
    ):
        manifest = check and data_manifest(
            root, task, blurb_split_check=check[0], blurb_split_checked_by=check[1]
        )
        write(root / "results", task, 10, score, metric=metric, manifest=manifest)
    return [f"A={a / 'results'}", f"B={b / 'results'}"]


def test_each_model_shows_its_own_split_check_and_the_flag_scores_both(
    two_blurb_dirs, tmp_path, capsys
):
    # (A's median, split check), (B's ...) per dataset; neither is a paper model: no paper column
    def cells(markdown, dataset):
        row = markdown_rows(markdown.split("## BLURB")[1])[dataset]
        return (row[3], row[7]), (row[8], row[12])

    out = tmp_path / "default"
    assert write_report(two_blurb_dirs, out, expected_seeds=1, suite="blurb")
    markdown = (out / "report.md").read_text()
    assert "| A (median) | min-max | seeds | mean | split check | B (median) |" in markdown
    (a_ncbi, a_check), (b_ncbi, b_check) = cells(markdown, "NCBI-disease")
    assert (a_ncbi, a_check, b_check) == ("80.00", "content hash: BLURB's", "not recorded: unknown")
    assert b_ncbi.startswith("not BLURB's: split unchecked: no data manifest")
    assert cells(markdown, "HoC")[0][1] == "sizes: not BLURB's"
    assert cells(markdown, "HoC")[0][0].startswith("not BLURB's: HoC: train/dev/test")
    assert cells(markdown, "PubMedQA")[1] == ("82.00", "ids: BLURB's")
    assert "Scored with --score-any-split" not in markdown

    out = tmp_path / "any"
    command = ["report", *two_blurb_dirs, "--out", str(out), "--suite", "blurb"]
    assert cli_main([*command, "--expected-seeds", "1", "--score-any-split"]) == 0
    markdown = (out / "report.md").read_text()
    assert cells(markdown, "NCBI-disease") == (
        ("80.00", "content hash: BLURB's"),
        ("70.00", "not recorded: unknown"),
    )
    assert cells(markdown, "HoC")[0] == ("84.00", "sizes: not BLURB's")
    score = markdown_rows(markdown.split("## BLURB")[1])["BLURB score"]
    not_comparable = "not comparable with Table 6 or BLURB's leaderboard"
    for model, named in (("A", "HoC"), ("B", "NCBI-disease")):
        cell = score[1 if model == "A" else 2]
        assert cell.startswith(f"{82.0 if model == 'A' else 76.0:.2f} (partial: 2/13 datasets")
        assert cell.endswith(f"; {not_comparable}: splits not BLURB's or unchecked: {named})")
        assert f"\n{model}: Scored with --score-any-split: {not_comparable}; " in markdown
    rows = csv_rows(out / "blurb.csv")
    assert (rows["A", "HoC"]["split_outcome"], rows["A", "HoC"]["mean"]) == ("not BLURB's", "84.0")
    assert rows["A", "HoC"]["split_why"].startswith("HoC: train/dev/test")
    b_ncbi, b_pubmedqa = rows["B", "NCBI-disease"], rows["B", "PubMedQA"]
    assert (b_ncbi["split_checked_by"], b_pubmedqa["split_outcome"]) == ("not recorded", "BLURB's")
    assert not_comparable in rows["B", "BLURB score"]["note"]

    capsys.readouterr()
    lewis = ["report", *two_blurb_dirs, "--out", str(tmp_path / "lewis"), "--score-any-split"]
    assert cli_main(lewis) == 2
    error = capsys.readouterr().err
    assert "--score-any-split scores BLURB's datasets: give --suite blurb" in error


@pytest.fixture(scope="module")
def swept(tmp_path_factory, without_parse_dependencies):
    """name -> results dir: an imported BERT, RoBERTa and ModernBERT (transformers dirs named as a
    hub download names them: its repository's name, or the hub cache's folder and snapshot), and a
    tiny RoBERTa of ours pretrained on the converted task text."""
    root = tmp_path_factory.mktemp("side-by-side")
    dirs = {}
    for family, hf_name, tasks, seeds in (
        ("bert-cased", "biobert-v1.1", TASKS_SWEPT, (1, 2)),
        ("roberta", "roberta-base", TASKS_SWEPT[1:], (1,)),
        ("modernbert", MODERNBERT_DOWNLOAD, TASKS_SWEPT[1:], (1,)),
    ):
        hf_dir = save_hf_model(root / family / hf_name, family)
        imported = root / family / "imported"
        assert cli_main(["import-hf", str(hf_dir), str(imported)]) == 0
        dirs[family] = sweep(
            without_parse_dependencies, imported / "model.pt", imported, tasks, seeds, root / family
        )
    ours = root / "ours"
    ours.mkdir()
    vocab = tiny_vocab(
        ours, " ".join((SAMPLE_DIR / "tasks" / "chemprot" / "train.tsv").read_text().split()[:2000])
    )
    convert_task(
        get_task("chemprot"),
        SAMPLE_DIR / "tasks" / "chemprot",
        vocab,
        ours / "text",
        max_positions=POSITIONS,
    )
    pretrained = pretrain_tiny_roberta(
        ours / "text" / "input0", ours / "pretrained", max_update=3, tokens_per_sample=POSITIONS
    )
    dirs["ours"] = sweep(without_parse_dependencies, pretrained, vocab, TASKS_SWEPT, (1,), ours)
    return dirs


def medians(results: Path) -> dict[str, float]:
    """Per task the median test score x100 over the records under results."""
    scores = {}
    for path in results.rglob("result.json"):
        record = json.loads(path.read_text())
        scores.setdefault(record["task"], []).append(record["test_score"])
    return {task: round(100 * statistics.median(values), 2) for task, values in scores.items()}


@pytest.mark.slow
def test_a_report_compares_imported_models_and_ours(swept, tmp_path, without_parse_dependencies):
    """Issue 22's evidence: BioBERT=DIR beside Table 2's BioBERT, the imported RoBERTa found to be
    RoBERTa-base by its import source (a folder named as its hub id's repository), ours beside
    no paper column; each model's medians its own records', summary rows per model. Issue 30's:
    an imported ModernBERT, named by the user with a name no paper uses, found to be the
    registry's ModernBERT-base by its import source (the hub cache's folder), said to have no
    published BLURB or Table 2 results, beside no paper column."""
    out = tmp_path / "report"
    run = subprocess.run(
        [
            str(BIN / "bio-roberta"),
            "report",
            f"BioBERT={swept['bert-cased']}",
            str(swept["roberta"]),
            f"ours={swept['ours']}",
            f"tiny-modernbert={swept['modernbert']}",
            "--out",
            str(out),
            "--suite",
            "both",
            "--expected-seeds",
            "2",
        ],
        capture_output=True,
        text=True,
        env=without_parse_dependencies,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    markdown = (out / "report.md").read_text()
    assert (
        "| Task | Metric | BioBERT (median) | min-max | seeds | BioBERT (Table 2) | "
        "imported/model.pt (median) | min-max | seeds | RoBERTa-base (Table 2) | ours (median) | "
        "min-max | seeds |" in markdown
    )
    assert "imported/model.pt comes from" in markdown and "roberta/roberta-base)" in markdown
    assert "| ours (median) | min-max | seeds | tiny-modernbert (median) | min-max | seeds |\n" in (
        markdown
    )
    modernbert = swept["modernbert"].parent / "imported" / "model.pt"
    assert (
        f"- tiny-modernbert: {swept['modernbert']}; pretrained {modernbert}; paper model: "
        "ModernBERT-base (no published BLURB or Table 2 results; "
        f"{modernbert} comes from {swept['modernbert'].parent / MODERNBERT_DOWNLOAD})"
    ) in markdown
    rows = csv_rows(out / "report.csv")
    names = {
        "BioBERT": "bert-cased",
        "imported/model.pt": "roberta",
        "ours": "ours",
        "tiny-modernbert": "modernbert",
    }
    for model, key in names.items():
        own = medians(swept[key])
        assert own
        for task, median in own.items():
            row = rows[model, TASKS[task].display]
            assert float(row["median"]) == median, (model, task)
            assert row["seeds"] == f"{len(list((swept[key] / task).rglob('result.json')))}/2"
            paper = TASKS[task].paper.get(row["paper_model"])
            assert (row["paper"] == str(paper)) if row["paper_model"] else row["paper"] == ""
        # the All row: the mean of this model's task medians, over its tasks
        assert rows[model, "All"]["tasks"] == f"{len(own)}/18"
        assert float(rows[model, "All"]["median"]) == pytest.approx(
            statistics.mean(own.values()), abs=0.01
        )
    for task in TASKS_SWEPT:
        row = rows["BioBERT", TASKS[task].display]
        assert (
            row["paper_model"] == "BioBERT" and float(row["paper"]) == TASKS[task].paper["BioBERT"]
        )
    assert rows["imported/model.pt", "ChemProt"]["paper_model"] == "RoBERTa-base"
    assert rows["ours", "ChemProt"]["paper_model"] == ""
    assert (
        rows["tiny-modernbert", "ChemProt"]["paper_model"],
        rows["tiny-modernbert", "All"]["paper"],
    ) == ("", "")
    assert float(rows["BioBERT", "All"]["paper"]) == pytest.approx(
        statistics.mean(TASKS[t].paper["BioBERT"] for t in TASKS_SWEPT), abs=0.01
    )
    blurb = csv_rows(out / "blurb.csv")
    assert blurb["BioBERT", "BLURB score"]["paper"] == "80.29"
    assert blurb["imported/model.pt", "BLURB score"]["paper"] == "76.33"
    assert blurb["tiny-modernbert", "BLURB score"]["paper"] == ""
    assert (out / "scores.png").stat().st_size > 0


def test_a_checkpoint_s_source_names_its_paper_model(tmp_path):
    """bio-lm's fairseq release folder (its -fairseq suffix dropped), an imported dir's config
    _name_or_path, and an unreadable import manifest named in the error."""
    from bio_roberta.finetuning.results import load_records
    from bio_roberta.report.models import paper_model_of, source_names

    release = tmp_path / "RoBERTa-base-PM-M3-Voc-fairseq" / "model.pt"
    write(tmp_path / "bio-lm", "chemprot", 10, 0.7, pretrained=str(release))
    paper, how = paper_model_of(None, load_records(tmp_path / "bio-lm"))
    assert paper.name == "Lewis et al. base" and how.endswith("RoBERTa-base-PM-M3-Voc-fairseq")
    hf_dir = tmp_path / "downloaded"
    hf_dir.mkdir()
    (hf_dir / "config.json").write_text(json.dumps({"_name_or_path": "dmis-lab/biobert-v1.1"}))
    imported = tmp_path / "imported"
    imported.mkdir()
    manifest = imported / "manifest.json"
    manifest.write_text(json.dumps({"options": {"imported_from": str(hf_dir)}}))
    assert source_names(imported / "model.pt") == ["dmis-lab/biobert-v1.1", "downloaded"]
    manifest.write_text("[")
    with pytest.raises(ResultRecordError, match=f"{manifest} .*not a JSON object"):
        source_names(imported / "model.pt")


def test_one_named_dir_is_the_one_model_report_under_that_name(three_dirs, tmp_path):
    write_report(three_dirs[:1], tmp_path / "report")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert (
        "| Task | Metric | BioBERT (median) | min-max | seeds | RoBERTa-base | BioBERT | "
        "Lewis et al. base | RoBERTa-large | Lewis et al. large |" in markdown
    )
    assert "## Models" not in markdown
