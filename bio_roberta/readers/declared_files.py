"""What the readers of declared tasks (formats/conll_columns.py, formats/table_rows.py) share:
reading the files a task file names, and its labels when it says "infer" (the train split's,
then every dev and test label checked against them, naming its file and line).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from bio_roberta.readers.source_files import Split, TaskFormatError, require_file
from bio_roberta.tasks.spec import BIO_TAGS, TaskSpec, bio_tags
from bio_roberta.tasks.task_file import check_tag_set
from bio_roberta_core.metrics import BINARY_F1
from bio_roberta_core.tagging import split_tag


def declared_label(spec: TaskSpec, label: str, where: str) -> str:
    """label when the task allows it (any label while its labels are still to be inferred from
    the train split being read), else an error naming where and what allows which."""
    if spec.labels or not spec.declaration.infer_labels:
        if label not in spec.labels:
            allowed_by = (
                "its train split has"
                if spec.declaration.infer_labels
                else f"{spec.declaration.path} declares"
            )
            raise TaskFormatError(
                f"{where}: label {label!r} is not one of {spec.name}'s: {allowed_by} "
                f"{', '.join(spec.labels)}"
            )
    return label


def inferred_labels(spec: TaskSpec, train: Split) -> tuple[str, ...]:
    """The labels of a task file's "infer", from its train split: BIO tags over the entity types
    seen, in sorted order (O first), or the sorted class labels."""
    where = f"{', '.join(map(str, train.sources))} (labels inferred from train)"
    seen = sorted(train.label_counts)
    if not seen:
        raise TaskFormatError(f"{where}: no labels to infer")
    if spec.is_sequence_labelling:
        check_tag_set(seen, where)
        types = sorted({split_tag(tag)[1] for tag in seen if tag != "O"})
        labels = BIO_TAGS if types in ([], [""]) else bio_tags(*types)
    else:
        labels = tuple(seen)
    if spec.metric == BINARY_F1 and len(labels) != 2:
        raise TaskFormatError(f"{where}: binary_f1 needs two labels, train has {', '.join(labels)}")
    if spec.negative_label is not None and spec.negative_label not in labels:
        raise TaskFormatError(
            f"{where}: negative_label {spec.negative_label!r} of {spec.declaration.path} is not "
            f"among the train labels {', '.join(labels)}"
        )
    return labels


def read_declared_files(
    spec: TaskSpec, data_dir: Path, read_file: Callable[[TaskSpec, Path, Split], None]
) -> dict[str, Split]:
    """The task file's train, valid and test Splits from data_dir, train first: with "infer",
    its labels are the ones valid and test are checked against. data_dir is the folder the task
    file names its files from (its own, or convert-task's --data, predict's --input), or the
    folder holding them (a file named bc2gm/train.tsv read from bc2gm/ as train.tsv)."""
    splits = {}
    for name, file_name in spec.declaration.files.items():
        path = data_dir / file_name
        if not path.exists() and (data_dir / Path(file_name).name).exists():
            path = data_dir / Path(file_name).name
        is_dir = spec.declaration.format == "hf_disk"  # its reader lists the files it reads
        if not is_dir:
            require_file(path, f"{spec.name} {name} split, {spec.declaration.path}")
        elif not path.is_dir():
            raise TaskFormatError(
                f"{path}: missing ({spec.name} {name} split: a save_to_disk dir, "
                f"{spec.declaration.path})"
            )
        splits[name] = Split(name, sources=[] if is_dir else [path], derivation=file_name)
        read_file(spec, path, splits[name])
        if name == "train" and spec.declaration.infer_labels:
            spec = dataclasses.replace(spec, labels=inferred_labels(spec, splits[name]))
    return splits


def with_declared_labels(spec: TaskSpec, splits: dict[str, Split]) -> TaskSpec:
    """The task as read: a task file's "infer" replaced by the train split's labels."""
    if spec.declaration is None or not spec.declaration.infer_labels:
        return spec
    return dataclasses.replace(spec, labels=inferred_labels(spec, splits["train"]))
