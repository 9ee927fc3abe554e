"""The per-dataset results of a BLURB sweep in the form of BLURB's leaderboard
(https://microsoft.github.io/BLURB/leaderboard.html): each dataset's test score (x100, the mean
over runs as Table 6), each task type's average and the BLURB score, keyed by the names the
leaderboard and Table 6 print. A dataset without a score says why (no runs, or the reason its runs
are not BLURB's); a partial score names the missing datasets. Each dataset says how its split was
checked and what that found (split_check); `comparable` is true only when every scored dataset's
split was checked to be BLURB's, and `not_comparable` names each one that was not (scored with
score_any_split) and why. Completeness (`partial`, `missing`) is a separate statement.

Built from the report's BLURB rows (bio_roberta.report.blurb: blurb_rows / blurb_summary), so
the leaderboard and Table 6's layout never disagree. `protocol` says whether a dataset's score is
its one setting's ("untuned (one setting)") or the best-dev setting's of a grid ("tuned on dev",
bio_roberta/report/settings.py), `schedule` how each run's epochs were chosen (one fixed-length
schedule's best-dev checkpoint, unless --tune-epochs made them an axis), `outside_grid` each
dataset whose scored lr or batch size BLURB's grid lacks; `grid` is the settings the suite ran with
--tune (None without),
and each dataset gives every setting's dev score (x100, aggregated over seeds as its test) and the
`picked` one.
"""

from __future__ import annotations

from typing import Any

from bio_roberta.blurb.suite import BLURB, TASK_TYPES

LEADERBOARD_SCHEMA = "bio-roberta/blurb-leaderboard/1"


def settings_entry(settings) -> dict[str, Any]:
    """A dataset's protocol, every setting's dev score (x100) and the pick, from its
    report.settings.TaskSettings (None: no runs)."""
    if settings is None:
        return {"protocol": None, "settings": {}, "picked": None}
    picked = next((s.label for s in settings.settings if s.name == settings.picked), None)
    return {
        "protocol": settings.protocol,
        "settings": {
            setting.label: {
                "hparams": setting.hparams,
                "dev": round(100 * setting.dev, 2) if setting.dev is not None else None,
                "dev_seeds": len(setting.dev_scores),
                "runs": setting.runs,
            }
            for setting in settings.settings
        },
        "picked": picked,
    }


def leaderboard(
    rows: list,
    summary,
    model: str,
    settings: dict,
    protocol: str,
    grid: list[dict[str, Any]] | None = None,
    score_any_split: bool = False,
    schedule: str = "",
    outside_grid: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The leaderboard record of one model's BLURB rows (BlurbDatasetRow, one per dataset, Table
    6's order) and their BlurbSummary (None: no dataset scored); settings: each task's
    hyperparameter settings and the one scored (report.settings.TaskSettings) and protocol the
    datasets' (report.settings.protocol); grid: the settings the suite ran to tune (None:
    untuned); score_any_split: the rows were made with it (a split not BLURB's or unchecked
    scored); schedule: how each run's epochs were chosen (report.settings.schedule_text);
    outside_grid: the datasets whose scored lr or batch size BLURB's grid does not hold
    (report.settings.outside_blurb_grid)."""
    score = summary.ours if summary else None
    return {
        "schema": LEADERBOARD_SCHEMA,
        "model": model,
        "protocol": protocol,
        "schedule": schedule,
        "outside_grid": outside_grid or {},
        "grid": grid,
        "blurb_score": round(score.score, 2) if score else None,
        "partial": score.partial if score else True,
        "missing": [BLURB[task].display for task in (score.missing if score else BLURB)],
        "comparable": summary.comparable if summary else False,
        "score_any_split": score_any_split,
        "not_comparable": dict(summary.not_comparable) if summary else {},
        "task_types": {
            task_type: round(score.type_averages[task_type], 2)
            if score and task_type in score.type_averages
            else None
            for task_type in TASK_TYPES
        },
        "datasets": {
            row.dataset: {
                "task": row.task,
                "type": row.type,
                "metric": row.metric,
                "score": round(100 * row.mean, 2) if row.mean is not None else None,
                "runs": row.seeds.done,
                "seeds": str(row.seeds),
                "why_no_score": None if row.mean is not None else (row.reason or "no runs"),
                "split_check": {
                    "checked_by": row.split_checked_by,
                    "outcome": row.split_outcome,
                    "why": row.split_why,
                }
                if row.split_outcome
                else None,
                **settings_entry(settings.get(row.task)),
            }
            for row in rows
        },
    }
