"""MIMIC-III NOTEEVENTS.csv (or .csv.gz) -> text shards.

The file is streamed with the csv module (TEXT is a quoted field spanning many lines). A document
is one note, id = ROW_ID; its paragraphs are the TEXT's blocks separated by blank lines.
Kept: notes whose CATEGORY, stripped and case-folded, is one of `categories` (default the
physician notes: "Physician " in the real data, trailing space included); None keeps every
category. Skipped and counted: ISERROR=1 rows (retracted notes: `iserror`), other categories
(`category_not_selected`), rows with the wrong number of fields (`bad_row`) and rows that are not
valid UTF-8 (`invalid_utf8`); the last two are reported with their record number and line.

De-identification placeholders such as [**2151-7-16**] are kept as written, or with
`placeholders="type"` replaced by one token per kind of PHI (PLACEHOLDER_TYPES, first match on
the placeholder's content wins, [OTHER] otherwise):
    [**2151-7-16**] -> [DATE]    [**Hospital 123**] -> [HOSPITAL]    [**Known lastname 4**] -> [NAME]
"""
from __future__ import annotations

import csv
import gzip
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from preprocess.errors import InputLog
from preprocess.pubmed import GZIP_MAGIC
from preprocess.text_shards import Document, Record, ShardOptions, build_text_shards, expand_inputs

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
    ("[LOCATION]", re.compile(r"location|address|street|state|country|university|college|company|po box")),
    ("[ID]", re.compile(r"number|identifier|record|ssn|social security")),
    ("[DATE]", re.compile(r"date|month|year|holiday|day")),
)
OTHER_PLACEHOLDER = "[OTHER]"
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
INVALID_UTF8 = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, under errors="surrogateescape"


def placeholder_type(content: str) -> str:
    """The type token for the content of one [**...**] placeholder."""
    content = content.strip().lower()
    for token, pattern in PLACEHOLDER_TYPES:
        if pattern.search(content):
            return token
    return OTHER_PLACEHOLDER


def normalise_placeholders(text: str) -> str:
    return PLACEHOLDER.sub(lambda match: placeholder_type(match.group(1)), text)


def _open_text(path: Path):
    with open(path, "rb") as probe:
        compressed = probe.read(2) == GZIP_MAGIC
    if compressed:
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")


def iter_mimic_records(path: str | os.PathLike, log: InputLog | None = None,
                       categories: Iterable[str] | None = DEFAULT_CATEGORIES,
                       placeholders: str = "keep") -> Iterator[Record]:
    """Selected notes of one NOTEEVENTS.csv, in file order."""
    if placeholders not in PLACEHOLDER_MODES:
        raise ValueError(f"placeholders must be one of {PLACEHOLDER_MODES}, got {placeholders!r}")
    path = Path(path)
    log = log if log is not None else InputLog(str(path))
    selected = None if categories is None else {category.strip().casefold() for category in categories}
    csv.field_size_limit(sys.maxsize)
    with _open_text(path) as handle:
        reader = csv.reader(handle)
        record_number = 0
        try:
            header = next(reader, None)
            missing = [column for column in REQUIRED_COLUMNS if header is None or column not in header]
            if missing:
                log.problem("line 1", f"not a NOTEEVENTS header: missing columns {missing}", fatal=True)
                return
            column = {name: header.index(name) for name in REQUIRED_COLUMNS}
            start_line = reader.line_num + 1
            for row in reader:
                record_number += 1
                position = f"record {record_number} (line {start_line})"
                start_line = reader.line_num + 1
                if len(row) != len(header):
                    log.skip("bad_row")
                    log.problem(position, f"expected {len(header)} fields, found {len(row)}: row skipped")
                    continue
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
                if placeholders == "type":
                    text = normalise_placeholders(text)
                yield Document(row[column["ROW_ID"]].strip(), tuple(PARAGRAPH_BREAK.split(text)))
        except csv.Error as error:
            log.problem(f"record {record_number + 1} (line {reader.line_num})", f"malformed CSV: {error}", fatal=True)
        except (EOFError, OSError) as error:
            log.problem(f"record {record_number + 1} (line {reader.line_num})", f"corrupt gzip stream: {error}",
                        fatal=True)


def find_mimic_inputs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    return expand_inputs(paths, INPUT_PATTERNS)


def parse_mimic(inputs: Sequence[str | os.PathLike], out_dir: str | os.PathLike,
                options: ShardOptions = ShardOptions(), categories: Sequence[str] | None = DEFAULT_CATEGORIES,
                placeholders: str = "keep", overwrite: bool = False) -> dict[str, Any]:
    """NOTEEVENTS.csv files -> text shards; `categories` None keeps all; returns the manifest."""
    if placeholders not in PLACEHOLDER_MODES:
        raise ValueError(f"placeholders must be one of {PLACEHOLDER_MODES}, got {placeholders!r}")
    reader_options = {"categories": None if categories is None else sorted({c.strip() for c in categories}),
                      "placeholders": placeholders}
    return build_text_shards(SOURCE, iter_mimic_records, find_mimic_inputs(inputs), out_dir, options, reader_options,
                             overwrite=overwrite)
