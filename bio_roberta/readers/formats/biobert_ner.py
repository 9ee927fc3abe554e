"""BioBERT's NER files (NCBI-disease, BC5CDR, BC2GM, JNLPBA, ...).

Layout: train.tsv, devel.tsv, test.tsv in data_dir; token<TAB>tag per line, a blank line after
each sentence. Crichton et al.'s MTL-Bioinformatics-2016 `*-IOB` folders (BLURB's NER source, the
upstream of BioBERT's) have the same layout with typed tags (B-Disease): for a task whose labels
are untyped B/I/O the type is stripped, and the types met are counted (typed_tags_<type>) and named
in the split's derivation.
"""

from __future__ import annotations

import re
from pathlib import Path

from bio_roberta.readers.source_files import (
    SentenceLines,
    Split,
    TaskFormatError,
    check_label,
    numbered_lines,
    read_split_files,
    tab_columns,
)
from bio_roberta.tasks.spec import BIO_TAGS, TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "`train.tsv`, `devel.tsv`, `test.tsv`: `token<TAB>tag` per line, a blank line between "
    "sentences (BioBERT's NERdata; Crichton et al.'s `*-IOB` typed tags `B-Disease` read as `B`"
    " where the task's tags are untyped)"
)

FILES = {"train": "train.tsv", "valid": "devel.tsv", "test": "test.tsv"}
TYPED_TAG = re.compile(r"^([BI])-(\S+)$")


def _tag(spec: TaskSpec, tag: str, where: str, split: Split) -> str:
    """tag as the registry names it: a typed B-/I- tag of a task with untyped tags loses its type
    (counted per type)."""
    typed = TYPED_TAG.match(tag)
    if tag not in spec.labels and typed and spec.labels == BIO_TAGS:
        split.counts[f"typed_tags_{typed.group(2)}"] += 1
        return typed.group(1)
    return check_label(spec, tag, where)


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    sentence = SentenceLines(path, split)
    for number, line in numbered_lines(path):
        split.counts["lines"] += 1
        if not line.strip():
            sentence.end()
            continue
        word, tag = tab_columns(line, 2, f"{path}:{number}", "token, tag")
        if not word.strip():
            raise TaskFormatError(f"{path}:{number}: empty token before the tag {tag!r}")
        sentence.add(number, word, _tag(spec, tag, f"{path}:{number}", split))
    sentence.end()
    types = sorted(
        key.removeprefix("typed_tags_") for key in split.counts if key.startswith("typed_")
    )
    if types:
        split.derivation += f" (typed tags of {', '.join(types)} read as untyped B/I)"


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read a BioBERT NER task.

    Args:
        spec: the registry entry; its labels are the tags allowed.
        data_dir: the folder holding train.tsv, devel.tsv and test.tsv.

    Returns:
        train / valid / test Splits of TaggedSentence, id "<file name>:<line of the first word>".

    Raises:
        TaskFormatError: a file missing, a line without exactly two columns, an empty token, an
            unknown tag (a typed tag is known when the task's tags are untyped B/I/O).
    """
    return read_split_files(spec, data_dir, FILES, "BioBERT token<TAB>tag file", _read_file)
