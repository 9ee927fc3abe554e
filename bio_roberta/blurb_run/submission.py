"""The submission directory: the chosen run's predictions file (bio_roberta/blurb/
predictions_file.py) of each dataset, copied by ``write_submission`` (``chosen_run``: of the
selected setting's finished runs the best validation score, ties to the lowest seed) into
``<out>/<dataset_name>.json`` with a manifest naming each run. ``bio-roberta rescore`` scores such
a directory against the release files (bio_roberta/blurb_run/rescore.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Optional

from bio_roberta.blurb.predictions_file import (
    dataset_name,
    read_predictions_file,
    write_predictions_file,
)
from bio_roberta.finetuning.results import OK, REGISTRY_SETTING, SINGLE, ResultRecord
from bio_roberta.tasks.registry import get_task
from bio_roberta_core.provenance import (
    atomic_write_json,
    environment_record,
    file_record,
    sha256_file,
)

SUBMISSION_SCHEMA = "bio-roberta/submission/1"
MANIFEST = "manifest.json"
SELECTION = "best valid_score of the selected setting's finished runs; ties: lowest seed"


def chosen_run(
    records: Iterable[ResultRecord], task: str, setting: Optional[str] = None
) -> Optional[ResultRecord]:
    """The run whose test predictions stand for `task`: of its finished runs (of `setting`, a
    setting_name, "" the registry's, when one is selected) the best valid_score, ties (and runs
    without one, which rank last) to the lowest seed; None without such a run. Cross-validated
    tasks have no single run: none."""
    runs = [
        record
        for record in records
        if record.task == task
        and record.status == OK
        and record.role == SINGLE
        and (setting is None or record.setting_name == setting)
    ]

    def rank(record: ResultRecord):
        valid = record.valid_score
        missing = valid is None or math.isnan(valid)
        return (missing, -valid if not missing else 0.0, record.seed)

    return min(runs, key=rank, default=None)


def write_submission(
    records: list[ResultRecord],
    out: Path,
    model_name: str,
    tasks: Iterable[str],
    settings: Optional[dict[str, str]] = None,
) -> dict:
    """<out>/<dataset_name>.json of each task's chosen run (model_name set to `model_name`; of
    settings[task], a setting_name, when given) and <out>/manifest.json naming the run of each
    file, its setting and why a task has none; the manifest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    datasets, without = {}, {}
    for task in tasks:
        spec = get_task(task)
        setting = (settings or {}).get(task)
        name = dataset_name(spec)
        target = out / f"{name}.json"
        target.unlink(missing_ok=True)
        run = chosen_run(records, task, setting)
        if run is None:
            without[name] = (
                "cross-validated: no single test set" if spec.folds else "no finished run"
            )
            continue
        if not run.predictions_by_id:
            without[name] = f"{run.path}: its run wrote no predictions keyed by example id"
            continue
        path = Path(run.predictions_by_id["path"])
        if not path.is_file() or sha256_file(path) != run.predictions_by_id["sha256"]:
            without[name] = f"{path}: gone or changed since {run.path} recorded it"
            continue
        source = read_predictions_file(path)
        write_predictions_file(target, name, model_name, source.predictions)
        datasets[name] = {
            "task": task,
            "file": target.name,
            "examples": len(source.predictions),
            "run": {
                "result": str(run.path),
                "seed": run.seed,
                "setting": run.setting_name or REGISTRY_SETTING,
                "hparams": dict(run.setting or {}),
                "valid_score": run.valid_score,
                "test_score": run.test_score,
                "metric": run.metric,
                "predictions_by_id": run.predictions_by_id,
            },
            "written": file_record(target),
        }
    manifest = {
        "schema": SUBMISSION_SCHEMA,
        "model_name": model_name,
        "selection": SELECTION,
        "datasets": datasets,
        "without_predictions": without,
        **environment_record(),
    }
    atomic_write_json(out / MANIFEST, manifest)
    return manifest
