"""MIMIC-III NOTEEVENTS.csv (or .csv.gz) -> text shards.

The file is streamed with the csv module (TEXT is a quoted field spanning many lines). A document
is one note, id = ROW_ID; its paragraphs are the TEXT's blocks separated by blank lines.
Kept: notes whose CATEGORY, stripped and case-folded, is one of `categories` (default the
physician notes: "Physician " in the real data, trailing space included); None keeps every
category. Skipped and counted: ISERROR=1 rows (retracted notes: `iserror`), other categories
(`category_not_selected`), rows with the wrong number of fields (`bad_row`), rows that are not
valid UTF-8 (`invalid_utf8`), a record whose quoting went wrong (`bad_quoting`: a stray quote; the
lines it swallowed are skipped with it and reading goes on at the next line that starts a record,
ROW_ID,SUBJECT_ID,...) and a last record cut inside its quoted TEXT (`truncated_record`: the file
was cut short, which fails the input); each is reported with its record number and line. NUL
characters in a TEXT (corruption) are written as spaces, counted (`nul_characters`) and reported
with the record.

De-identification placeholders such as [**2151-7-16**] are kept as written, or with
`placeholders="type"` replaced by one token per kind of PHI (PLACEHOLDER_TYPES, first match on
the placeholder's content wins, [OTHER] otherwise):
    [**2151-7-16**] -> [DATE]   [**Hospital 123**] -> [HOSPITAL]   [**Known lastname 4**] -> [NAME]
"""

from __future__ import annotations

import csv
import io
import os
import re
import sys
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from preprocess.canaries import CanaryOptions
from preprocess.gzip_stream import open_maybe_gzip
from preprocess.input_log import InputLog
from preprocess.parse_stage import build_text_shards
from preprocess.text_shards import Document, Record, ShardOptions, expand_inputs

SOURCE = "mimic"
INPUT_PATTERNS = ("NOTEEVENTS*.csv", "NOTEEVENTS*.csv.gz")
REQUIRED_COLUMNS = ("ROW_ID", "CATEGORY", "ISERROR", "TEXT")
DEFAULT_CATEGORIES = ("Physician",)
PLACEHOLDER_MODES = ("keep", "type")
PLACEHOLDER = re.compile(r"\[\*\*(.*?)\*\*\]", re.DOTALL)
PLACEHOLDER_TYPES = (  # (token, pattern searched in the lower-cased placeholder content)
    ("[DATE]", re.compile(r"^[\d\s/-]+$")),  # 2151-7-16, 7-16, 2151, 7/16
    ("[PHONE]", re.compile(r"telephone|phone|pager|fax")),
    ("[CONTACT]", re.compile(r"e-?mail|url")),
    ("[AGE]", re.compile(r"age over 90")),
    ("[HOSPITAL]", re.compile(r"hospital|ward|clinic")),
    ("[NAME]", re.compile(r"name|initial|doctor")),
    (
        "[LOCATION]",
        re.compile(r"location|address|street|state|country|university|college|company|po box"),
    ),
    ("[ID]", re.compile(r"number|identifier|record|ssn|social security")),
    ("[DATE]", re.compile(r"date|month|year|holiday|day")),
)
OTHER_PLACEHOLDER = "[OTHER]"
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
INVALID_UTF8 = re.compile(
    "[\udc80-\udcff]"
)  # bytes that were not UTF-8, under errors="surrogateescape"
RECORD_START = re.compile(r'"?\d+"?,"?\d+"?,')  # the first line of a record: ROW_ID,SUBJECT_ID,...


def placeholder_type(content: str) -> str:
    """The type token for the content of one [**...**] placeholder."""
    content = content.strip().lower()
    for token, pattern in PLACEHOLDER_TYPES:
        if pattern.search(content):
            return token
    return OTHER_PLACEHOLDER


def normalise_placeholders(text: str) -> str:
    return PLACEHOLDER.sub(lambda match: placeholder_type(match.group(1)), text)


class _NumberedLines:
    """The lines of a CSV file for csv.reader, numbered. The lines of the record being read are
    kept, so that after a fault reading can go on at the next line that starts a record."""

    def __init__(self, handle: Iterable[str]):
        self._source = iter(handle)
        self._again: list[tuple[int, str]] = []  # lines to read again, the next one last
        self.read = 0  # lines taken from the file
        self.record: list[
            tuple[int, str]
        ] = []  # (number, line) of each line of the record being read
        self._ended = False

    @property
    def at_end(self) -> bool:
        return self._ended and not self._again

    def _take(self) -> tuple[int, str] | None:
        if self._again:
            return self._again.pop()
        line = next(self._source, None)
        if line is None:
            self._ended = True
            return None
        self.read += 1
        return self.read, line

    def __iter__(self):
        return self

    def __next__(self) -> str:
        item = self._take()
        if item is None:
            raise StopIteration
        self.record.append(item)
        return item[1]

    def resume_at_next_record(self) -> tuple[int, int | None]:
        """Skip the lines after the record's first up to the next that starts a record
        (RECORD_START), which is read next; returns (the last line skipped, that line or None at the
        end of the file)."""
        self._again.extend(reversed(self.record[1:]))
        last = self.record[0][0]
        while (item := self._take()) is not None and not RECORD_START.match(item[1]):
            last = item[0]
        if item is None:
            return last, None
        self._again.append(item)
        return last, item[0]


def _well_formed_rows(
    reader, lines: _NumberedLines, fields: int, log: InputLog
) -> Iterator[tuple[str, list[str]]]:
    """(position, row) of each record after the header that has `fields` fields.

    Blank lines between records are ignored. A record whose quoting went wrong (a csv error, or the
    wrong number of fields followed by lines that do not start a record) is skipped with the lines
    it swallowed, as one record, reported with the lines skipped; reading goes on at the next line
    that starts a record. A good row is held back until the next row shows that its quoted TEXT did
    not end early (a stray quote at the end of a line). A file that ends inside a quoted field was
    cut short: its last record is reported and skipped.
    """
    number, held = 0, None
    while True:
        lines.record = []
        try:
            row = next(reader)
            if not row:  # a blank line between records
                continue
            fault = None if len(row) == fields else f"expected {fields} fields, found {len(row)}"
        except StopIteration:
            break
        except csv.Error as error:
            row, fault = None, f"{error} at line {lines.read}"
        except (EOFError, OSError, zlib.error) as error:
            log.problem(
                f"record {number + 1} (line {lines.read})",
                f"corrupt gzip stream: {error}",
                fatal=True,
            )
            break
        first, first_line = lines.record[0]
        if fault is None:
            number += 1
            if held is not None:
                yield held[1:]
            held = first, f"record {number} (line {first})", row
            continue
        parsed_to, cut_short = lines.record[-1][0], row is None and lines.at_end
        last, resumed = lines.resume_at_next_record()
        if held is not None and RECORD_START.match(
            first_line
        ):  # a record follows the held one: it is whole
            yield held[1:]
            held = None
        if held is not None:  # the held record's TEXT ended early
            (start, position, _), held = held, None
            fault = (
                f"its quoted TEXT ended early (a stray quote?), line {first} after "
                "it does not start a record"
            )
        else:
            number += 1
            position, start = f"record {number} (line {first})", first
            if cut_short and resumed is None:
                log.skip("truncated_record")
                log.problem(
                    position,
                    "the file ends inside this record's quoted field: it was cut short "
                    "(an interrupted copy or download?); record skipped",
                    fatal=True,
                )
                continue
            if row is not None and last == parsed_to:
                log.skip("bad_row")
                log.problem(position, f"{fault}: row skipped")
                continue
        log.skip("bad_quoting")
        log.problem(
            position,
            f"quoting went wrong here: {fault}; lines {start}-{last} skipped as one record, "
            + (f"reading went on at line {resumed}" if resumed else "to the end of the file"),
        )
    if held is not None:
        yield held[1:]


def iter_mimic_records(
    path: str | os.PathLike,
    log: InputLog | None = None,
    categories: Iterable[str] | None = DEFAULT_CATEGORIES,
    placeholders: str = "keep",
) -> Iterator[Record]:
    """Selected notes of one NOTEEVENTS.csv, in file order."""
    if placeholders not in PLACEHOLDER_MODES:
        raise ValueError(f"placeholders must be one of {PLACEHOLDER_MODES}, got {placeholders!r}")
    path = Path(path)
    log = log if log is not None else InputLog(str(path))
    selected = (
        None if categories is None else {category.strip().casefold() for category in categories}
    )
    csv.field_size_limit(sys.maxsize)
    _, stream = open_maybe_gzip(path)
    with io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        lines = _NumberedLines(handle)
        reader = csv.reader(
            lines, strict=True
        )  # strict: a stray quote or a cut inside quotes is an error
        try:
            header = next(reader, None)
        except (csv.Error, EOFError, OSError, zlib.error) as error:
            log.problem("line 1", f"unreadable header: {error}", fatal=True)
            return
        missing = [column for column in REQUIRED_COLUMNS if header is None or column not in header]
        if missing:
            log.problem("line 1", f"not a NOTEEVENTS header: missing columns {missing}", fatal=True)
            return
        column = {name: header.index(name) for name in REQUIRED_COLUMNS}
        for position, row in _well_formed_rows(reader, lines, len(header), log):
            if any(INVALID_UTF8.search(field) for field in row):
                log.skip("invalid_utf8")
                log.problem(position, "invalid UTF-8: row skipped")
                continue
            if row[column["ISERROR"]].strip() == "1":
                log.skip("iserror")
                continue
            if selected is not None and row[column["CATEGORY"]].strip().casefold() not in selected:
                log.skip("category_not_selected")
                continue
            text = row[column["TEXT"]]
            nuls = text.count("\0")
            if nuls:  # corruption: written as spaces, said so
                log.other["nul_characters"] += nuls
                log.problem(position, f"{nuls} NUL character(s) in TEXT, each written as a space")
                text = text.replace("\0", " ")
            if placeholders == "type":
                text = normalise_placeholders(text)
            yield Document(row[column["ROW_ID"]].strip(), tuple(PARAGRAPH_BREAK.split(text)))


def parse_mimic(
    inputs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    options: ShardOptions = ShardOptions(),
    categories: Sequence[str] | None = DEFAULT_CATEGORIES,
    placeholders: str = "keep",
    overwrite: bool = False,
    canaries: CanaryOptions | None = None,
) -> dict[str, Any]:
    """NOTEEVENTS.csv files -> text shards; `categories` None keeps all; `canaries` are inserted
    into the training notes (preprocess/canaries.py); returns the manifest."""
    if placeholders not in PLACEHOLDER_MODES:
        raise ValueError(f"placeholders must be one of {PLACEHOLDER_MODES}, got {placeholders!r}")
    reader_options = {
        "categories": None if categories is None else sorted({c.strip() for c in categories}),
        "placeholders": placeholders,
    }
    return build_text_shards(
        SOURCE,
        iter_mimic_records,
        expand_inputs(inputs, INPUT_PATTERNS),
        out_dir,
        options,
        reader_options,
        overwrite=overwrite,
        canaries=canaries,
    )
