"""BioBERT's relation extraction folds (GAD, EU-ADR), one cross-validation fold at a time.

Layout: <fold>/train.tsv with `sentence label` rows and no header, <fold>/test.tsv with the
``index sentence label`` header (BLUE's rows). The folds have no dev split: a train row goes to
valid when the sha256 of its sentence falls in 1 of VALID_ONE_IN (the fold's test must not pick
checkpoints; hashing the sentence keeps duplicated sentences on one side of the line).
"""

from __future__ import annotations

from pathlib import Path

from bio_roberta.readers.formats.blue_tsv import read_indexed_tsv
from bio_roberta.readers.source_files import (
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    in_valid_slice,
    numbered_lines,
    require_file,
    tab_columns,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "`1/` ... `10/`, each with `train.tsv` (`sentence<TAB>label`, no header) and `test.tsv` "
    "(header `index sentence label`); valid is 1 in 10 train rows by the hash of their sentence"
)

VALID_ONE_IN = 10


def read(spec: TaskSpec, fold_dir: Path) -> dict[str, Split]:
    """Read one fold of a BioBERT RE task.

    Args:
        spec: the registry entry; its labels are the labels allowed.
        fold_dir: the fold's folder (<data dir>/<fold number>).

    Returns:
        train / valid / test Splits of TextExample; train ids "train.tsv:<line>", test ids the
        rows' index.

    Raises:
        TaskFormatError: the fold or a file missing, a row not as above, an unknown label.
    """
    if not fold_dir.is_dir():
        raise TaskFormatError(
            f"{fold_dir}: fold missing; {spec.name} needs folds 1..{spec.folds} as "
            f"subfolders of {fold_dir.parent}"
        )
    train_path = require_file(
        fold_dir / "train.tsv", f"{spec.name} fold train file, sentence<TAB>label"
    )
    derivation = (
        f"train.tsv rows whose sentence's sha256 is 0 mod {VALID_ONE_IN} "
        "(the folds have no dev split; the fold's test is never used for selection)"
    )
    train = Split("train", sources=[train_path], derivation="train.tsv minus valid")
    valid = Split("valid", sources=[train_path], derivation=derivation)
    for number, line in numbered_lines(train_path):
        train.counts["lines"] += 1
        where = f"{train_path}:{number}"
        sentence, label = tab_columns(line, 2, where, "sentence, label; train.tsv has no header")
        if not sentence.strip():
            raise TaskFormatError(f"{where}: empty sentence")
        example = TextExample(f"train.tsv:{number}", sentence, (check_label(spec, label, where),))
        (valid if in_valid_slice(sentence, VALID_ONE_IN) else train).add(example)
    test_path = require_file(
        fold_dir / "test.tsv", f"{spec.name} fold test file, index/sentence/label"
    )
    test = Split("test", sources=[test_path], derivation="test.tsv")
    read_indexed_tsv(spec, test_path, test)
    return {"train": train, "valid": valid, "test": test}
