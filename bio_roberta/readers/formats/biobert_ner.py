"""BioBERT's NER files (NCBI-disease, BC5CDR, BC2GM, JNLPBA, ...).

Layout: train.tsv, devel.tsv, test.tsv in data_dir; token<TAB>tag per line, a blank line after
each sentence.
"""

from __future__ import annotations

from pathlib import Path

from bio_roberta.readers.source_files import (
    Split,
    TaggedSentence,
    TaskFormatError,
    check_label,
    numbered_lines,
    read_split_files,
    tab_columns,
)
from bio_roberta.tasks.registry import TaskSpec

FILES = {"train": "train.tsv", "valid": "devel.tsv", "test": "test.tsv"}


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    words, tags, first_line = [], [], 0
    for number, line in numbered_lines(path):
        split.counts["lines"] += 1
        if not line.strip():
            if words:
                split.add(TaggedSentence(f"{path.name}:{first_line}", tuple(words), tuple(tags)))
                words, tags = [], []
            continue
        word, tag = tab_columns(line, 2, f"{path}:{number}", "token, tag")
        if not word.strip():
            raise TaskFormatError(f"{path}:{number}: empty token before the tag {tag!r}")
        if not words:
            first_line = number
        words.append(word)
        tags.append(check_label(spec, tag, f"{path}:{number}"))
    if words:
        split.add(TaggedSentence(f"{path.name}:{first_line}", tuple(words), tuple(tags)))


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read a BioBERT NER task.

    Args:
        spec: the registry entry; its labels are the tags allowed.
        data_dir: the folder holding train.tsv, devel.tsv and test.tsv.

    Returns:
        train / valid / test Splits of TaggedSentence, id "<file name>:<line of the first word>".

    Raises:
        TaskFormatError: a file missing, a line without exactly two columns, an empty token, an
            unknown tag.
    """
    return read_split_files(spec, data_dir, FILES, "BioBERT token<TAB>tag file", _read_file)
