"""The per-dataset results of a BLURB sweep in the form of BLURB's leaderboard
(https://microsoft.github.io/BLURB/leaderboard.html): each dataset's test score (x100, the mean
over runs as Table 6), each task type's average and the BLURB score, keyed by the names the
leaderboard and Table 6 print. A dataset without a score says why (no runs, or the reason its runs
are not BLURB's); a partial score names the missing datasets.

Built from the report's BLURB rows (bio_roberta.report.blurb: blurb_rows / blurb_summary), so
the leaderboard and Table 6's layout never disagree.
"""

from __future__ import annotations

from typing import Any

from bio_roberta.blurb.suite import BLURB, TASK_TYPES

LEADERBOARD_SCHEMA = "bio-roberta/blurb-leaderboard/1"


def leaderboard(rows: list, summary, model: str) -> dict[str, Any]:
    """The leaderboard record of one model's BLURB rows (BlurbDatasetRow, one per dataset, Table
    6's order) and their BlurbSummary (None: no dataset scored)."""
    score = summary.ours if summary else None
    return {
        "schema": LEADERBOARD_SCHEMA,
        "model": model,
        "blurb_score": round(score.score, 2) if score else None,
        "partial": score.partial if score else True,
        "missing": [BLURB[task].display for task in (score.missing if score else BLURB)],
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
            }
            for row in rows
        },
    }
