"""Token/tag files of a task file's task (format "conll", bio_roberta/tasks/task_file.py): one
word a line with its tag in a column (CoNLL-2003's "word POS chunk tag", BioBERT's
"token<TAB>tag"), a blank line between sentences, `-DOCSTART-` lines (CoNLL's document starts)
skipped and counted. A line holding a TAB is split at TABs, any other at runs of whitespace;
columns.word and columns.tag say which column is which (0 the first, -1 the last).
"""

from __future__ import annotations

from pathlib import Path

from bio_roberta.readers.declared_files import declared_label, read_declared_files
from bio_roberta.readers.source_files import SentenceLines, Split, TaskFormatError, numbered_lines
from bio_roberta.tasks.spec import TaskSpec

LAYOUT = "the files a task file names, one `word ... tag` line per word (docs/own_tasks.md)"
DOCSTART = "-DOCSTART-"


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    word_at, tag_at = spec.declaration.columns["word"], spec.declaration.columns["tag"]
    sentence = SentenceLines(path, split)
    for number, line in numbered_lines(path):
        split.counts["lines"] += 1
        where = f"{path}:{number}"
        columns = line.split("\t") if "\t" in line else line.split()
        if not line.strip():
            sentence.end()
            continue
        if columns[0] == DOCSTART:
            split.counts["skipped_docstart_lines"] += 1
            sentence.end()
            continue
        try:
            word, tag = columns[word_at], columns[tag_at]
            if word_at % len(columns) == tag_at % len(columns):  # a word without its tag
                raise IndexError
        except IndexError:
            raise TaskFormatError(
                f"{where}: {len(columns)} column(s), but the task file's columns name word "
                f"{word_at} and tag {tag_at} ({spec.declaration.path})"
            ) from None
        if not word.strip():
            raise TaskFormatError(f"{where}: empty word before the tag {tag!r}")
        sentence.add(number, word, declared_label(spec, tag, where))
    sentence.end()


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """The train / valid / test Splits of TaggedSentence (id "<file name>:<line of the first
    word>") of the files the task file names under data_dir; TaskFormatError naming the file and
    line of a line without the columns, an empty word or a tag the task does not have."""
    return read_declared_files(spec, data_dir, _read_file)
