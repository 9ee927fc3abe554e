"""BLURB's suite (Gu et al. 2021, Table 6): per dataset, in Table 6's order, the median over seeds
with its spread beside Table 6's PubMedBERT and BioBERT, and the mean over runs that is the
dataset's result in the BLURB score (bio_roberta.blurb.score); then each task type's average and
the score. A dataset whose runs do not follow BLURB's split or metric (split_checks) gives the
reason instead of a score and is left out of the score, which is then marked partial; each row
says how its split was checked and what that found. With score_any_split a split not BLURB's or
unchecked is scored, and the score says it is not comparable with Table 6, naming those datasets:
completeness (partial or not) and comparability are separate statements.

The three row classes share blurb.csv: a dataset row's fields are its columns (csv_table), and a
type-average or score row fills those of them it has; a column is added by adding a field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from bio_roberta.blurb.score import BlurbScore, blurb_score, mean_over_runs, table6_results
from bio_roberta.blurb.split_check import BLURBS
from bio_roberta.blurb.suite import BLURB_DATASETS, TABLE6_BLURB_SCORES
from bio_roberta.finetuning.results import ResultRecord
from bio_roberta.report.csv_table import fraction_column, reference_columns
from bio_roberta.report.seed_results import SeedCount, TaskResult, seed_count
from bio_roberta.report.split_checks import blurb_gap
from bio_roberta.tasks.paper_models import DEFAULT_TABLE6_COLUMNS

NO_SCORE = "none: no dataset has a BLURB result"


@dataclass(frozen=True, kw_only=True)
class BlurbDatasetRow:
    """One dataset: ours (fractions; None when not scored) beside Table 6 (x100)."""

    dataset: str  # Table 6's name
    task: str  # the registry task
    type: str  # BLURB's task type
    metric: str  # BLURB's metric
    median: Optional[float] = fraction_column()
    min: Optional[float] = fraction_column()
    max: Optional[float] = fraction_column()
    mean: Optional[float] = fraction_column()  # over runs: the dataset's result in the score
    seeds: SeedCount
    short: bool  # fewer seeds (or folds) than asked
    reason: Optional[str]  # why the runs are not BLURB's (then no score), or None
    note: str  # data manifests that could not be checked
    # how the runs' split was checked (split_check.CHECK_NAMES, or "not recorded"), what that found
    # (BLURB's, not BLURB's, unknown) and why not BLURB's; None: no runs
    split_checked_by: Optional[str]
    split_outcome: Optional[str]
    split_why: Optional[str]
    table6: dict[str, float] = reference_columns(DEFAULT_TABLE6_COLUMNS)

    @property
    def split_check(self) -> str:
        """The report's split check cell, e.g. "sizes: not BLURB's"; "" without runs."""
        return f"{self.split_checked_by}: {self.split_outcome}" if self.split_outcome else ""

    @property
    def comparable(self) -> bool:
        """Its split was checked and found BLURB's."""
        return self.split_outcome == BLURBS


@dataclass(frozen=True, kw_only=True)
class BlurbTypeAverageRow:
    """One task type's average over our datasets with a result, and Table 6's over the same
    datasets (all x100)."""

    dataset: str  # the task type
    type: str = "type average"
    mean: float
    table6: dict[str, float] = reference_columns(DEFAULT_TABLE6_COLUMNS)


@dataclass(frozen=True, kw_only=True)
class BlurbScoreRow:
    """Our BLURB score (x100; None: no dataset has a result) and Table 6's printed ones; note:
    what a partial score misses, or why there is none."""

    dataset: str = "BLURB score"
    mean: Optional[float]
    note: str
    table6: dict[str, float] = reference_columns(DEFAULT_TABLE6_COLUMNS)


@dataclass(frozen=True)
class BlurbSummary:
    """The BLURB score of the datasets with a result (x100, Table 6's unit), and Table 6's columns'
    scores over the same datasets."""

    ours: BlurbScore
    table6_same_datasets: dict[str, BlurbScore]
    # each scored dataset whose split is not BLURB's or unchecked (score_any_split), Table 6's
    # order: its check and outcome, and why ("sizes: not BLURB's: ...")
    not_comparable: dict[str, str]

    @property
    def comparable(self) -> bool:
        """Every scored dataset's split was checked to be BLURB's (whether all 13 are scored is
        ours.partial's question)."""
        return not self.not_comparable


def blurb_rows(
    records: list[ResultRecord],
    results: dict[str, TaskResult],
    expected_seeds: Optional[int],
    columns: tuple[str, ...] = DEFAULT_TABLE6_COLUMNS,
    *,
    score_any_split: bool = False,
) -> list[BlurbDatasetRow]:
    """One row per BLURB dataset, Table 6's order: ours, or the reason the runs are not BLURB's;
    beside Table 6's columns of these models. score_any_split: a split not BLURB's or unchecked
    does not keep a dataset out (its metric does)."""
    rows = []
    for dataset in BLURB_DATASETS:
        runs = [r for r in records if r.task == dataset.task and r.is_scored]
        gap = blurb_gap(dataset, runs, score_any_split)
        reason, split = gap.reason, gap.split
        result = results.get(dataset.task)
        scores = list(result.seed_scores.values()) if result else []
        seeds = seed_count(dataset.task, result, expected_seeds)
        scored = bool(scores) and reason is None
        rows.append(
            BlurbDatasetRow(
                dataset=dataset.display,
                task=dataset.task,
                type=dataset.task_type,
                metric=dataset.metric,
                median=result.median if scored else None,
                min=min(scores) if scored else None,
                max=max(scores) if scored else None,
                mean=mean_over_runs(scores) if scored else None,
                seeds=seeds,
                short=seeds.short,
                reason=reason,
                note=gap.note,
                split_checked_by=split.checked_by if split else None,
                split_outcome=split.outcome if split else None,
                split_why=split.reason if split else None,
                table6={column: dataset.table6[column] for column in columns},
            )
        )
    return rows


def blurb_summary(
    rows: list[BlurbDatasetRow], columns: tuple[str, ...] = DEFAULT_TABLE6_COLUMNS
) -> Optional[BlurbSummary]:
    """The BLURB score of the rows with a result, with Table 6's columns of these models over the
    same datasets; None when no dataset has one."""
    ours = {row.task: 100 * row.mean for row in rows if row.mean is not None}
    if not ours:
        return None
    same = {
        column: blurb_score({t: v for t, v in table6_results(column).items() if t in ours})
        for column in columns
    }
    not_comparable = {
        row.dataset: f"{row.split_check}: {row.split_why}"
        for row in rows
        if row.mean is not None and not row.comparable
    }
    return BlurbSummary(blurb_score(ours), same, not_comparable)


def type_average_rows(summary: Optional[BlurbSummary]) -> list[BlurbTypeAverageRow]:
    """The task types with a result, BLURB's order."""
    if summary is None:
        return []
    return [
        BlurbTypeAverageRow(
            dataset=task_type,
            mean=average,
            table6={
                column: same.type_averages[task_type]
                for column, same in summary.table6_same_datasets.items()
            },
        )
        for task_type, average in summary.ours.type_averages.items()
    ]


def missing_text(score: BlurbScore) -> str:
    """What a partial BLURB score misses, by Table 6's names."""
    displays = {d.task: d.display for d in BLURB_DATASETS}
    return (
        f"partial: {len(BLURB_DATASETS) - len(score.missing)}/{len(BLURB_DATASETS)} datasets, "
        f"missing {', '.join(displays[t] for t in score.missing)} (compare with Table 6 over "
        "the same datasets)"
    )


NOT_COMPARABLE = "not comparable with Table 6 or BLURB's leaderboard"
# What the score line of `bio-roberta blurb-suite` and a score note name after it.
NOT_COMPARABLE_SPLITS = f"{NOT_COMPARABLE}: splits not BLURB's or unchecked"


def complete_text(task_types: int) -> str:
    """What a complete BLURB score covers."""
    count = len(BLURB_DATASETS)
    return f"complete: {count}/{count} datasets, {task_types} task types"


def score_note(summary: BlurbSummary) -> str:
    """What the BLURB score covers, and whether its splits make it comparable: two statements.
    Empty for a complete score whose every split was checked BLURB's."""
    ours = summary.ours
    if ours.partial:
        covered = missing_text(ours)
    else:
        covered = complete_text(len(ours.type_averages))
    if summary.comparable:
        return covered if ours.partial else ""
    return f"{covered}; {NOT_COMPARABLE_SPLITS}: {', '.join(summary.not_comparable)}"


def score_row(
    summary: Optional[BlurbSummary], columns: tuple[str, ...] = DEFAULT_TABLE6_COLUMNS
) -> BlurbScoreRow:
    """Our BLURB score (what it covers, whether comparable: score_note) beside the ones Table 6
    prints for these models."""
    printed = {column: TABLE6_BLURB_SCORES[column] for column in columns}
    if summary is None:
        return BlurbScoreRow(mean=None, note=NO_SCORE, table6=printed)
    return BlurbScoreRow(mean=summary.ours.score, note=score_note(summary), table6=printed)


# blurb.csv's rows: the datasets, the type averages, the BLURB score (csv_table: their fields are
# the columns)
BLURB_CSV_ROWS = (BlurbDatasetRow, BlurbTypeAverageRow, BlurbScoreRow)


def blurb_csv_rows(
    datasets: list[BlurbDatasetRow],
    summary: Optional[BlurbSummary],
    columns: tuple[str, ...] = DEFAULT_TABLE6_COLUMNS,
) -> list:
    """A model's rows of blurb.csv, beside Table 6's `columns`."""
    return [*datasets, *type_average_rows(summary), score_row(summary, columns)]
