"""MedNLI's JSON lines.

Layout: mli_train_v1.jsonl, mli_dev_v1.jsonl, mli_test_v1.jsonl in data_dir; one object a line
with sentence1, sentence2, gold_label (and pairID, the example's id when present).
"""

from __future__ import annotations

from pathlib import Path

from bio_roberta.readers.source_files import (
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    json_line_objects,
    read_split_files,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "`mli_train_v1.jsonl`, `mli_dev_v1.jsonl`, `mli_test_v1.jsonl`: `sentence1`, `sentence2`, "
    "`gold_label`"
)

FILES = {
    "train": "mli_train_v1.jsonl",
    "valid": "mli_dev_v1.jsonl",
    "test": "mli_test_v1.jsonl",
}


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    expected = "one MedNLI object (sentence1, sentence2, gold_label) a line"
    for number, where, record in json_line_objects(path, split, expected):
        for key in ("sentence1", "sentence2", "gold_label"):
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise TaskFormatError(f"{where}: field {key!r} missing or empty")
        split.add(
            TextExample(
                str(record.get("pairID", f"{path.name}:{number}")),
                record["sentence1"],
                (check_label(spec, record["gold_label"], where),),
                text_pair=record["sentence2"],
            )
        )


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read MedNLI.

    Args:
        spec: the registry entry; its labels are the gold labels allowed.
        data_dir: the folder holding the three .jsonl files.

    Returns:
        train / valid / test Splits of sentence-pair TextExamples; blank lines counted, skipped.

    Raises:
        TaskFormatError: a file missing, a line not a JSON object, a field missing or empty, an
            unknown label.
    """
    return read_split_files(spec, data_dir, FILES, "MedNLI JSON lines", _read_file)
