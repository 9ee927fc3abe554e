"""A task declared in a YAML or JSON file of the user's (`--task-file my_task.yaml`,
docs/own_tasks.md), read into the same TaskSpec as a registry task, so that convert-task,
finetune, sweep, report, export-hf and predict take it as they take the registry's.

A declaration names the task, its kind (bio_roberta/tasks/kinds.py), its train / dev / test files
(relative to the declaration's folder), their format and columns, its labels (a list, or "infer":
the train split's, recorded in the converted data's manifest, which later commands read back),
and optionally its metric and hyperparameters (default: the kind's, registry.KIND_DEFAULTS).
Every mistake is one line naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterable, Mapping, Optional

from bio_roberta.tasks.kinds import KINDS, NER, REGRESSION
from bio_roberta.tasks.registry import DECLARED, KIND_DEFAULTS, TASKS
from bio_roberta.tasks.spec import (
    CLINICAL,
    DEFAULT_SEEDS,
    PUBMED,
    Declaration,
    Hyperparameters,
    TaskSpec,
)
from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.metrics import BINARY_F1, METRICS
from bio_roberta_core.tagging import split_tag
from bio_roberta_core.text_files import utf8_decoded

INFER = "infer"
# The declaration's split names -> ours (fairseq's "valid").
SPLIT_NAMES = {"train": "train", "dev": "valid", "test": "test"}
# What `files:` may call the dev split: dev, or fairseq's and the datasets library's names
DEV_NAMES = ("dev", "valid", "validation")
# format -> the reader of bio_roberta/readers/formats/ that reads it (TaskSpec.source_format).
FORMATS = {
    "conll": "conll_columns",
    "jsonl": "table_rows",
    "csv": "table_rows",
    "tsv": "table_rows",
    "parquet": "table_rows",
    "hf_disk": "table_rows",
}
# Every field a task file may have (docs/own_tasks.md says what each holds).
FIELDS = (
    "name",
    "kind",
    "files",
    "format",
    "columns",
    "labels",
    "metric",
    "hparams",
    "negative_label",
    "entity_type",
    "display",
    "domain",
    "seeds",
    "max_positions",
)
REQUIRED = ("name", "kind", "files", "format")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Columns per format and kind: CoNLL's are word and tag positions on a line (0 the first, -1 the
# last); a table's are field names.
CONLL_COLUMNS = {"word": 0, "tag": -1}
WORD_COLUMNS = {"words": "tokens", "tags": "tags"}
TEXT_COLUMNS = {"text": "text", "label": "label"}
PAIR_COLUMNS = {"text": "text", "text_pair": "text_pair", "label": "label"}


# The task files a command declared, for the processes it starts (the sweep's Hydra jobs).
TASK_FILES_ENV = "BIO_ROBERTA_TASK_FILES"


class TaskFileError(BioRobertaError):
    """A task declaration that cannot be read: names the file and the field."""


def _fields(path: Path, data: bytes) -> dict:
    """The mapping of the file's bytes `data`: YAML (.yaml, .yml) or JSON (.json)."""
    text = utf8_decoded(path, data, TaskFileError)
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = f":{mark.line + 1}" if mark else ""
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            raise TaskFileError(f"{path}{line}: not YAML ({problem})") from None
    elif path.suffix == ".json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise TaskFileError(f"{path}:{error.lineno}: not JSON ({error.msg})") from None
    else:
        raise TaskFileError(f"{path}: a task file is .yaml, .yml or .json")
    if not isinstance(value, dict):
        raise TaskFileError(f"{path}: expected a mapping of fields ({', '.join(FIELDS)})")
    return value


def _field_error(path: Path, name: str, problem: str) -> TaskFileError:
    return TaskFileError(f"{path}: field {name!r}: {problem}")


def _choice(path: Path, fields: dict, name: str, choices, default=None) -> str:
    value = fields.get(name, default)
    if not isinstance(value, str) or value not in choices:
        raise _field_error(path, name, f"{value!r} is not one of {', '.join(choices)}")
    return value


def _files(path: Path, value, present: bool = True) -> dict[str, str]:
    """Our split name -> the file, each present beside the declaration (unless not `present`:
    a declaration read back from converted data)."""
    if isinstance(value, dict):  # fairseq's and the datasets library's names of dev
        named = [name for name in DEV_NAMES if name in value]
        if len(named) > 1:
            raise _field_error(path, "files", f"{' and '.join(named)} both name the dev split")
        if named:
            value = {("dev" if key == named[0] else key): file for key, file in value.items()}
    if not isinstance(value, dict) or set(value) != set(SPLIT_NAMES):
        given = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise _field_error(
            path,
            "files",
            f"expected train, dev (or valid, validation) and test (paths from {path.parent}), "
            f"got {given}",
        )
    files = {}
    for split in SPLIT_NAMES:  # train first: an "infer" reads its labels there
        file = value[split]
        if not isinstance(file, str) or not file:
            raise _field_error(path, f"files.{split}", "expected a path")
        if present and not (path.parent / file).exists():
            raise _field_error(path, f"files.{split}", f"{path.parent / file} does not exist")
        files[SPLIT_NAMES[split]] = file
    return files


def _columns(path: Path, value, data_format: str, kind: str) -> dict:
    """The format's columns for the kind, the declared ones over the defaults."""
    if data_format == "conll":
        if not KINDS[kind].tags_words:
            raise _field_error(path, "format", f"conll holds tagged words; kind {kind} does not")
        defaults = CONLL_COLUMNS
    elif KINDS[kind].tags_words:
        if data_format in ("csv", "tsv"):
            raise _field_error(
                path, "format", f"a {data_format} cell holds no word list: use conll or jsonl"
            )
        defaults = WORD_COLUMNS
    else:
        defaults = PAIR_COLUMNS if KINDS[kind].inputs == 2 else TEXT_COLUMNS
    value = {} if value is None else value
    if not isinstance(value, dict):
        raise _field_error(path, "columns", f"expected a mapping of {', '.join(defaults)}")
    unknown = sorted(set(value) - set(defaults))
    if unknown:
        raise _field_error(
            path, "columns", f"{', '.join(unknown)} not among {', '.join(defaults)} ({kind})"
        )
    columns = {**defaults, **value}
    want = int if data_format == "conll" else str
    for name, column in columns.items():
        if type(column) is not want:
            raise _field_error(path, f"columns.{name}", f"expected a {want.__name__}")
    return columns


def _labels(path: Path, fields: dict, kind: str) -> tuple[tuple[str, ...], bool]:
    """(labels, inferred): the declared list, or () to infer from the train split."""
    value = fields.get("labels", INFER)
    if kind == REGRESSION:
        if "labels" in fields:
            raise _field_error(path, "labels", "a regression task has scores, not labels")
        return (), False
    if value == INFER:
        return (), True
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _field_error(path, "labels", 'expected a list of labels or "infer"')
    if len(set(value)) != len(value):
        raise _field_error(path, "labels", "a label is listed twice")
    if KINDS[kind].tags_words:
        check_tag_set(value, f"{path}: field 'labels'")
    return tuple(value), False


def check_tag_set(tags, where: str) -> None:
    """Tags of BIO (typed B-X/I-X or untyped B/I, not both) with O, or an error naming where."""
    try:
        letters = [split_tag(tag) for tag in tags]
    except ValueError as error:
        raise TaskFileError(f"{where}: {error}; expected BIO tags (O, B-X, I-X)") from None
    odd = [tag for tag, (letter, _) in zip(tags, letters) if letter not in "OBI"]
    if odd:
        raise TaskFileError(f"{where}: {', '.join(odd)} not BIO tags (O, B-X, I-X)")
    typed = {bool(type_) for letter, type_ in letters if letter != "O"}
    if len(typed) > 1:
        raise TaskFileError(f"{where}: typed and untyped B/I tags mixed")


def _hparams(path: Path, value, default: Hyperparameters) -> Hyperparameters:
    known = [f.name for f in dataclasses.fields(Hyperparameters)]
    if value is None:
        return default
    if not isinstance(value, dict):
        raise _field_error(path, "hparams", f"expected a mapping of {', '.join(known)}")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise _field_error(path, "hparams", f"{', '.join(unknown)} not among {', '.join(known)}")
    for name, number in value.items():
        want = type(getattr(default, name)) if name != "patience" else int
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise _field_error(path, f"hparams.{name}", f"expected a number, got {number!r}")
        if want is int and number != int(number):
            raise _field_error(path, f"hparams.{name}", f"expected an integer, got {number!r}")
        value[name] = want(number)
    return dataclasses.replace(default, **value)


def _domain(path: Path, fields: dict) -> str:
    """The report's domain column (pubmed or clinical; "" when not declared). Its summary rows
    average the registry's tasks only."""
    domain = _optional(path, fields, "domain", str, "")
    if domain not in ("", PUBMED, CLINICAL):
        raise _field_error(path, "domain", f"{domain!r}: {PUBMED} or {CLINICAL}")
    return domain


def _optional(path: Path, fields: dict, name: str, want: type, default=None):
    value = fields.get(name, default)
    if value is not default and not isinstance(value, want):
        raise _field_error(path, name, f"expected a {want.__name__}, got {value!r}")
    return value


def read_task_file(path: str | Path) -> TaskSpec:
    """The TaskSpec a task file declares (its declaration attached); TaskFileError naming the
    file and field when a field is unknown, missing or wrong, or a file it names is missing."""
    path = Path(path).resolve()
    if not path.is_file():
        raise TaskFileError(f"{path}: no such task file")
    data = path.read_bytes()  # once: the fields and the sha256 are of the same bytes
    return declared_spec(path, _fields(path, data), hashlib.sha256(data).hexdigest())


def declared_spec(path: Path, fields: dict, sha256: str, files_present: bool = True) -> TaskSpec:
    """The TaskSpec of a task file's fields (path: the file they were read from; files_present:
    check that the files it names are there)."""
    declared = json.loads(json.dumps(fields, default=str))  # as read, before checks convert it
    fields = dict(fields)
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise _field_error(path, unknown[0], f"unknown field; known: {', '.join(FIELDS)}")
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise _field_error(path, missing[0], "missing")
    name = fields["name"]
    if not isinstance(name, str) or not NAME.match(name):
        raise _field_error(path, "name", f"{name!r}: letters, digits, '_', '.', '-' only")
    kind = _choice(path, fields, "kind", KIND_DEFAULTS)
    default_metric, default_hparams = KIND_DEFAULTS[kind]
    metric = _choice(path, fields, "metric", METRICS, default_metric)
    data_format = _choice(path, fields, "format", FORMATS)
    labels, infer = _labels(path, fields, kind)
    negative = _optional(path, fields, "negative_label", str)
    if negative is not None and kind == NER:
        raise _field_error(path, "negative_label", "an NER task has no negative label")
    if negative is not None and labels and negative not in labels:
        raise _field_error(path, "negative_label", f"{negative!r} is not among the labels")
    if metric == BINARY_F1 and (negative is None or len(labels) not in (0, 2)):
        raise _field_error(
            path,
            "negative_label" if negative is None else "labels",
            "binary_f1 scores the one label of two that is not negative_label: give both",
        )
    seeds = _optional(path, fields, "seeds", list, list(DEFAULT_SEEDS))
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise _field_error(path, "seeds", "expected a list of integers")
    declaration = Declaration(
        path=path,
        sha256=sha256,
        format=data_format,
        files=_files(path, fields["files"], files_present),
        columns=_columns(path, fields.get("columns"), data_format, kind),
        infer_labels=infer,
        fields=declared,
    )
    try:
        return TaskSpec(
            name=name,
            display=_optional(path, fields, "display", str, name),
            domain=_domain(path, fields),
            kind=kind,
            source_format=FORMATS[data_format],
            labels=labels,
            metric=metric,
            hparams=_hparams(path, fields.get("hparams"), default_hparams),
            paper={},
            negative_label=negative,
            max_positions=_optional(
                path,
                fields,
                "max_positions",
                int,
                TaskSpec.__dataclass_fields__["max_positions"].default,
            ),
            seeds=tuple(seeds),
            entity_type=_optional(path, fields, "entity_type", str),
            declaration=declaration,
        )
    except ValueError as error:  # TaskSpec's own checks (a metric the kind's criterion lacks)
        raise _field_error(path, "metric", str(error)) from None


def as_converted(spec: TaskSpec, manifest: Mapping, manifest_path: Path) -> TaskSpec:
    """A declared task as its converted data (finetune-bin/<task>/manifest.json) has it: the
    labels the conversion used (inferred from train, recorded once); the registry's unchanged."""
    if spec.declaration is None:
        return spec
    recorded: Optional[dict] = manifest.get("task_declaration")
    if recorded is None or manifest.get("kind") != spec.kind:
        raise TaskFileError(
            f"{manifest_path}: not converted from the task file {spec.declaration.path} "
            f"(kind {manifest.get('kind')}, declared {spec.kind}): convert it again with "
            f"bio-roberta convert-task {spec.name} --task-file {spec.declaration.path}"
        )
    labels = tuple(recorded["labels"])
    if not spec.declaration.infer_labels and labels != spec.labels:
        raise TaskFileError(
            f"{manifest_path}: converted with labels {', '.join(labels)}, {spec.declaration.path} "
            f"declares {', '.join(spec.labels)}: convert it again"
        )
    return dataclasses.replace(spec, labels=labels)


def recorded_task(manifest: Mapping, manifest_path: Path) -> Optional[TaskSpec]:
    """The declared task converted data records (its manifest's task_declaration), as converted,
    with no task file to pass: the declaration's fields as the conversion recorded them, or, in a
    manifest written before they were recorded, its task file if unchanged (its sha256); None
    where neither is there."""
    recorded = manifest.get("task_declaration")
    if not isinstance(recorded, dict) or not recorded.get("path"):
        return None
    path, fields = Path(recorded["path"]), recorded.get("fields")
    if fields is None:
        data = path.read_bytes() if path.is_file() else None
        if data is None or hashlib.sha256(data).hexdigest() != recorded.get("sha256"):
            return None
        fields = _fields(path, data)
    spec = declared_spec(path, fields, recorded.get("sha256"), files_present=False)
    return as_converted(spec, manifest, manifest_path)


def declare_task_files(paths: Iterable[str | os.PathLike]) -> list[TaskSpec]:
    """Read each task file and make its task known to registry.get_task, in this process and
    (TASK_FILES_ENV) the processes it starts; a name the registry or another task file already
    has is an error."""
    specs = []
    for path in paths:
        spec = read_task_file(path)
        other = TASKS.get(spec.name) or DECLARED.get(spec.name)
        if other is not None and (
            other.declaration is None or other.declaration.path != spec.declaration.path
        ):
            where = other.declaration.path if other.declaration else "the registry"
            raise _field_error(
                spec.declaration.path,
                "name",
                f"task {spec.name!r} is already declared by {where}; give it another name",
            )
        DECLARED[spec.name] = spec
        specs.append(spec)
    os.environ[TASK_FILES_ENV] = os.pathsep.join(
        str(spec.declaration.path) for spec in DECLARED.values()
    )
    return specs


def declare_inherited_task_files() -> list[TaskSpec]:
    """The tasks of the task files the command that started this process declared."""
    return declare_task_files(p for p in os.environ.get(TASK_FILES_ENV, "").split(os.pathsep) if p)
