"""What the readers (bio_roberta/readers/formats/) produce, and the helpers they share to read
source files: ``TaskData`` of train / valid / test ``Split``s of ``TaggedSentence`` or
``TextExample``, and ``TaskFormatError`` naming the file and line of what does not match a format.
Kept apart from the READERS table, which imports every reader.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.text_files import utf8_lines

SPLITS = ("train", "valid", "test")


class TaskFormatError(BioRobertaError):
    """A task file that does not match its format: the message names the file and line."""


@dataclass(frozen=True)
class TaggedSentence:
    """One NER sentence: words and their tags (one tag per word, as in the source file)."""

    id: str  # "<file name>:<line of the first word>"
    words: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class TextExample:
    """One classification example (a sentence, or a sentence pair for NLI)."""

    id: str  # the source's own row id (BLUE index, DDI pair id, ...) or file:line
    text: str
    labels: tuple[str, ...]  # exactly one label; HOC: the hallmarks present (possibly none)
    text_pair: Optional[str] = None
    group: Optional[str] = None  # HOC: the abstract's PMID (scored at abstract level)


Example = Union[TaggedSentence, TextExample]


@dataclass(frozen=True)
class BlurbSplit:
    """What a reader knows of a split of a BLURB dataset (Gu et al. 2021): why it is not BLURB's
    (a dev of its own, ...), or which of BLURB's own lists it placed the examples by, so that their
    ids, taken from that list, prove nothing (bio_roberta/blurb/split_check.py's
    check_blurb_split)."""

    why_not: Optional[str] = None
    placed_by: Optional[str] = None


@dataclass
class Split:
    name: str
    examples: list[Example] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)  # lines, examples, skipped_<why>, ...
    label_counts: Counter = field(default_factory=Counter)
    derivation: str = ""  # how the split was formed
    # what the reader knows of it being BLURB's split; None: nothing (the content decides,
    # bio_roberta/blurb/split_check.py check_blurb_split)
    blurb: Optional[BlurbSplit] = None

    def add(self, example: Example) -> None:
        self.examples.append(example)
        self.counts["examples"] += 1
        if isinstance(example, TaggedSentence):
            self.counts["words"] += len(example.words)
            self.label_counts.update(example.tags)
        else:
            self.label_counts.update(example.labels)

    def summary(self) -> dict:
        return {
            "sources": [str(path) for path in self.sources],
            "derivation": self.derivation,
            "counts": dict(sorted(self.counts.items())),
            "label_counts": dict(sorted(self.label_counts.items())),
        }


@dataclass
class TaskData:
    spec: TaskSpec
    fold: Optional[int]
    splits: dict[str, Split]


def require_file(path: Path, what: str) -> Path:
    """path, or an error naming it and `what` it should hold when it is not a file."""
    if not path.is_file():
        raise TaskFormatError(f"{path}: missing ({what})")
    return path


class SentenceLines:
    """The sentence a word-per-line file is in the middle of: each word and its tag as read, added
    to the split as a TaggedSentence (id "<file name>:<line of its first word>") at its end."""

    def __init__(self, path: Path, split: Split):
        self.path, self.split = path, split
        self.words: list[str] = []
        self.tags: list[str] = []
        self.first_line = 0

    def add(self, number: int, word: str, tag: str) -> None:
        if not self.words:
            self.first_line = number
        self.words.append(word)
        self.tags.append(tag)

    def end(self) -> None:
        if self.words:
            sentence_id = f"{self.path.name}:{self.first_line}"
            self.split.add(TaggedSentence(sentence_id, tuple(self.words), tuple(self.tags)))
            self.words, self.tags = [], []


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without its line ending) of a UTF-8 text file
    (bio_roberta_core.text_files: a byte that is not UTF-8 is an error naming its line and byte)."""
    return utf8_lines(path, TaskFormatError)


def json_line_objects(path: Path, split: Split, expected: str) -> Iterator[tuple[int, str, dict]]:
    """(line number, "file:line", object) of each line of a JSON-lines file, blank lines counted
    and skipped; a line that is not one JSON object is an error naming the file, the line and
    what was expected there."""
    for number, line in numbered_lines(path):
        split.counts["lines"] += 1
        where = f"{path}:{number}"
        if not line.strip():
            split.counts["skipped_blank_lines"] += 1
            continue
        yield number, where, json_object(line, where, expected)


def json_object(
    line: str, where: str, expected: str, error: type[Exception] = TaskFormatError
) -> dict:
    """The JSON object a line holds; where it holds none, an `error` naming `where` (file:line)
    and what was expected there."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as decode_error:
        raise error(
            f"{where}: not JSON ({decode_error.msg} at column {decode_error.colno}); "
            f"expected {expected}"
        ) from None
    if not isinstance(record, dict):
        raise error(f"{where}: expected {expected}, found a JSON {type(record).__name__}")
    return record


def check_label(spec: TaskSpec, label: str, where: str) -> str:
    """label, when the registry entry allows it; else an error naming `where` and the allowed."""
    if label not in spec.labels:
        raise TaskFormatError(
            f"{where}: unknown label {label!r} for {spec.name}; the registry "
            f"allows {', '.join(spec.labels)}"
        )
    return label


def tab_columns(line: str, expected: int, where: str, layout: str) -> list[str]:
    """The TAB-separated columns of line, which must be `expected` many (`layout` names them)."""
    columns = line.split("\t")
    if len(columns) != expected:
        raise TaskFormatError(
            f"{where}: expected {expected} TAB-separated columns ({layout}), found {len(columns)}"
        )
    return columns


def check_header(line: str, expected: list[str], where: str) -> None:
    """An error naming `where` unless line is the TAB-separated header `expected`."""
    if line.split("\t") != expected:
        raise TaskFormatError(
            f"{where}: expected the TAB-separated header "
            f"{' '.join(expected)!r}, found {line[:80]!r}"
        )


def rows_after_header(
    path: Path, split: Split, header: list[str]
) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, "path:line", columns) of each row after the TAB-separated header line; every
    line counts in split.counts["lines"]."""
    for number, line in numbered_lines(path):
        split.counts["lines"] += 1
        where = f"{path}:{number}"
        if number == 1:
            check_header(line, header, where)
            continue
        yield number, where, tab_columns(line, len(header), where, ", ".join(header))


def in_valid_slice(key: str, one_in: int) -> bool:
    """Deterministic, platform-independent choice of 1 in `one_in` keys."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % one_in == 0


def read_split_files(
    spec: TaskSpec,
    data_dir: Path,
    files: dict[str, str],
    what: str,
    read_file: Callable[[TaskSpec, Path, Split], None],
) -> dict[str, Split]:
    """One Split per entry of `files` (split name -> file in data_dir, of format `what`), filled by
    read_file; for the tasks whose source already comes as train / dev / test files."""
    splits = {}
    for name, file_name in files.items():
        path = require_file(data_dir / file_name, f"{spec.name} {name} split, {what}")
        splits[name] = Split(name, sources=[path], derivation=file_name)
        read_file(spec, path, splits[name])
    return splits


def json_file(path: Path):
    """The JSON value of a whole file; errors name the file and line."""
    text = "\n".join(line for _, line in numbered_lines(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TaskFormatError(
            f"{path}:{error.lineno}: not JSON ({error.msg} at column {error.colno})"
        ) from None


def nonempty_text(record: dict, key: str, where: str) -> str:
    """record[key] stripped; an error naming `where` when it is missing, empty or not text."""
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskFormatError(f"{where}: field {key!r} missing, empty or not text")
    return value.strip()


def unique_record_id(record: dict, where: str, seen: dict[str, int], number: int) -> str:
    """record["id"] as text (an integer's digits), not seen before in its file: `seen` maps each id
    to its line, this record's added (line `number`)."""
    value = record.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    value = nonempty_text({"id": value}, "id", where)
    if value in seen:
        raise TaskFormatError(f"{where}: id {value!r} already on line {seen[value]}")
    seen[value] = number
    return value
