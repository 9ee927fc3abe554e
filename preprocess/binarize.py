"""Encode text shards and binarize them into fairseq mmap datasets in one streaming, multi-process
pass.

The standard route writes BPE ids as text (examples/roberta/multiprocessing_bpe_encoder.py) and
reads them back (fairseq-preprocess). Here each worker encodes a line-aligned byte range of a shard
and writes dictionary indices straight into its own data file plus a file of sequence sizes; the
chunks are appended in order and the index is written last, in fairseq's MMapIndexedDataset
format (version 1: header, int32 sizes, int64 byte pointers), streaming, so memory does not grow
with the corpus. For byte-level BPE the encoder is BatchGPT2Encoder (fairseq's gpt2 BPE matched
once per batch and cached per pre-token) and the fairseq package is never imported (seconds of
start-up); the other kinds use fairseq's own encoder and Dictionary. The result equals the
standard route's .bin/.idx byte for byte (tests/test_binarize.py).
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import re
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.output_dir import OutputBuild, new_output_dir
from bio_roberta_core.processes import end_with_parent
from bio_roberta_core.provenance import (
    atomic_write_json,
    environment_record,
    file_record,
    json_hash,
    kill_point,
    naming_file,
    sha256_file,
)
from preprocess.gpt2_encoder import EOS_INDEX, UNK_INDEX, BatchGPT2Encoder, read_dictionary_indices
from preprocess.text_shards import batched, finished_manifest, shard_files
from preprocess.vocab_dir import (
    DICT_FILE,
    MANIFEST,
    VocabularyDir,
    read_vocab_dir,
    write_padded_dict,
)

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid")
ENCODE_BATCH_LINES = 4096
DEFAULT_CHUNK_BYTES = 64 << 20
COPY_BLOCK_SIZES = 1 << 22  # sizes per block when the index is written
INDEX_MAGIC = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
INDEX_DTYPE_CODES = {
    np.dtype(np.uint16): 8,
    np.dtype(np.uint32): 9,
    np.dtype(np.int64): 5,
}  # fairseq's codes
# What a data-bin dir holds (fairseq-preprocess adds preprocess.log); binarize replaces the whole
# dir.
DATA_BIN_FILE = re.compile(r"^([^.]+\.(bin|idx)|dict\.txt|manifest\.json|preprocess\.log)$")


class BinarizeError(BioRobertaError):
    """The text dir or output dir cannot be binarized as asked."""


@dataclass(frozen=True)
class Chunk:
    """A byte range of one shard, cut at line boundaries; binarized by one worker into
    `prefix`.{bin,sizes}."""

    path: str
    start: int
    end: int
    prefix: str


def token_dtype(dictionary_size: int) -> np.dtype:
    """fairseq's best_fitting_int_dtype(len(dictionary)), the dtype fairseq-preprocess writes."""
    if dictionary_size < 65500:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32) if dictionary_size < 4294967295 else np.dtype(np.int64)


class LineEncoder:
    """Text line -> fairseq dictionary indices (+ </s>), as multiprocessing_bpe_encoder +
    fairseq-preprocess."""

    def __init__(self, vocab: VocabularyDir):
        self.kind = vocab.kind
        indices, self.dictionary_size = read_dictionary_indices(vocab.dict_path)
        self.eos, self.unk = EOS_INDEX, UNK_INDEX
        if self.kind == "gpt2":
            files = vocab.bpe_files
            self.gpt2 = BatchGPT2Encoder(files["gpt2_encoder_json"], files["gpt2_vocab_bpe"])
            bpe_size = max(self.gpt2.reference.encoder.values()) + 1
            # BPE id -> dictionary index; ids absent from dict.txt become <unk>, as in
            # fairseq-preprocess. The last entry is </s>, so the encoder's LINE_END (-1) maps to it.
            self.index_of_bpe_id = np.array(
                [indices.get(str(i), self.unk) for i in range(bpe_size)] + [self.eos],
                dtype=np.int64,
            )
        else:
            from preprocess.bpe import load_dictionary, open_bpe

            self.bpe = open_bpe(vocab)
            self.dictionary = load_dictionary(vocab)

    def encode_batch(self, lines: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """(indices of all lines, each followed by </s>; sequence sizes; blank lines) for a batch.

        A blank line (a document break) becomes just </s>, as fairseq-preprocess makes it.
        """
        stripped = [line.strip() for line in lines]
        blank = sum(1 for line in stripped if not line)
        if self.kind == "fastbpe":
            # fastBPE splits words at single spaces only (subword-nmt expects tokenised text)
            stripped = [" ".join(line.split()) for line in stripped]
        if self.kind != "gpt2":
            sequences = [
                self.dictionary.encode_line(
                    self.bpe.encode(line) if line else "", add_if_not_exist=False, append_eos=True
                )
                .numpy()
                .astype(np.int64)
                for line in stripped
            ]
            sizes = np.array([len(seq) for seq in sequences], dtype=np.int64)
            return np.concatenate(sequences) if sequences else np.zeros(0, np.int64), sizes, blank
        flat, lengths = self.gpt2.encode_lines([line for line in stripped if line])
        indices = self.index_of_bpe_id[flat]
        if not blank:
            return indices, lengths + 1, 0
        is_blank = np.array([not line for line in stripped])
        sizes = np.ones(len(stripped), dtype=np.int64)
        sizes[~is_blank] = lengths + 1
        # each blank line's lone </s> goes after the sequences of the non-blank lines before it
        sequence_ends = np.concatenate([[0], np.cumsum(lengths + 1)])
        flat = np.insert(indices, sequence_ends[np.cumsum(~is_blank)[is_blank]], self.eos)
        return flat, sizes, blank


class MMapDatasetWriter:
    """One fairseq mmap dataset (prefix.bin + prefix.idx) assembled from binarized chunks in order.

    .bin is the chunks' data appended; .idx is what fairseq's MMapIndexedDataset.Index.writer
    writes: magic, version, dtype code, sequence count, int32 sizes, int64 byte offsets. The
    sizes wait in a side file, so only one block of them is in memory at a time.
    """

    def __init__(self, prefix: Path, dtype: np.dtype):
        self.prefix, self.dtype = prefix, dtype
        self.data = open(f"{prefix}.bin", "wb")
        self.sizes = open(f"{prefix}.sizes", "w+b")
        self.count = 0

    def append_chunk(self, chunk_prefix: str) -> None:
        for suffix, out in ((".bin", self.data), (".sizes", self.sizes)):
            with naming_file(f"{self.prefix}{suffix}"), open(chunk_prefix + suffix, "rb") as part:
                shutil.copyfileobj(part, out, 1 << 20)
            os.unlink(chunk_prefix + suffix)
        self.count = self.sizes.tell() // 4

    def finalize(self, index_path: Path) -> None:
        with naming_file(f"{self.prefix}.bin"):
            self.data.close()
        with naming_file(index_path), open(index_path, "wb") as index:
            index.write(
                INDEX_MAGIC
                + struct.pack("<QBQ", INDEX_VERSION, INDEX_DTYPE_CODES[self.dtype], self.count)
            )
            self.sizes.seek(0)
            shutil.copyfileobj(self.sizes, index, 1 << 20)
            self.sizes.seek(0)
            offset = 0
            while block := self.sizes.read(4 * COPY_BLOCK_SIZES):
                ends = (
                    np.cumsum(np.frombuffer(block, dtype=np.int32), dtype=np.int64)
                    * self.dtype.itemsize
                    + offset
                )
                index.write(np.concatenate([[offset], ends[:-1]]).astype(np.int64).tobytes())
                offset = int(ends[-1])
        self.sizes.close()
        os.unlink(f"{self.prefix}.sizes")


def read_chunk_lines(chunk: Chunk) -> list[str]:
    """The lines of a chunk as Python's text mode reads them (universal newlines), ends removed."""
    with open(chunk.path, "rb") as handle:
        handle.seek(chunk.start)
        text = handle.read(chunk.end - chunk.start).decode("utf-8")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


_worker_encoder: LineEncoder | None = None


def _init_worker(vocab: VocabularyDir, workers: int) -> None:
    """A worker's encoder; a pool worker ends with the binarize that forked it (processes)."""
    global _worker_encoder
    if workers > 1:  # parallel over processes: one tokenizer thread each, or 2 cores run 4 threads
        end_with_parent()
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _worker_encoder = LineEncoder(vocab)


def binarize_chunk(chunk: Chunk) -> dict[str, int]:
    """Encode one chunk into chunk.prefix.bin (indices) and .sizes (int32 per sequence); returns its
    counts."""
    encoder = _worker_encoder
    dtype = token_dtype(encoder.dictionary_size)
    counts = {"sentences": 0, "empty_lines": 0, "sequences": 0, "tokens": 0, "unk_tokens": 0}
    with (
        naming_file(chunk.prefix + ".bin"),
        open(chunk.prefix + ".bin", "wb") as data,
        open(chunk.prefix + ".sizes", "wb") as sizes_out,
    ):
        for batch in batched(read_chunk_lines(chunk), ENCODE_BATCH_LINES):
            flat, sizes, blank = encoder.encode_batch(batch)
            data.write(flat.astype(dtype).tobytes())
            sizes_out.write(sizes.astype(np.int32).tobytes())
            counts["sequences"] += len(sizes)
            counts["tokens"] += len(flat)
            counts["unk_tokens"] += int(np.count_nonzero(flat == encoder.unk))
            counts["empty_lines"] += blank
            counts["sentences"] += len(sizes) - blank
    counts["bytes"] = chunk.end - chunk.start
    return counts


def line_offsets(path: Path, pieces: int) -> list[int]:
    """Offsets cutting a file into about `pieces` byte ranges, each ending after a line break."""
    size = path.stat().st_size
    offsets = [0]
    with open(path, "rb") as handle:
        for piece in range(1, pieces):
            handle.seek(max(offsets[-1], size * piece // pieces))
            handle.readline()
            offsets.append(handle.tell())
    return offsets + [size]


def plan_chunks(
    files: list[Path], workers: int, chunk_bytes: int, tmp_dir: Path, split: str
) -> list[Chunk]:
    """Cut shards into line-aligned byte ranges: at least one per worker, none above chunk_bytes."""
    total = sum(f.stat().st_size for f in files)
    target = max(1, min(chunk_bytes, math.ceil(total / workers)))
    chunks = []
    for file in files:
        offsets = line_offsets(file, max(1, math.ceil(file.stat().st_size / target)))
        for start, end in zip(offsets[:-1], offsets[1:]):
            if end > start:
                chunks.append(
                    Chunk(str(file), start, end, str(tmp_dir / f"{split}.{len(chunks):05d}"))
                )
    return chunks


def binarize(
    text_dirs: str | os.PathLike | list[str | os.PathLike],
    vocab_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    workers: int = 1,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    splits=SPLITS,
    progress: bool = True,
) -> dict[str, Any]:
    """Binarize each split's shards of the text dirs (in the order given: e.g. PubMed then PMC for
    PM) into `out_dir`/{split}.bin/.idx + dict.txt + manifest.json.

    The data-bin is built beside `out_dir`, manifest last, and then takes its place
    (bio_roberta_core.output_dir.new_output_dir): a killed run leaves the previous data-bin whole,
    or none. Text dirs whose parse has not finished (no manifest) are refused.
    """
    text_dirs = [
        Path(d) for d in (text_dirs if isinstance(text_dirs, (list, tuple)) else [text_dirs])
    ]
    out = Path(out_dir)
    vocab = read_vocab_dir(vocab_dir)
    for text_dir in text_dirs:
        if not text_dir.is_dir():
            raise BinarizeError(f"{text_dir}: not a directory of text shards (train.*, valid.*)")
        finished_manifest(text_dir)
    if workers < 1:
        raise BinarizeError(f"--workers must be at least 1, got {workers}")
    found = {
        split: [f for text_dir in text_dirs for f in shard_files(text_dir, split)]
        for split in splits
    }
    if not any(found.values()):
        raise BinarizeError(
            f"{', '.join(map(str, text_dirs))}: no shards named "
            f"{', '.join(s + '.*' for s in splits)}"
        )
    with new_output_dir(out, DATA_BIN_FILE) as build:
        return _write_data_bin(build, text_dirs, vocab, found, workers, chunk_bytes, progress)


def _write_data_bin(
    build: OutputBuild,
    text_dirs: list[Path],
    vocab,
    found: dict[str, list[Path]],
    workers: int,
    chunk_bytes: int,
    progress: bool,
) -> dict[str, Any]:
    """The data-bin's files and manifest (last) in build.path."""
    from tqdm import tqdm

    building = build.path
    tmp_dir = building / ".binarize-tmp"
    tmp_dir.mkdir()
    write_padded_dict(
        vocab.dict_path, building / DICT_FILE
    )  # as learn-vocab wrote it, or padded now
    _, dict_size = read_dictionary_indices(building / DICT_FILE)
    split_records: dict[str, Any] = {}
    context = multiprocessing.get_context("fork")
    pool = (
        context.Pool(workers, initializer=_init_worker, initargs=(vocab, workers))
        if workers > 1
        else None
    )
    if pool is None:
        _init_worker(vocab, workers)
    try:
        for split, files in found.items():
            if not files:
                logger.warning("no %s.* shards; %s split not written", split, split)
                continue
            chunks = plan_chunks(files, workers, chunk_bytes, tmp_dir, split)
            totals = {
                "sentences": 0,
                "empty_lines": 0,
                "sequences": 0,
                "tokens": 0,
                "unk_tokens": 0,
            }
            results = pool.imap(binarize_chunk, chunks) if pool else map(binarize_chunk, chunks)
            writer = MMapDatasetWriter(tmp_dir / split, token_dtype(dict_size))
            with tqdm(
                total=sum(c.end - c.start for c in chunks),
                unit="B",
                unit_scale=True,
                desc=f"binarize {split}",
                disable=not progress,
            ) as bar:
                for chunk, counts in zip(chunks, results):
                    writer.append_chunk(chunk.prefix)
                    bar.update(counts.pop("bytes"))
                    for key, value in counts.items():
                        totals[key] += value
            writer.finalize(tmp_dir / f"{split}.idx")
            for suffix in (".bin", ".idx"):
                os.replace(tmp_dir / f"{split}{suffix}", building / f"{split}{suffix}")
            split_records[split] = {"inputs": [file_record(f) for f in files], **totals}
            kill_point("binarize:split-written")
    finally:
        if pool is not None:  # all results are in, or the run failed: no task is worth finishing
            pool.terminate()
            pool.join()
    shutil.rmtree(tmp_dir)
    manifest = {
        "text_dirs": [
            {"path": str(d.resolve()), "manifest": file_record(d / MANIFEST)} for d in text_dirs
        ],
        # sha256: of dict.txt, as convert-task's vocab record (checkpoints record it too: export-hf
        # checks it)
        "vocab": {
            "path": str(vocab.path.resolve()),
            "kind": vocab.kind,
            "manifest_hash": json_hash(vocab.manifest),
            "sha256": sha256_file(vocab.dict_path),
        },
        "dict_size": dict_size,
        "splits": split_records,
        "outputs": [
            build.file_record(name)
            for split in split_records
            for name in (f"{split}.bin", f"{split}.idx")
        ],
        "options": {"workers": workers, "chunk_bytes": chunk_bytes, "splits": list(found)},
        **environment_record(),
    }
    atomic_write_json(building / MANIFEST, manifest)
    return manifest
