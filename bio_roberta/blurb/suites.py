"""The suites a sweep runs and a report prints, both drawn from the one task registry.

lewis  the 18 tasks of Lewis et al. (2020): the registry tasks with Table 2 numbers
blurb  the registry tasks whose runs give a BLURB dataset's result under BLURB's metric: all 13
       (bio_roberta.blurb.suite); whether a run's split is BLURB's its data manifest says
both   the union, in registry order: the five NER tasks both suites share run once
"""

from __future__ import annotations

from bio_roberta.blurb.suite import BLURB_DATASETS, metric_gap
from bio_roberta.tasks.registry import TASKS

LEWIS, BLURB, BOTH = "lewis", "blurb", "both"
SUITES = (LEWIS, BLURB, BOTH)


def lewis_tasks() -> tuple[str, ...]:
    """Registry tasks of Lewis et al.'s Table 2 (TaskSpec.paper is {} for the others)."""
    return tuple(name for name, spec in TASKS.items() if spec.paper)


def public_tasks() -> tuple[str, ...]:
    """Lewis et al.'s tasks whose files need no licence or registration (`--tasks public`)."""
    return tuple(name for name in lewis_tasks() if TASKS[name].public)


def blurb_tasks() -> tuple[str, ...]:
    """Registry tasks a BLURB sweep runs, in registry order: the datasets whose metric is BLURB's
    (every one; the files read say whether the split is BLURB's: check_blurb_split)."""
    missing = [d.task for d in BLURB_DATASETS if d.task not in TASKS]
    if missing:
        raise KeyError(
            f"BLURB datasets without a registry task: {', '.join(missing)} "
            "(bio_roberta/blurb/suite.py names them; bio_roberta/tasks/registry.py lacks them)"
        )
    runnable = {d.task for d in BLURB_DATASETS if metric_gap(d, TASKS[d.task].metric) is None}
    return tuple(name for name in TASKS if name in runnable)


def suite_tasks(suite: str) -> tuple[str, ...]:
    """The registry tasks of a suite (SUITES), in registry order."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    names = set()
    if suite in (LEWIS, BOTH):
        names.update(lewis_tasks())
    if suite in (BLURB, BOTH):
        names.update(blurb_tasks())
    return tuple(name for name in TASKS if name in names)
