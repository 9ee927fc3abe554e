"""The hyperparameter settings of each task's runs and the one the report scores (BLURB's
protocol, Gu et al. §6.2: tune on dev, report test).

A task whose runs hold one setting (bio_roberta.finetuning.results.run_setting) is untuned: its runs
are scored as they are. A task whose runs hold several (a grid: `blurb-suite --tune`, or `sweep`
with hparams.KEY=A,B) is tuned on dev: each setting's dev score is each seed's best validation score
(the checkpoint a run keeps; a cross-validation task's model-selection fold), aggregated over seeds
the way the suite aggregates test scores (the mean over runs for a BLURB dataset, as Table 6; the
median for the others, as Table 2), and only the runs of the setting with the best dev score enter
the tables and the BLURB score. Ties go to the setting with more seeds scored on dev, then to the
setting's name in alphabetical order (the registry's setting, which has none, first), so the pick
does not depend on the order records are read in. A setting without a dev score (every run failed
or unfinished) is never picked; a task none of whose settings has one has no score.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Optional

from bio_roberta.blurb.score import mean_over_runs
from bio_roberta.blurb.suite import BLURB
from bio_roberta.finetuning.results import (
    MODEL_SELECTION,
    OK,
    REGISTRY_SETTING,
    SINGLE,
    ResultRecord,
)
from bio_roberta.report.seed_results import registry_order
from bio_roberta.tasks.registry import TASKS
from bio_roberta.tasks.spec import BLURB_EPOCHS, BLURB_GRID

UNTUNED, TUNED = "untuned (one setting)", "tuned on dev"
NOT_PICKED = "no setting has a dev score (every run failed or unfinished)"


def dev_aggregate(task: str):
    """How a task's seeds' dev scores are aggregated: as the suite aggregates its test scores."""
    return mean_over_runs if task in BLURB else statistics.median


@dataclass(frozen=True)
class SettingResult:
    """One setting of a task: its dev score per seed (fractions) and their aggregate (None: no run
    of it has a dev score)."""

    name: str  # results.setting_name; "" the registry's setting
    hparams: dict[str, Any]  # the hyperparameters that differ from the registry's
    dev_scores: dict[int, float]
    dev: Optional[float]
    runs: int  # its records (every role and status)

    @property
    def label(self) -> str:
        return self.name or REGISTRY_SETTING

    def rank(self) -> tuple:
        """Sort key, best first: dev score, seeds with one, then the name ("" the registry's)."""
        return (-self.dev, -len(self.dev_scores), self.name)


@dataclass(frozen=True)
class TaskSettings:
    """A task's settings (by name) and the one scored; picked None: none has a dev score."""

    task: str
    settings: tuple[SettingResult, ...]
    picked: Optional[str]

    @property
    def protocol(self) -> str:
        return TUNED if len(self.settings) > 1 else UNTUNED


def protocol(settings: dict[str, TaskSettings]) -> str:
    """The report's protocol: tuned on dev when any task's runs hold several settings."""
    return TUNED if any(t.protocol == TUNED for t in settings.values()) else UNTUNED


def fixed_schedule(settings: dict[str, TaskSettings]) -> bool:
    """Whether every task's settings share one max_epoch: each run then keeps the best-dev
    checkpoint of one fixed-length schedule, where BLURB (Gu et al. §6.2) also tunes the epochs
    over BLURB_EPOCHS on dev (blurb-suite --tune-epochs makes them an axis of the grid)."""
    for task, found in settings.items():
        registry = TASKS[task].hparams.max_epoch if task in TASKS else None
        if len({s.hparams.get("max_epoch", registry) for s in found.settings}) > 1:
            return False
    return True


def schedule_text(settings: dict[str, TaskSettings]) -> str:
    """How a run's epochs were chosen, for the report's protocol line."""
    low, high = BLURB_EPOCHS
    if fixed_schedule(settings):
        return (
            "each run keeps its best-dev checkpoint of one fixed-length schedule (its max_epoch), "
            f"not BLURB's search over {low}-{high} epochs (--tune-epochs)"
        )
    return "epochs tuned on dev as a grid axis, each run keeping its best-dev checkpoint"


def outside_blurb_grid(settings: dict[str, TaskSettings]) -> dict[str, str]:
    """BLURB dataset (Table 6's name) -> the lr / batch size of its scored setting that BLURB's
    grid does not hold (BLURB_GRID), e.g. DDI's registry lr 2e-05: Lewis et al.'s recipe for the
    task both suites share (bio_roberta/tasks/registry.py)."""
    outside = {}
    for task, found in settings.items():
        if task not in BLURB or found.picked is None:
            continue
        picked = next(s for s in found.settings if s.name == found.picked)
        values = {
            key: picked.hparams.get(key, getattr(TASKS[task].hparams, key)) for key in BLURB_GRID
        }
        off = [f"{key} {value!r}" for key, value in values.items() if value not in BLURB_GRID[key]]
        if off:
            outside[BLURB[task].display] = ", ".join(off)
    return outside


def task_settings(task: str, records: list[ResultRecord]) -> TaskSettings:
    """The settings of one task's records and the one scored."""
    by_setting: dict[str, list[ResultRecord]] = {}
    for record in records:
        by_setting.setdefault(record.setting_name, []).append(record)
    aggregate = dev_aggregate(task)
    settings = []
    for name in sorted(by_setting):
        runs = by_setting[name]
        dev_scores = {
            r.seed: r.valid_score
            for r in runs
            if r.status == OK and r.role in (SINGLE, MODEL_SELECTION) and r.valid_score is not None
        }
        settings.append(
            SettingResult(
                name=name,
                hparams=dict(runs[0].setting or {}),
                dev_scores=dev_scores,
                dev=aggregate(list(dev_scores.values())) if dev_scores else None,
                runs=len(runs),
            )
        )
    if len(settings) == 1:
        return TaskSettings(task, tuple(settings), settings[0].name)
    candidates = sorted((s for s in settings if s.dev is not None), key=SettingResult.rank)
    return TaskSettings(task, tuple(settings), candidates[0].name if candidates else None)


def picked_settings(
    records: list[ResultRecord],
) -> tuple[list[ResultRecord], dict[str, TaskSettings]]:
    """(the records of each task's scored setting, every task's settings in registry order)."""
    by_task: dict[str, list[ResultRecord]] = {}
    for record in records:
        by_task.setdefault(record.task, []).append(record)
    settings = {task: task_settings(task, by_task[task]) for task in registry_order(by_task)}
    scored = [r for r in records if r.setting_name == settings[r.task].picked]
    return scored, settings
