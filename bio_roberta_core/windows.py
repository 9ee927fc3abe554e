"""The rule that merges a document's overlapping windows back into the document (convert-task
--long-inputs windows, bio_roberta/tasks/truncation.py): each word from the window where it has
the most context, a text's outputs from its windows' logits pooled (mean or max); and the
{split}.windows file that says which window belongs to which document.

One definition, read by everything that scores or decodes windows: the prediction files and
`predict` (bio_roberta/finetuning, bio_roberta/prediction/predictor.py) and the fine-tuning
criteria's validation, which picks checkpoint_best (user_dir/criterions/_document_validation.py), so
a run's dev score is computed over documents exactly as its test score is.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Sequence, TypeVar

from bio_roberta_core.errors import BioRobertaError

WINDOWS = "windows"  # the long-inputs route (a manifest's long_inputs.route) these files serve
POOLINGS = ("mean", "max")
Value = TypeVar("Value")


class WindowsFileError(BioRobertaError):
    """A {split}.windows file that is not as convert-task writes it (names the file and line)."""


def read_windows(
    data_dir: str | Path, split: str, rows: Optional[int] = None
) -> Optional[list[tuple[int, int, int]]]:
    """(document, first word or token, count) of each example of a split converted with
    --long-inputs windows ({split}.windows), checked to be `rows` when given; None for a split
    without windows."""
    path = Path(data_dir) / f"{split}.windows"
    if not path.is_file():
        return None
    windows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3 or not all(field.isdigit() for field in fields):
                raise WindowsFileError(
                    f"{path}:{number}: expected '<document><TAB><first><TAB><count>' "
                    "(convert-task writes it); convert the task again"
                )
            windows.append(tuple(map(int, fields)))
    if rows is not None and len(windows) != rows:
        raise WindowsFileError(
            f"{path} has {len(windows)} lines but the split holds {rows} examples"
        )
    return windows


def document_rows(windows: Sequence[tuple[int, int, int]]) -> list[list[int]]:
    """The example indices of each document, in order (a document's windows are consecutive; a
    source example without words has none)."""
    documents: list[list[int]] = []
    previous = -1
    for index, (document, _first, _count) in enumerate(windows):
        if document < previous:
            raise WindowsFileError(
                f"example {index} is of document {document} after document {previous}: a "
                "windows file's documents run in order"
            )
        if document > previous:
            documents.append([])
        documents[-1].append(index)
        previous = document
    return documents


def best_window_of_words(windows: Sequence[tuple[int, int]], words: int) -> list[int]:
    """The window each word of a document is predicted from: of the windows (first word, word
    count) that hold it, the one where it has the most context, i.e. where the smaller of its
    distances (in words) to the window's two edges is largest, an edge that is the document's own
    counting as full context; a tie goes to the earlier window. ValueError for a word that no
    window holds (a mapping that does not cover the document)."""
    chosen: list[Optional[int]] = [None] * words
    best = [-1.0] * words
    for index, (first, count) in enumerate(windows):
        last = first + count - 1
        for word in range(first, min(first + count, words)):
            left = word - first if first > 0 else math.inf
            right = last - word if last < words - 1 else math.inf
            context = min(left, right)
            if context > best[word]:
                chosen[word], best[word] = index, context
    missing = [word for word, window in enumerate(chosen) if window is None]
    if missing:
        raise ValueError(f"word {missing[0]} of {words} is in no window")
    return chosen  # type: ignore[return-value]


def merge_word_windows(
    windows: Sequence[tuple[int, int]],
    values: Sequence[Sequence[Value]],
    words: Optional[int] = None,
) -> list[Value]:
    """A document's per-word values (tags, element sets, rows of a file) from its windows' (in
    the order of `windows`, (first word, word count) each, values[i] the i-th window's per word):
    each word's from the window best_window_of_words picks. words: the document's (default: up to
    its last window's end). ValueError for a word in no window or a window whose values are not
    one per word."""
    for (first, count), window_values in zip(windows, values):
        if len(window_values) != count:
            raise ValueError(
                f"the window of words {first}-{first + count - 1} has {len(window_values)} "
                f"values for its {count} words"
            )
    if words is None:
        words = max(first + count for first, count in windows)
    return [
        values[window][word - windows[window][0]]
        for word, window in enumerate(best_window_of_words(windows, words))
    ]


def pool_logits(logits: Sequence, pooling: str):
    """One example's logits from its windows' (tensors of one shape): their mean or elementwise
    max."""
    import torch

    stacked = torch.stack(list(logits))
    if pooling == "mean":
        return stacked.mean(0)
    if pooling == "max":
        return stacked.max(0).values
    raise ValueError(f"pooling {pooling!r} is not one of {', '.join(POOLINGS)}")
