"""scores.png: every seed's test score per task or dataset, one panel per suite and metric (a
metric's scores share an axis), seeds with equal scores side by side, the median as a bar and the
papers' scores as markers; titled with the model's name (and, for BLURB, its score beside
Table 6's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from bio_roberta.blurb.suite import TABLE6_BLURB_SCORES, TABLE6_COLUMNS
from bio_roberta.figures import pyplot
from bio_roberta.report.blurb import BlurbDatasetRow, BlurbSummary
from bio_roberta.report.seed_results import TaskResult
from bio_roberta.tasks.registry import PAPER_COLUMNS, TASKS


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
    base = PAPER_COLUMNS.index("Lewis et al. base")
    metrics = {name: TASKS[name].metric if name in TASKS else "score" for name in lewis}
    return [
        Panel(
            f"Lewis et al. (2020) tasks: {metric}",
            metric,
            names,
            [TASKS[n].display if n in TASKS else n for n in names],
            lewis,
            {
                f"{PAPER_COLUMNS[base]} (Table 2)": (
                    "x",
                    "tab:red",
                    {n: TASKS[n].paper[base] for n in names if n in TASKS and TASKS[n].paper},
                )
            },
        )
        for metric, names in by_metric(list(lewis), metrics).items()
    ]


def panel_mark(row: BlurbDatasetRow) -> str:
    """A dataset's label mark: not scored as BLURB's, or scored on a split not BLURB's."""
    if row.reason:
        return " (not BLURB's)"
    return " (split not BLURB's)" if row.mean is not None and not row.comparable else ""


def blurb_panels(rows: list[BlurbDatasetRow], results: dict[str, TaskResult]) -> list[Panel]:
    """BLURB's datasets, one panel per metric, beside Table 6's PubMedBERT and BioBERT."""
    by_task = {row.task: row for row in rows}
    metrics = {row.task: row.metric for row in rows}
    return [
        Panel(
            f"BLURB (Gu et al. 2021) datasets: {metric}",
            metric,
            names,
            [by_task[n].dataset + panel_mark(by_task[n]) for n in names],
            {n: results[n] for n in names if by_task[n].mean is not None},
            {
                f"{column} (Table 6)": (
                    marker,
                    colour,
                    {n: by_task[n].table6[column] for n in names},
                )
                for column, marker, colour in zip(TABLE6_COLUMNS, "x+", ("tab:red", "tab:green"))
            },
        )
        for metric, names in by_metric([row.task for row in rows], metrics).items()
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


def blurb_score_line(ours: str, summary: Optional[BlurbSummary]) -> str:
    """Our BLURB score beside Table 6's, for the figure's title."""
    printed = ", ".join(f"{c} {TABLE6_BLURB_SCORES[c]:.2f}" for c in TABLE6_COLUMNS)
    if summary is None:
        score = "none"
    else:
        score = f"{summary.ours.score:.2f}" + (" (partial)" if summary.ours.partial else "")
        score += "" if summary.comparable else " (not comparable: splits not BLURB's)"
    return f"BLURB score: {ours} {score}; Table 6: {printed}"
