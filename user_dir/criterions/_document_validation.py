"""Validation over documents, for a validation split converted with --long-inputs windows (shared
by the fine-tuning criteria; not registered: the leading underscore).

Such a split holds a document longer than the positions as overlapping windows, one example
each. Test scores documents, merged by bio_roberta_core.windows (each word from the window where
it has the most context, a text's class from its windows' pooled logits); validation does the
same, so that checkpoint_best, early stopping (--best-checkpoint-metric) and a run's valid_score
are over documents, as its test score is. The criterion learns where each validation example sits
in its document from {data}/{valid subset}.windows (and the pooling from manifest.json), logs each
window's outputs with that place, a meter (DocumentWindows) keeps them by document over the whole
validation set, and the metrics are derived from the documents whose windows are all in, with
the task's own scorers (bio_roberta_core.metrics) and under the names logged without windows;
``documents`` counts them. The loss stays per window, the quantity training minimises. A split
without a windows file validates as it always has, number for number.

Counts masked to the window that owns each word would not do: an entity whose words come from two
windows is an entity of neither window's predictions, and pooled logits are not a sum.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch
from fairseq import metrics
from fairseq.dataclass import FairseqDataclass
from fairseq.logging.meters import Meter
from omegaconf import II

from bio_roberta_core.windows import (
    POOLINGS,
    WINDOWS,
    document_rows,
    merge_word_windows,
    pool_logits,
    read_windows,
)
from user_dir.criterions._finetune_metrics import log_percentage

DOCUMENT_WINDOWS = "_document_windows"  # the meter's key (hidden: fairseq prints no "_" key)
DOCUMENTS = "documents"  # the number of documents scored, logged beside their metrics
# logging-output keys of a validation batch of a windowed split: each example's place
# (document, first word or token, count, windows of its document); its outputs, compact since
# data-parallel validation gathers them through fairseq's --all-gather-list-size bytes (tagging:
# the gold and the predicted label id of each word, as two bytes; classification: its logits as
# floats, then its target and whatever else scoring needs); the label of each id (tagging) or
# the pooling of a classification's windows
PLACES, OUTPUTS = "window_places", "window_outputs"
LABELS, POOLING = "window_labels", "window_pooling"


@dataclass
class DocumentValidationConfig(FairseqDataclass):
    """The criterion options validation over documents needs (no command-line option of its own:
    the subset is fairseq's --valid-subset)."""

    valid_subset: str = II("dataset.valid_subset")


class WindowedValidation:
    """The part of a criterion validated over documents where its validation split was converted
    with --long-inputs windows (self.windows: ValidationWindows.of, else None): each window's
    outputs are logged whole, so the logging outputs cannot be summed."""

    windows: Optional["ValidationWindows"]

    def logging_outputs_can_be_summed(self) -> bool:
        return self.windows is None


class ValidationWindows:
    """Where each example of the validation subset sits in its document, and how a document's
    windows' logits are pooled (the manifest's long_inputs.pooling; None for tagging)."""

    def __init__(self, path: Path, windows: list[tuple[int, int, int]], pooling: Optional[str]):
        self.path = path
        self.places = []
        for indices in document_rows(windows):
            self.places += [(*windows[index], len(indices)) for index in indices]
        self.pooling = pooling

    @classmethod
    def of(
        cls, data: str, valid_subset: str, pooled: bool = False
    ) -> Optional["ValidationWindows"]:
        """The windows of the validation subset of a finetune-bin/<task> dir (pooled: of a
        classification, whose manifest must say how its windows' logits are pooled); None where it
        has no {subset}.windows (truncated or cut into pieces: validation over examples)."""
        subsets = valid_subset.split(",")
        windowed = [subset for subset in subsets if (Path(data) / f"{subset}.windows").is_file()]
        if not windowed:
            return None
        if len(subsets) > 1:
            raise ValueError(
                f"{Path(data) / f'{windowed[0]}.windows'}: --valid-subset {valid_subset}: a split "
                "converted with --long-inputs windows is validated over documents, which needs "
                "one validation subset: pass one"
            )
        manifest = Path(data) / "manifest.json"
        try:
            long_inputs = json.loads(manifest.read_text()).get("long_inputs") or {}
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(
                f"{manifest}: not readable ({error}); a windowed split's pooling is recorded "
                "there: convert the task again"
            ) from None
        if long_inputs.get("route") != WINDOWS:
            raise ValueError(
                f"{manifest} records long inputs {long_inputs.get('route')!r}, yet "
                f"{valid_subset}.windows is there: convert the task again"
            )
        pooling = long_inputs.get("pooling")
        if pooled and pooling not in POOLINGS:
            raise ValueError(
                f"{manifest} records the pooling {pooling!r} of a classification's windows, not "
                f"one of {', '.join(POOLINGS)}: convert the task again"
            )
        return cls(
            Path(data) / f"{valid_subset}.windows", read_windows(data, valid_subset), pooling
        )

    def of_sample(self, sample) -> list[tuple[int, int, int, int]]:
        """The place of each example of a validation batch, in the order of sample["id"]."""
        ids = sample["id"].tolist()
        beyond = [i for i in ids if i >= len(self.places)]
        if beyond:
            raise ValueError(
                f"{self.path} has {len(self.places)} lines but validation reads example "
                f"{beyond[0]}: the file is not of the validation subset; convert the task again"
            )
        return [self.places[i] for i in ids]


def merged_words(windows: list[tuple[int, int]], outputs: list, labels: Sequence[str]) -> tuple:
    """A tagged document's (gold labels, predicted labels) per word from its windows' label ids,
    each word's from the window where it has the most context."""
    pairs = merge_word_windows(windows, [list(zip(*output)) for output in outputs])
    return [labels[gold] for gold, _ in pairs], [labels[predicted] for _, predicted in pairs]


def pooled_text(outputs: list, pooling: str) -> tuple:
    """A text's (logits pooled over its windows, then the rest of its first window's output)."""
    logits = [torch.tensor(output[0], dtype=torch.float32) for output in outputs]
    return (pool_logits(logits, pooling), *outputs[0][1:])


class DocumentWindows(Meter):
    """The validation windows' outputs by document, and the documents merged from those whose
    windows are all in: merged_words for tagging, pooled_text for a classification.

    Keyed by (document, first), so a window logged twice (fairseq's dummy batch) counts once.
    fairseq reads derived metrics after every validation batch as well as at the end: a batch
    holds few whole documents, the end all of them."""

    def __init__(self):
        self.labels: Optional[Sequence[str]] = None  # tagging: the label of each id
        self.pooling: Optional[str] = None  # classification: how windows' logits are pooled
        self.reset()

    def reset(self):
        self.windows: dict[int, dict[int, tuple[int, Any]]] = {}  # document -> first -> output
        self.expected: dict[int, int] = {}  # document -> its number of windows
        self._merged: Optional[list] = None

    def update(self, places, outputs, labels: Optional[Sequence[str]], pooling: Optional[str]):
        self.labels, self.pooling = labels, pooling
        for (document, first, count, windows), output in zip(places, outputs, strict=True):
            self.windows.setdefault(document, {})[first] = (count, output)
            self.expected[document] = windows
        self._merged = None

    def merged(self) -> list:
        """The merged output of each document whose windows are all in, in document order."""
        if self._merged is None:
            self._merged = []
            for document in sorted(self.windows):
                windows = self.windows[document]
                if len(windows) != self.expected[document]:
                    continue
                firsts = sorted(windows)
                outputs = [windows[first][1] for first in firsts]
                self._merged.append(
                    merged_words(
                        [(first, windows[first][0]) for first in firsts], outputs, self.labels
                    )
                    if self.labels is not None
                    else pooled_text(outputs, self.pooling)
                )
        return self._merged

    def state_dict(self):
        return {
            "windows": self.windows,
            "expected": self.expected,
            "labels": self.labels,
            "pooling": self.pooling,
        }

    def load_state_dict(self, state_dict):
        self.windows, self.expected = state_dict["windows"], state_dict["expected"]
        self.labels, self.pooling = state_dict["labels"], state_dict["pooling"]
        self._merged = None

    @property
    def smoothed_value(self) -> int:
        return len(self.merged())


def window_logging_output(
    windows: ValidationWindows, sample, outputs: Sequence, labels: Optional[Sequence[str]] = None
) -> dict:
    """The logging-output entries of a validation batch of a windowed split: each example's place
    and outputs. Tagging (labels: the label of each id): (gold ids, predicted ids) of each word
    of the window, checked to be one per word; classification: (logits, *what scoring needs)."""
    places = windows.of_sample(sample)
    if labels is not None and len(labels) > 256:
        raise ValueError(
            f"{windows.path}: {len(labels)} labels; validation over windows keeps a label id "
            "in a byte (at most 256 labels)"
        )
    compact = []
    for (document, first, count, _), output in zip(places, outputs, strict=True):
        if labels is None:
            compact.append((output[0].tolist(), *output[1:]))
            continue
        gold, predicted = output
        if len(gold) != count:
            raise ValueError(
                f"{windows.path}: the window of document {document} from word {first} holds "
                f"{count} words but its labels tag {len(gold)}: convert the task again"
            )
        compact.append((bytes(gold), bytes(predicted)))
    entries = {PLACES: places, OUTPUTS: compact, POOLING: windows.pooling}
    return {**entries, LABELS: tuple(labels)} if labels is not None else entries


def log_pooled_windows(
    windows: ValidationWindows,
    sample,
    logging_output: dict,
    logits: torch.Tensor,
    targets: list,
    per_window: Sequence[str],
) -> None:
    """In the logging output of a validation batch of a windowed classification split, replace the
    entries `per_window` (sentence_prediction's own, of windows: documents are scored instead) by
    each window's (logits, target), logged by document."""
    for key in per_window:
        del logging_output[key]
    outputs = list(zip(logits.detach().float().cpu(), targets))
    logging_output.update(window_logging_output(windows, sample, outputs))


def log_document_scores(
    logging_outputs, scores: dict[str, Callable[..., float]], decided: Callable[[list], tuple]
) -> bool:
    """Keep the windows' outputs of these logging outputs by document and log each
    score(*decided(the merged documents)), a fraction, as a percentage under its name, 0 with no
    document whole yet (a validation batch's own view) (True); or do nothing where they hold no
    windows (False: a split without windows)."""
    windowed = [log for log in logging_outputs if PLACES in log]
    if not windowed:
        return False
    for log in windowed:
        metrics.log_custom(
            DocumentWindows,
            DOCUMENT_WINDOWS,
            log[PLACES],
            log[OUTPUTS],
            log.get(LABELS),
            log[POOLING],
        )
    metrics.log_derived(DOCUMENTS, lambda meters: meters[DOCUMENT_WINDOWS].smoothed_value)

    def documents_score(meters, score) -> float:
        documents = meters[DOCUMENT_WINDOWS].merged()
        return score(*decided(documents)) if documents else 0.0

    for name, score in scores.items():
        log_percentage(name, lambda meters, score=score: documents_score(meters, score))
    return True
