"""A lab's own corpus -> text shards: plain text, JSON lines or Parquet (what `datasets` exports).

Formats, told by the file name (a gzip file by its magic bytes, whatever its name):
  .txt, .txt.gz       `documents="file"` (the default): one document per file, its paragraphs
                      separated by blank lines; `documents="blank-line"`: documents separated by
                      blank lines, each one paragraph (its lines joined)
  .jsonl, .json(.gz)  one JSON object per line (JSON lines, as `datasets`' to_json writes them
                      under either name), its text in `text_field` (default "text")
  .parquet            the `text_field` column (pyarrow: the package's `parquet` extra); a named
                      file of another name is read as Parquet when it starts with Parquet's magic
In JSON lines and Parquet a text's paragraphs are its blocks separated by blank lines, as in a
.txt file. Directories are searched recursively for those names.

A document's id, on which the valid split is keyed, is the file's absolute path, plus ":" and the
line (blank-line text, JSON lines) or row (Parquet) it starts at: unique across inputs, so no
document replaces another; the same files at the same place always split the same way.

Skipped and counted, each reported with its file and line or row: a JSON line that is not JSON
(`not_json`), not an object with the text field or with null there (`no_text_field`), or whose
text is not a string (`text_not_string`); text that is not valid UTF-8 (`invalid_utf8`: the
document or line); the document a cut gzip stream ends in (`truncated_document`, which fails the
input). A Parquet file without the column, or that pyarrow cannot read, fails the input. Empty
documents are skipped as every parser skips them (`empty_text`).
"""

from __future__ import annotations

import io
import json
import os
import zlib
from pathlib import Path
from typing import Any, Iterator, Sequence

from bio_roberta_core.errors import BioRobertaError
from preprocess.canaries import CanaryOptions
from preprocess.gzip_stream import open_maybe_gzip
from preprocess.input_log import InputLog
from preprocess.mimic import PARAGRAPH_BREAK
from preprocess.parse_stage import build_text_shards
from preprocess.text_shards import Document, Record, ShardOptions, expand_inputs

SOURCE = "text"
DOCUMENT_MODES = ("file", "blank-line")
DEFAULT_DOCUMENTS = "file"
DEFAULT_TEXT_FIELD = "text"
FORMATS = {  # name ending -> format
    ".txt": "text",
    ".txt.gz": "text",
    ".jsonl": "jsonl",
    ".jsonl.gz": "jsonl",
    ".json": "jsonl",  # datasets' to_json writes JSON lines under any name, often .json
    ".json.gz": "jsonl",
    ".parquet": "parquet",
}
PARQUET_MAGIC = b"PAR1"
PARQUET_BATCH_ROWS = 1024


class TextInputError(BioRobertaError):
    """An input of parse-text whose format its name does not tell, or Parquet without pyarrow."""


def input_format(path: Path) -> str:
    """The format of one input: by its name, or Parquet by its magic bytes."""
    for ending, kind in FORMATS.items():
        if path.name.endswith(ending):
            return kind
    with open(path, "rb") as handle:
        if handle.read(4) == PARQUET_MAGIC:
            return "parquet"
    raise TextInputError(
        f"{path}: not a text input parse-text reads (by name: {', '.join(FORMATS)}; Parquet also "
        "by its magic bytes); rename it to say what it holds"
    )


def _pyarrow_parquet(path: Path):
    try:
        import pyarrow.parquet
    except ImportError:
        raise TextInputError(
            f"{path}: reading Parquet needs pyarrow; install this package's `parquet` extra "
            "(scripts/install.sh --extras parquet) or export the corpus as JSON lines"
        ) from None
    return pyarrow.parquet


def _numbered_lines(path: Path, log: InputLog) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of each line, text None where it is not valid UTF-8 (reported); a cut
    gzip stream ends the lines with a fatal problem, after (its line, None) for the line it cut."""
    raw, stream = open_maybe_gzip(path)
    lines = raw if stream is raw else io.BufferedReader(stream)
    number = 0
    with lines:
        try:
            for number, data in enumerate(lines, 1):
                try:
                    yield number, data.decode("utf-8")
                except UnicodeDecodeError as error:
                    log.problem(
                        f"line {number}",
                        f"invalid UTF-8 at byte {error.start + 1} of the line: its document is "
                        "skipped",
                    )
                    yield number, None
        except (EOFError, OSError, zlib.error) as error:
            log.problem(f"line {number + 1}", f"corrupt gzip stream: {error}", fatal=True)
            yield number + 1, None


def _text_file_documents(path: Path, log: InputLog, documents: str) -> Iterator[Record]:
    file_id = str(path.resolve())
    if documents == "file":
        lines, bad = [], False
        for _, line in _numbered_lines(path, log):
            bad = bad or line is None
            lines.append(line or "")
        if bad:
            log.skip("truncated_document" if log.failed else "invalid_utf8")
            return
        yield Document(file_id, tuple(PARAGRAPH_BREAK.split("".join(lines))))
        return
    start, block, bad = None, [], False
    for number, line in _numbered_lines(path, log):
        if line is not None and not line.strip():
            if start is not None and bad:
                log.skip("invalid_utf8")
            elif start is not None:
                yield Document(f"{file_id}:{start}", ("".join(block),))
            start, block, bad = None, [], False
            continue
        start = number if start is None else start
        bad = bad or line is None
        block.append(line or "")
    if start is not None and log.failed:
        log.skip("truncated_document")
    elif start is not None and bad:
        log.skip("invalid_utf8")
    elif start is not None:
        yield Document(f"{file_id}:{start}", ("".join(block),))


def _text_value(value: Any, position: str, text_field: str, log: InputLog) -> str | None:
    """The text of one JSON record or Parquet row, or None (counted, reported) when it has none."""
    if value is None:
        log.skip("no_text_field")
        log.problem(
            position,
            f'no "{text_field}" field (or null): skipped; pass --text-field NAME if the text '
            "is under another name",
        )
        return None
    if not isinstance(value, str):
        log.skip("text_not_string")
        log.problem(position, f'"{text_field}" is not a string ({type(value).__name__}): skipped')
        return None
    return value


def _json_lines_documents(path: Path, log: InputLog, text_field: str) -> Iterator[Record]:
    file_id = str(path.resolve())
    for number, line in _numbered_lines(path, log):
        position = f"line {number}"
        if line is None:
            log.skip("truncated_document" if log.failed else "invalid_utf8")
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            log.skip("not_json")
            log.problem(position, f"not JSON ({error.msg}, column {error.colno}): skipped")
            continue
        value = record.get(text_field) if isinstance(record, dict) else None
        text = _text_value(value, position, text_field, log)
        if text is not None:
            yield Document(f"{file_id}:{number}", tuple(PARAGRAPH_BREAK.split(text)))


def _parquet_documents(path: Path, log: InputLog, text_field: str) -> Iterator[Record]:
    parquet = _pyarrow_parquet(path)
    import pyarrow

    file_id, row = str(path.resolve()), 0
    try:
        table = parquet.ParquetFile(path)
        if text_field not in table.schema_arrow.names:
            log.problem(
                "schema",
                f"no column {text_field!r} (columns: {', '.join(table.schema_arrow.names)}); "
                "pass --text-field NAME",
                fatal=True,
            )
            return
        for batch in table.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[text_field]):
            for value in batch.column(0).to_pylist():
                row += 1
                text = _text_value(value, f"row {row}", text_field, log)
                if text is not None:
                    yield Document(f"{file_id}:{row}", tuple(PARAGRAPH_BREAK.split(text)))
    except (pyarrow.ArrowException, OSError) as error:
        log.problem(f"after row {row}", f"unreadable Parquet: {error}", fatal=True)


def iter_text_records(
    path: str | os.PathLike,
    log: InputLog | None = None,
    documents: str = DEFAULT_DOCUMENTS,
    text_field: str = DEFAULT_TEXT_FIELD,
) -> Iterator[Record]:
    """The documents of one plain-text, JSON-lines or Parquet file, in file order."""
    path = Path(path)
    log = log if log is not None else InputLog(str(path))
    kind = input_format(path)
    if kind == "text":
        yield from _text_file_documents(path, log, documents)
    elif kind == "jsonl":
        yield from _json_lines_documents(path, log, text_field)
    else:
        yield from _parquet_documents(path, log, text_field)


def find_text_inputs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The inputs under `paths`, each of a format parse-text reads (TextInputError otherwise)."""
    inputs = expand_inputs(paths, [f"*{ending}" for ending in FORMATS])
    for path in inputs:
        if input_format(path) == "parquet":
            _pyarrow_parquet(path)
    return inputs


def parse_text(
    inputs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    options: ShardOptions = ShardOptions(),
    documents: str = DEFAULT_DOCUMENTS,
    text_field: str = DEFAULT_TEXT_FIELD,
    overwrite: bool = False,
    canaries: CanaryOptions | None = None,
) -> dict[str, Any]:
    """Text, JSON-lines and Parquet files (or directories of them) -> text shards in `out_dir`,
    `canaries` inserted into the training documents (preprocess/canaries.py); returns the
    manifest."""
    if documents not in DOCUMENT_MODES:
        raise ValueError(f"documents must be one of {DOCUMENT_MODES}, got {documents!r}")
    out = Path(out_dir).resolve()
    for given in map(Path, inputs):
        if given.is_dir() and out.is_relative_to(given.resolve()):
            # its shards (.txt) would be read back as the corpus by the next run
            raise TextInputError(
                f"--out {out_dir} is inside the input dir {given}: the next parse would read its "
                "own shards as the corpus; write the text shards outside it"
            )
    return build_text_shards(
        SOURCE,
        iter_text_records,
        find_text_inputs(inputs),
        out_dir,
        options,
        {"documents": documents, "text_field": text_field},
        overwrite=overwrite,
        canaries=canaries,
    )
