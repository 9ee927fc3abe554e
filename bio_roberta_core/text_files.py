"""The one way a user's text file is read (a task file, a task's source files, `predict --input`):
UTF-8, a byte order mark at its start dropped (it would stick to the first token), lines ended by
\\n (a \\r before it dropped); a byte that is not UTF-8, or a NUL byte (a binary file, or UTF-16
text), is a one-line error naming the file, the line and the byte, and what to do, raised as the
caller's own error class (each command's errors are its own)."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Iterator

from bio_roberta_core.errors import BioRobertaError

NUL = b"\x00"
SAVE_AS_UTF8 = "save it as UTF-8 text (e.g. iconv -f latin1 -t utf-8 FILE > NEW)"


class TextFileError(BioRobertaError):
    """A user's text file that is not UTF-8 text (names the file, line and byte)."""


def decoded_line(
    path: str | os.PathLike, number: int, raw: bytes, error: type[BioRobertaError]
) -> str:
    """Line `number` of a file as text, or `error` naming the file, the line and the byte."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as failure:
        bad = raw[failure.start : failure.start + 1]
        raise error(
            f"{path}:{number}: not UTF-8 ({failure.reason} at byte {failure.start + 1} of the "
            f"line, {bad!r}); {SAVE_AS_UTF8}"
        ) from None
    nul = raw.find(NUL)
    if nul >= 0:
        raise error(
            f"{path}:{number}: a NUL byte at byte {nul + 1} of the line: a binary file, or "
            f"UTF-16 text? {SAVE_AS_UTF8}"
        )
    return line


def utf8_lines(
    path: str | os.PathLike, error: type[BioRobertaError] = TextFileError
) -> Iterator[tuple[int, str]]:
    """(line number, text without its line ending) of each line of a UTF-8 text file."""
    data = Path(path).read_bytes().removeprefix(codecs.BOM_UTF8)
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    for number, raw in enumerate(raw_lines, 1):
        yield number, decoded_line(path, number, raw.rstrip(b"\r"), error)


def utf8_text(path: str | os.PathLike, error: type[BioRobertaError] = TextFileError) -> str:
    """A UTF-8 text file's whole text (line endings kept)."""
    return utf8_decoded(path, Path(path).read_bytes(), error)


def utf8_decoded(
    path: str | os.PathLike, data: bytes, error: type[BioRobertaError] = TextFileError
) -> str:
    """The whole text of `data`, the bytes read from the UTF-8 text file `path` (for a caller that
    keeps the bytes too: one read gives the text and its hash)."""
    data = data.removeprefix(codecs.BOM_UTF8)
    for number, raw in enumerate(data.split(b"\n"), 1):
        decoded_line(path, number, raw, error)
    return data.decode("utf-8")
