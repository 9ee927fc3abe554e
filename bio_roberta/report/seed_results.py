"""One model's results per task, from its runs' records: the seed scores each median is taken
over, how many seeds were asked, and the name the report gives the model. Both suites' rows are
built from these, so that Lewis et al.'s table and BLURB's count seeds and folds the same way."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from bio_roberta.finetuning.results import SINGLE, ResultRecord
from bio_roberta.tasks.registry import TASKS, find_task
from bio_roberta.tasks.spec import DEFAULT_SEEDS


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
    return {name: results[name] for name in registry_order(results)}


def registry_order(names: Iterable[str]) -> list[str]:
    """Task names once each, in registry order; names the registry lacks last, as found."""
    found = list(dict.fromkeys(names))
    return [n for n in TASKS if n in found] + [n for n in found if n not in TASKS]


def seeds_asked(task: str, expected_seeds: Optional[int]) -> int:
    """How many seeds a task was asked: the first expected_seeds of its TaskSpec.seeds (all of
    them when None), as `bio-roberta sweep --seeds` picks them."""
    spec = find_task(task)
    seeds = spec.seeds if spec is not None else DEFAULT_SEEDS
    return len(seeds[:expected_seeds])


@dataclass(frozen=True)
class SeedCount:
    """The seeds a task's median is over, of those asked; printed done/asked (the seeds column).
    short_folds: a seed's score is the median over fewer folds than asked."""

    done: int
    asked: int
    short_folds: bool = False

    def __str__(self) -> str:
        return f"{self.done}/{self.asked}"

    @property
    def short(self) -> bool:
        """A median over fewer seeds (or folds) than asked: report.md marks it."""
        return self.done < self.asked or self.short_folds


def seed_count(task: str, result: Optional[TaskResult], expected_seeds: Optional[int]) -> SeedCount:
    """The seeds of a task's result (None: no scored run) of those asked."""
    return SeedCount(
        len(result.seed_scores) if result else 0,
        seeds_asked(task, expected_seeds),
        bool(result and result.short_folds),
    )


def pretrained_paths(records: list[ResultRecord]) -> list[Path]:
    """The pretrained checkpoints the runs fine-tuned."""
    return [Path(p) for p in sorted({(r.pretrained or {}).get("path") for r in records} - {None})]


def model_name(records: list[ResultRecord]) -> str:
    """What the report calls the model it reports: the pretrained checkpoint the runs fine-tuned,
    by its folder and file name (e.g. distilled/checkpoint_last.pt); "ours" when no record names
    one."""
    return " + ".join(str(Path(*p.parts[-2:])) for p in pretrained_paths(records)) or "ours"
