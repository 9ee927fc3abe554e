"""report.csv and blurb.csv from the rows' dataclasses: a row class's fields are the CSV's columns,
so a column is added by adding a field, with no column list kept beside the rows.

A CSV's columns are the fields of its row classes in order, each name once (a summary row fills
the columns it shares with a task row and may add its own), then the reference columns: a field
declared with reference_columns holds a paper's numbers by column name, printed last as the
paper's columns beside ours. Scores are written x100 to 0.01: a field declared with
fraction_column holds a fraction (test scores are kept as fractions), any other float is x100
already."""

from __future__ import annotations

import csv
import dataclasses
import io
from typing import Any, Iterable

FRACTION = "fraction"
REFERENCE_COLUMNS = "reference_columns"


def fraction_column() -> Any:
    """A field holding a fraction (or None): its column shows it x100."""
    return dataclasses.field(metadata={FRACTION: True})


def reference_columns(columns: Iterable[str]) -> Any:
    """A field holding {column: value or None} over these columns, one CSV column each."""
    return dataclasses.field(metadata={REFERENCE_COLUMNS: tuple(columns)})


def own_and_reference_columns(row_classes: Iterable[type]) -> tuple[list[str], list[str]]:
    """The columns of rows of these classes: their own fields, and the reference columns, each in
    order of first appearance."""
    own: list[str] = []
    references: list[str] = []
    for row_class in row_classes:
        for column in dataclasses.fields(row_class):
            if REFERENCE_COLUMNS in column.metadata:
                references += [c for c in column.metadata[REFERENCE_COLUMNS] if c not in references]
            elif column.name not in own:
                own.append(column.name)
    return own, references


def csv_columns(row_classes: Iterable[type]) -> list[str]:
    """The columns of a CSV of rows of these classes: their own fields, then the reference
    columns."""
    own, references = own_and_reference_columns(row_classes)
    return own + references


def x100_cell(value: Any, fraction: bool) -> Any:
    """A score x100 to 0.01 (fraction: value is a fraction; any other float is x100 already);
    anything else as it is."""
    if fraction and value is not None:
        return round(100 * value, 2)
    return round(value, 2) if isinstance(value, float) else value


def own_and_reference_cells(row: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A row's cells by column (None: an empty cell): its own fields', and its reference
    columns'."""
    own, references = {}, {}
    for column in dataclasses.fields(row):
        value = getattr(row, column.name)
        if REFERENCE_COLUMNS in column.metadata:
            references.update({name: x100_cell(value[name], False) for name in value})
        else:
            own[column.name] = x100_cell(value, FRACTION in column.metadata)
    return own, references


def row_cells(row: Any) -> dict[str, Any]:
    """A row's cells by column (None: an empty cell)."""
    own, references = own_and_reference_cells(row)
    return {**own, **references}


def csv_text(row_classes: Iterable[type], rows: list[Any]) -> str:
    """The rows (instances of row_classes) as CSV, a header of their columns first; a row leaves
    the columns of fields it does not have empty."""
    columns = csv_columns(row_classes)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        cells = row_cells(row)
        writer.writerow([cells.get(column) for column in columns])
    return buffer.getvalue()


def long_csv_text(row_classes: Iterable[type], rows_by_model: dict[str, list[Any]]) -> str:
    """Several models' rows as one long CSV: a row per model and row, `model` first, then the
    rows' own columns, then `paper_model` and `paper`: the one reference column a model's rows
    hold (its paper model's number; empty when it has none)."""
    own, _ = own_and_reference_columns(row_classes)
    columns = ["model", *own, "paper_model", "paper"]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for model, rows in rows_by_model.items():
        for row in rows:
            cells, paper = own_and_reference_cells(row)
            if len(paper) > 1:
                raise ValueError(
                    f"{model}: a long CSV row holds one paper column, not {list(paper)}"
                )
            paper_model, score = next(iter(paper.items()), (None, None))
            cells = {**cells, "model": model, "paper_model": paper_model, "paper": score}
            writer.writerow([cells.get(column) for column in columns])
    return buffer.getvalue()
