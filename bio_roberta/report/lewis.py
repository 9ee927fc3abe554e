"""Lewis et al.'s suite (paper §5.2, Table 2): per task the median test score over seeds with its
spread (min-max) and the seeds done of those asked, beside the paper's Table 2 columns; summary
rows (Seq. Lab., Classif., PubMed, Clinical, All) are means of the task medians over the tasks
present, and say how many of the group's tasks that is (the paper columns of a summary row are
averaged over the same tasks). The rows' fields are report.csv's columns (csv_table)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

from bio_roberta.blurb.suite import BLURB_DATASETS
from bio_roberta.blurb.suites import lewis_tasks
from bio_roberta.report.csv_table import fraction_column, reference_columns
from bio_roberta.report.seed_results import SeedCount, TaskResult, seed_count
from bio_roberta.tasks.paper_models import DEFAULT_LEWIS_COLUMNS
from bio_roberta.tasks.registry import TASKS, find_task, summary_groups


@dataclass(frozen=True, kw_only=True)
class LewisTaskRow:
    """One task: ours (fractions) beside Table 2 (x100)."""

    task: str  # the registry's display name
    domain: str
    metric: str
    median: float = fraction_column()
    min: float = fraction_column()
    max: float = fraction_column()
    seeds: SeedCount
    short: bool  # a median over fewer seeds (or folds) than asked
    note: str  # the seeds whose score is a median over fewer folds than asked
    paper: dict[str, Optional[float]] = reference_columns(DEFAULT_LEWIS_COLUMNS)


@dataclass(frozen=True, kw_only=True)
class LewisSummaryRow:
    """One group of tasks: the mean of the task medians over the tasks present, and Table 2's
    columns averaged over the same tasks (None: none present)."""

    task: str  # the group's name
    tasks: str  # present/in the group
    median: Optional[float] = fraction_column()
    paper: dict[str, Optional[float]] = reference_columns(DEFAULT_LEWIS_COLUMNS)


# report.csv's rows: the tasks, then the groups (csv_table: their fields are the columns)
LEWIS_CSV_ROWS = (LewisTaskRow, LewisSummaryRow)


def lewis_results(results: dict[str, TaskResult]) -> dict[str, TaskResult]:
    """The tasks of Lewis et al.'s table: registry tasks with Table 2 numbers, and names that are
    neither registry nor BLURB tasks (listed, so no record goes unreported)."""
    lewis, blurb = lewis_tasks(), {d.task for d in BLURB_DATASETS}
    return {
        name: result
        for name, result in results.items()
        if name in lewis or (name not in TASKS and name not in blurb)
    }


def is_own_task(name: str) -> bool:
    """A task of the user's (a task file's, or a name no registry has): no paper reports it, so
    its row has no paper columns and no summary row averages it."""
    spec = find_task(name)
    return spec is None or spec.declaration is not None


def task_rows(
    results: dict[str, TaskResult],
    expected_seeds: Optional[int],
    columns: tuple[str, ...] = DEFAULT_LEWIS_COLUMNS,
) -> list[LewisTaskRow]:
    """One row per task of results, in their order, beside the paper models' columns."""
    rows = []
    for name, result in results.items():
        spec = find_task(name)
        scores = list(result.seed_scores.values())
        seeds = seed_count(name, result, expected_seeds)
        rows.append(
            LewisTaskRow(
                task=spec.display if spec else name,
                domain=spec.domain if spec else "",
                metric=spec.metric if spec else "",
                median=result.median,
                min=min(scores),
                max=max(scores),
                seeds=seeds,
                short=seeds.short,
                note="; ".join(f"seed {s}: {n}" for s, n in sorted(result.short_folds.items())),
                paper={column: spec.paper.get(column) if spec else None for column in columns},
            )
        )
    return rows


def summary_rows(
    results: dict[str, TaskResult], columns: tuple[str, ...] = DEFAULT_LEWIS_COLUMNS
) -> list[LewisSummaryRow]:
    """One row per group of Lewis et al.'s tasks (registry.summary_groups), in its order; the
    paper models' columns averaged over the tasks present."""
    lewis = lewis_tasks()
    rows = []
    for group, members in summary_groups().items():
        members = [name for name in members if name in lewis]
        present = [name for name in members if name in results]
        rows.append(
            LewisSummaryRow(
                task=group,
                tasks=f"{len(present)}/{len(members)}",
                median=statistics.mean(results[n].median for n in present) if present else None,
                paper={
                    column: (
                        round(statistics.mean(TASKS[n].paper[column] for n in present), 2)
                        if present
                        else None
                    )
                    for column in columns
                },
            )
        )
    return rows
