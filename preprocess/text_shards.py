"""The text-shard writer shared by the corpus parsers (PubMed, PMC, MIMIC-III).

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
CSV, sentence splitting, fingerprints: the expensive part) goes to .work/, and the single-process
resolution and shard writing only copy bytes. Re-running is safe and cheap: .work/ is reused
while the input's size, mtime and the reader options are unchanged; the shards are then rebuilt
from .work/ and a shard whose bytes are already on disk is not rewritten. Every file is written
atomically (temporary file + rename), so a run killed at any point leaves only whole files and the next run ends with byte-identical
output to an uninterrupted run. A dir without manifest.json is unfinished: `binarize` refuses it.

A run refuses an --out dir written by another source or with other output options (it would
replace those shards and drop their parsed inputs), and a non-empty dir that is not a text-shard
dir, unless `overwrite` is given.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import hashlib
import itertools
import json
import logging
import os
import re
import signal
import sqlite3
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from tqdm import tqdm

from bio_roberta.provenance import atomic_write_json, environment_record, file_record, kill_point, sha256_file
from preprocess.errors import InputLog
from preprocess.sentences import SPLITTER, normalize_whitespace, split_sentences

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid")
WORK_DIR = ".work"
WORK_FORMAT = 2  # bump when the .work/ files change meaning: older ones are then re-parsed
WORK_SUFFIXES = (".json", ".docs.txt", ".records.tsv")  # per input in .work/: summary (written last), texts, records
RUN_FILE = "run.json"  # in .work/: the source and output options, written before anything else changes
MANIFEST = "manifest.json"
WRITE_BUFFER = 1 << 20
SHARD_NAME = re.compile(r"^(train|valid)\.\d{5}\.txt$")
FORMAT_DESCRIPTION = (
    "fairseq raw text for RoBERTa: one sentence per line, a blank line after each document; "
    "shards {split}.NNNNN.txt for split in train, valid; numbered from 00000"
)


@dataclass(frozen=True)
class Document:
    """One document from a corpus reader. `paragraphs` are split into sentences separately."""

    doc_id: str
    paragraphs: tuple[str, ...]
    version: int = 1  # orders records of the same id within one input (PubMed PMID Version)
    skip_reason: str | None = None  # set by the reader for a record kept only as a version (e.g. no abstract)


@dataclass(frozen=True)
class Deletion:
    """A record that removes an id (PubMed <DeleteCitation>)."""

    doc_id: str


Record = Document | Deletion
# A corpus reader: (path, log, **reader_options) -> records, in file order.
Reader = Callable[..., Iterator[Record]]


class TextDirError(ValueError):
    """A text-shard dir that is unfinished, or an --out dir that a parse must not write into."""


def usable_cores() -> int:
    """Cores this process may run on: its affinity mask, which containers and taskset narrow."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class ShardOptions:
    shard_size_mb: float = 64.0
    valid_fraction: float = 0.005
    dedup: bool = True
    workers: int = field(default_factory=usable_cores)  # processes parsing inputs (only with >= 2 inputs)

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


def text_fingerprint(sentences: Sequence[str]) -> bytes:
    """Hash of the normalised text used to find exact duplicates."""
    return hashlib.sha256(normalize_whitespace(" ".join(sentences)).casefold().encode("utf-8")).digest()


# ---------------------------------------------------------------------------------------------
# Stage 1: parse each input into .work/<key>.{docs.txt,records.tsv,json}


class WorkRecord(NamedTuple):
    """One line of .work/<key>.records.tsv: a record of the input and, for a document with text
    (kind "A"), where its bytes are in .docs.txt (they follow those of the previous "A" record)."""

    seq: int  # the record's number in its input
    kind: str  # "A" document with text, "E" document without text (still a version), "D" deletion
    version: int
    size: int  # bytes in .docs.txt
    sentences: int
    characters: int
    fingerprint: str  # hex text_fingerprint, "-" unless kind "A"
    doc_id: str

    def line(self) -> str:
        # the id last and JSON-quoted, so no id can break the tab-separated line
        return "\t".join(map(str, self[:-1])) + "\t" + json.dumps(self.doc_id) + "\n"

    @classmethod
    def parse(cls, line: str) -> WorkRecord:
        seq, kind, version, size, sentences, characters, fingerprint, doc_id = line.split("\t", 7)
        # json.dumps escapes with a backslash; without one the id is the text between the quotes
        doc_id = json.loads(doc_id) if "\\" in doc_id else doc_id[1:-2]
        return cls(int(seq), kind, int(version), int(size), int(sentences), int(characters), fingerprint, doc_id)


def _work_key(path: Path) -> str:
    safe_name = re.sub(r"[^A-Za-z0-9._-]", "_", path.name)
    return f"{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}-{safe_name}"


def _input_signature(path: Path, reader_options: dict[str, Any]) -> dict[str, Any]:
    stat = path.stat()
    return {
        "work_format": WORK_FORMAT,
        "path": str(path.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "reader_options": reader_options,
        "splitter": SPLITTER,
    }


def _load_summary(work: Path, key: str, signature: dict[str, Any]) -> dict[str, Any] | None:
    summary_path = work / f"{key}.json"
    if not summary_path.exists():
        return None
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    complete = all((work / f"{key}{suffix}").exists() for suffix in WORK_SUFFIXES)
    return summary if complete and summary.get("signature") == signature else None


def _temporary(path: Path) -> Path:
    """A temporary name beside `path`, private to this process and removed by _remove_leftovers."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def parse_input_to_work(reader: Reader, path: Path, work: Path, key: str,
                        signature: dict[str, Any], reader_options: dict[str, Any]) -> dict[str, Any]:
    """Stream one input through its reader and the sentence splitter into .work/ files; the
    summary JSON is written last and marks the input as done."""
    log = InputLog(str(path))
    documents_yielded = empty = deletions = 0
    docs_path, records_path = work / f"{key}.docs.txt", work / f"{key}.records.tsv"
    with open(_temporary(docs_path), "wb", buffering=WRITE_BUFFER) as docs_out, \
            open(_temporary(records_path), "w", encoding="utf-8", buffering=WRITE_BUFFER) as records_out:
        for seq, record in enumerate(reader(path, log, **reader_options)):
            if isinstance(record, Deletion):
                deletions += 1
                records_out.write(WorkRecord(seq, "D", 0, 0, 0, 0, "-", record.doc_id).line())
                continue
            documents_yielded += 1
            sentences = [] if record.skip_reason else [
                sentence for paragraph in record.paragraphs for sentence in split_sentences(paragraph)
            ]
            if sentences:
                data = ("\n".join(sentences) + "\n\n").encode("utf-8")
                docs_out.write(data)
                records_out.write(WorkRecord(seq, "A", record.version, len(data), len(sentences),
                                             sum(map(len, sentences)), text_fingerprint(sentences).hex(),
                                             record.doc_id).line())
            else:
                empty += 1
                log.skip(record.skip_reason or "empty_text")
                records_out.write(WorkRecord(seq, "E", record.version, 0, 0, 0, "-", record.doc_id).line())
        for handle in (docs_out, records_out):
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(_temporary(docs_path), docs_path)
    os.replace(_temporary(records_path), records_path)
    # records the reader skipped without yielding them (bad rows, filtered notes...) were read too
    documents_read = documents_yielded + sum(log.skipped.values()) - empty
    summary = {
        "signature": signature,
        "input": file_record(path),
        "documents_read": documents_read,
        "deletions_read": deletions,
        "skipped": dict(sorted(log.skipped.items())),
        "other": dict(sorted(log.other.items())),
        "problems": log.problems,
        "failed": log.failed,
    }
    atomic_write_json(work / f"{key}.json", summary)
    return summary


def _end_with_parent() -> None:
    """Pool initializer: a worker is killed with the run, so a killed run leaves no worker behind
    still writing into .work/ (Linux; elsewhere workers end when they next read from the pool)."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# Stage 2: resolve versions and deletions, remove duplicates, split, write shards


class _ShardWriter:
    """Streams the documents of one split into bounded shards, each written to a temporary file
    and renamed into place (or dropped when the same bytes are already there)."""

    def __init__(self, out_dir: Path, split: str, max_bytes: int):
        self.out_dir, self.split, self.max_bytes = out_dir, split, max_bytes
        self.shards: list[dict[str, Any]] = []
        self.rewritten = 0
        self._file = None

    def add(self, data: bytes, sentences: int, characters: int) -> None:
        """Append one document's shard bytes (its sentence lines and the blank line after it)."""
        if self._file is not None and self._size + len(data) > self.max_bytes:
            self.close()
        if self._file is None:
            self._target = self.out_dir / f"{self.split}.{len(self.shards):05d}.txt"
            self._file = open(_temporary(self._target), "wb", buffering=WRITE_BUFFER)
            self._digest = hashlib.sha256()
            self._size = self._documents = self._sentences = self._characters = 0
        self._file.write(data)
        self._digest.update(data)
        self._size += len(data)
        self._documents += 1
        self._sentences += sentences
        self._characters += characters

    def close(self) -> None:
        if self._file is None:
            return
        target, temporary, digest = self._target, _temporary(self._target), self._digest.hexdigest()
        if target.exists() and target.stat().st_size == self._size and sha256_file(target) == digest:
            self._file.close()
            temporary.unlink()
        else:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(temporary, target)
            self.rewritten += 1
        self.shards.append({
            "name": target.name, "split": self.split, "documents": self._documents, "sentences": self._sentences,
            "characters": self._characters, "bytes": self._size, "sha256": digest,
        })
        self._file = None


@dataclass
class _Totals:
    written: Counter = field(default_factory=Counter)
    sentences: Counter = field(default_factory=Counter)
    characters: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    deletions_applied: int = 0


def _work_records(work: Path, key: str) -> Iterator[WorkRecord]:
    with open(work / f"{key}.records.tsv", encoding="utf-8", newline="\n") as records:
        yield from map(WorkRecord.parse, records)


def _build_version_index(db: sqlite3.Connection, work: Path, keys: list[str], totals: _Totals) -> None:
    """id -> (input, version, seq) of its latest record; runs of records go to sqlite in one call each."""
    db.execute("CREATE TABLE latest (id TEXT PRIMARY KEY, input INTEGER, version INTEGER, seq INTEGER) WITHOUT ROWID")
    for input_index, key in enumerate(keys):
        for is_deletion, run in itertools.groupby(_work_records(work, key), key=lambda record: record.kind == "D"):
            if is_deletion:
                totals.deletions_applied += db.executemany(
                    "DELETE FROM latest WHERE id = ?", ((record.doc_id,) for record in run)).rowcount
                continue
            db.executemany(
                "INSERT INTO latest VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "input = excluded.input, version = excluded.version, seq = excluded.seq "
                "WHERE excluded.input > latest.input OR excluded.version >= latest.version",
                ((record.doc_id, input_index, record.version, record.seq) for record in run),
            )
    db.commit()


def _write_shards(out_dir: Path, work: Path, keys: list[str], options: ShardOptions,
                  totals: _Totals) -> tuple[list[dict[str, Any]], int]:
    index_path = work / "index.sqlite"
    for stale in (index_path, work / "index.sqlite-journal"):
        stale.unlink(missing_ok=True)
    db = sqlite3.connect(index_path)
    try:
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        _build_version_index(db, work, keys, totals)
        db.execute("CREATE TABLE seen (fingerprint BLOB PRIMARY KEY) WITHOUT ROWID")
        max_bytes = int(options.shard_size_mb * 1024 * 1024)
        writers = {split: _ShardWriter(out_dir, split, max_bytes) for split in SPLITS}
        for input_index, key in enumerate(tqdm(keys, desc="writing shards", unit="input", disable=None)):
            with open(work / f"{key}.docs.txt", "rb") as docs:
                for record in _work_records(work, key):
                    if record.kind != "A":
                        continue
                    data = docs.read(record.size)
                    latest = db.execute("SELECT input, seq FROM latest WHERE id = ?", (record.doc_id,)).fetchone()
                    if latest is None:
                        totals.skipped["deleted"] += 1
                        continue
                    if latest != (input_index, record.seq):
                        totals.skipped["superseded"] += 1
                        continue
                    if options.dedup and not db.execute(
                        "INSERT OR IGNORE INTO seen VALUES (?)", (bytes.fromhex(record.fingerprint),)
                    ).rowcount:
                        totals.skipped["duplicate_text"] += 1
                        continue
                    split = "valid" if valid_split(record.doc_id, options.valid_fraction) else "train"
                    writers[split].add(data, record.sentences, record.characters)
                    totals.written[split] += 1
                    totals.sentences[split] += record.sentences
                    totals.characters[split] += record.characters
        for writer in writers.values():
            writer.close()
    finally:
        db.close()
        index_path.unlink(missing_ok=True)
    shards = [shard for split in SPLITS for shard in writers[split].shards]
    return shards, sum(writer.rewritten for writer in writers.values())


def _run_identity(source: str, manifest_options: dict[str, Any]) -> dict[str, Any]:
    """What makes two runs write the same dir: the source and the options that shape the output."""
    identity = {"source": source, **{key: value for key, value in manifest_options.items() if key != "workers"}}
    return json.loads(json.dumps(identity))  # as it reads back from run.json or manifest.json


def _check_out_dir(out_dir: Path, identity: dict[str, Any], overwrite: bool) -> None:
    """Refuse to write into a dir of another source or options, or a non-empty dir of other files."""
    if out_dir.exists() and not out_dir.is_dir():
        raise TextDirError(f"{out_dir}: exists and is not a directory; pass a directory for --out")
    if overwrite or not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    for record in (out_dir / MANIFEST, out_dir / WORK_DIR / RUN_FILE):
        found = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}
        if found.get("kind") == "text_shards":
            previous = _run_identity(found["source"], found["options"])
            break
    else:
        raise TextDirError(f"{out_dir}: not empty and not a text-shard dir (no {MANIFEST} or {WORK_DIR}/"
                           f"{RUN_FILE}); choose a new or empty --out, or pass --overwrite to write into it")
    differences = [f"{key} {previous.get(key)!r} (this run: {value!r})"
                   for key, value in identity.items() if previous.get(key) != value]
    if differences:
        raise TextDirError(f"{out_dir}: holds the text shards of another run ({'; '.join(differences)}); "
                           f"choose another --out, or pass --overwrite to replace them and their parsed inputs")


def _remove_leftovers(out_dir: Path, work: Path, keep_shards: set[str] | None = None, keep_keys: set[str] | None = None):
    """Temporary files of a killed run; with `keep_*`, also shards and work files no longer produced."""
    for directory in (out_dir, work):
        for path in directory.glob(".*.tmp"):
            path.unlink(missing_ok=True)
    if keep_shards is not None:
        for path in out_dir.iterdir():
            if SHARD_NAME.match(path.name) and path.name not in keep_shards:
                path.unlink()
    if keep_keys is not None:
        keep_names = {f"{key}{suffix}" for key in keep_keys for suffix in WORK_SUFFIXES} | {RUN_FILE}
        for path in work.iterdir():
            if path.is_file() and path.name not in keep_names:
                path.unlink()


def build_text_shards(source: str, reader: Reader, inputs: Sequence[Path], out_dir: str | os.PathLike,
                      options: ShardOptions = ShardOptions(),
                      reader_options: dict[str, Any] | None = None, overwrite: bool = False) -> dict[str, Any]:
    """Parse `inputs` (already expanded and ordered) with `reader` into text shards in `out_dir`;
    returns the manifest (also written to out_dir/manifest.json). `overwrite` lets the run replace a
    dir of another source or options (TextDirError otherwise)."""
    reader_options = dict(reader_options or {})
    out_dir = Path(out_dir)
    work = out_dir / WORK_DIR
    manifest_options = {**asdict(options), "reader": reader_options, "sentence_splitter": SPLITTER}
    _check_out_dir(out_dir, _run_identity(source, manifest_options), overwrite)
    work.mkdir(parents=True, exist_ok=True)
    run_record = json.loads(json.dumps({"kind": "text_shards", "source": source, "options": manifest_options}))
    if not (work / RUN_FILE).is_file() or json.loads((work / RUN_FILE).read_text(encoding="utf-8")) != run_record:
        atomic_write_json(work / RUN_FILE, run_record)
    (out_dir / MANIFEST).unlink(missing_ok=True)  # present only when the run is complete
    _remove_leftovers(out_dir, work)

    keys = [_work_key(path) for path in inputs]
    signatures = [_input_signature(path, reader_options) for path in inputs]
    summaries: list[dict[str, Any] | None] = [
        _load_summary(work, key, signature) for key, signature in zip(keys, signatures)
    ]
    reused = sum(summary is not None for summary in summaries)
    todo = [i for i, summary in enumerate(summaries) if summary is None]
    progress = tqdm(total=len(inputs), initial=reused, desc=f"parsing {source}", unit="file", disable=None)
    if options.workers > 1 and len(todo) > 1:
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(options.workers, len(todo)),
                                                    initializer=_end_with_parent) as pool:
            futures = {
                pool.submit(parse_input_to_work, reader, inputs[i], work, keys[i], signatures[i], reader_options): i
                for i in todo
            }
            for future in concurrent.futures.as_completed(futures):
                summaries[futures[future]] = future.result()
                progress.update()
    else:
        for i in todo:
            summaries[i] = parse_input_to_work(reader, inputs[i], work, keys[i], signatures[i], reader_options)
            progress.update()
    progress.close()

    totals = _Totals()
    shards, rewritten = _write_shards(out_dir, work, keys, options, totals)
    _remove_leftovers(out_dir, work, keep_shards={s["name"] for s in shards}, keep_keys=set(keys))
    kill_point("text_shards:shards-written")

    documents_read = sum(s["documents_read"] for s in summaries)
    skipped = Counter()
    problems = []
    for summary in summaries:
        skipped.update(summary["skipped"])
        problems.extend(summary["problems"])
    skipped.update(totals.skipped)
    manifest = {
        "kind": "text_shards",
        "source": source,
        "format": FORMAT_DESCRIPTION,
        "options": manifest_options,
        "inputs": [
            {**s["input"], "documents_read": s["documents_read"], "deletions_read": s["deletions_read"],
             "skipped": s["skipped"], "other": s["other"], "problems": len(s["problems"]), "failed": s["failed"]}
            for s in summaries
        ],
        "counts": {
            "inputs": len(inputs),
            "inputs_failed": sum(s["failed"] for s in summaries),
            "documents_read": documents_read,
            "documents_written": dict(totals.written),
            "documents_skipped": dict(sorted(skipped.items())),
            "deletions_read": sum(s["deletions_read"] for s in summaries),
            "deletions_applied": totals.deletions_applied,
            "sentences": dict(totals.sentences),
            "characters": dict(totals.characters),
            "problems": len(problems),
        },
        "problems": problems,
        "shards": shards,
        **environment_record(),
    }
    for counter in ("documents_written", "sentences", "characters"):
        manifest["counts"][counter] = {split: manifest["counts"][counter].get(split, 0) for split in SPLITS}
    written = sum(totals.written.values())
    if written + sum(skipped.values()) != documents_read:
        raise AssertionError(f"document accounting is off: read {documents_read}, written {written}, skipped {dict(skipped)}")
    atomic_write_json(out_dir / MANIFEST, manifest)
    logger.info("%s: reused %d of %d parsed inputs, rewrote %d of %d shards",
                source, reused, len(inputs), rewritten, len(shards))
    return manifest


def summary_line(manifest: dict[str, Any]) -> str:
    """The one-line account printed at the end of a parse command."""
    counts = manifest["counts"]
    written = counts["documents_written"]
    skipped = counts["documents_skipped"]
    reasons = ", ".join(f"{reason} {n}" for reason, n in skipped.items()) or "none"
    return (
        f"{manifest['source']}: {counts['inputs']} inputs ({counts['inputs_failed']} failed), "
        f"documents read {counts['documents_read']}, written {sum(written.values())} "
        f"(train {written['train']}, valid {written['valid']}), skipped {sum(skipped.values())} ({reasons}), "
        f"sentences {sum(counts['sentences'].values())}, problems {counts['problems']}, shards {len(manifest['shards'])}"
    )


def problems_report(manifest: dict[str, Any], out_dir: str | os.PathLike, max_listed: int = 20) -> str:
    """The problems of a run, for stderr: file and position of each (the first `max_listed`)."""
    problems, counts = manifest["problems"], manifest["counts"]
    lines = [f"{len(problems)} problem{'s' * (len(problems) != 1)} in {counts['inputs']} inputs "
             f"({counts['inputs_failed']} not read to their end), all listed in {Path(out_dir) / MANIFEST}:"]
    lines += [f"  {p['file']}: {p['position']}: {p['reason']}" for p in problems[:max_listed]]
    if len(problems) > max_listed:
        lines.append(f"  ... and {len(problems) - max_listed} more")
    return "\n".join(lines)


def finished_manifest(text_dir: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a text-shard dir whose parse finished; TextDirError saying how to finish it otherwise."""
    text_dir = Path(text_dir)
    path, run_path = text_dir / MANIFEST, text_dir / WORK_DIR / RUN_FILE
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if manifest is not None and manifest.get("kind") == "text_shards":
        return manifest
    command = (f"parse-{json.loads(run_path.read_text(encoding='utf-8'))['source']}" if run_path.is_file()
               else "parse-pubmed/parse-pmc/parse-mimic")
    if manifest is not None:
        raise TextDirError(f"{path}: not a text-shard manifest; pass a dir written by `bio-roberta {command}`")
    raise TextDirError(f"{text_dir}: no {MANIFEST}: the parse writing it did not finish (killed or still "
                       f"running); finish it by re-running the same `bio-roberta {command} ... --out {text_dir}` "
                       f"(parsed inputs are reused)")


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


# ---------------------------------------------------------------------------------------------
# Shared by the parse-pubmed / parse-pmc / parse-mimic commands


def add_shard_arguments(parser) -> None:
    """The command-line options common to every corpus parser."""
    defaults = ShardOptions()
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="input files or directories")
    parser.add_argument("--out", required=True, help="output directory for the text shards and manifest.json")
    parser.add_argument("--shard-size-mb", type=float, default=defaults.shard_size_mb,
                        help="close a shard before it exceeds this size")
    parser.add_argument("--valid-fraction", type=float, default=defaults.valid_fraction,
                        help="fraction of documents (by hash of their id) in the valid split")
    parser.add_argument("--no-dedup", action="store_true", help="keep exact-duplicate documents")
    parser.add_argument("--workers", type=int, default=defaults.workers, help="processes parsing inputs in parallel")
    parser.add_argument("--allow-partial", action="store_true",
                        help="exit 0 even when some inputs or records could not be read (a large crawl with a few "
                             "bad files); they are listed on stderr and in manifest.json either way, and without "
                             "this option the command exits 1")
    parser.add_argument("--overwrite", action="store_true",
                        help="write into an --out dir that holds text shards of another source or other options, "
                             "or other files (refused otherwise)")


def run_parse_command(args, parse: Callable[..., dict[str, Any]], **parse_options) -> int:
    """Run a corpus parser from parsed command-line arguments and print its one-line summary; any
    problem is listed on stderr and makes the exit status 1, unless --allow-partial."""
    from bio_roberta.cli import UsageError

    try:
        options = ShardOptions(shard_size_mb=args.shard_size_mb, valid_fraction=args.valid_fraction,
                               dedup=not args.no_dedup, workers=args.workers)
        manifest = parse(args.inputs, args.out, options, overwrite=args.overwrite, **parse_options)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(str(error)) from error
    if not manifest["inputs"]:
        raise UsageError(f"no input files found in {' '.join(args.inputs)}")
    print(summary_line(manifest))
    if not manifest["problems"]:
        return 0
    prefix = f"bio-roberta {args.command}: {'warning' if args.allow_partial else 'error'}: "
    print(prefix + problems_report(manifest, args.out), file=sys.stderr)
    if args.allow_partial:
        return 0
    print("The shards hold what could be read. Fix or replace those inputs and re-run (parsed inputs are "
          "reused), or re-run with --allow-partial to accept them.", file=sys.stderr)
    return 1
