"""Test predictions keyed by the release's own example ids: one JSON file per dataset.

The file follows the top level of BLURB's leaderboard submission schemas (the task-specific JSON
schemas linked from https://microsoft.github.io/BLURB/submit.html, whose opening we could read in
public copies: an object of exactly ``dataset_name`` (BLURB's name, e.g. ``"BC5-chem"``,
``"EBM PICO"``), ``model_name`` and ``predictions``, an object keyed by example id). What BLURB's
schemas require of each prediction value could not be read in any public source we found, so the
values are ours, one per task kind (bio_roberta/tasks/prediction_files.py ``by_id``)::

    {
      "dataset_name": "NCBI-disease",
      "model_name": "pretrained/checkpoint_best.pt",
      "predictions": {
        "12": ["O", "B", "I", "O"],
        ...
      }
    }

Ids are the release's: LinkBERT's ``id``; for files without ids (BioBERT's / Crichton's NER
files) ``<file name>:<line of the sentence's first token>``; the other readers' as
bio_roberta/readers/source_files.py states. A dataset outside BLURB is named by its registry
task. One prediction per line, so an error can name the line of an id.

A run writes its file as ``test.predictions.json`` beside its other prediction file
(bio_roberta/prediction/predictions.py); bio_roberta/blurb_run/submission.py collects the chosen
run's file of each dataset, and ``bio-roberta rescore`` scores such files against the release
files (bio_roberta/blurb_run/rescore.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bio_roberta.blurb.suite import BLURB
from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.provenance import atomic_write_text

SUBMISSION_KEYS = ("dataset_name", "model_name", "predictions")
OBJECT_KEY = re.compile(r'("(?:[^"\\]|\\.)*")\s*:')


class SubmissionError(BioRobertaError):
    """A predictions file that is not in the documented form (names the file and line)."""


def dataset_name(spec: TaskSpec) -> str:
    """BLURB's name of the task's dataset (Table 6's), else the registry task name."""
    return BLURB[spec.name].display if spec.name in BLURB else spec.name


def task_of_dataset_name(name: str, where: str) -> TaskSpec:
    """The registry entry a submission's dataset_name names (BLURB's name or a task name)."""
    for task, dataset in BLURB.items():
        if dataset.display == name:
            return get_task(task)
    if name in TASKS:
        return get_task(name)
    raise SubmissionError(
        f"{where}: dataset_name {name!r} is neither a BLURB dataset "
        f"({', '.join(d.display for d in BLURB.values())}) nor a registry task"
    )


def write_predictions_file(path: Path, name: str, model_name: str, predictions: dict) -> None:
    """The JSON form above, one prediction per line."""
    items = ",\n".join(
        f"    {json.dumps(example_id)}: {json.dumps(value, allow_nan=False)}"
        for example_id, value in predictions.items()
    )
    atomic_write_text(
        path,
        "{\n"
        f'  "dataset_name": {json.dumps(name)},\n'
        f'  "model_name": {json.dumps(model_name)},\n'
        '  "predictions": {' + (f"\n{items}\n  " if items else "") + "}\n}\n",
    )


@dataclass
class PredictionsFile:
    """A predictions file read back: its dataset's task, model and {id: value}, and the line of
    each id (for errors)."""

    path: Path
    spec: TaskSpec
    model_name: str
    predictions: dict[str, Any]
    id_lines: dict[str, int]

    def where(self, example_id: str) -> str:
        return f"{self.path}:{self.id_lines.get(example_id, 1)}"


def _key_lines(text: str) -> dict[str, int]:
    """The first line on which each object key appears (a JSON string followed by ':')."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for match in OBJECT_KEY.finditer(line):
            try:
                lines.setdefault(json.loads(match.group(1)), number)
            except json.JSONDecodeError:
                continue
    return lines


def read_predictions_file(path: Path) -> PredictionsFile:
    """A predictions file in the JSON form above; SubmissionError naming the file and line of
    what is not."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
        document = json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError as error:
        raise SubmissionError(f"{path}: not UTF-8 ({error})") from None
    except json.JSONDecodeError as error:
        raise SubmissionError(f"{path}:{error.lineno}: not JSON ({error.msg})") from None
    except ValueError as error:
        raise SubmissionError(f"{path}: {error}") from None
    if not isinstance(document, dict) or set(document) != set(SUBMISSION_KEYS):
        found = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise SubmissionError(
            f"{path}:1: expected an object of exactly {', '.join(SUBMISSION_KEYS)} (found "
            f"{found}); the form is in docs/task_dirs.md"
        )
    lines = _key_lines(text)
    for key, kind, what in zip(SUBMISSION_KEYS, (str, str, dict), ("string", "string", "object")):
        if not isinstance(document[key], kind):
            raise SubmissionError(f"{path}:{lines.get(key, 1)}: {key} must be a JSON {what}")
    spec = task_of_dataset_name(document["dataset_name"], f"{path}:{lines.get('dataset_name', 1)}")
    return PredictionsFile(path, spec, document["model_name"], document["predictions"], lines)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a prediction can hold")
