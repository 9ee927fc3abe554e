"""The median report of a fine-tuning sweep: Lewis et al.'s Table 2 layout (paper §5.2), BLURB's
Table 6 layout (Gu et al. 2021), or both, from the same result records.

Lewis: per task the median test score over seeds with its spread (min-max) and the number of
seeds, beside the paper's Table 2 columns; summary rows (Seq. Lab., Classif., PubMed, Clinical,
All) are means of the task medians over the tasks present, and say how many of the group's tasks
that is (the paper columns of a summary row are averaged over the same tasks). A cross-validation
task's seed score is the median over its evaluation folds (bio_roberta.finetune). A median over
fewer seeds (or folds) than asked is marked with '*', failed runs are listed.

BLURB: per dataset the same median and spread beside Table 6's PubMedBERT and BioBERT, and the
BLURB score (bio_roberta.blurb.score) of the mean over runs; a dataset whose runs do not follow
BLURB's split or metric (bio_roberta.blurb.suite, the data manifest's blurb_split_check) shows
why instead of a score and is left out of the score, which is then marked partial.

The model reported is named by the pretrained checkpoint its runs fine-tuned (model_name), the
paper's own models as "Lewis et al. base/large", so that the two are not confused.

Written as report.md, report.csv (Lewis), blurb.csv (BLURB), scores.png (every seed's score
per task or dataset, one panel per suite and metric, seeds with equal scores side by side) and
training_curves.png (loss against updates of the pretrained checkpoint, from the TensorBoard logs
beside it) in the output dir.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from bio_roberta.blurb.score import blurb_score, mean_over_runs, table6_results
from bio_roberta.blurb.suite import (
    BLURB_DATASETS,
    NO_CHECK,
    TABLE6_BLURB_SCORES,
    TASK_TYPES,
    BlurbDataset,
    metric_gap,
    split_gap,
)
from bio_roberta.figures import figure_png, pyplot
from bio_roberta.results import (
    FAILED,
    SINGLE,
    STARTED,
    ResultRecord,
    ResultRecordError,
    load_records,
    unfinished_text,
)
from bio_roberta.suites import BLURB, BOTH, LEWIS, SUITES, lewis_tasks
from bio_roberta.tasks.paper_models import DEFAULT_LEWIS_COLUMNS as PAPER_COLUMNS
from bio_roberta.tasks.paper_models import DEFAULT_TABLE6_COLUMNS as TABLE6_COLUMNS
from bio_roberta.tasks.paper_models import LEWIS_BASE
from bio_roberta.tasks.registry import DEFAULT_SEEDS, TASKS, summary_groups
from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import atomic_write_bytes, atomic_write_text, sha256_file

SHORT = "*"
# The files of a report dir, by key of write_report's result: the dir is replaced whole.
REPORT_FILES = {
    "markdown": "report.md",
    "csv": "report.csv",
    "blurb_csv": "blurb.csv",
    "png": "scores.png",
    "curves": "training_curves.png",
}
REPORT_FILE = re.compile("^(" + "|".join(map(re.escape, REPORT_FILES.values())) + ")$")


class ReportError(ResultRecordError):
    """A report that cannot be made: a data manifest its runs name is unreadable (names the
    file). Its base, ResultRecordError, is a results dir with no readable records."""


@dataclass
class TaskResult:
    task: str
    seed_scores: dict[int, float] = field(default_factory=dict)  # fractions
    short_folds: dict[int, str] = field(default_factory=dict)  # seed -> "7/9 folds"

    @property
    def median(self) -> float:
        return statistics.median(self.seed_scores.values())


def task_results(records: list[ResultRecord]) -> dict[str, TaskResult]:
    """Seed scores per task, in registry order: a run's test score, or the median of its folds."""
    folds: dict[tuple[str, int], list[float]] = {}
    results: dict[str, TaskResult] = {}
    for record in records:
        if not record.is_scored:
            continue
        result = results.setdefault(record.task, TaskResult(record.task))
        if record.role == SINGLE:
            result.seed_scores[record.seed] = record.test_score
        else:
            folds.setdefault((record.task, record.seed), []).append(record.test_score)
    for (task, seed), scores in folds.items():
        results[task].seed_scores[seed] = statistics.median(scores)
        expected = len(TASKS[task].evaluation_folds) if task in TASKS else len(scores)
        if len(scores) < expected:
            results[task].short_folds[seed] = f"{len(scores)}/{expected} folds"
    order = list(TASKS)
    return dict(
        sorted(
            results.items(),
            key=lambda item: order.index(item[0]) if item[0] in order else len(order),
        )
    )


def percent(value: Optional[float]) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def seeds_asked(task: str, expected_seeds: Optional[int]) -> int:
    """How many seeds a task was asked: the first expected_seeds of its TaskSpec.seeds (all of
    them when None), as `bio-roberta sweep --seeds` picks them."""
    seeds = TASKS[task].seeds if task in TASKS else DEFAULT_SEEDS
    return len(seeds[:expected_seeds])


def lewis_results(results: dict[str, TaskResult]) -> dict[str, TaskResult]:
    """The tasks of Lewis et al.'s table: registry tasks with Table 2 numbers, and names that are
    neither registry nor BLURB tasks (listed, so no record goes unreported)."""
    lewis, blurb = lewis_tasks(), {d.task for d in BLURB_DATASETS}
    return {
        name: result
        for name, result in results.items()
        if name in lewis or (name not in TASKS and name not in blurb)
    }


def task_rows(
    results: dict[str, TaskResult], expected_seeds: Optional[int]
) -> list[dict[str, Any]]:
    rows = []
    for name, result in results.items():
        spec = TASKS.get(name)
        scores = list(result.seed_scores.values())
        asked = seeds_asked(name, expected_seeds)
        short = len(scores) < asked or bool(result.short_folds)
        rows.append(
            {
                "task": spec.display if spec else name,
                "domain": spec.domain if spec else "",
                "metric": spec.metric if spec else "",
                "median": result.median,
                "min": min(scores),
                "max": max(scores),
                "seeds": f"{len(scores)}/{asked}",
                "short": short,
                "note": "; ".join(f"seed {s}: {n}" for s, n in sorted(result.short_folds.items())),
                **{column: (spec.paper[column] if spec else None) for column in PAPER_COLUMNS},
            }
        )
    return rows


def summary_rows(results: dict[str, TaskResult]) -> list[dict[str, Any]]:
    lewis = lewis_tasks()
    rows = []
    for group, members in summary_groups().items():
        members = [name for name in members if name in lewis]
        present = [name for name in members if name in results]
        row = {
            "task": group,
            "tasks": f"{len(present)}/{len(members)}",
            "median": statistics.mean(results[n].median for n in present) if present else None,
        }
        for column in PAPER_COLUMNS:
            row[column] = (
                round(statistics.mean(TASKS[n].paper[column] for n in present), 2)
                if present
                else None
            )
        rows.append(row)
    return rows


def manifest_split_check(record: ResultRecord):
    """The blurb_split_check of the data manifest a run trained on (bio-roberta convert-task
    writes it: None = BLURB's split, else how it differs), NO_CHECK when the manifest holds none,
    or a note when it is gone or changed since the run."""
    manifest = (record.data or {}).get("manifest")
    if not manifest:
        return NO_CHECK, ""
    path = Path(manifest["path"])
    if not path.is_file() or sha256_file(path) != manifest.get("sha256"):
        return NO_CHECK, f"data manifest {path} gone or changed since the run: split unchecked"
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ReportError(f"{path} (data manifest of {record.path}): not JSON ({error})") from None
    check = data.get("blurb_split_check", NO_CHECK)
    if check is not NO_CHECK and check is not None and not isinstance(check, str):
        raise ReportError(
            f"{path} (data manifest of {record.path}): blurb_split_check {check!r} is "
            "neither null nor a reason string"
        )
    return check, ""


def blurb_gap(dataset: BlurbDataset, records: list[ResultRecord]) -> tuple[Optional[str], str]:
    """Why a dataset's runs (or, without runs, its registry task) are not BLURB's, or None; and a
    note on manifests that could not be checked."""
    metrics = {record.metric for record in records} or (
        {TASKS[dataset.task].metric} if dataset.task in TASKS else set()
    )
    gaps = [gap for metric in sorted(metrics) if (gap := metric_gap(dataset, metric))]
    # one data manifest is read once, however many runs trained on it
    by_manifest = {}
    for record in records:
        manifest = json.dumps((record.data or {}).get("manifest"), sort_keys=True)
        if manifest not in by_manifest:
            by_manifest[manifest] = manifest_split_check(record)
    checks = [check for check, _ in by_manifest.values()]
    notes = [note for _, note in by_manifest.values()]
    reasons = sorted({check for check in checks if isinstance(check, str)})
    if reasons:
        gaps += reasons
    elif records and NO_CHECK in checks:
        gaps += [gap] if (gap := split_gap(dataset)) else []
    return ("; ".join(gaps) or None), "; ".join(sorted(set(filter(None, notes))))


def blurb_rows(
    records: list[ResultRecord],
    results: dict[str, TaskResult],
    expected_seeds: Optional[int],
) -> list[dict[str, Any]]:
    """One row per BLURB dataset, Table 6's order: ours, or the reason the runs are not BLURB's."""
    rows = []
    for dataset in BLURB_DATASETS:
        runs = [r for r in records if r.task == dataset.task and r.is_scored]
        reason, note = blurb_gap(dataset, runs)
        result = results.get(dataset.task)
        scores = list(result.seed_scores.values()) if result else []
        asked = seeds_asked(dataset.task, expected_seeds)
        scored = bool(scores) and reason is None
        rows.append(
            {
                "dataset": dataset.display,
                "task": dataset.task,
                "type": dataset.task_type,
                "metric": dataset.metric,
                "median": result.median if scored else None,
                "min": min(scores) if scored else None,
                "max": max(scores) if scored else None,
                "mean": mean_over_runs(scores) if scored else None,
                "done": len(scores),
                "seeds": f"{len(scores)}/{asked}",
                "short": len(scores) < asked or bool(result and result.short_folds),
                "reason": reason,
                "note": note,
                **{column: dataset.table6[column] for column in TABLE6_COLUMNS},
            }
        )
    return rows


def blurb_summary(rows: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The BLURB score of the datasets with a result (x100, Table 6's unit), with Table 6's
    columns over the same datasets; None when no dataset has one."""
    ours = {row["task"]: 100 * row["mean"] for row in rows if row["mean"] is not None}
    if not ours:
        return None
    same = {
        column: blurb_score({t: v for t, v in table6_results(column).items() if t in ours})
        for column in TABLE6_COLUMNS
    }
    return {"ours": blurb_score(ours), "table6_same_datasets": same}


def failed_runs(records: list[ResultRecord]) -> list[ResultRecord]:
    return [r for r in records if r.status == FAILED]


def unfinished_lines(records: list[ResultRecord]) -> list[str]:
    """The runs whose record says they started and nothing more (results.STARTED); none: no
    lines."""
    unfinished = [r for r in records if r.status == STARTED]
    if not unfinished:
        return []
    lines = [f"## Unfinished runs ({len(unfinished)})", ""]
    for record in unfinished:
        lines.append(f"- {record.run_name}: {unfinished_text(record.timings, record.log)}")
    return lines


def paper_cells(row: dict[str, Any], columns, digits: int) -> str:
    return " | ".join("" if row[c] is None else f"{row[c]:.{digits}f}" for c in columns)


def pretrained_paths(records: list[ResultRecord]) -> list[Path]:
    """The pretrained checkpoints the runs fine-tuned."""
    return [Path(p) for p in sorted({(r.pretrained or {}).get("path") for r in records} - {None})]


def model_name(records: list[ResultRecord]) -> str:
    """What the report calls the model it reports: the pretrained checkpoint the runs fine-tuned,
    by its folder and file name (e.g. distilled/checkpoint_last.pt); "ours" when no record names
    one."""
    return " + ".join(str(Path(*p.parts[-2:])) for p in pretrained_paths(records)) or "ours"


def training_curves(records: list[ResultRecord]) -> tuple[list[str], Optional[bytes]]:
    """The report's section on the pretrained checkpoints' training curves, and their PNG (None
    when no checkpoint has TensorBoard logs beside it: bio_roberta/training_curves.py)."""
    from bio_roberta.training_curves import LOGDIR, curves_figure

    runs = [path.parent for path in pretrained_paths(records)]
    logged = [run for run in runs if (run / LOGDIR).is_dir()]
    lines = ["## Training curves", ""]
    if not logged:
        where = ", ".join(str(run / LOGDIR) for run in runs) or "no pretrained checkpoint recorded"
        return lines + [f"none: no TensorBoard logs ({where})"], None
    lines.append(
        f"`{REPORT_FILES['curves']}`: loss and learning rate against updates of "
        f"{', '.join(map(str, logged))}"
    )
    return lines, figure_png(curves_figure(logged))


def lewis_lines(rows, summaries, ours: str) -> list[str]:
    asked = ", ".join(sorted({row["seeds"].split("/")[1] for row in rows}, key=int)) or "-"
    paper = " | ".join(PAPER_COLUMNS)
    lines = [
        (
            f"Test scores x100 of {ours} (the checkpoint these runs fine-tuned), median over "
            f"seeds (asked: {asked}); spread = min-max over seeds. `{SHORT}` marks a median over "
            "fewer seeds (or folds) than asked. The other columns are Lewis et al. (2020) Table 2, "
            "their own models named Lewis et al. base and large."
        ),
        "",
        f"| Task | Metric | {ours} (median) | min-max | seeds | {paper} |",
        "|---|---|---|---|---|" + "---|" * len(PAPER_COLUMNS),
    ]
    for row in rows:
        mark = SHORT if row["short"] else ""
        note = f" ({row['note']})" if row["note"] else ""
        lines.append(
            f"| {row['task']} | {row['metric']} | {percent(row['median'])}{mark} | "
            f"{percent(row['min'])}-{percent(row['max'])} | {row['seeds']}{note} | "
            f"{paper_cells(row, PAPER_COLUMNS, 1)} |"
        )
    lines += [
        "",
        (
            "Summary rows: mean of the task medians over the tasks present (paper "
            "columns over the same tasks)."
        ),
        "",
        f"| Group | tasks present | {ours} | {paper} |",
        "|---|---|---|" + "---|" * len(PAPER_COLUMNS),
    ]
    for row in summaries:
        lines.append(
            f"| {row['task']} | {row['tasks']} | {percent(row['median'])} | "
            f"{paper_cells(row, PAPER_COLUMNS, 1)} |"
        )
    return lines


def hundredths(value: Optional[float]) -> str:
    """A fraction x100 with Table 6's two decimals."""
    return "" if value is None else f"{100 * value:.2f}"


def missing_text(score) -> str:
    displays = {d.task: d.display for d in BLURB_DATASETS}
    return (
        f"partial: {len(BLURB_DATASETS) - len(score.missing)}/{len(BLURB_DATASETS)} datasets, "
        f"missing {', '.join(displays[t] for t in score.missing)}; not comparable with Table 6"
    )


def blurb_lines(rows, summary, ours: str) -> list[str]:
    table6 = " | ".join(TABLE6_COLUMNS)
    lines = [
        "## BLURB (Gu et al. 2021)",
        "",
        (
            f"Test scores x100 per dataset, Table 6's names and order: {ours} the median over "
            "seeds with its min-max spread and the seeds done/asked "
            f"(`{SHORT}`: fewer than asked); mean = the mean over runs, the dataset's result in "
            "the BLURB score (Table 6 averages runs). PubMedBERT and BioBERT: Table 6. A dataset "
            "whose split or metric is not BLURB's gives the reason instead of a score and is left "
            "out of the BLURB score."
        ),
        "",
        f"| Dataset | Type | Metric | {ours} (median) | min-max | seeds | mean | {table6} |",
        "|---|---|---|---|---|---|---|" + "---|" * len(TABLE6_COLUMNS),
    ]
    for row in rows:
        if row["median"] is not None:
            ours = hundredths(row["median"]) + (SHORT if row["short"] else "")
            spread = f"{hundredths(row['min'])}-{hundredths(row['max'])}"
        else:
            not_blurbs = f"not BLURB's: {row['reason']}".replace("|", "/") if row["reason"] else ""
            ours, spread = (
                "; ".join(filter(None, ["" if row["done"] else "no runs", not_blurbs])),
                "",
            )
        note = f" ({row['note']})" if row["note"] else ""
        lines.append(
            f"| {row['dataset']} | {row['type']} | {row['metric']} | {ours} | {spread} | "
            f"{row['seeds']}{note} | {hundredths(row['mean'])} | "
            f"{paper_cells(row, TABLE6_COLUMNS, 2)} |"
        )
    lines += [
        "",
        (
            "BLURB score: the macro average over the six task types of the average result within "
            "each type (Table 6's caption). Type rows: Table 6's columns over the datasets we have."
        ),
        "",
        f"| | {ours} | {table6} |",
        "|---|---|" + "---|" * len(TABLE6_COLUMNS),
    ]
    if summary is None:
        printed = " | ".join(f"{TABLE6_BLURB_SCORES[c]:.2f}" for c in TABLE6_COLUMNS)
        return lines + [f"| BLURB score | none: no dataset has a BLURB result | {printed} |"]
    ours, same = summary["ours"], summary["table6_same_datasets"]
    for task_type in TASK_TYPES:
        if task_type in ours.type_averages:
            columns = " | ".join(f"{same[c].type_averages[task_type]:.2f}" for c in TABLE6_COLUMNS)
            lines.append(f"| {task_type} | {ours.type_averages[task_type]:.2f} | {columns} |")
    printed = " | ".join(f"{TABLE6_BLURB_SCORES[c]:.2f}" for c in TABLE6_COLUMNS)
    partial = f" ({missing_text(ours)})" if ours.partial else ""
    lines.append(f"| BLURB score | {ours.score:.2f}{partial} | {printed} |")
    if ours.partial:
        columns = " | ".join(f"{same[c].score:.2f}" for c in TABLE6_COLUMNS)
        lines.append(f"| Table 6 over the same datasets | | {columns} |")
    return lines


def failure_lines(failures) -> list[str]:
    lines = [f"## Failed runs ({len(failures)})", ""]
    for record in failures:
        error = record.error.splitlines()[0] if record.error else "(no error text)"
        lines.append(f"- {record.run_name}: {error} (log: {record.log})")
    if not failures:
        lines.append("none")
    return lines


def provenance_lines(records) -> list[str]:
    pretrained = sorted({r.pretrained["sha256"] for r in records if r.pretrained})
    revisions = sorted({str(r.git_revision) for r in records})
    return [
        "## Provenance",
        "",
        f"- result records: {len(records)}",
        f"- pretrained checkpoint sha256: {', '.join(pretrained)}",
        f"- git revisions: {', '.join(revisions)}",
        "",
    ]


def markdown(sections: list[list[str]], results_dir: Path, records, curves: list[str]) -> str:
    """The title, then the suite sections, failed runs, training curves and provenance, a blank
    line between."""
    lines = [f"# Fine-tuning report: {results_dir}"]
    unfinished = unfinished_lines(records)
    tail = [
        failure_lines(failed_runs(records)),
        *([unfinished] if unfinished else []),
        curves,
        provenance_lines(records),
    ]
    for section in [*sections, *tail]:
        lines += ["", *section]
    return "\n".join(lines)


def csv_text(columns: list[str], rows: list[dict[str, Any]], fractions: tuple[str, ...]) -> str:
    """rows as CSV; the fractions keys x100, rounded to 0.01."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                key: (
                    round(100 * row[key], 2)
                    if key in fractions and row.get(key) is not None
                    else row.get(key, "")
                )
                for key in columns
            }
        )
    return buffer.getvalue()


LEWIS_CSV_COLUMNS = [
    "task",
    "domain",
    "metric",
    "median",
    "min",
    "max",
    "seeds",
    "short",
    "note",
    "tasks",
    *PAPER_COLUMNS,
]
BLURB_CSV_COLUMNS = [
    "dataset",
    "task",
    "type",
    "metric",
    "median",
    "min",
    "max",
    "mean",
    "seeds",
    "short",
    "reason",
    "note",
    *TABLE6_COLUMNS,
]


def blurb_csv_rows(rows, summary) -> list[dict[str, Any]]:
    """The dataset rows, then the type averages and the BLURB score (in `mean`; the score's `note`
    says when it is partial), all x100 as Table 6 prints them."""
    scaled = ("median", "min", "max", "mean")
    dataset_rows = [
        {**row, **{k: round(100 * row[k], 2) for k in scaled if row[k] is not None}} for row in rows
    ]
    score = {"dataset": "BLURB score", **TABLE6_BLURB_SCORES}
    if summary is None:
        return dataset_rows + [{**score, "note": "none: no dataset has a BLURB result"}]
    ours, same = summary["ours"], summary["table6_same_datasets"]
    types = [
        {
            "dataset": task_type,
            "type": "type average",
            "mean": round(average, 2),
            **{c: round(same[c].type_averages[task_type], 2) for c in TABLE6_COLUMNS},
        }
        for task_type, average in ours.type_averages.items()
    ]
    score.update(mean=round(ours.score, 2), note=missing_text(ours) if ours.partial else "")
    return dataset_rows + types + [score]


def seed_offsets(count: int) -> list[float]:
    """x offsets of a task's seed dots around its position: spread apart, so that seeds with equal
    scores still show as separate dots."""
    return [0.0] if count == 1 else [-0.25 + 0.5 * i / (count - 1) for i in range(count)]


@dataclass
class Panel:
    """One panel of scores.png: names (tasks or BLURB datasets) scored by one metric."""

    title: str
    metric: str
    names: list[str]
    labels: list[str]
    results: dict[str, TaskResult]
    # legend label -> (marker, colour, {name: score x100})
    references: dict[str, tuple[str, str, dict[str, float]]]


def by_metric(names: list[str], metric_of: dict[str, str]) -> dict[str, list[str]]:
    """names grouped by their metric, in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(metric_of[name], []).append(name)
    return groups


def lewis_panels(lewis: dict[str, TaskResult]) -> list[Panel]:
    """Lewis et al.'s tasks, one panel per metric, beside their base model's Table 2 score."""
    metrics = {name: TASKS[name].metric if name in TASKS else "score" for name in lewis}
    return [
        Panel(
            f"Lewis et al. (2020) tasks: {metric}",
            metric,
            names,
            [TASKS[n].display if n in TASKS else n for n in names],
            lewis,
            {
                f"{LEWIS_BASE} (Table 2)": (
                    "x",
                    "tab:red",
                    {n: TASKS[n].paper[LEWIS_BASE] for n in names if n in TASKS and TASKS[n].paper},
                )
            },
        )
        for metric, names in by_metric(list(lewis), metrics).items()
    ]


def blurb_panels(rows: list[dict[str, Any]], results: dict[str, TaskResult]) -> list[Panel]:
    """BLURB's datasets, one panel per metric, beside Table 6's PubMedBERT and BioBERT."""
    by_task = {row["task"]: row for row in rows}
    metrics = {row["task"]: row["metric"] for row in rows}
    return [
        Panel(
            f"BLURB (Gu et al. 2021) datasets: {metric}",
            metric,
            names,
            [
                by_task[n]["dataset"] + (" (not BLURB's)" if by_task[n]["reason"] else "")
                for n in names
            ],
            {n: results[n] for n in names if by_task[n]["mean"] is not None},
            {
                f"{column} (Table 6)": (marker, colour, {n: by_task[n][column] for n in names})
                for column, marker, colour in zip(TABLE6_COLUMNS, "x+", ("tab:red", "tab:green"))
            },
        )
        for metric, names in by_metric([row["task"] for row in rows], metrics).items()
    ]


def draw_panel(axes, panel: Panel, ours: str) -> None:
    """Every seed's test score x100 per name (spread apart, see seed_offsets), the median as a bar,
    and the reference scores as markers."""
    labelled = set()

    def once(label):
        if label in labelled:
            return None
        labelled.add(label)
        return label

    for x, name in enumerate(panel.names):
        if name in panel.results:
            scores = [100 * s for s in panel.results[name].seed_scores.values()]
            axes.scatter(
                [x + dx for dx in seed_offsets(len(scores))],
                scores,
                color="tab:blue",
                alpha=0.7,
                label=once(f"{ours}: one seed"),
            )
            axes.hlines(
                100 * panel.results[name].median,
                x - 0.3,
                x + 0.3,
                color="black",
                label=once(f"{ours}: median"),
            )
        for label, (marker, colour, values) in panel.references.items():
            if values.get(name) is not None:
                axes.scatter([x], [values[name]], marker=marker, color=colour, label=once(label))
    axes.set_title(panel.title, fontsize="medium")
    axes.set_xticks(range(len(panel.names)))
    axes.set_xticklabels(panel.labels, rotation=45, ha="right")
    axes.set_xlim(-0.6, len(panel.names) - 0.4)
    axes.set_ylabel(f"{panel.metric} x100")
    axes.legend(loc="best", fontsize="small")


def scores_figure(panels: list[Panel], ours: str, title: str):
    """The panels one above the other under the title (a matplotlib Figure); ours names the seed
    dots and medians."""
    plt = pyplot()
    if not panels:  # no run finished with a score: say so rather than draw empty axes
        figure, axes = plt.subplots(figsize=(8.0, 2.5))
        axes.axis("off")
        axes.text(0.5, 0.5, "no finished run with a test score (see report.md)", ha="center")
        figure.suptitle(title)
        return figure
    widest = max(len(panel.names) for panel in panels)
    figure, axes = plt.subplots(
        len(panels), 1, figsize=(max(8.0, 0.8 * widest + 3), 4.5 * len(panels)), squeeze=False
    )
    for row, panel in zip(axes[:, 0], panels):
        draw_panel(row, panel, ours)
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def blurb_score_line(ours: str, summary: Optional[dict[str, Any]]) -> str:
    """Our BLURB score beside Table 6's, for the figure's title."""
    printed = ", ".join(f"{c} {TABLE6_BLURB_SCORES[c]:.2f}" for c in TABLE6_COLUMNS)
    if summary is None:
        score = "none"
    else:
        score = f"{summary['ours'].score:.2f}" + (" (partial)" if summary["ours"].partial else "")
    return f"BLURB score: {ours} {score}; Table 6: {printed}"


def write_report(
    results_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    expected_seeds: Optional[int] = None,
    suite: str = LEWIS,
) -> dict[str, Path]:
    """report.md, and report.csv (Lewis) and/or blurb.csv (BLURB), and scores.png of the records
    under results_dir for a suite (bio_roberta.suites.SUITES); returns their paths.
    expected_seeds: the first N of each task's seeds were asked (None: all of them)."""
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
        texts["csv"] = csv_text(LEWIS_CSV_COLUMNS, rows + summaries, ("median", "min", "max"))
    if suite in (BLURB, BOTH):
        rows = blurb_rows(records, results, expected_seeds)
        summary = blurb_summary(rows)
        sections.append(blurb_lines(rows, summary, ours))
        panels += blurb_panels(rows, results)
        title.append(blurb_score_line(ours, summary))
        texts["blurb_csv"] = csv_text(BLURB_CSV_COLUMNS, blurb_csv_rows(rows, summary), ())
    curves_section, curves = training_curves(records)
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
