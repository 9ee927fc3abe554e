"""BLUE's sentence classification files (ChemProt, DDI's ddi2013-type, i2b2-2010 relations).

Layout: train.tsv, dev.tsv, test.tsv in data_dir, each with the TAB-separated header
``index sentence label`` and one example a row. BioBERT's RE test.tsv has the same rows
(biobert_re_folds, gad_blurb_fold1 read it with ``read_indexed_tsv``).
"""

from __future__ import annotations

from pathlib import Path

from bio_roberta.readers.source_files import (
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    read_split_files,
    rows_after_header,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "`train.tsv`, `dev.tsv`, `test.tsv`: header `index sentence label`, the pair already "
    "replaced by placeholders (BLUE)"
)

FILES = {"train": "train.tsv", "valid": "dev.tsv", "test": "test.tsv"}
HEADER = ["index", "sentence", "label"]


def read_indexed_tsv(spec: TaskSpec, path: Path, split: Split) -> None:
    """Add the `index sentence label` rows after that header in path to split; an index used
    twice, an empty sentence or an unknown label is an error naming the line."""
    seen = {}
    for number, where, (index, sentence, label) in rows_after_header(path, split, HEADER):
        if index in seen:
            raise TaskFormatError(f"{where}: index {index!r} already used on line {seen[index]}")
        seen[index] = number
        if not sentence.strip():
            raise TaskFormatError(f"{where}: empty sentence")
        split.add(TextExample(index, sentence, (check_label(spec, label, where),)))


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read a BLUE sentence classification task.

    Args:
        spec: the registry entry; its labels are the labels allowed.
        data_dir: the folder holding train.tsv, dev.tsv and test.tsv.

    Returns:
        train / valid / test Splits of TextExample, id = the row's index.

    Raises:
        TaskFormatError: a file missing, a header or row not as above, an unknown label.
    """
    return read_split_files(
        spec, data_dir, FILES, "BLUE index/sentence/label tsv", read_indexed_tsv
    )
