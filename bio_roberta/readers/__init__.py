"""Readers of the benchmark tasks' source files: ``read_task`` and the ``READERS`` table.

    source_files.py     what every reader produces (TaskData of train / valid / test Splits of
                        TaggedSentence or TextExample, TaskFormatError) and the helpers they share
    blurb_id_lists.py   BLURB's train/dev/test id lists, for the readers of id-keyed pools
    formats/<name>.py   the reader of TaskSpec.source_format <name>: read(spec, data_dir)

Each reader turns the files of one task (or one cross-validation fold) into train / valid / test
Splits plus counts of what was read, kept and skipped. Labels are checked against the registry;
malformed input raises TaskFormatError naming the file and line. The formats are described in
docs/finetune.md. A new format is a new file in formats/.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from pathlib import Path
from typing import Callable, Optional

from bio_roberta.readers import formats
from bio_roberta.readers.declared_files import with_declared_labels
from bio_roberta.readers.source_files import Split, TaskData, TaskFormatError
from bio_roberta.tasks.registry import TASKS
from bio_roberta.tasks.spec import TaskSpec

__all__ = ["READERS", "TaskFormatError", "read_task"]

logger = logging.getLogger(__name__)

# source_format -> its module: every module of formats/, by its name.
FORMAT_MODULES = {
    module.name: importlib.import_module(f"{formats.__name__}.{module.name}")
    for module in sorted(pkgutil.iter_modules(formats.__path__), key=lambda module: module.name)
}
READERS: dict[str, Callable[[TaskSpec, Path], dict[str, Split]]] = {
    name: module.read for name, module in FORMAT_MODULES.items()
}


def _pick_reader(spec: TaskSpec, data_dir: Path) -> tuple[str, Callable]:
    """The format of data_dir: the first of spec.other_formats whose files are there (its
    module's detect), else spec.source_format."""
    for name in spec.other_formats:
        if name not in FORMAT_MODULES:
            raise TaskFormatError(f"{spec.name}: no reader for other format {name!r}")
        if FORMAT_MODULES[name].detect(data_dir):
            return name, READERS[name]
    try:
        return spec.source_format, READERS[spec.source_format]
    except KeyError:
        raise TaskFormatError(
            f"{spec.name}: no reader for source format {spec.source_format!r}; "
            f"known: {', '.join(READERS)}"
        ) from None


def _tasks_reading(spec: TaskSpec, data_dir: Path) -> str:
    """When data_dir holds a layout spec does not read but tasks of its kind and labels do
    (LinkBERT's HoC folder given to hoc, which hoc-blurb reads): what to do; else ""."""
    for name in dict.fromkeys(f for task in TASKS.values() for f in task.other_formats):
        if name in spec.other_formats or not FORMAT_MODULES[name].detect(data_dir):
            continue
        readers = [
            task.name
            for task in TASKS.values()
            if name in task.other_formats and (task.kind, task.labels) == (spec.kind, spec.labels)
        ]
        if readers:
            return (
                f"{data_dir} holds {FORMAT_MODULES[name].LAYOUT}, which {spec.name} does not "
                f"read: convert it as {' or '.join(readers)}"
            )
    return ""


def _read_splits(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """The reader's splits; an error of the task's own format also names the other layouts the
    task reads (none of which was found), or the tasks that read the layout found."""
    name, reader = _pick_reader(spec, data_dir)
    try:
        return reader(spec, data_dir)
    except TaskFormatError as error:
        if name != spec.source_format:
            raise
        hint = _tasks_reading(spec, data_dir)
        if hint:
            raise TaskFormatError(f"{error} ({hint})") from None
        if not spec.other_formats:
            raise
        others = "; ".join(FORMAT_MODULES[other].LAYOUT for other in spec.other_formats)
        raise TaskFormatError(f"{error} (or {spec.name}'s other layout: {others})") from None


def read_task(spec: TaskSpec, data_dir: str | Path, fold: Optional[int] = None) -> TaskData:
    """Read one task (or one fold of a cross-validated task) from its source files in data_dir.

    Args:
        spec: the registry entry (or a task file's); its source_format picks the reader, or
            one of its other_formats whose files data_dir holds.
        data_dir: the folder holding the task's files (for a task with folds: its fold folders).
        fold: the fold to read, 1..spec.folds, for a cross-validated task; else None.

    Returns:
        The task's TaskData (a task file's "infer" labels in its spec: the train split's);
        each split's counts are logged.

    Raises:
        TaskFormatError: data_dir not a folder, a fold missing or out of range, no reader for the
            format, or what the reader finds wrong in the files.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise TaskFormatError(
            f"{data_dir}: not a directory; pass the folder holding {spec.name}'s files"
        )
    if spec.folds and fold is None:
        raise TaskFormatError(f"{spec.name} has {spec.folds} folds: name one of 1..{spec.folds}")
    if not spec.folds and fold is not None:
        raise TaskFormatError(f"{spec.name} has no cross-validation folds (asked for fold {fold})")
    if spec.folds and not 1 <= fold <= spec.folds:
        raise TaskFormatError(f"{spec.name}: fold {fold} is not in 1..{spec.folds}")
    splits = _read_splits(spec, data_dir if fold is None else data_dir / str(fold))
    spec = with_declared_labels(spec, splits)
    for split in splits.values():
        logger.info(
            "%s%s %s: %s",
            spec.name,
            f" fold {fold}" if fold else "",
            split.name,
            dict(split.counts),
        )
    return TaskData(spec=spec, fold=fold, splits=splits)
