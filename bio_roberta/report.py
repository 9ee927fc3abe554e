"""The median report of a fine-tuning sweep (paper §5.2, Table 2 layout).

Per task: the median test score over seeds with its spread (min-max) and the number of seeds,
beside the paper's Table 2 columns; summary rows (Seq. Lab., Classif., PubMed, Clinical, All) are
means of the task medians over the tasks present, and say how many of the group's tasks that is
(the paper columns of a summary row are averaged over the same tasks). A cross-validation task's
seed score is the median over its evaluation folds (bio_roberta.finetune). A median over fewer
seeds (or folds) than asked is marked with '*', failed runs are listed. Written as report.md,
report.csv and scores.png (every seed's score per task) in the output dir.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from bio_roberta.finetune import EVALUATION, OK, RESULT_FILE, RESULT_SCHEMA, SINGLE
from bio_roberta.tasks.registry import PAPER_COLUMNS, TASKS, summary_groups
from bio_roberta_core.provenance import atomic_write_bytes, atomic_write_text

SHORT = "*"


class ReportError(ValueError):
    """The results dir holds nothing to report, or a record is unreadable (names the file)."""


@dataclass
class TaskResult:
    task: str
    seed_scores: dict[int, float] = field(default_factory=dict)  # fractions
    short_folds: dict[int, str] = field(default_factory=dict)  # seed -> "7/9 folds"

    @property
    def median(self) -> float:
        return statistics.median(self.seed_scores.values())


def load_records(results_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Every result record under results_dir (RESULTS/<task>/seed<s>/[fold<k>/]result.json)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ReportError(f"{results_dir}: no such results dir")
    records = []
    for path in sorted(results_dir.rglob(RESULT_FILE)):
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ReportError(f"{path}: not a JSON result record ({error})") from None
        if record.get("schema") != RESULT_SCHEMA:
            raise ReportError(
                f"{path}: schema {record.get('schema')!r}, expected {RESULT_SCHEMA!r}"
            )
        record["_path"] = str(path)
        records.append(record)
    if not records:
        raise ReportError(f"{results_dir}: no {RESULT_FILE} records; run `bio-roberta sweep` first")
    return records


def task_results(records: list[dict[str, Any]]) -> dict[str, TaskResult]:
    """Seed scores per task, in registry order: a run's test score, or the median of its folds."""
    folds: dict[tuple[str, int], list[float]] = {}
    results: dict[str, TaskResult] = {}
    for record in records:
        if record["status"] != OK or record.get("role", SINGLE) not in (SINGLE, EVALUATION):
            continue
        result = results.setdefault(record["task"], TaskResult(record["task"]))
        if record["role"] == SINGLE:
            result.seed_scores[record["seed"]] = record["test_score"]
        else:
            folds.setdefault((record["task"], record["seed"]), []).append(record["test_score"])
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


def task_rows(results: dict[str, TaskResult], expected_seeds: int) -> list[dict[str, Any]]:
    rows = []
    for name, result in results.items():
        spec = TASKS.get(name)
        scores = list(result.seed_scores.values())
        short = len(scores) < expected_seeds or bool(result.short_folds)
        rows.append(
            {
                "task": spec.display if spec else name,
                "domain": spec.domain if spec else "",
                "metric": spec.metric if spec else "",
                "median": result.median,
                "min": min(scores),
                "max": max(scores),
                "seeds": f"{len(scores)}/{expected_seeds}",
                "short": short,
                "note": "; ".join(f"seed {s}: {n}" for s, n in sorted(result.short_folds.items())),
                **{
                    column: (spec.paper[i] if spec else None)
                    for i, column in enumerate(PAPER_COLUMNS)
                },
            }
        )
    return rows


def summary_rows(results: dict[str, TaskResult]) -> list[dict[str, Any]]:
    rows = []
    for group, members in summary_groups().items():
        present = [name for name in members if name in results]
        row = {
            "task": group,
            "tasks": f"{len(present)}/{len(members)}",
            "median": statistics.mean(results[n].median for n in present) if present else None,
        }
        for i, column in enumerate(PAPER_COLUMNS):
            row[column] = (
                round(statistics.mean(TASKS[n].paper[i] for n in present), 2) if present else None
            )
        rows.append(row)
    return rows


def failed_runs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] != OK]


def markdown(rows, summaries, failures, expected_seeds: int, results_dir: Path, records) -> str:
    paper = " | ".join(PAPER_COLUMNS)
    lines = [
        f"# Fine-tuning report: {results_dir}",
        "",
        (
            f"Test scores x100, median over seeds (asked: {expected_seeds}); spread = min-max "
            f"over seeds. `{SHORT}` marks a median over fewer seeds (or folds) than asked. Paper: "
            "Lewis et al. (2020) Table 2."
        ),
        "",
        f"| Task | Metric | Ours (median) | min-max | seeds | {paper} |",
        "|---|---|---|---|---|" + "---|" * len(PAPER_COLUMNS),
    ]
    for row in rows:
        mark = SHORT if row["short"] else ""
        note = f" ({row['note']})" if row["note"] else ""
        paper_cells = " | ".join("" if row[c] is None else f"{row[c]:.1f}" for c in PAPER_COLUMNS)
        lines.append(
            f"| {row['task']} | {row['metric']} | {percent(row['median'])}{mark} | "
            f"{percent(row['min'])}-{percent(row['max'])} | {row['seeds']}{note} | {paper_cells} |"
        )
    lines += [
        "",
        (
            "Summary rows: mean of the task medians over the tasks present (paper "
            "columns over the same tasks)."
        ),
        "",
        f"| Group | tasks present | Ours | {paper} |",
        "|---|---|---|" + "---|" * len(PAPER_COLUMNS),
    ]
    for row in summaries:
        paper_cells = " | ".join("" if row[c] is None else f"{row[c]:.1f}" for c in PAPER_COLUMNS)
        lines.append(
            f"| {row['task']} | {row['tasks']} | {percent(row['median'])} | {paper_cells} |"
        )
    lines += ["", f"## Failed runs ({len(failures)})", ""]
    for record in failures:
        fold = f" fold {record['fold']}" if record.get("fold") is not None else ""
        error = (
            (record.get("error") or "").splitlines()[0]
            if record.get("error")
            else "(no error text)"
        )
        lines.append(
            f"- {record['task']} seed {record['seed']}{fold}: {error} (log: {record.get('log')})"
        )
    if not failures:
        lines.append("none")
    pretrained = sorted({r["pretrained"]["sha256"] for r in records if r.get("pretrained")})
    revisions = sorted({str(r.get("git_revision")) for r in records})
    lines += [
        "",
        "## Provenance",
        "",
        f"- result records: {len(records)}",
        f"- pretrained checkpoint sha256: {', '.join(pretrained)}",
        f"- git revisions: {', '.join(revisions)}",
        "",
    ]
    return "\n".join(lines)


def csv_text(rows, summaries) -> str:
    columns = [
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
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows + summaries:
        writer.writerow(
            {
                key: (
                    round(100 * row[key], 2)
                    if key in ("median", "min", "max") and row.get(key) is not None
                    else row.get(key, "")
                )
                for key in columns
            }
        )
    return buffer.getvalue()


def scores_png(results: dict[str, TaskResult]) -> bytes:
    """Every seed's test score per task, the median as a bar, the paper's Ours-base as a cross."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    figure, axes = plt.subplots(figsize=(max(4.0, 0.8 * len(names) + 2), 4))
    for x, name in enumerate(names):
        scores = [100 * s for s in results[name].seed_scores.values()]
        axes.scatter(
            [x] * len(scores), scores, color="tab:blue", alpha=0.7, label="seed" if x == 0 else None
        )
        axes.hlines(
            100 * results[name].median,
            x - 0.3,
            x + 0.3,
            color="black",
            label="median" if x == 0 else None,
        )
        if name in TASKS:
            axes.scatter(
                [x],
                [TASKS[name].paper[PAPER_COLUMNS.index("Ours-base")]],
                marker="x",
                color="tab:red",
                label="paper Ours-base" if x == 0 else None,
            )
    axes.set_xticks(range(len(names)))
    axes.set_xticklabels(
        [TASKS[n].display if n in TASKS else n for n in names], rotation=45, ha="right"
    )
    axes.set_ylabel("test score x100")
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def write_report(
    results_dir: str | os.PathLike, out_dir: str | os.PathLike, expected_seeds: int
) -> dict[str, Path]:
    """report.md, report.csv and scores.png of the records under results_dir; returns their
    paths."""
    records = load_records(results_dir)
    results = task_results(records)
    rows, summaries = task_rows(results, expected_seeds), summary_rows(results)
    out_dir = Path(out_dir)
    paths = {
        "markdown": out_dir / "report.md",
        "csv": out_dir / "report.csv",
        "png": out_dir / "scores.png",
    }
    atomic_write_text(
        paths["markdown"],
        markdown(rows, summaries, failed_runs(records), expected_seeds, Path(results_dir), records),
    )
    atomic_write_text(paths["csv"], csv_text(rows, summaries))
    atomic_write_bytes(paths["png"], scores_png(results))
    return paths
