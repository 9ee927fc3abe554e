"""The fine-tuning result record: its schema, statuses and roles, where it lies, and how it is read.

Each fine-tuning run (bio_roberta.finetuning.job) writes one record

    RESULTS/<task>/[<setting>/]seed<seed>/[fold<k>/]result.json

where <setting> names the run's hyperparameters that differ from the task's registry
Hyperparameters (setting_name: e.g. lr3e-05-bs32); the registry's own setting has none, so a
sweep without overrides keeps RESULTS/<task>/seed<seed> and each setting of a grid its own dir.

and the report (bio_roberta.report) and the sweep's exit status read them back here, without the
runner that starts fairseq. The keys are documented in docs/task_dirs.md (Results dir).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Optional

from bio_roberta.tasks.registry import find_task, get_task
from bio_roberta.tasks.spec import Hyperparameters
from bio_roberta_core.errors import BioRobertaError

RESULT_SCHEMA = "bio-roberta/result/1"
RESULT_FILE = "result.json"
# A run's status; STARTED only until it finishes: a record that keeps it is of a killed run (or
# of one still running).
OK, FAILED, STARTED = "ok", "failed", "started"
# A result record's "score_unit" -> a perfect score in that unit. fine_tune writes fractions
# (bio_roberta_core.metrics); a record without the key holds fractions too. The report reads
# either and refuses a score outside its unit's range.
SCORE_UNITS = {"fraction": 1.0, "percent": 100.0}
FRACTION = "fraction"
# Roles of a run: a task without folds; the fold that picks early stopping; a fold that is scored.
SINGLE, MODEL_SELECTION, EVALUATION = "single", "model_selection", "evaluation"
# The keys a record read back must have; the others have defaults.
REQUIRED_KEYS = ("task", "seed", "metric", "status", "test_score")
# Keys every written record carries, null or not; the others are written only when set.
ALWAYS_WRITTEN = frozenset(
    ("schema", "fold", "role", "score_unit", "error", "log", "valid_score", "pretrained")
    + REQUIRED_KEYS
)


class ResultRecordError(BioRobertaError):
    """A result.json that is not a result record, or a second record of a run (names the file)."""


# A Hyperparameters field -> its short name in a setting's dir name (setting_name).
SETTING_ABBREVIATIONS = {
    "lr": "lr",
    "batch_size": "bs",
    "max_epoch": "ep",
    "validate_interval_updates": "vi",
    "warmup_ratio": "warmup",
    "weight_decay": "wd",
    "dropout": "drop",
    "patience": "pat",
}
# What the report calls the registry's own setting (setting_name "").
REGISTRY_SETTING = "registry's setting"


def run_setting(registry: Hyperparameters, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A run's setting: the overrides (a sweep's hparams, None = keep) whose value differs from
    the task's registry Hyperparameters, in the dataclass's field order; {} is the registry's."""
    return {
        field.name: overrides[field.name]
        for field in dataclasses.fields(registry)
        if overrides.get(field.name) is not None
        and overrides[field.name] != getattr(registry, field.name)
    }


def ordered_setting(setting: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """A setting in Hyperparameters' field order, whatever order it was written in (result.json
    sorts its keys); KeyError for a key that is no hyperparameter."""
    unknown = sorted(set(setting or {}) - set(SETTING_ABBREVIATIONS))
    if unknown:
        raise KeyError(", ".join(unknown))
    return {key: setting[key] for key in SETTING_ABBREVIATIONS if key in (setting or {})}


def setting_name(setting: Optional[Mapping[str, Any]]) -> str:
    """A setting's dir name, e.g. {"batch_size": 32, "lr": 3e-05} -> "lr3e-05-bs32" (field order;
    repr of a float, so two values never share a name); "" for the registry's setting ({} or
    None, as records written before settings hold it)."""
    return "-".join(
        f"{SETTING_ABBREVIATIONS[key]}{value!r}" for key, value in ordered_setting(setting).items()
    )


def run_dir(
    results_dir: str | os.PathLike,
    task: str,
    seed: int,
    fold: Optional[int] = None,
    setting: Optional[Mapping[str, Any]] = None,
) -> Path:
    """RESULTS/<task>/[<setting>/]seed<seed>/[fold<k>/]: the one place a run's dir is named."""
    path = Path(results_dir) / task / setting_name(setting) / f"seed{seed}"
    return path / f"fold{fold}" if fold is not None else path


@dataclasses.dataclass
class ResultRecord:
    """One run's result.json; its fields are the file's keys (docs/task_dirs.md), except `path`,
    the file a record was read from."""

    task: str
    seed: int
    metric: str
    status: str
    test_score: Optional[float] = None
    schema: str = RESULT_SCHEMA
    fold: Optional[int] = None
    role: str = SINGLE
    score_unit: str = FRACTION
    error: Optional[str] = None
    traceback: Optional[str] = None
    log: Optional[str] = None
    # the hyperparameters differing from the registry's (run_setting); None: the registry's
    setting: Optional[dict[str, Any]] = None
    valid_score: Optional[float] = None
    test_examples: Optional[int] = None
    num_updates: Optional[int] = None
    checkpoint: Optional[dict[str, Any]] = None
    checkpoint_selection: Optional[str] = None
    predictions: Optional[dict[str, Any]] = None
    predictions_by_id: Optional[dict[str, Any]] = None
    pretrained: Optional[dict[str, Any]] = None
    data: Optional[dict[str, Any]] = None
    config: Optional[dict[str, Any]] = None
    config_hash: Optional[str] = None
    timings: Optional[dict[str, Any]] = None
    git_revision: Optional[str] = None
    package_versions: Optional[dict[str, str]] = None
    path: Optional[Path] = dataclasses.field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The record as result.json holds it."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name != "path"
            and (field.name in ALWAYS_WRITTEN or getattr(self, field.name) is not None)
        }

    @classmethod
    def from_json(cls, path: Path, record: Any) -> "ResultRecord":
        """The record of a result.json as the report reads it: its test score as a fraction,
        whatever its declared score_unit; ResultRecordError naming the file for one that is not
        a result record."""
        if not isinstance(record, dict):
            raise ResultRecordError(
                f"{path}: a JSON {type(record).__name__}, not a result record (an object)"
            )
        if record.get("schema") != RESULT_SCHEMA:
            raise ResultRecordError(
                f"{path}: schema {record.get('schema')!r}, expected {RESULT_SCHEMA!r}"
            )
        missing = [key for key in REQUIRED_KEYS if key not in record]
        if missing:
            raise ResultRecordError(f"{path}: no {', '.join(missing)}: not a whole result record")
        if find_task(record["task"]) is None:
            raise ResultRecordError(
                f"{path}: task {record['task']!r} is not a registry task (bio-roberta "
                "convert-task --help lists them); a task of your own: pass its --task-file; "
                "else fix the record or move it out"
            )
        for key in ("seed", "fold"):
            value = record.get(key)
            if (value is not None or key == "seed") and (
                isinstance(value, bool) or not isinstance(value, int)
            ):
                raise ResultRecordError(f"{path}: {key} {value!r} is not an integer")
        known = {field.name for field in dataclasses.fields(cls)} - {"path"}
        result = cls(**{key: value for key, value in record.items() if key in known}, path=path)
        if result.setting is not None:
            try:
                result.setting = ordered_setting(result.setting)
            except (KeyError, TypeError, AttributeError) as error:
                raise ResultRecordError(
                    f"{path}: setting {result.setting!r} is not an object of hyperparameters "
                    f"({', '.join(SETTING_ABBREVIATIONS)}): {error}"
                ) from None
        unit = result.score_unit
        if unit not in SCORE_UNITS:
            raise ResultRecordError(
                f"{path}: score_unit {unit!r} is not one of {', '.join(SCORE_UNITS)}"
            )
        score = result.test_score
        if result.status not in (OK, FAILED, STARTED):
            raise ResultRecordError(
                f"{path}: status {result.status!r} is not one of {OK}, {FAILED}, {STARTED}"
            )
        if result.status != OK:
            return result
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ResultRecordError(f"{path}: status ok but test_score {score!r} is not a number")
        if math.isnan(score):
            # no score to take a median of: listed with the failed runs, saying why
            result.status = FAILED
            result.error = (
                "test_score is NaN: the metric is undefined on its predictions (all equal, or NaN)"
            )
            return result
        if not -SCORE_UNITS[unit] <= score <= SCORE_UNITS[unit]:
            raise ResultRecordError(
                f"{path}: test_score {score} is outside [-{SCORE_UNITS[unit]:g}, "
                f"{SCORE_UNITS[unit]:g}], the range of a {unit} (score_unit"
                f"{' unset: fractions' if 'score_unit' not in record else ''}); give its score_unit"
            )
        result.test_score = score / SCORE_UNITS[unit]
        return result

    @property
    def is_scored(self) -> bool:
        """A finished run whose test score enters a median (not a model-selection fold)."""
        return self.status == OK and self.role in (SINGLE, EVALUATION)

    @property
    def setting_name(self) -> str:
        """The run's setting_name; "" for the registry's."""
        return setting_name(self.setting)

    @property
    def run_name(self) -> str:
        """'<task>[ <setting>] seed <seed>[ fold <k>]', as the report and errors name a run."""
        return run_name(self.task, self.setting_name, self.seed, self.fold)


def run_name(task: str, setting: str, seed: int, fold: Optional[int]) -> str:
    """How the report and errors name a run (setting: a setting_name)."""
    return (
        f"{task}{f' {setting}' if setting else ''} seed {seed}"
        f"{f' fold {fold}' if fold is not None else ''}"
    )


def unfinished_text(timings: Optional[dict[str, Any]], log: Optional[str]) -> str:
    """What a record still STARTED (with these timings and log) says about its run."""
    started = (timings or {}).get("started", "?")
    return (
        f"unfinished: started {started} and never recorded a result (killed, or still "
        f"running; log: {log})"
    )


def read_record(path: Path) -> ResultRecord:
    """The record of one result.json; ResultRecordError naming the file when it is not one."""
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file"
        if path.is_symlink() and not path.exists():
            what = f"a dangling symlink (to {os.readlink(path)})"
        raise ResultRecordError(
            f"{path}: {what}, not a result record; remove it or move it out of the results dir"
        )
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ResultRecordError(f"{path}: not UTF-8 ({error}); not a result record") from None
    except json.JSONDecodeError as error:
        raise ResultRecordError(f"{path}: not a JSON result record ({error})") from None
    return ResultRecord.from_json(path, record)


def load_records(results_dir: str | os.PathLike) -> list[ResultRecord]:
    """Every result record under results_dir (RESULTS/<task>/[<setting>/]seed<s>/[fold<k>/]
    result.json), test scores as fractions; ResultRecordError naming the file for one that cannot
    be read, and for a second record of the same run (task, setting, seed, fold) elsewhere under
    results_dir."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ResultRecordError(f"{results_dir}: no such results dir")
    records, runs = [], {}
    # every entry of that name: a dir or a dangling symlink (rglob skips it) is named, not skipped
    named = (Path(root) / RESULT_FILE for root, _, _ in os.walk(results_dir))
    for path in sorted(path for path in named if os.path.lexists(path)):
        record = read_record(path)
        run = (record.task, record.setting_name, record.seed, record.fold)
        if run in runs:
            raise ResultRecordError(
                f"{path}: a second record of {record.run_name} (the first: {runs[run]}); "
                f"move one out of {results_dir}"
            )
        runs[run] = path
        records.append(record)
    if not records:
        raise ResultRecordError(
            f"{results_dir}: no {RESULT_FILE} records; run `bio-roberta sweep` first"
        )
    return records


def grid_settings(
    registry: Hyperparameters, grid: Optional[list[Mapping[str, Any]]] = None
) -> dict[str, dict[str, Any]]:
    """setting_name -> run_setting of each setting a grid (a sweep's hparams overrides; None: the
    registry's setting alone) gives one task: two overrides equal to its registry share a dir."""
    settings: dict[str, dict[str, Any]] = {}
    for overrides in grid or [{}]:
        setting = run_setting(registry, overrides)
        settings.setdefault(setting_name(setting), setting)
    return settings


@dataclasses.dataclass(frozen=True)
class PlannedRun:
    """One run a finetune or sweep command asks for: where its record will be, and its name."""

    task: str
    setting: str  # its setting_name; "" for the registry's
    seed: int
    fold: Optional[int]
    dir: Path

    @property
    def record_path(self) -> Path:
        return self.dir / RESULT_FILE

    @property
    def name(self) -> str:
        return run_name(self.task, self.setting, self.seed, self.fold)


def planned_runs(
    results_dir: str | os.PathLike,
    task_names: list[str],
    seeds: list[int],
    grid: Optional[list[Mapping[str, Any]]] = None,
) -> list[PlannedRun]:
    """Every run of task_names x seeds x grid (each a sweep's hparams overrides; None: the
    registry's setting alone), every fold of a cross-validation task, in that order."""
    return [
        PlannedRun(
            spec.name, name, seed, fold, run_dir(results_dir, spec.name, seed, fold, setting)
        )
        for spec in map(get_task, task_names)
        for name, setting in grid_settings(spec.hparams, grid).items()
        for seed in seeds
        for fold in (range(1, spec.folds + 1) if spec.folds else [None])
    ]


def failed_runs(
    results_dir: str | os.PathLike,
    task_names: list[str],
    seeds: list[int],
    grid: Optional[list[Mapping[str, Any]]] = None,
) -> list[str]:
    """One line for each run of task_names x seeds x grid (each a sweep's hparams overrides;
    None: the registry's setting alone) whose record is missing or failed: what went wrong and
    where its log is."""
    lines = []
    for planned in planned_runs(results_dir, task_names, seeds, grid):
        path, run = planned.record_path, planned.name
        try:
            record = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            lines.append(
                f"{run}: no result record {path} (the job's log is under {results_dir}/hydra)"
            )
            continue
        if record.get("status") == STARTED:
            unfinished = unfinished_text(record.get("timings"), record.get("log"))
            lines.append(f"{run}: {unfinished}")
        elif record.get("status") != OK:
            log = record.get("log")
            where = (
                f"log: {log}" if log and Path(log).exists() else "stopped before training, no log"
            )
            lines.append(f"{run}: {(str(record.get('error')).splitlines() or [''])[0]} ({where})")
    return lines
