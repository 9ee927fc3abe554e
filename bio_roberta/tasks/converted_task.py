"""The task a converted data dir (finetune-bin/<task>) was converted for, read from its manifest:
the registry's, or a task file's as the conversion recorded its declaration. Prediction, export
and a fine-tuning job's test predictions ask it of the data they are given."""

from __future__ import annotations

import json
from pathlib import Path

from bio_roberta.tasks.prediction_files import PredictionFileError
from bio_roberta.tasks.registry import find_task
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta.tasks.task_file import as_converted, recorded_task


def task_spec_of(data_dir: Path) -> TaskSpec:
    """The task named by finetune-bin/<task>/manifest.json, as converted (a task file's labels
    as the conversion recorded them)."""
    manifest = Path(data_dir) / "manifest.json"
    try:
        record = json.loads(manifest.read_text())
        name = record["task"]
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{manifest} not found: is {data_dir} a finetune-bin/<task> directory?"
        ) from None
    except (KeyError, json.JSONDecodeError) as error:
        raise PredictionFileError(f"{manifest}: no task name ({error})") from None
    spec = find_task(name)
    if spec is None:  # a task file's, read from its declaration the conversion recorded
        spec = recorded_task(record, manifest)
        if spec is not None:
            return spec
        declared_by = (record.get("task_declaration") or {}).get("path")
        raise PredictionFileError(
            f"{manifest}: task {name!r} is not the registry's"
            + (
                f" and the task file it was converted from ({declared_by}) has changed since: "
                f"convert it again, or pass that task file (--task-file {declared_by}; "
                "bio_roberta.load(..., task_file=...))"
                if declared_by
                else ""
            )
        )
    return as_converted(spec, record, manifest)
