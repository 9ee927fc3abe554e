"""The BLURB score (Gu et al. 2021, §4 and Table 6's caption).

"The macro average of average test results for each of the six tasks": average the test
results of the datasets within each task type, then average the six type averages. NER's five
datasets therefore weigh as much together as BIOSSES alone.

A task's test result is what Table 6 prints for it: the mean over fine-tuning runs (§6.2: ten
runs for BIOSSES, BioASQ and PubMedQA, five for the others); ``mean_over_runs`` gives it. With
datasets missing, the score averages the types that have results and is marked partial: it is
then not comparable with Table 6's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from bio_roberta.blurb.suite import BLURB, BLURB_DATASETS, TABLE6_BLURB_SCORES, TASK_TYPES


@dataclass(frozen=True)
class BlurbScore:
    score: float  # macro average over the types that have results
    type_averages: dict[str, float]  # task type -> average of its datasets' results
    missing: tuple[str, ...]  # datasets without a result, BLURB_DATASETS order

    @property
    def partial(self) -> bool:
        return bool(self.missing)


def blurb_score(results: Mapping[str, float]) -> BlurbScore:
    """BLURB score of test results keyed by dataset (bio_roberta.blurb.suite.BLURB's keys)."""
    unknown = sorted(set(results) - set(BLURB))
    if unknown:
        raise ValueError(f"not BLURB datasets: {', '.join(unknown)}; known: {', '.join(BLURB)}")
    if not results:
        raise ValueError("BLURB score of no results")
    type_averages = {}
    for task_type in TASK_TYPES:
        scores = [
            results[d.task]
            for d in BLURB_DATASETS
            if d.task_type == task_type and d.task in results
        ]
        if scores:
            type_averages[task_type] = statistics.fmean(scores)
    missing = tuple(d.task for d in BLURB_DATASETS if d.task not in results)
    return BlurbScore(statistics.fmean(type_averages.values()), type_averages, missing)


def mean_over_runs(scores: Sequence[float]) -> float:
    """A dataset's BLURB test result from its runs' test scores (Table 6 averages runs)."""
    if not scores:
        raise ValueError("no runs to average")
    return statistics.fmean(scores)


def table6_results(model: str) -> dict[str, float]:
    """Table 6's per-dataset results of one of its models (bio_roberta/tasks/paper_models.py)."""
    if model not in TABLE6_BLURB_SCORES:
        raise ValueError(
            f"{model!r} is not a column of Gu et al.'s Table 6; its columns: "
            f"{', '.join(TABLE6_BLURB_SCORES)}"
        )
    return {dataset.task: dataset.table6[model] for dataset in BLURB_DATASETS}
