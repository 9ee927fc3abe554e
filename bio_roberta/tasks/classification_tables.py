"""The prediction files of the classification kinds (SINGLE_LABELS, LABEL_SETS, SCORES): a table
of one row per example under CLASSIFICATION_COLUMNS, as bio_roberta/tasks/prediction_files.py
states them with the kinds that tag words."""

from __future__ import annotations

import abc
import csv
import math
from pathlib import Path
from typing import Any, Iterable

from bio_roberta.tasks.prediction_files import (
    PredictionFile,
    PredictionFileError,
    document_ids,
    unique_ids,
)
from bio_roberta_core.metrics import group_label_sets
from bio_roberta_core.provenance import atomic_write_text

CLASSIFICATION_COLUMNS = ("id", "group", "gold", "predicted")
MULTILABEL_SEPARATOR = ","


class ClassificationTable(PredictionFile, abc.ABC):
    """One row per example under CLASSIFICATION_COLUMNS; subclasses say what a cell holds."""

    suffix = "tsv"

    @abc.abstractmethod
    def cell(self, value) -> str:
        """A gold or predicted value as written in its column."""

    @staticmethod
    def head_logits(model, task, sample):
        """The sentence classification head's logits of a batch."""
        logits, _ = model(
            **sample["net_input"],
            features_only=True,
            classification_head_name=task.cfg.classification_head_name,
        )
        return logits

    def rows(self, model, task, sample):
        return self.decide(task, self.head_logits(model, task, sample), sample["target"])

    @abc.abstractmethod
    def decide(self, task, logits, target) -> Iterable[tuple[Any, Any]]:
        """(gold, predicted) of each example from the head's logits and the targets."""

    def by_id(self, data_dir, split, outputs, label_of):
        ids = document_ids(data_dir, split, len(outputs))
        values = (self.json_value(outputs[index][1], label_of) for index in range(len(ids)))
        return unique_ids(data_dir, split, zip((i for i, _group in ids), values))

    @abc.abstractmethod
    def json_value(self, predicted, label_of: dict) -> Any:
        """A predicted value (label symbols, or a number) as a submission file holds it."""

    def write(self, data_dir, split, outputs, output):
        ids = document_ids(data_dir, split, len(outputs))
        lines = ["\t".join(CLASSIFICATION_COLUMNS) + "\n"]
        for index, (example_id, group) in enumerate(ids):
            gold, predicted = outputs[index]
            lines.append(f"{example_id}\t{group}\t{self.cell(gold)}\t{self.cell(predicted)}\n")
        atomic_write_text(output, "".join(lines))
        return len(ids)

    @staticmethod
    def table_rows(path: Path) -> list[list[str]]:
        """The rows under the header, each checked to have every column."""
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if tuple(header or ()) != CLASSIFICATION_COLUMNS:
                raise PredictionFileError(
                    f"{path}:1: expected the header {'<TAB>'.join(CLASSIFICATION_COLUMNS)}"
                )
            rows = list(reader)
        columns = len(CLASSIFICATION_COLUMNS)
        for number, row in enumerate(rows, 2):
            if len(row) != columns:
                raise PredictionFileError(
                    f"{path}:{number}: expected {columns} columns, got {len(row)}"
                )
        return rows


class SingleLabels(ClassificationTable):
    """One label per example (sentence_prediction)."""

    def decide(self, task, logits, target):
        predicted = logits.argmax(-1)
        dictionary = task.label_dictionary
        return zip(
            _label_names(dictionary, target.view(-1).tolist()),
            _label_names(dictionary, predicted.tolist()),
        )

    def cell(self, value):
        return value

    def read(self, path):
        rows = self.table_rows(path)
        return [row[2] for row in rows], [row[3] for row in rows]

    def json_value(self, predicted, label_of):
        return label_of[predicted]

    def check_value(self, spec, example, value):
        if value not in spec.labels:
            return f"{value!r} is not one of {spec.name}'s labels ({', '.join(spec.labels)})"
        return None

    def scored(self, examples, values):
        return [example.labels[0] for example in examples], list(values)


class LabelSets(ClassificationTable):
    """Any number of labels per example (multilabel_classification), scored per group."""

    def decide(self, task, logits, target):
        names = task.label_names
        return (
            (
                {names[i] for i in gold.nonzero().flatten().tolist()},
                {names[i] for i in predicted.nonzero().flatten().tolist()},
            )
            for gold, predicted in zip(target, logits > 0)
        )

    def cell(self, value):
        return MULTILABEL_SEPARATOR.join(sorted(value))

    def read(self, path):
        rows = self.table_rows(path)
        groups = [row[1] for row in rows]

        def sets(column):
            return [set(filter(None, row[column].split(MULTILABEL_SEPARATOR))) for row in rows]

        return group_label_sets(groups, sets(2)), group_label_sets(groups, sets(3))

    def json_value(self, predicted, label_of):
        return sorted(label_of[symbol] for symbol in predicted)

    def check_value(self, spec, example, value):
        if not isinstance(value, list) or not all(isinstance(label, str) for label in value):
            return "expected a list of labels (possibly empty)"
        unknown = sorted(set(value) - set(spec.labels))
        if unknown:
            return f"{unknown} are not {spec.name}'s labels ({', '.join(spec.labels)})"
        return None

    def scored(self, examples, values):
        groups = [example.id if example.group is None else example.group for example in examples]
        return (
            group_label_sets(groups, [set(example.labels) for example in examples]),
            group_label_sets(groups, [set(value) for value in values]),
        )


class Scores(ClassificationTable):
    """A number per example (sentence_prediction with --regression-target)."""

    def decide(self, task, logits, target):
        return zip(target.view(-1).tolist(), logits.view(-1).tolist())

    def cell(self, value):
        # 9 significant digits: a float32 (the model's output) read back exactly
        return format(float(value), ".9g")

    def read(self, path):
        def number(text, line, column):
            try:
                return float(text)
            except ValueError:
                raise PredictionFileError(
                    f"{path}:{line}: {column} {text!r} is not a number"
                ) from None

        rows = self.table_rows(path)
        return (
            [number(row[2], line, "gold") for line, row in enumerate(rows, 2)],
            [number(row[3], line, "predicted") for line, row in enumerate(rows, 2)],
        )

    def json_value(self, predicted, label_of):
        return float(self.cell(predicted))  # the number the TSV holds, so both score alike

    def check_value(self, spec, example, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{value!r} is not a number"
        if not math.isfinite(value):
            return f"{value!r} is not a finite number"
        return None

    def scored(self, examples, values):
        return [float(example.labels[0]) for example in examples], [float(v) for v in values]


def _label_names(dictionary, class_ids) -> list[str]:
    return [dictionary[i + dictionary.nspecial] for i in class_ids]


SINGLE_LABELS, LABEL_SETS, SCORES = SingleLabels(), LabelSets(), Scores()
