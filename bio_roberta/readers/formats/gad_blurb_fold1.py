"""GAD's single BLURB split, from BioBERT's 10 folds (BLURB's preprocess_GAD_corpus).

Layout: data_dir holds BioBERT's GAD folds; fold 1 only is read: 1/train.tsv (`sentence label`
rows, no header) and 1/test.tsv (BLUE's ``index sentence label`` rows).
"""

from __future__ import annotations

from pathlib import Path

from bio_roberta.readers.formats.blue_tsv import read_indexed_tsv
from bio_roberta.readers.source_files import (
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    numbered_lines,
    require_file,
    tab_columns,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "BioBERT's GAD `1/train.tsv` (rows 1-4,261 train, the other 535 dev) and `1/test.tsv` "
    "(534): BLURB's single split, 128 positions, no folds"
)

GAD_BLURB_FOLD = "1"
GAD_BLURB_TRAIN_ROWS = 4261


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """GAD's single BLURB split from BioBERT's 10 folds (BLURB's preprocess_GAD_corpus).

    Fold 1 only: train = rows 1-4261 of 1/train.tsv, dev = its remaining rows (535), test =
    1/test.tsv (534). Table 3 prints the dev and test sizes the other way round.

    Args:
        spec: the registry entry; its labels are GAD's.
        data_dir: the folder holding BioBERT's GAD folds (1/ at least).

    Returns:
        train / valid / test Splits of TextExample.

    Raises:
        TaskFormatError: a file missing, a row not as above, an unknown label, a train.tsv too
            short to be BioBERT's fold 1.
    """
    fold_dir = data_dir / GAD_BLURB_FOLD
    train_path = require_file(
        fold_dir / "train.tsv", "BioBERT GAD fold 1 train.tsv, sentence<TAB>label"
    )
    train = Split(
        "train", sources=[train_path], derivation=f"1/train.tsv rows 1-{GAD_BLURB_TRAIN_ROWS}"
    )
    valid = Split(
        "valid", sources=[train_path], derivation=f"1/train.tsv rows after {GAD_BLURB_TRAIN_ROWS}"
    )
    for number, line in numbered_lines(train_path):
        split = train if number <= GAD_BLURB_TRAIN_ROWS else valid
        split.counts["lines"] += 1
        where = f"{train_path}:{number}"
        sentence, label = tab_columns(line, 2, where, "sentence, label; train.tsv has no header")
        if not sentence.strip():
            raise TaskFormatError(f"{where}: empty sentence")
        split.add(TextExample(f"train.tsv:{number}", sentence, (check_label(spec, label, where),)))
    if not valid.examples:
        raise TaskFormatError(
            f"{train_path}: {train.counts['lines']} rows; BLURB's split takes "
            f"rows 1-{GAD_BLURB_TRAIN_ROWS} for train and the rest for dev: this "
            "is not BioBERT's GAD fold 1"
        )
    test_path = require_file(
        fold_dir / "test.tsv", "BioBERT GAD fold 1 test.tsv, index/sentence/label"
    )
    test = Split("test", sources=[test_path], derivation="1/test.tsv")
    read_indexed_tsv(spec, test_path, test)
    return {"train": train, "valid": valid, "test": test}
