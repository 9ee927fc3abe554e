"""Stage 1 of a parse: each input through its corpus reader and the sentence splitter into .work/.

Per input, .work/<key>.docs.txt holds each document's shard bytes, <key>.records.tsv one line per
record (WorkRecord) and <key>.json the input's summary, written last: an input whose summary
matches its size, mtime and the reader options is not parsed again (preprocess/text_shards.py).
Inputs are parsed in parallel, one process each; this is the expensive part of a parse (XML, CSV,
sentence splitting, fingerprints), the shard writer (shard_writer.py) only copies bytes.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Sequence

from tqdm import tqdm

from bio_roberta_core.processes import end_with_parent
from bio_roberta_core.provenance import atomic_write_json, file_record, naming_file
from preprocess.input_log import InputLog
from preprocess.sentences import (
    MAX_LINE_CHARACTERS,
    SPLITTER,
    bounded_lines,
    normalize_whitespace,
    split_sentences,
)
from preprocess.text_shards import Deletion, Reader

WORK_FORMAT = 3  # bump when the .work/ files change meaning: older ones are then re-parsed
WORK_SUFFIXES = (
    ".json",
    ".docs.txt",
    ".records.tsv",
)  # per input in .work/: summary (written last), texts, records
WRITE_BUFFER = 1 << 20


def text_fingerprint(sentences: Sequence[str]) -> bytes:
    """Hash of the normalised text used to find exact duplicates: sha256 of the sentences joined
    by spaces, whitespace collapsed, casefolded.

    Hashed sentence by sentence (the same bytes): normalising the joined text at once split a
    60 MB article into a list of all its words, 600 MB at the peak."""
    digest = hashlib.sha256()
    separator = b""
    for sentence in sentences:
        text = normalize_whitespace(sentence)
        if text:
            digest.update(separator + text.casefold().encode("utf-8"))
            separator = b" "
    return digest.digest()


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
        return cls(
            int(seq),
            kind,
            int(version),
            int(size),
            int(sentences),
            int(characters),
            fingerprint,
            doc_id,
        )


def work_key(path: Path) -> str:
    safe_name = re.sub(r"[^A-Za-z0-9._-]", "_", path.name)
    return f"{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}-{safe_name}"


def input_signature(path: Path, reader_options: dict[str, Any]) -> dict[str, Any]:
    stat = path.stat()
    return {
        "work_format": WORK_FORMAT,
        "path": str(path.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "reader_options": reader_options,
        "splitter": SPLITTER,
    }


def load_summary(work: Path, key: str, signature: dict[str, Any]) -> dict[str, Any] | None:
    summary_path = work / f"{key}.json"
    if not summary_path.exists():
        return None
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    complete = all((work / f"{key}{suffix}").exists() for suffix in WORK_SUFFIXES)
    return summary if complete and summary.get("signature") == signature else None


def temporary_path(path: Path) -> Path:
    """A temporary name beside `path`, private to this process (the next run removes a killed
    run's)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def parse_input_to_work(
    reader: Reader,
    path: Path,
    work: Path,
    key: str,
    signature: dict[str, Any],
    reader_options: dict[str, Any],
) -> dict[str, Any]:
    """Stream one input through its reader and the sentence splitter into .work/ files; the
    summary JSON is written last and marks the input as done."""
    log = InputLog(str(path))
    documents_yielded = empty = deletions = 0
    docs_path, records_path = work / f"{key}.docs.txt", work / f"{key}.records.tsv"
    with (
        naming_file(docs_path),
        open(temporary_path(docs_path), "wb", buffering=WRITE_BUFFER) as docs_out,
        open(
            temporary_path(records_path), "w", encoding="utf-8", buffering=WRITE_BUFFER
        ) as records_out,
    ):
        for seq, record in enumerate(reader(path, log, **reader_options)):
            if isinstance(record, Deletion):
                deletions += 1
                records_out.write(WorkRecord(seq, "D", 0, 0, 0, 0, "-", record.doc_id).line())
                continue
            documents_yielded += 1
            sentences = (
                []
                if record.skip_reason
                else [
                    sentence
                    for paragraph in record.paragraphs
                    for sentence in split_sentences(paragraph)
                ]
            )
            long_sentences = [s for s in sentences if len(s) > MAX_LINE_CHARACTERS]
            if long_sentences:  # one line each would be dropped by training: cut into several
                log.other["long_sentences_split"] += len(long_sentences)
                sentences = [line for s in sentences for line in bounded_lines(s)]
            if sentences:
                data = ("\n".join(sentences) + "\n\n").encode("utf-8")
                with naming_file(docs_path):  # where a full disk shows first
                    docs_out.write(data)
                records_out.write(
                    WorkRecord(
                        seq,
                        "A",
                        record.version,
                        len(data),
                        len(sentences),
                        sum(map(len, sentences)),
                        text_fingerprint(sentences).hex(),
                        record.doc_id,
                    ).line()
                )
            else:
                empty += 1
                log.skip(record.skip_reason or "empty_text")
                records_out.write(
                    WorkRecord(seq, "E", record.version, 0, 0, 0, "-", record.doc_id).line()
                )
        for handle, target in ((docs_out, docs_path), (records_out, records_path)):
            with naming_file(target):
                handle.flush()
                os.fsync(handle.fileno())
    os.replace(temporary_path(docs_path), docs_path)
    os.replace(temporary_path(records_path), records_path)
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


def work_records(work: Path, key: str) -> Iterator[WorkRecord]:
    """The records of one parsed input, in its order."""
    with open(work / f"{key}.records.tsv", encoding="utf-8", newline="\n") as records:
        yield from map(WorkRecord.parse, records)


def parse_inputs(
    source: str,
    reader: Reader,
    inputs: Sequence[Path],
    work: Path,
    reader_options: dict[str, Any],
    workers: int,
) -> tuple[list[str], list[dict[str, Any]], int]:
    """(work key, summary) of every input, parsing those whose .work/ files are missing or stale, in
    `workers` processes; and how many were reused."""
    keys = [work_key(path) for path in inputs]
    signatures = [input_signature(path, reader_options) for path in inputs]
    summaries: list[dict[str, Any] | None] = [
        load_summary(work, key, signature) for key, signature in zip(keys, signatures)
    ]
    reused = sum(summary is not None for summary in summaries)
    todo = [i for i, summary in enumerate(summaries) if summary is None]
    progress = tqdm(
        total=len(inputs), initial=reused, desc=f"parsing {source}", unit="file", disable=None
    )
    if workers > 1 and len(todo) > 1:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(workers, len(todo)), initializer=end_with_parent
        ) as pool:
            futures = {
                pool.submit(
                    parse_input_to_work,
                    reader,
                    inputs[i],
                    work,
                    keys[i],
                    signatures[i],
                    reader_options,
                ): i
                for i in todo
            }
            try:
                for future in concurrent.futures.as_completed(futures):
                    summaries[futures[future]] = future.result()
                    progress.update()
            except BaseException:  # e.g. disk full: parse no further input
                pool.shutdown(cancel_futures=True)
                raise
    else:
        for i in todo:
            summaries[i] = parse_input_to_work(
                reader, inputs[i], work, keys[i], signatures[i], reader_options
            )
            progress.update()
    progress.close()
    return keys, summaries, reused
