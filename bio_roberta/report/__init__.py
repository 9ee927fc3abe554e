"""The median report of a fine-tuning sweep: Lewis et al.'s Table 2 layout (paper §5.2), BLURB's
Table 6 layout (Gu et al. 2021), or both, from the same result records; write_report puts the
parts together, one module each:

- settings: per task its runs' hyperparameter settings; with several (a grid), the one whose dev
  score is best is the only one scored (BLURB's protocol), else the one (untuned);
- seed_results: per task the seed scores (a cross-validation task's seed score is the median over
  its evaluation folds, bio_roberta.finetuning.job), the seeds asked, and the model's name: the
  pretrained checkpoint its runs fine-tuned, the paper's own models being "Lewis et al.
  base/large", so that the two are not confused;
- lewis: per task the median over seeds with its spread beside Table 2, and the summary rows;
- blurb: per dataset the same beside Table 6, the type averages and the BLURB score
  (bio_roberta.blurb.score); split_checks: why a dataset's runs are not BLURB's (metric, or the
  data manifest's blurb_split_check and how it was checked), which keeps it out of the score
  unless --score-any-split scores a split not BLURB's (then marked not comparable with Table 6);
- markdown (report.md), csv_table (report.csv for Lewis, blurb.csv for BLURB: the rows'
  dataclass fields are the columns), scores_figure (scores.png: every seed's score per task or
  dataset, one panel per suite and metric, seeds with equal scores side by side) and curves
  (training_curves.png: loss against updates of the pretrained checkpoint, from the TensorBoard
  logs beside it), all in the output dir;
- models: the model of each results dir (NAME=DIR or DIR) and the paper model it is, by its name
  or its checkpoint's source; side_by_side: several models' tables, one column group per model
  beside its own paper column (long CSVs, one colour per model in scores.png).

A median over fewer seeds (or folds) than asked is marked with '*'; failed runs are listed.
"""

from __future__ import annotations

import os
import re
from itertools import cycle
from pathlib import Path
from typing import Optional, Sequence

from bio_roberta.blurb.suites import BLURB, BOTH, LEWIS, SUITES
from bio_roberta.report.blurb import BLURB_CSV_ROWS, blurb_csv_rows, blurb_rows, blurb_summary
from bio_roberta.report.csv_table import csv_text, long_csv_text
from bio_roberta.report.curves import training_curves
from bio_roberta.report.errors import ReportError
from bio_roberta.report.figures import figure_png
from bio_roberta.report.lewis import (
    LEWIS_CSV_ROWS,
    is_own_task,
    lewis_results,
    summary_rows,
    task_rows,
)
from bio_roberta.report.markdown import blurb_lines, lewis_lines, markdown, own_task_lines
from bio_roberta.report.models import ReportedModel, reported_models
from bio_roberta.report.scores_figure import (
    MODEL_COLOURS,
    blurb_panels,
    blurb_score_line,
    default_references,
    lewis_panels,
    lewis_reference,
    scores_figure,
    table6_reference,
)
from bio_roberta.report.seed_results import task_results
from bio_roberta.report.side_by_side import (
    blurb_parts,
    blurb_side_by_side_lines,
    lewis_parts,
    lewis_side_by_side_lines,
    model_parts,
    models_lines,
    runs_lines,
)
from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import atomic_write_bytes, atomic_write_text

# The files of a report dir, by key of write_report's result: the dir is replaced whole.
REPORT_FILES = {
    "markdown": "report.md",
    "csv": "report.csv",
    "blurb_csv": "blurb.csv",
    "png": "scores.png",
    "curves": "training_curves.png",
}
REPORT_FILE = re.compile("^(" + "|".join(map(re.escape, REPORT_FILES.values())) + ")$")


def write_report(
    results: str | os.PathLike | Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    expected_seeds: Optional[int] = None,
    suite: str = LEWIS,
    score_any_split: bool = False,
) -> dict[str, Path]:
    """report.md, and report.csv (Lewis) and/or blurb.csv (BLURB), and scores.png of the records
    under the results dirs for a suite (bio_roberta.blurb.suites.SUITES); returns their paths.
    results: a results dir, or several, each a dir or NAME=DIR (models.py): one gives the
    one-model report, several the side-by-side report (side_by_side.py). expected_seeds: the
    first N of each task's seeds were asked (None: all of them). score_any_split: score BLURB
    datasets whose split is not BLURB's or unchecked, every model's (the score is then marked not
    comparable with Table 6, naming them)."""
    if suite not in SUITES:
        raise ReportError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    arguments = [results] if isinstance(results, (str, os.PathLike)) else list(results)
    models = reported_models([os.fspath(argument) for argument in arguments])
    if len(models) == 1:
        texts, images = one_model_files(models[0], expected_seeds, suite, score_any_split)
    else:
        texts, images = side_by_side_files(models, expected_seeds, suite, score_any_split)
    out_dir = Path(out_dir)
    paths = {key: out_dir / REPORT_FILES[key] for key in [*texts, *images]}
    with new_output_dir(out_dir, REPORT_FILE) as build:
        for key, text in texts.items():
            atomic_write_text(build.path / REPORT_FILES[key], text)
        for key, image in images.items():
            atomic_write_bytes(build.path / REPORT_FILES[key], image)
    return paths


def one_model_files(
    model: ReportedModel, expected_seeds: Optional[int], suite: str, score_any_split: bool = False
) -> tuple[dict[str, str], dict[str, bytes]]:
    """The texts and images of one model's report, by REPORT_FILES key: beside the papers'
    default columns (paper_models.DEFAULT_LEWIS_COLUMNS, DEFAULT_TABLE6_COLUMNS)."""
    records = model.scored  # each task's scored setting (settings.py)
    results = task_results(records)
    texts, sections = {}, []
    ours = model.name
    lewis_references, table6_references = default_references()
    panels, title = [], [f"{ours}: test score x100 of every fine-tuning seed, per task and metric"]
    if suite in (LEWIS, BOTH):
        lewis = lewis_results(results)
        paper = {name: result for name, result in lewis.items() if not is_own_task(name)}
        own = {name: result for name, result in lewis.items() if is_own_task(name)}
        rows, own_rows = task_rows(paper, expected_seeds), task_rows(own, expected_seeds)
        # summary rows of Lewis et al.'s groups only where one of their tasks ran (not 0/18)
        summaries = summary_rows(paper) if paper or not own else []
        if paper or not own:
            sections.append(lewis_lines(rows, summaries, ours))
        if own:
            sections.append(own_task_lines(own_rows, ours))
        panels += lewis_panels({ours: lewis}, lewis_references)
        texts["csv"] = csv_text(LEWIS_CSV_ROWS, [*rows, *own_rows, *summaries])
    if suite in (BLURB, BOTH):
        datasets = blurb_rows(records, results, expected_seeds, score_any_split=score_any_split)
        summary = blurb_summary(datasets)
        sections.append(blurb_lines(datasets, summary, ours, score_any_split))
        panels += blurb_panels({ours: datasets}, {ours: results}, table6_references)
        title.append(blurb_score_line({ours: summary}))
        texts["blurb_csv"] = csv_text(BLURB_CSV_ROWS, blurb_csv_rows(datasets, summary))
    curves_section, curves = training_curves(model.records, REPORT_FILES["curves"])
    texts["markdown"] = markdown(
        sections, model.results_dir, model.records, curves_section, model.settings
    )
    images = {"png": figure_png(scores_figure(panels, "\n".join(title)))}
    if curves is not None:
        images["curves"] = curves
    return texts, images


def side_by_side_files(
    models: list[ReportedModel],
    expected_seeds: Optional[int],
    suite: str,
    score_any_split: bool = False,
) -> tuple[dict[str, str], dict[str, bytes]]:
    """The texts and images of several models' report, by REPORT_FILES key (side_by_side.py);
    score_any_split applies to every model."""
    parts = model_parts(models)
    names = ", ".join(part.name for part in parts)
    texts, sections, panels = {}, [models_lines(parts)], []
    title = [f"{names}: test score x100 of every fine-tuning seed, per task and metric"]
    colours = dict(zip((part.name for part in parts), cycle(MODEL_COLOURS)))
    if suite in (LEWIS, BOTH):
        lewis = lewis_parts(parts, expected_seeds)
        sections.append(lewis_side_by_side_lines(lewis))
        references = {}
        for part in lewis:
            for column in part.part.lewis_columns:
                references.update(lewis_reference(column, "x", colours[part.part.name]))
        series = {part.part.name: lewis_results(part.part.results) for part in lewis}
        panels += lewis_panels(series, references)
        texts["csv"] = long_csv_text(
            LEWIS_CSV_ROWS,
            {part.part.name: [*part.rows.values(), *part.summaries] for part in lewis},
        )
    if suite in (BLURB, BOTH):
        blurb = blurb_parts(parts, expected_seeds, score_any_split)
        sections.append(blurb_side_by_side_lines(blurb, score_any_split))
        references = {}
        for part in blurb:
            for column in part.part.table6_columns:
                references.update(table6_reference(column, "x", colours[part.part.name]))
        panels += blurb_panels(
            {part.part.name: part.rows for part in blurb},
            {part.part.name: part.part.results for part in blurb},
            references,
        )
        papers = tuple(c for part in blurb for c in part.part.table6_columns)
        title.append(blurb_score_line({p.part.name: p.summary for p in blurb}, papers))
        texts["blurb_csv"] = long_csv_text(
            BLURB_CSV_ROWS,
            {
                part.part.name: blurb_csv_rows(part.rows, part.summary, part.part.table6_columns)
                for part in blurb
            },
        )
    records = [record for model in models for record in model.records]
    curves_section, curves = training_curves(records, REPORT_FILES["curves"])
    lines = [f"# Fine-tuning report: {names} side by side"]
    for section in [*sections, *(runs_lines(part) for part in parts), curves_section]:
        lines += ["", *section]
    texts["markdown"] = "\n".join(lines)
    images = {"png": figure_png(scores_figure(panels, "\n".join(title)))}
    if curves is not None:
        images["curves"] = curves
    return texts, images
