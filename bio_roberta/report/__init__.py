"""The median report of a fine-tuning sweep: Lewis et al.'s Table 2 layout (paper §5.2), BLURB's
Table 6 layout (Gu et al. 2021), or both, from the same result records; write_report puts the
parts together, one module each:

- seed_results: per task the seed scores (a cross-validation task's seed score is the median over
  its evaluation folds, bio_roberta.finetune), the seeds asked, and the model's name: the
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
  logs beside it), all in the output dir.

A median over fewer seeds (or folds) than asked is marked with '*'; failed runs are listed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from bio_roberta.figures import figure_png
from bio_roberta.report.blurb import (
    BlurbDatasetRow,
    BlurbScoreRow,
    BlurbTypeAverageRow,
    blurb_rows,
    blurb_summary,
    score_row,
    type_average_rows,
)
from bio_roberta.report.csv_table import csv_text
from bio_roberta.report.curves import training_curves
from bio_roberta.report.errors import ReportError
from bio_roberta.report.lewis import (
    LewisSummaryRow,
    LewisTaskRow,
    lewis_results,
    summary_rows,
    task_rows,
)
from bio_roberta.report.markdown import blurb_lines, lewis_lines, markdown
from bio_roberta.report.scores_figure import (
    blurb_panels,
    blurb_score_line,
    lewis_panels,
    scores_figure,
)
from bio_roberta.report.seed_results import model_name, task_results
from bio_roberta.results import load_records
from bio_roberta.suites import BLURB, BOTH, LEWIS, SUITES
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
    results_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    expected_seeds: Optional[int] = None,
    suite: str = LEWIS,
    score_any_split: bool = False,
) -> dict[str, Path]:
    """report.md, and report.csv (Lewis) and/or blurb.csv (BLURB), and scores.png of the records
    under results_dir for a suite (bio_roberta.suites.SUITES); returns their paths.
    expected_seeds: the first N of each task's seeds were asked (None: all of them).
    score_any_split: score BLURB datasets whose split is not BLURB's or unchecked (the score is
    then marked not comparable with Table 6, naming them)."""
    if suite not in SUITES:
        raise ReportError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    records = load_records(results_dir)
    results = task_results(records)
    out_dir = Path(out_dir)
    texts, sections = {}, []
    ours = model_name(records)
    panels, title = [], [f"{ours}: test score x100 of every fine-tuning seed, per task and metric"]
    if suite in (LEWIS, BOTH):
        lewis = lewis_results(results)
        rows, summaries = task_rows(lewis, expected_seeds), summary_rows(lewis)
        sections.append(lewis_lines(rows, summaries, ours))
        panels += lewis_panels(lewis)
        texts["csv"] = csv_text([LewisTaskRow, LewisSummaryRow], [*rows, *summaries])
    if suite in (BLURB, BOTH):
        datasets = blurb_rows(records, results, expected_seeds, score_any_split)
        summary = blurb_summary(datasets)
        sections.append(blurb_lines(datasets, summary, ours, score_any_split))
        panels += blurb_panels(datasets, results)
        title.append(blurb_score_line(ours, summary))
        texts["blurb_csv"] = csv_text(
            [BlurbDatasetRow, BlurbTypeAverageRow, BlurbScoreRow],
            [*datasets, *type_average_rows(summary), score_row(summary)],
        )
    curves_section, curves = training_curves(records, REPORT_FILES["curves"])
    texts["markdown"] = markdown(sections, Path(results_dir), records, curves_section)
    images = {"png": figure_png(scores_figure(panels, ours, "\n".join(title)))}
    if curves is not None:
        images["curves"] = curves
    paths = {key: out_dir / REPORT_FILES[key] for key in [*texts, *images]}
    with new_output_dir(out_dir, REPORT_FILE) as build:
        for key, text in texts.items():
            atomic_write_text(build.path / REPORT_FILES[key], text)
        for key, image in images.items():
            atomic_write_bytes(build.path / REPORT_FILES[key], image)
    return paths
