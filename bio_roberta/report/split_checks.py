"""Why a BLURB dataset's runs are not BLURB's: a metric other than BLURB's, or a split other than
BLURB's as the data manifest they trained on says (its blurb_split_check, written by
`bio-roberta convert-task`; without one the split is unchecked, never BLURB's: issue 21). Kept
apart from the rows so that what a manifest may hold is read in one place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from bio_roberta.blurb.suite import NO_CHECK, BlurbDataset, metric_gap, split_gap
from bio_roberta.report.errors import ReportError
from bio_roberta.results import ResultRecord
from bio_roberta.tasks.registry import TASKS
from bio_roberta_core.provenance import sha256_file


def manifest_split_check(record: ResultRecord):
    """The blurb_split_check of the data manifest a run trained on (bio-roberta convert-task
    writes it: None = BLURB's split, else how it differs), NO_CHECK when the manifest holds none,
    or a note when it is gone or changed since the run."""
    manifest = (record.data or {}).get("manifest")
    if not manifest:
        return NO_CHECK, ""
    path = Path(manifest["path"])
    if not path.is_file() or sha256_file(path) != manifest.get("sha256"):
        return NO_CHECK, f"data manifest {path} gone or changed since the run: split unchecked"
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
    return check, ""


def blurb_gap(dataset: BlurbDataset, records: list[ResultRecord]) -> tuple[Optional[str], str]:
    """Why a dataset's runs (or, without runs, its registry task) are not BLURB's, or None; and a
    note on manifests that could not be checked."""
    metrics = {record.metric for record in records} or (
        {TASKS[dataset.task].metric} if dataset.task in TASKS else set()
    )
    gaps = [gap for metric in sorted(metrics) if (gap := metric_gap(dataset, metric))]
    # one data manifest is read once, however many runs trained on it
    by_manifest = {}
    for record in records:
        manifest = json.dumps((record.data or {}).get("manifest"), sort_keys=True)
        if manifest not in by_manifest:
            by_manifest[manifest] = manifest_split_check(record)
    checks = [check for check, _ in by_manifest.values()]
    notes = [note for _, note in by_manifest.values()]
    reasons = sorted({check for check in checks if isinstance(check, str)})
    if reasons:
        gaps += reasons
    elif records and NO_CHECK in checks:
        gaps += [gap] if (gap := split_gap(dataset)) else []
    return ("; ".join(gaps) or None), "; ".join(sorted(set(filter(None, notes))))
