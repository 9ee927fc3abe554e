"""The inputs of `bio-roberta predict`: plain text (one example a line), JSON lines, or a task
dir in the task's own file layout; each named for errors and keyed in the output records
({"line": n} or {"id": release id})."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from bio_roberta.prediction.finetuned_files import PredictError
from bio_roberta.prediction.predictor import Input
from bio_roberta.readers.source_files import json_object


@dataclass
class InputFile:
    """The inputs read from one file or task dir: what each is called in errors, its key in the
    output record ({"line": n} or {"id": release id}) and the input itself."""

    names: list[str]
    keys: list[dict]
    inputs: list[Input]


def read_inputs(
    path: Path,
    spec,
    layout: str = "auto",
    text_field: str = "text",
    text_pair_field: str = "text_pair",
    split: str = "test",
) -> InputFile:
    """Inputs of `bio-roberta predict`: plain text (one example a line, every line kept),
    JSON lines (text_field, text_pair_field), or a task dir in the task's own file layout (read
    by bio_roberta.readers, the split's examples)."""
    path = Path(path)
    if not path.exists():
        raise PredictError(f"{path} does not exist")
    if layout == "auto":
        layout = (
            "task" if path.is_dir() else "jsonl" if path.suffix in (".jsonl", ".json") else "text"
        )
    if layout == "task":
        return read_task_inputs(path, spec, split)
    from bio_roberta_core.text_files import utf8_lines

    inputs = InputFile([], [], [])
    for number, line in utf8_lines(path, PredictError):
        inputs.names.append(f"{path}:{number}")
        inputs.keys.append({"line": number})
        if layout == "text":
            inputs.inputs.append(line)
            continue
        inputs.inputs.append(json_input(path, number, line, text_field, text_pair_field))
    return inputs


def json_input(path: Path, number: int, line: str, text_field: str, text_pair_field: str) -> dict:
    record = json_object(line, f"{path}:{number}", "one object a line", PredictError)
    if not isinstance(record.get(text_field), str):
        raise PredictError(
            f'{path}:{number}: no text field "{text_field}" (a string); name it with --text-field'
        )
    item = {"text": record[text_field]}
    if record.get(text_pair_field) is not None:
        item["text_pair"] = record[text_pair_field]
    return item


def read_task_inputs(path: Path, spec, split: str) -> InputFile:
    from bio_roberta.readers import read_task
    from bio_roberta.readers.source_files import TaggedSentence

    examples = read_task(spec, path).splits[split].examples
    inputs = InputFile([], [], [])
    for example in examples:
        inputs.names.append(f"{path} {split} example {example.id}")
        inputs.keys.append({"id": example.id})
        if isinstance(example, TaggedSentence):
            inputs.inputs.append({"words": list(example.words)})
        else:
            item = {"text": example.text}
            if example.text_pair is not None:
                item["text_pair"] = example.text_pair
            inputs.inputs.append(item)
    return inputs


def count_records(records: Sequence[dict]) -> Counter:
    """What a prediction run made: inputs, and those truncated, split into pieces or run as
    windows."""
    counts = Counter(inputs=len(records))
    counts["truncated"] = sum(1 for r in records if r.get("truncated"))
    counts["split_into_pieces"] = sum(1 for r in records if r.get("pieces", 1) > 1)
    counts["windowed"] = sum(1 for r in records if r.get("windows", 1) > 1)
    return counts
