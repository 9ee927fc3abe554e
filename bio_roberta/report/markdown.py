"""report.md: the suites' tables (Lewis et al.'s Table 2 layout, BLURB's Table 6 layout), then the
failed and unfinished runs, the training-curves section and the provenance of the records. Test
scores are printed x100 as each paper prints them: Table 2 with one decimal, Table 6 with two;
`*` marks a median over fewer seeds (or folds) than asked."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from bio_roberta.finetuning.results import FAILED, STARTED, ResultRecord, unfinished_text
from bio_roberta.report.blurb import (
    NOT_COMPARABLE,
    BlurbDatasetRow,
    BlurbScoreRow,
    BlurbSummary,
    score_row,
    type_average_rows,
)
from bio_roberta.report.lewis import LewisSummaryRow, LewisTaskRow
from bio_roberta.report.settings import (
    NOT_PICKED,
    UNTUNED,
    TaskSettings,
    outside_blurb_grid,
    protocol,
    schedule_text,
)
from bio_roberta.tasks.paper_models import DEFAULT_LEWIS_COLUMNS, DEFAULT_TABLE6_COLUMNS
from bio_roberta.tasks.truncation import LongInputs

SHORT = "*"


def percent(value: Optional[float]) -> str:
    """A fraction x100 with Table 2's one decimal."""
    return "" if value is None else f"{100 * value:.1f}"


def hundredths(value: Optional[float]) -> str:
    """A fraction x100 with Table 6's two decimals."""
    return "" if value is None else f"{100 * value:.2f}"


def number_cell(value: Optional[float], digits: int) -> str:
    """A paper's number (already x100), empty when it has none."""
    return "" if value is None else f"{value:.{digits}f}"


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table; a '|' in a cell (a model's name) is escaped, not a column break."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *map(line, rows)]


def reference_list(values: dict[str, Optional[float]], digits: int) -> list[str]:
    """A paper's columns (already x100), empty where it has no number."""
    return [number_cell(v, digits) for v in values.values()]


def reference_cells(values: dict[str, Optional[float]], digits: int) -> str:
    """reference_list's cells joined as a markdown row's."""
    return " | ".join(reference_list(values, digits))


def lewis_cells(row: LewisTaskRow) -> list[str]:
    """A task's median (marked when short), min-max and seeds cells."""
    note = f" ({row.note})" if row.note else ""
    return [
        percent(row.median) + (SHORT if row.short else ""),
        f"{percent(row.min)}-{percent(row.max)}",
        f"{row.seeds}{note}",
    ]


def lewis_lines(rows: list[LewisTaskRow], summaries: list[LewisSummaryRow], ours: str) -> list[str]:
    asked = ", ".join(map(str, sorted({row.seeds.asked for row in rows}))) or "-"
    return [
        (
            f"Test scores x100 of {ours} (the checkpoint these runs fine-tuned), median over "
            f"seeds (asked: {asked}); spread = min-max over seeds. `{SHORT}` marks a median over "
            "fewer seeds (or folds) than asked. The other columns are Lewis et al. (2020) Table 2, "
            "their own models named Lewis et al. base and large."
        ),
        "",
        *table_lines(
            ["Task", "Metric", f"{ours} (median)", "min-max", "seeds", *DEFAULT_LEWIS_COLUMNS],
            [
                [row.task, row.metric, *lewis_cells(row), *reference_list(row.paper, 1)]
                for row in rows
            ],
        ),
        "",
        (
            "Summary rows: mean of the task medians over the tasks present (paper "
            "columns over the same tasks)."
        ),
        "",
        *table_lines(
            ["Group", "tasks present", ours, *DEFAULT_LEWIS_COLUMNS],
            [
                [row.task, row.tasks, percent(row.median), *reference_list(row.paper, 1)]
                for row in summaries
            ],
        ),
    ]


def own_task_lines(rows: list[LewisTaskRow], ours: str) -> list[str]:
    """The user's own tasks (task files): ours only, for no paper reports them."""
    asked = ", ".join(map(str, sorted({row.seeds.asked for row in rows}))) or "-"
    return [
        (
            f"Tasks of your own (task files): test scores x100 of {ours}, median over seeds "
            f"(asked: {asked}); spread = min-max over seeds. `{SHORT}` marks a median over fewer "
            "seeds than asked. No paper reports these tasks: no paper columns, no summary row."
        ),
        "",
        *table_lines(
            ["Task", "Domain", "Metric", f"{ours} (median)", "min-max", "seeds"],
            [[row.task, row.domain, row.metric, *lewis_cells(row)] for row in rows],
        ),
    ]


def blurb_cells(row: BlurbDatasetRow) -> list[str]:
    """A dataset's median (marked when short; else why it has none), min-max, seeds and mean
    cells."""
    if row.median is not None:
        ours = hundredths(row.median) + (SHORT if row.short else "")
        spread = f"{hundredths(row.min)}-{hundredths(row.max)}"
    else:
        not_blurbs = f"not BLURB's: {row.reason}".replace("|", "/") if row.reason else ""
        ours = "; ".join(filter(None, ["" if row.seeds.done else "no runs", not_blurbs]))
        spread = ""
    note = f" ({row.note})" if row.note else ""
    return [ours, spread, f"{row.seeds}{note}", hundredths(row.mean)]


def score_cell(score: BlurbScoreRow) -> str:
    """A BLURB score (with what a partial one misses), or why there is none."""
    if score.mean is None:
        return score.note
    return f"{score.mean:.2f}" + (f" ({score.note})" if score.note else "")


def split_check_text(score_any_split: bool) -> str:
    """What the split check column says, and which datasets the BLURB score leaves out."""
    return (
        "Split check: how the split the runs trained on was checked (content hash, content hash + "
        "ids, ids: can find it BLURB's; sizes, reader: only not BLURB's; none possible; not "
        "recorded) and what that "
        "found (BLURB's, not BLURB's, unknown: never BLURB's). A dataset whose metric is not "
        "BLURB's gives the reason instead of a score and is left out of the BLURB score; so does "
        "one whose split is not BLURB's or "
        "unknown, "
        + (
            "except that this report was made with --score-any-split: such datasets are "
            "scored, and the score is then not comparable with Table 6 (below)."
            if score_any_split
            else "unless the report is made with --score-any-split."
        )
    )


def not_comparable_text(summary: BlurbSummary) -> str:
    """Why a BLURB score scored with --score-any-split is not comparable: each dataset whose split
    is not BLURB's or unchecked, with its check."""
    why = "; ".join(f"{name} ({text})" for name, text in summary.not_comparable.items())
    return (
        f"Scored with --score-any-split: {NOT_COMPARABLE}; splits not BLURB's or unchecked: {why}"
    ).replace("|", "/")


def blurb_lines(
    rows: list[BlurbDatasetRow],
    summary: Optional[BlurbSummary],
    ours: str,
    score_any_split: bool = False,
) -> list[str]:
    lines = [
        "## BLURB (Gu et al. 2021)",
        "",
        (
            f"Test scores x100 per dataset, Table 6's names and order: {ours} the median over "
            "seeds with its min-max spread and the seeds done/asked "
            f"(`{SHORT}`: fewer than asked); mean = the mean over runs, the dataset's result in "
            "the BLURB score (Table 6 averages runs). PubMedBERT and BioBERT: Table 6. "
            + split_check_text(score_any_split)
        ),
        "",
        *table_lines(
            [
                *("Dataset", "Type", "Metric", f"{ours} (median)", "min-max", "seeds", "mean"),
                *DEFAULT_TABLE6_COLUMNS,
                "split check",
            ],
            [
                [
                    *(row.dataset, row.type, row.metric, *blurb_cells(row)),
                    *reference_list(row.table6, 2),
                    row.split_check,
                ]
                for row in rows
            ],
        ),
    ]
    lines += [
        "",
        (
            "BLURB score: the macro average over the six task types of the average result within "
            "each type (Table 6's caption). Type rows: Table 6's columns over the datasets we have."
        ),
        "",
        *table_lines(["", ours, *DEFAULT_TABLE6_COLUMNS], []),
    ]
    for row in type_average_rows(summary):
        lines.append(f"| {row.dataset} | {row.mean:.2f} | {reference_cells(row.table6, 2)} |")
    score = score_row(summary)
    lines.append(f"| {score.dataset} | {score_cell(score)} | {reference_cells(score.table6, 2)} |")
    if summary is not None and summary.ours.partial:
        same = summary.table6_same_datasets
        columns = " | ".join(f"{same[c].score:.2f}" for c in DEFAULT_TABLE6_COLUMNS)
        lines.append(f"| Table 6 over the same datasets | | {columns} |")
    if summary is not None and not summary.comparable:
        lines += ["", not_comparable_text(summary)]
    return lines


def settings_lines(settings: dict[str, TaskSettings]) -> list[str]:
    """Each task's hyperparameter settings with their dev scores and the one scored."""
    lines = ["## Hyperparameter settings", ""]
    if protocol(settings) == UNTUNED:
        lines.append(
            f"{UNTUNED}: each task's runs have one setting, scored as it is (its hyperparameters "
            "that differ from the registry's are named; the dev score is not used)."
        )
    else:
        lines.append(
            "Tuned on dev where a task has several settings (BLURB's protocol, Gu et al. §6.2): "
            "dev = each seed's best validation score, aggregated over seeds as the suite "
            "aggregates test (mean over runs for a BLURB dataset, median otherwise); the tables "
            "above score only the picked setting's runs. Ties: more seeds on dev, then the "
            "setting's name (the registry's first). Other tasks: "
            f"{UNTUNED}."
        )
    lines[-1] += f" Epochs: {schedule_text(settings)}."
    outside = outside_blurb_grid(settings)
    if outside:
        named = ", ".join(f"{name} ({values})" for name, values in outside.items())
        lines[-1] += (
            f" Scored with an lr or batch size outside BLURB's grid: {named} (the registry's "
            "setting where untuned: docs/finetune.md, tuned on dev)."
        )
    rows = []
    for task, found in settings.items():
        for setting in found.settings:
            hparams = ", ".join(f"{key}={value!r}" for key, value in setting.hparams.items())
            if found.protocol == UNTUNED:
                scored = "the only one"
            elif found.picked is None:
                scored = NOT_PICKED
            else:
                scored = "picked" if setting.name == found.picked else ""
            rows.append(
                [
                    *(task, found.protocol, setting.label, hparams or "-"),
                    hundredths(setting.dev),
                    str(len(setting.dev_scores)),
                    scored,
                ]
            )
    header = ["Task", "protocol", "setting", "differs from the registry", "dev x100"]
    return lines + ["", *table_lines([*header, "seeds on dev", "scored"], rows)]


def failure_lines(records: list[ResultRecord]) -> list[str]:
    """The runs that failed, with the first line of their error and their log."""
    failures = [r for r in records if r.status == FAILED]
    lines = [f"## Failed runs ({len(failures)})", ""]
    for record in failures:
        error = record.error.splitlines()[0] if record.error else "(no error text)"
        lines.append(f"- {record.run_name}: {error} (log: {record.log})")
    if not failures:
        lines.append("none")
    return lines


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


def provenance_lines(records: list[ResultRecord]) -> list[str]:
    pretrained = sorted({r.pretrained["sha256"] for r in records if r.pretrained})
    revisions = sorted({str(r.git_revision) for r in records})
    return [
        "## Provenance",
        "",
        f"- result records: {len(records)}",
        f"- pretrained checkpoint sha256: {', '.join(pretrained)}",
        f"- git revisions: {', '.join(revisions)}",
        f"- inputs longer than the positions: {long_inputs_text(records)}",
        "",
    ]


def long_inputs_text(records: list[ResultRecord]) -> str:
    """Each task's route of inputs longer than the positions, as its runs' data manifests
    recorded it (docs/finetune.md); "not recorded" for runs converted before routes were."""
    routes: dict[str, set[str]] = {}
    for record in records:
        recorded = (record.data or {}).get("long_inputs")
        route = LongInputs(**recorded).describe() if recorded else "not recorded"
        routes.setdefault(record.task, set()).add(route)
    return "; ".join(f"{task}: {' / '.join(sorted(r))}" for task, r in routes.items()) or "none"


def markdown(
    sections: list[list[str]],
    results_dir: Path,
    records: list[ResultRecord],
    curves: list[str],
    settings: dict[str, TaskSettings],
) -> str:
    """The title, then the suite sections, the hyperparameter settings, failed runs, training
    curves and provenance, a blank line between."""
    lines = [f"# Fine-tuning report: {results_dir}"]
    unfinished = unfinished_lines(records)
    tail = [
        settings_lines(settings),
        failure_lines(records),
        *([unfinished] if unfinished else []),
        curves,
        provenance_lines(records),
    ]
    for section in [*sections, *tail]:
        lines += ["", *section]
    return "\n".join(lines)
