"""scores.png: every seed's test score per task or dataset, one panel per suite and metric (a
metric's scores share an axis), seeds with equal scores side by side, the median as a bar and the
papers' scores as markers; titled with the model's name (and, for BLURB, its score beside
Table 6's)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Optional

from bio_roberta.blurb.suite import BLURB_DATASETS, TABLE6_BLURB_SCORES
from bio_roberta.report.blurb import BlurbDatasetRow, BlurbSummary
from bio_roberta.report.figures import pyplot
from bio_roberta.report.seed_results import TaskResult, registry_order
from bio_roberta.tasks.paper_models import (
    DEFAULT_TABLE6_COLUMNS,
    LEWIS_BASE,
    lewis_label,
    table6_label,
)
from bio_roberta.tasks.registry import TASKS, find_task


def seed_offsets(count: int) -> list[float]:
    """x offsets of a task's seed dots around its position: spread apart, so that seeds with equal
    scores still show as separate dots."""
    return [0.0] if count == 1 else [-0.25 + 0.5 * i / (count - 1) for i in range(count)]


# Height of a line of the figure's title, inches; a line holds 9 characters an inch of width.
TITLE_LINE = 0.3
# legend label -> (marker, colour, {task or dataset: score x100})
References = dict[str, tuple[str, str, dict[str, float]]]
# One colour per model when several are drawn (one model: blue seeds, black medians).
MODEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink")


@dataclass
class Panel:
    """One panel of scores.png: names (tasks or BLURB datasets) scored by one metric."""

    title: str
    metric: str
    names: list[str]
    labels: list[str]
    series: dict[str, dict[str, TaskResult]]  # model -> its results, drawn side by side
    references: References


def by_metric(names: list[str], metric_of: dict[str, str]) -> dict[str, list[str]]:
    """names grouped by their metric, in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(metric_of[name], []).append(name)
    return groups


def lewis_reference(column: str, marker: str, colour: str) -> References:
    """A paper model's Lewis et al. numbers per task, as markers."""
    values = {name: spec.paper[column] for name, spec in TASKS.items() if column in spec.paper}
    return {lewis_label(column): (marker, colour, values)}


def table6_reference(column: str, marker: str, colour: str) -> References:
    """A Table 6 model's numbers per dataset, as markers."""
    values = {d.task: d.table6[column] for d in BLURB_DATASETS}
    return {table6_label(column): (marker, colour, values)}


def default_references() -> tuple[References, References]:
    """The markers of a one-model figure: Lewis et al. base's Table 2 numbers, and Table 6's
    default columns."""
    table6 = {}
    for column, marker, colour in zip(DEFAULT_TABLE6_COLUMNS, "x+", ("tab:red", "tab:green")):
        table6.update(table6_reference(column, marker, colour))
    return lewis_reference(LEWIS_BASE, "x", "tab:red"), table6


def lewis_panels(series: dict[str, dict[str, TaskResult]], references: References) -> list[Panel]:
    """Lewis et al.'s tasks of any model, one panel per metric, beside the references; then the
    user's own tasks (task files), one panel per metric, titled as theirs."""
    from bio_roberta.report.lewis import is_own_task

    names = registry_order(name for results in series.values() for name in results)
    specs = {name: find_task(name) for name in names}
    metrics = {name: spec.metric if spec else "score" for name, spec in specs.items()}
    panels = []
    for title, own in (("Lewis et al. (2020) tasks", False), ("Your own tasks (task files)", True)):
        chosen = [name for name in names if is_own_task(name) == own]
        panels += [
            Panel(
                f"{title}: {metric}",
                metric,
                group,
                [specs[n].display if specs[n] else n for n in group],
                series,
                references,
            )
            for metric, group in by_metric(chosen, metrics).items()
        ]
    return panels


def panel_mark(rows: list[BlurbDatasetRow]) -> str:
    """A dataset's label mark from its rows of every model: not scored as BLURB's (no model has a
    BLURB result for it and some model's runs say why), or scored on a split not BLURB's (by some
    model, with --score-any-split)."""
    scored = [row for row in rows if row.mean is not None]
    if not scored:
        return " (not BLURB's)" if any(row.reason for row in rows) else ""
    return "" if all(row.comparable for row in scored) else " (split not BLURB's)"


def blurb_panels(
    rows: dict[str, list[BlurbDatasetRow]],
    results: dict[str, dict[str, TaskResult]],
    references: References,
) -> list[Panel]:
    """BLURB's datasets, one panel per metric: each model's (rows and results by model) where it
    has a BLURB result, beside the references; each dataset's label marked (panel_mark) from its
    rows of every model."""
    first = next(iter(rows.values()))
    metrics = {row.task: row.metric for row in first}
    scored = {
        model: {row.task: results[model][row.task] for row in model_rows if row.mean is not None}
        for model, model_rows in rows.items()
    }
    by_task: dict[str, list[BlurbDatasetRow]] = {}
    for model_rows in rows.values():
        for row in model_rows:
            by_task.setdefault(row.task, []).append(row)
    return [
        Panel(
            f"BLURB (Gu et al. 2021) datasets: {metric}",
            metric,
            names,
            [row.dataset + panel_mark(by_task[row.task]) for row in first if row.task in names],
            scored,
            references,
        )
        for metric, names in by_metric([row.task for row in first], metrics).items()
    ]


def draw_panel(axes, panel: Panel) -> None:
    """Every seed's test score x100 per name and model (a model's seeds spread apart in its slot,
    see seed_offsets), its median as a bar, and the reference scores as markers."""
    labelled, drawn = set(), []

    def once(label):
        if label in labelled:
            return None
        labelled.add(label)
        return label

    count = len(panel.series)
    width = 1 / count
    for x, name in enumerate(panel.names):
        for index, (model, results) in enumerate(panel.series.items()):
            if name not in results:
                continue
            colour = MODEL_COLOURS[index % len(MODEL_COLOURS)]
            centre = x + (index - (count - 1) / 2) * 0.7 * width
            scores = [100 * s for s in results[name].seed_scores.values()]
            drawn += [*scores, 100 * results[name].median]
            axes.scatter(
                [centre + width * dx for dx in seed_offsets(len(scores))],
                scores,
                color=colour,
                alpha=0.7,
                label=once(f"{model}: one seed"),
            )
            axes.hlines(
                100 * results[name].median,
                centre - 0.3 * width,
                centre + 0.3 * width,
                color="black" if count == 1 else colour,
                label=once(f"{model}: median"),
            )
        for label, (marker, colour, values) in panel.references.items():
            if values.get(name) is not None:
                drawn.append(values[name])
                axes.scatter([x], [values[name]], marker=marker, color=colour, label=once(label))
    axes.set_title(panel.title, fontsize="medium")
    axes.set_xticks(range(len(panel.names)))
    axes.set_xticklabels(panel.labels, rotation=45, ha="right")
    axes.set_xlim(-0.6, len(panel.names) - 0.4)
    axes.set_ylabel(f"{panel.metric} x100")
    if drawn:
        axes.set_ylim(*score_range(min(drawn), max(drawn)))
    if labelled:
        axes.legend(loc="best", fontsize="small")
    else:  # no model scored these and no paper prints them: say so rather than an empty legend
        axes.text(0.5, 0.5, "no scored run", transform=axes.transAxes, ha="center")


# The least height of a panel's score axis, points x100: one point (one seed, one task) is not
# zoomed in to a tenth of a point as matplotlib's autoscale would
LEAST_SCORE_RANGE = 10.0


def score_range(low: float, high: float) -> tuple[float, float]:
    """A panel's y limits around its scores (x100): at least LEAST_SCORE_RANGE tall, 5% more
    than their spread, not below 0 where none is."""
    margin = max((LEAST_SCORE_RANGE - (high - low)) / 2, 0.05 * (high - low))
    bottom = low - margin
    if low >= 0 > bottom:
        return 0.0, max(high + margin, LEAST_SCORE_RANGE)
    return bottom, high + margin


def scores_figure(panels: list[Panel], title: str):
    """The panels one above the other under the title (a matplotlib Figure)."""
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
        draw_panel(row, panel)
    width, height = figure.get_size_inches()
    lines = [part for line in title.split("\n") for part in textwrap.wrap(line, int(9 * width))]
    figure.suptitle("\n".join(lines))
    # the title's lines above the panels, not over the first (TITLE_LINE inches each)
    figure.tight_layout(rect=(0, 0, 1, 1 - TITLE_LINE * len(lines) / height))
    return figure


def blurb_score_line(
    scores: dict[str, Optional[BlurbSummary]], columns: tuple[str, ...] = DEFAULT_TABLE6_COLUMNS
) -> str:
    """The models' BLURB scores (summaries by model), each marked partial and not comparable as
    it is, beside Table 6's of these columns, for the figure's title."""
    ours = ", ".join(f"{name} {score_text(summary)}" for name, summary in scores.items())
    printed = ", ".join(f"{c} {TABLE6_BLURB_SCORES[c]:.2f}" for c in columns)
    return f"BLURB score: {ours}" + (f"; Table 6: {printed}" if printed else "")


def score_text(summary: Optional[BlurbSummary]) -> str:
    """A model's BLURB score in the figure's title."""
    if summary is None:
        return "none"
    score = f"{summary.ours.score:.2f}" + (" (partial)" if summary.ours.partial else "")
    return score + ("" if summary.comparable else " (not comparable: splits not BLURB's)")
