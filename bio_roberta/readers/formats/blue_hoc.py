"""BLUE's HoC (hallmarks of cancer) files.

Layout: train.tsv, dev.tsv, test.tsv in data_dir (as BLUE's other tasks), each with the
TAB-separated header ``labels sentence index``; labels = "0_0,1_1,...,9_0" (class id _ present
flag, every class listed), index = <PMID>_s<sentence number>.
"""

from __future__ import annotations

import re
from pathlib import Path

from bio_roberta.readers.formats.blue_tsv import FILES
from bio_roberta.readers.source_files import (
    Split,
    TaskFormatError,
    TextExample,
    read_split_files,
    rows_after_header,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "`train.tsv`, `dev.tsv`, `test.tsv`, header `labels sentence index`; `labels` = "
    "`0_0,1_1,...,9_0` (every class id with its 0/1 flag), `index` = `<PMID>_s<n>`"
)

HEADER = ["labels", "sentence", "index"]
INDEX = re.compile(r"^(\d+)_s(\d+)$")


def hoc_labels(spec: TaskSpec, field_text: str, where: str) -> tuple[str, ...]:
    """The hallmarks flagged 1 in a BLUE label list "0_0,1_1,...,9_0" (every class id once)."""
    flags = {}
    for item in field_text.split(","):
        match = re.fullmatch(r"(\d+)_([01])", item)
        if not match:
            raise TaskFormatError(f"{where}: label item {item!r} is not <class id>_<0|1>")
        class_id = int(match.group(1))
        if class_id >= len(spec.labels):
            raise TaskFormatError(
                f"{where}: unknown label class id {class_id}; {spec.name} has ids "
                f"0..{len(spec.labels) - 1}"
            )
        if class_id in flags:
            raise TaskFormatError(f"{where}: class id {class_id} appears twice")
        flags[class_id] = match.group(2) == "1"
    if len(flags) != len(spec.labels):
        missing = sorted(set(range(len(spec.labels))) - set(flags))
        raise TaskFormatError(
            f"{where}: class ids {missing} missing; every row lists all {len(spec.labels)}"
        )
    return tuple(spec.labels[i] for i in sorted(flags) if flags[i])


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    abstracts = set()
    for _number, where, (labels, sentence, index) in rows_after_header(path, split, HEADER):
        match = INDEX.match(index)
        if not match:
            raise TaskFormatError(f"{where}: index {index!r} is not <PMID>_s<sentence number>")
        abstracts.add(match.group(1))
        split.add(
            TextExample(index, sentence, hoc_labels(spec, labels, where), group=match.group(1))
        )
    split.counts["abstracts"] = len(abstracts)


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read BLUE's HoC.

    Args:
        spec: the registry entry; its labels are the hallmarks, in class id order.
        data_dir: the folder holding train.tsv, dev.tsv and test.tsv.

    Returns:
        train / valid / test Splits of TextExample: the hallmarks present (possibly none), group =
        the abstract's PMID; counts["abstracts"] per split.

    Raises:
        TaskFormatError: a file missing, a header, index or label list not as above.
    """
    return read_split_files(spec, data_dir, FILES, "BLUE labels/sentence/index tsv", _read_file)
