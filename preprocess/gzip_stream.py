"""Corpus files that may be gzipped, whatever their name: the gzip magic bytes decide, and a cut or
corrupt stream still gives every byte before the damage (PubMed XML, MIMIC-III NOTEEVENTS.csv)."""

from __future__ import annotations

import io
import os
import zlib
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = (
    16 + zlib.MAX_WBITS
)  # zlib reads the gzip header and checks the trailer's CRC and length
READ_SIZE = 1 << 16


class GzipStream(io.RawIOBase):
    """The decompressed bytes of a gzip file (its members in turn), to the last byte that can be
    decoded.

    gzip.GzipFile raises at a truncated end and drops what it had decoded for that read (up to the
    32 KB lxml asks for), losing complete records before the cut. Here a read returns what one
    decompression step gave, and only a read with nothing left raises EOFError.
    """

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self._decoder = zlib.decompressobj(wbits=GZIP_WBITS)
        self._input = b""  # compressed bytes read but not yet decoded

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if not self._input:
                self._input = self.raw.read(READ_SIZE)
                if not self._input:
                    if self._decoder.eof:
                        return 0
                    raise EOFError(
                        "compressed file ended before the end-of-stream marker was reached"
                    )
            if self._decoder.eof:  # another member may follow, after gzip's zero padding
                self._input = self._input.lstrip(b"\0")
                if not self._input:
                    continue
                self._decoder = zlib.decompressobj(wbits=GZIP_WBITS)
            data = self._decoder.decompress(self._input, len(buffer))
            self._input = self._decoder.unconsumed_tail or self._decoder.unused_data
            if data:
                buffer[: len(data)] = data
                return len(data)

    def close(self) -> None:
        super().close()
        self.raw.close()


def open_maybe_gzip(path: str | os.PathLike):
    """(raw file, stream to read): the stream decompresses when the file starts with gzip magic."""
    raw = open(path, "rb")
    compressed = raw.read(2) == GZIP_MAGIC
    raw.seek(0)
    return raw, GzipStream(raw) if compressed else raw
