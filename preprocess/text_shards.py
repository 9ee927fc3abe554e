"""Text-shard dirs, what the corpus parsers (PubMed, PMC, MIMIC-III, plain text) write and binarize
reads: the layout, the records a corpus reader yields, the options, and reading a finished dir. The
parse stage that writes one is preprocess/parse_stage.py (work_files.py, then shard_writer.py).

Output directory layout (the "text shards" contract of docs/artifacts.md):

    train.00000.txt, train.00001.txt, ...   training documents
    valid.00000.txt, ...                    validation documents
    manifest.json                           provenance and counts; written last
    .work/                                  per-input intermediate results, kept for re-runs:
                                            <key>.docs.txt (each document's shard bytes),
                                            <key>.records.tsv (one line per record), <key>.json;
                                            run.json: the source and options the dir is for

Each shard is UTF-8 fairseq raw text for RoBERTa: one sentence per line, one blank line after
every document (so documents are separated by a blank line), '\\n' line ends. A shard is closed
before it would exceed `shard_size_mb`; only a single document larger than that makes a bigger
shard. Shard numbers are dense and start at 00000 for each split.

How documents are chosen, in order:
1. Inputs are processed in file-name order (base name, then full path), so PubMed update files
   follow the baseline.
2. A later record with the same id replaces the earlier one (a later input always wins; within one
   input the higher PubMed Version wins, then the later record); a deletion removes the id as of
   that point. The resolution uses an on-disk sqlite index of id -> (input, version, record):
   what grows with the corpus is that index of ids, never the texts (shards are streamed to
   disk too), so memory stays flat in the number and size of inputs.
3. Empty documents (no text after cleaning) are skipped; a record that is the latest version of
   its id but empty still replaces the earlier version.
4. Exact duplicates are removed: the sha256 of the whitespace-collapsed, case-folded text; the
   first document in output order is kept (the set of hashes is on disk too).
5. The split is keyed on the document id alone: sha256(id) as a fraction of 2**64 below
   `valid_fraction` goes to valid, the rest to train; the same id always lands in the same split.

Inputs are parsed in parallel (one process per core by default): the parse of each input (XML,
CSV, sentence splitting, fingerprints: the expensive part) goes to .work/ (work_files.py), and the
single-process resolution and shard writing (shard_writer.py) only copy bytes. Re-running is
safe and cheap: .work/ is reused while the input's size, mtime and the reader options are
unchanged; the shards are then rebuilt from .work/ and a shard whose bytes are already on disk is
not rewritten. Every file is written atomically (temporary file + rename), so a run killed at any
point leaves only whole files and the next run ends with byte-identical output to an
uninterrupted run. A dir without manifest.json is unfinished: `binarize` refuses it.

A run refuses an --out dir written by another source or with other output options (it would
replace those shards and drop their parsed inputs), and a non-empty dir that is not a text-shard
dir, unless `overwrite` is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from bio_roberta_core.errors import BioRobertaError

SPLITS = ("train", "valid")
WORK_DIR = ".work"
RUN_FILE = (
    "run.json"  # in .work/: the source and output options, written before anything else changes
)
MANIFEST = "manifest.json"
SHARD_NAME = re.compile(r"^(train|valid)\.\d{5}\.txt$")
FORMAT_DESCRIPTION = (
    "fairseq raw text for RoBERTa: one sentence per line, a blank line after each document; "
    "shards {split}.NNNNN.txt for split in train, valid; numbered from 00000"
)
COUNT_BATCH_LINES = 10_000
COUNT_BATCH_CHARS = 4_000_000  # memory of counting a batch: long lines make fewer per batch
# The longest line a BPE learner is given: a longer one (a document without sentence breaks) is cut
# at spaces into pieces of at most this many characters, so memory does not grow with it (the
# trainer held 80x a 100 MB line); only the pre-tokens at the cuts can differ. Counted in the
# manifest (counts.long_lines_split).
MAX_LEARN_LINE_CHARS = 100_000


@dataclass(frozen=True)
class Document:
    """One document from a corpus reader. `paragraphs` are split into sentences separately."""

    doc_id: str
    paragraphs: tuple[str, ...]
    version: int = 1  # orders records of the same id within one input (PubMed PMID Version)
    skip_reason: str | None = (
        None  # set by the reader for a record kept only as a version (e.g. no abstract)
    )


@dataclass(frozen=True)
class Deletion:
    """A record that removes an id (PubMed <DeleteCitation>)."""

    doc_id: str


Record = Document | Deletion
# A corpus reader: (path, log, **reader_options) -> records, in file order.
Reader = Callable[..., Iterator[Record]]


class TextDirError(BioRobertaError):
    """A text-shard dir that is unfinished or holds no shards of a split, a text input that does
    not exist, or an --out dir that a parse must not write into."""


def usable_cores() -> int:
    """Cores this process may run on: its affinity mask, which containers and taskset narrow."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class ShardOptions:
    shard_size_mb: float = 64.0
    valid_fraction: float = 0.005
    dedup: bool = True
    workers: int = field(
        default_factory=usable_cores
    )  # processes parsing inputs (only with >= 2 inputs)

    def __post_init__(self):
        if self.shard_size_mb <= 0:
            raise ValueError(f"shard size must be positive, got {self.shard_size_mb} MB")
        if not 0.0 <= self.valid_fraction <= 1.0:
            raise ValueError(f"valid fraction must be within [0, 1], got {self.valid_fraction}")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")


def expand_inputs(paths: Iterable[str | os.PathLike], patterns: Sequence[str]) -> list[Path]:
    """Files named directly plus the files under named directories that match `patterns`,
    sorted by file name (then path): the order in which inputs are processed."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(p for pattern in patterns for p in path.rglob(pattern) if p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"input not found: {path}")
    unique = {p.resolve(): p for p in found}
    return sorted(unique, key=lambda p: (p.name, str(p)))


def valid_split(doc_id: str, valid_fraction: float) -> bool:
    """Whether `doc_id` belongs to the validation split (a pure function of the id)."""
    value = int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big")
    return value < valid_fraction * 2**64


def finished_manifest(text_dir: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a text-shard dir whose parse finished; TextDirError saying how to finish it
    otherwise."""
    text_dir = Path(text_dir)
    path, run_path = text_dir / MANIFEST, text_dir / WORK_DIR / RUN_FILE
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if manifest is not None and manifest.get("kind") == "text_shards":
        return manifest
    if not run_path.is_file():  # a parse writes .work/run.json before anything else
        what = "not a text-shard manifest" if manifest is not None else f"no {MANIFEST}"
        raise TextDirError(
            f"{path if manifest is not None else text_dir}: {what}: not a dir a parse wrote; for "
            f"text files of your own (.txt, .jsonl, .parquet) run `bio-roberta parse-text "
            f"{text_dir} --out TEXT_DIR` first and give TEXT_DIR here (PubMed, PMC and "
            f"MIMIC-III downloads: parse-pubmed, parse-pmc, parse-mimic)"
        )
    command = f"parse-{json.loads(run_path.read_text(encoding='utf-8'))['source']}"
    if manifest is not None:
        raise TextDirError(
            f"{path}: not a text-shard manifest; pass a dir written by `bio-roberta {command}`"
        )
    raise TextDirError(
        f"{text_dir}: no {MANIFEST}: the parse writing it did not finish (killed or still "
        f"running); finish it by re-running the same `bio-roberta {command} ... --out {text_dir}` "
        f"(parsed inputs are reused)"
    )


def iter_shard_documents(out_dir: str | os.PathLike, split: str = "train") -> Iterator[list[str]]:
    """The documents of one split of a text-shard directory, each as its list of sentences."""
    manifest = json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))
    for shard in manifest["shards"]:
        if shard["split"] != split:
            continue
        sentences: list[str] = []
        with open(Path(out_dir) / shard["name"], encoding="utf-8", newline="\n") as handle:
            for line in handle:
                line = line.rstrip("\n")
                if line:
                    sentences.append(line)
                elif sentences:
                    yield sentences
                    sentences = []
        if sentences:
            yield sentences


def shard_files(text_dir: Path, split: str) -> list[Path]:
    """The `split` shards of a text-shard dir ({split}.NNNNN.txt), in order."""
    return sorted(p for p in text_dir.iterdir() if p.is_file() and p.name.startswith(split + "."))


def text_files(inputs: Iterable[str | os.PathLike], split: str = "train") -> list[Path]:
    """Files named by `inputs`: a text-shard dir contributes its `split` shards, a file itself.
    A dir whose parse did not finish (no manifest.json) is refused, as binarize refuses it: its
    shards are those of another run, or only some of them."""
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            finished_manifest(item)
            shards = shard_files(item, split)
            if not shards:
                raise TextDirError(f"{item}: no {split}.* text shards in this directory")
            files.extend(shards)
        elif item.is_file():
            files.append(item)
        else:
            raise TextDirError(f"{item}: no such file or directory")
    return files


def line_pieces(line: str) -> Iterator[str]:
    """A line as the learners take it: one over MAX_LEARN_LINE_CHARS characters cut at its last
    space before each bound (or at the bound, where there is none)."""
    start = 0
    while start < len(line):
        end = start + MAX_LEARN_LINE_CHARS
        if end < len(line):
            cut = line.rfind(" ", start + 1, end + 1)
            end = cut if cut != -1 else end
        piece = line[start:end].strip()
        if piece:
            yield piece
        start = end


def iter_lines(
    files: Iterable[Path], max_lines: int | None = None, counts: Counter | None = None
) -> Iterator[str]:
    """Non-empty lines, stripped as fairseq's multiprocessing_bpe_encoder strips them, an over-long
    one as its line_pieces; `counts` gets the `lines` read and the `long_lines_split`."""
    counts = Counter() if counts is None else counts
    for file in files:
        with open(file, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                if max_lines is not None and counts["lines"] >= max_lines:
                    return
                counts["lines"] += 1
                if len(line) <= MAX_LEARN_LINE_CHARS:
                    yield line
                    continue
                counts["long_lines_split"] += 1
                yield from line_pieces(line)


def batched(
    lines: Iterable[str], size: int = COUNT_BATCH_LINES, max_chars: int | None = None
) -> Iterator[list[str]]:
    """Lists of `size` lines, or fewer once they hold `max_chars` characters."""
    batch: list[str] = []
    chars = 0
    for line in lines:
        batch.append(line)
        chars += len(line)
        if len(batch) == size or (max_chars is not None and chars >= max_chars):
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch
