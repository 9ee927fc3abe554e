"""Rows of a task file's task in a table (bio_roberta/tasks/task_file.py): JSON lines ("jsonl"),
CSV or TSV with a header line ("csv", "tsv"), Parquet ("parquet"), or a Hugging Face `datasets`
split saved with `save_to_disk` ("hf_disk"), read with pyarrow alone: the split's dir holds
state.json, whose "_data_files" name its data-*.arrow shards (Arrow IPC streams written by
datasets' ArrowWriter, their schema metadata "huggingface" holding the features; datasets'
arrow_dataset.py save_to_disk / load_from_disk). Integer ClassLabel labels and tags of Parquet and
save_to_disk are read by their names, as linkbert_hf.py reads LinkBERT's Parquet files. The task
file's columns name the fields: text (and text_pair) and label, or words and tags (lists) for a
tagging kind.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Iterator

from bio_roberta.readers.declared_files import declared_label, read_declared_files
from bio_roberta.readers.formats.linkbert_hf import class_names, parquet_records, with_class_names
from bio_roberta.readers.source_files import (
    Split,
    TaggedSentence,
    TaskFormatError,
    TextExample,
    json_file,
    json_line_objects,
    nonempty_text,
    numbered_lines,
    require_file,
)
from bio_roberta.tasks.kinds import REGRESSION
from bio_roberta.tasks.spec import TaskSpec

LAYOUT = "the files a task file names: JSON lines, CSV/TSV, Parquet or save_to_disk dirs"


def _csv_rows(path: Path, split: Split, delimiter: str) -> Iterator[tuple[str, dict]]:
    text = "\n".join(line for _, line in numbered_lines(path))
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = next(reader, None)
    if not header:
        raise TaskFormatError(f"{path}: empty; expected a header line naming the columns")
    for row in reader:
        where = f"{path}:{reader.line_num}"
        if not row:
            split.counts["skipped_blank_lines"] += 1
            continue
        if len(row) != len(header):
            raise TaskFormatError(
                f"{where}: {len(row)} fields, the header has {len(header)} ({', '.join(header)})"
            )
        yield where, dict(zip(header, row))


def _save_to_disk_rows(split_dir: Path, split: Split) -> Iterator[tuple[str, dict]]:
    """The rows of a save_to_disk split's shards, ClassLabel ids as their names (the shards'
    schema metadata); the files read go to split.sources."""
    import pyarrow

    state_path = require_file(split_dir / "state.json", "a save_to_disk split's state.json")
    if (split_dir / "dataset_dict.json").is_file():
        raise TaskFormatError(
            f"{split_dir}: a DatasetDict (dataset_dict.json); name its split dirs in files"
        )
    state = json_file(state_path)
    split.sources.append(state_path)
    shards = [entry.get("filename") for entry in state.get("_data_files") or []]
    if not shards or not all(isinstance(name, str) for name in shards):
        raise TaskFormatError(f'{state_path}: no "_data_files" naming the split\'s .arrow files')
    for name in shards:
        shard = require_file(split_dir / name, f"a shard {state_path} names")
        split.sources.append(shard)
        try:
            with pyarrow.memory_map(str(shard)) as source:
                table = pyarrow.ipc.open_stream(source).read_all()
        except pyarrow.ArrowException as error:
            raise TaskFormatError(f"{shard}: not an Arrow stream ({error})") from None
        classes = class_names(table.schema, shard)
        for number, record in enumerate(table.to_pylist(), 1):
            where = f"{shard}: row {number}"
            yield where, with_class_names(record, classes, where)


def _rows(spec: TaskSpec, path: Path, split: Split) -> Iterator[tuple[str, dict]]:
    data_format = spec.declaration.format
    if data_format == "jsonl":
        for _, where, record in json_line_objects(path, split, "one JSON object a line"):
            yield where, record
    elif data_format in ("csv", "tsv"):
        yield from _csv_rows(path, split, "," if data_format == "csv" else "\t")
    elif data_format == "parquet":
        for _, where, record in parquet_records(path, split):
            yield where, record
    else:
        yield from _save_to_disk_rows(path, split)


def _value(spec: TaskSpec, record: dict, role: str, where: str) -> Any:
    column = spec.declaration.columns[role]
    if column not in record:
        raise TaskFormatError(
            f"{where}: no column {column!r} (columns.{role} of {spec.declaration.path}); "
            f"the row has {', '.join(map(str, record))}"
        )
    return record[column]


def _label_text(value: Any, where: str, column: str) -> str:
    """A label as text: a number or text as written."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise TaskFormatError(f"{where}: {column} {value!r} is not a label")
    return str(value).strip()


def _score(value: Any, where: str, column: str) -> str:
    try:
        if isinstance(value, bool):
            raise ValueError
        return repr(float(value))
    except (TypeError, ValueError):
        raise TaskFormatError(f"{where}: {column} {value!r} is not a number") from None


def _example(spec: TaskSpec, record: dict, where: str):
    columns = spec.declaration.columns
    if spec.is_sequence_labelling:
        words, tags = (_value(spec, record, role, where) for role in ("words", "tags"))
        if not isinstance(words, list) or not isinstance(tags, list) or len(words) != len(tags):
            raise TaskFormatError(
                f"{where}: {columns['words']} and {columns['tags']} must be lists of one tag "
                "per word"
            )
        if not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise TaskFormatError(f"{where}: {columns['words']} must hold non-empty words")
        tags = [
            declared_label(spec, _label_text(tag, where, columns["tags"]), where) for tag in tags
        ]
        return TaggedSentence(Path(where).name, tuple(words), tuple(tags))
    texts = {role: columns[role] for role in ("text", "text_pair") if role in columns}
    for role, column in texts.items():
        _value(spec, record, role, where)
    label = _value(spec, record, "label", where)
    if spec.kind == REGRESSION:
        label = _score(label, where, columns["label"])
    else:
        text = _label_text(label, where, columns["label"])
        label = declared_label(spec, text, where)
    return TextExample(
        Path(where).name,
        nonempty_text(record, texts["text"], where),
        (label,),
        text_pair=nonempty_text(record, texts["text_pair"], where)
        if "text_pair" in texts
        else None,
    )


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    for where, record in _rows(spec, path, split):
        split.counts["rows"] += 1
        split.add(_example(spec, record, where))


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """The train / valid / test Splits (TextExample, or TaggedSentence for a tagging kind; id
    "<file>:<line>" or "<file>: row <n>") of the files the task file names under data_dir;
    TaskFormatError naming the file and line or row of a missing column, an empty text, a label
    the task does not have or a score that is not a number."""
    return read_declared_files(spec, data_dir, _read_file)
