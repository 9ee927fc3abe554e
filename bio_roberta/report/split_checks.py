"""Why a BLURB dataset's runs are not BLURB's: a metric other than BLURB's, or a split other than
BLURB's as the data manifest they trained on says (its blurb_split_check and
blurb_split_checked_by, written by `bio-roberta convert-task`; without them, or when no check was
possible, the split is unknown, never BLURB's: issue 21). Kept apart from the rows so that what a
manifest may hold is read in one place."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta.blurb.split_check import NO_CHECK, SplitStatus, combined_status, split_status
from bio_roberta.blurb.suite import BlurbDataset, metric_gap
from bio_roberta.finetuning.results import ResultRecord
from bio_roberta.report.errors import ReportError
from bio_roberta.tasks.registry import TASKS
from bio_roberta_core.provenance import sha256_file


@dataclass(frozen=True)
class BlurbGap:
    """What keeps a dataset's runs from BLURB's score, and what their split is."""

    reason: Optional[str]  # why no BLURB score: a metric not BLURB's, a split not BLURB's or
    # unchecked (not with score_any_split); None: scored
    split: Optional[SplitStatus]  # how the runs' split was checked and what it found; None: no runs
    note: str  # data manifests that could not be read back as the runs recorded them


def manifest_split_status(dataset: BlurbDataset, record: ResultRecord) -> tuple[SplitStatus, str]:
    """The split status of the data manifest a run trained on (bio-roberta convert-task writes its
    blurb_split_check, None = BLURB's split, else how it differs, and blurb_split_checked_by),
    unknown when there is none or it holds no check, and a note when it is gone or changed since
    the run."""
    manifest = (record.data or {}).get("manifest")
    if not manifest:
        return split_status(dataset), ""
    path = Path(manifest["path"])
    if not path.is_file() or sha256_file(path) != manifest.get("sha256"):
        note = f"data manifest {path} gone or changed since the run: split unchecked"
        return split_status(dataset), note
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ReportError(f"{path} (data manifest of {record.path}): not JSON ({error})") from None
    check = data.get("blurb_split_check", NO_CHECK)
    if check is not NO_CHECK and check is not None and not isinstance(check, str):
        raise ReportError(
            f"{path} (data manifest of {record.path}): blurb_split_check {check!r} is "
            "neither null nor a reason string"
        )
    checked_by = data.get("blurb_split_checked_by")
    if checked_by is not None and not isinstance(checked_by, str):
        raise ReportError(
            f"{path} (data manifest of {record.path}): blurb_split_checked_by {checked_by!r} is "
            "not a string; convert the dataset again (bio-roberta convert-task)"
        )
    return split_status(dataset, check, checked_by), ""


def blurb_gap(
    dataset: BlurbDataset, records: list[ResultRecord], score_any_split: bool = False
) -> BlurbGap:
    """Why a dataset's runs (or, without runs, its registry task) get no BLURB score, or None; how
    their split was checked; a note on manifests that could not be checked. A metric not BLURB's
    always keeps the score out; a split not BLURB's or unchecked does unless score_any_split."""
    metrics = {record.metric for record in records} or (
        {TASKS[dataset.task].metric} if dataset.task in TASKS else set()
    )
    gaps = [gap for metric in sorted(metrics) if (gap := metric_gap(dataset, metric))]
    # one data manifest is read once, however many runs trained on it
    by_manifest = {}
    for record in records:
        manifest = json.dumps((record.data or {}).get("manifest"), sort_keys=True)
        if manifest not in by_manifest:
            by_manifest[manifest] = manifest_split_status(dataset, record)
    split = combined_status([status for status, _ in by_manifest.values()])
    if split is not None and not split.is_blurbs and not score_any_split:
        gaps.append(split.reason)
    notes = sorted({note for _, note in by_manifest.values() if note})
    return BlurbGap("; ".join(gaps) or None, split, "; ".join(notes))
