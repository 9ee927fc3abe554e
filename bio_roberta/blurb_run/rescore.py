"""Re-score a directory of predictions files (the JSON form of
bio_roberta/blurb/predictions_file.py, e.g. the submission blurb-suite writes) against the release
files, read through our readers, with the metric code the runs use (TaskSpec.score on the task
kind's ``scored`` values).

Each <dir>/*.json but manifest.json and rescore.json is one dataset's file; its release is found
under the data root as blurb-suite finds it (<root>/<kind>/<name>_hf or <root>/<task>). An id
that is not a test example of the release, or a value that does not fit its example, is an error
naming the file and line. A test example without a prediction is counted; any makes the file an
error unless ``allow_missing``, which scores the examples predicted and says how many were not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from bio_roberta.blurb.predictions_file import (
    PredictionsFile,
    SubmissionError,
    dataset_name,
    read_predictions_file,
)
from bio_roberta.blurb.suite import BLURB
from bio_roberta.blurb_run.submission import MANIFEST
from bio_roberta.readers import read_task
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.provenance import atomic_write_json, environment_record, file_record

RESCORE_SCHEMA = "bio-roberta/rescore/1"
RESCORE_FILE = "rescore.json"
NOT_PREDICTIONS = (MANIFEST, RESCORE_FILE)  # the other JSON files of a submission dir


def release_folder(root: Path, spec: TaskSpec) -> Path:
    """The folder of the task's release files under the data root."""
    folders = (
        BLURB[spec.name].folders(root)
        if spec.name in BLURB
        else [p for p in [root / spec.name] if p.is_dir()]
    )
    if len(folders) != 1:
        found = " and ".join(map(str, folders)) or "no folder"
        expected = (
            f"<root>/{BLURB[spec.name].linkbert_dir} or <root>/{spec.name}"
            if spec.name in BLURB
            else f"<root>/{spec.name}"
        )
        raise SubmissionError(
            f"{root}: {found} for {spec.name}; expected exactly one of {expected}"
        )
    return folders[0]


def rescore_file(predictions: PredictionsFile, root: Path, allow_missing: bool) -> dict:
    """The score of one predictions file against its release's test split."""
    spec = predictions.spec
    if spec.folds:
        raise SubmissionError(
            f"{predictions.path}: {spec.name} is cross-validated ({spec.folds} folds): no single "
            "test set to score"
        )
    test = read_task(spec, release_folder(root, spec)).splits["test"]
    release = {example.id: example for example in test.examples}
    sources = ", ".join(map(str, test.sources))
    if len(release) != len(test.examples):
        raise SubmissionError(f"{sources}: an example id names two test examples")
    kind = spec.task_kind.predictions
    unknown = [example_id for example_id in predictions.predictions if example_id not in release]
    if unknown:
        raise SubmissionError(
            f"{predictions.where(unknown[0])}: id {unknown[0]!r} is not a test example of "
            f"{spec.name} in {sources} ({len(unknown)} such ids); predict the release's test "
            "examples, keyed by its ids"
        )
    for example_id, value in predictions.predictions.items():
        problem = kind.check_value(spec, release[example_id], value)
        if problem:
            raise SubmissionError(f"{predictions.where(example_id)}: id {example_id!r}: {problem}")
    missing = [example.id for example in test.examples if example.id not in predictions.predictions]
    if missing and not allow_missing:
        raise SubmissionError(
            f"{predictions.path}: {len(missing)} of the {len(release)} test examples of {sources} "
            f"have no prediction (the first: {missing[0]!r}); pass --allow-missing to score the "
            "others"
        )
    scored = [example for example in test.examples if example.id in predictions.predictions]
    if not scored:
        raise SubmissionError(f"{predictions.path}: no predictions to score")
    gold, predicted = kind.scored(scored, [predictions.predictions[e.id] for e in scored])
    return {
        "task": spec.name,
        "metric": spec.metric,
        "score": spec.score(gold, predicted),
        "test_examples": len(release),
        "scored": len(scored),
        "missing": len(missing),
        "missing_ids": missing[:10],
        "model_name": predictions.model_name,
        "predictions": file_record(predictions.path),
        "release": [file_record(path) for path in test.sources],
    }


def predictions_files(directory: Path) -> list[Path]:
    """The predictions files of a directory: its *.json but the manifest and a rescore record."""
    if not directory.is_dir():
        raise SubmissionError(f"{directory}: not a directory of predictions files")
    files = [p for p in sorted(directory.glob("*.json")) if p.name not in NOT_PREDICTIONS]
    if not files:
        raise SubmissionError(
            f"{directory}: no predictions files (*.json; the form is in docs/task_dirs.md)"
        )
    return files


def recorded_scores(directory: Path) -> dict[str, Optional[float]]:
    """dataset_name -> the test score its run recorded, from a submission's manifest (none: {})."""
    path = directory / MANIFEST
    if not path.is_file():
        return {}
    datasets = json.loads(path.read_text()).get("datasets") or {}
    return {name: entry["run"]["test_score"] for name, entry in datasets.items()}


def rescore(
    directory: Path, data_root: Path, allow_missing: bool = False, out: Optional[Path] = None
) -> dict:
    """Score every predictions file of `directory` against the release under `data_root`; the
    record, also written to `out` (default <directory>/rescore.json)."""
    directory, data_root = Path(directory), Path(data_root)
    if not data_root.is_dir():
        raise SubmissionError(f"{data_root}: not a directory; pass the data root of the release")
    recorded = recorded_scores(directory)
    datasets: dict[str, dict] = {}
    for path in predictions_files(directory):
        predictions = read_predictions_file(path)
        name = dataset_name(predictions.spec)
        if name in datasets:
            raise SubmissionError(f"{path}: a second predictions file of {name}")
        result = rescore_file(predictions, data_root, allow_missing)
        if name in recorded:
            result["run_test_score"] = recorded[name]
        datasets[name] = result
    record = {
        "schema": RESCORE_SCHEMA,
        "predictions_dir": str(directory.resolve()),
        "data": str(data_root.resolve()),
        "allow_missing": allow_missing,
        "datasets": datasets,
        **environment_record(),
    }
    atomic_write_json(Path(out) if out else directory / RESCORE_FILE, record)
    return record
