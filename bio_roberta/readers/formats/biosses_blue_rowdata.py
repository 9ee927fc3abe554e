"""BIOSSES (sentence similarity) with BLURB's 64/16/20 split, from BLUE's rowdata files.

Layout: train.tsv, dev.tsv, test.tsv in data_dir (blue_plus/rowdata/biosses, 70/16/14 pairs): a
pandas index column, then BIOSSES_HEADER; the three files hold the 100 pairs.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Iterator

from bio_roberta.readers.blurb_ids import blurb_id_lists
from bio_roberta.readers.source_files import (
    SPLITS,
    BlurbSplit,
    Split,
    TaskFormatError,
    TextExample,
    numbered_lines,
    require_file,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "BLUE's rowdata `train.tsv`, `dev.tsv`, `test.tsv` (all 100 pairs); placed in BLURB's "
    "64/16/20 by pair number (`old_index` + 1)"
)

BIOSSES_FILES = ("train.tsv", "dev.tsv", "test.tsv")
BIOSSES_HEADER = [
    "",
    "genre",
    "filename",
    "year",
    "old_index",
    "source1",
    "source2",
    "sentence1",
    "sentence2",
    "score",
]
BIOSSES_PAIRS = 100
BIOSSES_MAX_SCORE = 4.0
# BLURB's split as BIOSSES pair numbers 1-100 (old_index + 1 in BLUE's files), "extracted from
# BLUE" in BLURB's data_generation/preprocessor.py (bio_roberta/readers/blurb_ids/biosses.json
# says where).
BIOSSES_BLURB_SPLIT = {
    name: tuple(int(number) for number in numbers)
    for name, numbers in blurb_id_lists("biosses").items()
}


def _biosses_sentence(text: str, where: str) -> str:
    """A sentence as BLURB writes it: TABs and line breaks inside it become spaces."""
    cleaned = text.replace("\t", " ").replace("\n", " ").strip()
    if not cleaned:
        raise TaskFormatError(f"{where}: empty sentence")
    return cleaned


def _biosses_rows(path: Path) -> Iterator[tuple[int, TextExample, int]]:
    """(pair number, example, sentences whose whitespace was normalised) of each row of one
    BLUE rowdata file."""
    rows = csv.reader((line for _, line in numbered_lines(path)), delimiter="\t")
    for row in rows:
        where = f"{path}:{rows.line_num}"
        if rows.line_num == 1:
            if row != BIOSSES_HEADER:
                raise TaskFormatError(
                    f"{where}: expected BLUE's BIOSSES header "
                    f"{' '.join(BIOSSES_HEADER[1:])!r} after an index column"
                )
            continue
        if len(row) != len(BIOSSES_HEADER):
            raise TaskFormatError(
                f"{where}: expected {len(BIOSSES_HEADER)} TAB-separated columns "
                f"(index, {', '.join(BIOSSES_HEADER[1:])}), found {len(row)}"
            )
        fields = dict(zip(BIOSSES_HEADER, row))
        old_index = fields["old_index"]
        if not re.fullmatch(r"\d+", old_index) or int(old_index) >= BIOSSES_PAIRS:
            raise TaskFormatError(
                f"{where}: old_index {fields['old_index']!r} is not a pair index "
                f"0-{BIOSSES_PAIRS - 1}"
            )
        try:
            score = float(fields["score"])
        except ValueError:
            score = math.nan
        if not 0.0 <= score <= BIOSSES_MAX_SCORE:
            raise TaskFormatError(f"{where}: score {fields['score']!r} is not a number in 0-4")
        first = _biosses_sentence(fields["sentence1"], where)
        second = _biosses_sentence(fields["sentence2"], where)
        normalised = (first != fields["sentence1"]) + (second != fields["sentence2"])
        example = TextExample(
            str(int(fields["old_index"]) + 1), first, (fields["score"].strip(),), text_pair=second
        )
        yield int(example.id), example, normalised


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """BIOSSES with BLURB's 64/16/20 split, from BLUE's rowdata train/dev/test.tsv (70/16/14).

    The three files together hold the 100 pairs; each pair's old_index is its position in the
    original release, so pair number old_index + 1 places it in BLURB's split (BLURB writes BLUE's
    split as these numbers). A TextExample's id is the pair number, its label the gold score as
    its text in the file (the mean of the five annotators' 0-4 scores).

    Args:
        spec: the registry entry (BIOSSES, a regression task).
        data_dir: the folder holding BIOSSES_FILES.

    Returns:
        train / valid / test Splits of sentence-pair TextExamples, BLURB's pair numbers.

    Raises:
        TaskFormatError: a file missing, a header or row not as above, a pair in two files or in
            none, a score outside 0-4.
    """
    paths = [require_file(data_dir / name, "BLUE's BIOSSES rowdata tsv") for name in BIOSSES_FILES]
    pairs, origin, normalised = {}, {}, {}
    for path in paths:
        for number, example, changed in _biosses_rows(path):
            if number in pairs:
                raise TaskFormatError(
                    f"{path}: pair {number} (old_index {number - 1}) also in {origin[number]}"
                )
            pairs[number], origin[number], normalised[number] = example, path, changed
    missing = sorted(set(range(1, BIOSSES_PAIRS + 1)) - set(pairs))
    if missing:
        raise TaskFormatError(
            f"{data_dir}: pairs {missing} (old_index + 1) are in none of "
            f"{', '.join(BIOSSES_FILES)}; BLURB's split needs all "
            f"{BIOSSES_PAIRS}"
        )
    splits = {}
    for name in SPLITS:
        split = Split(
            name,
            sources=paths,
            derivation=(
                "BLURB's pair numbers (BLUE's split) over BLUE's rowdata train/dev/test.tsv"
            ),
            blurb=BlurbSplit(
                placed_by="BLURB's pair numbers (bio_roberta/readers/blurb_ids/biosses.json)"
            ),
        )
        for number in BIOSSES_BLURB_SPLIT[name]:
            split.add(pairs[number])
            split.counts[f"from_{origin[number].name}"] += 1
            split.counts["sentences_whitespace_normalised"] += normalised[number]
        splits[name] = split
    return splits
