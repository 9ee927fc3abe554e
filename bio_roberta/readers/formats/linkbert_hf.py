"""LinkBERT's preprocessed BLURB release (the layout its scripts/preprocess_blurb.py writes): all 13
BLURB datasets as JSON lines, one example a line, in ``<kind>/<name>_hf/{train,dev,test}.json``.

tokcls (NER, EBM-PICO): {"tokens": [...], "ner_tags": [...], "id": "<n>"}, one tag per token.
seqcls (the others): {"sentence": ...} or {"sentence1": ..., "sentence2": ...}, "label", "id";
label is the class name (ChemProt CPR:3.., DDI DDI-mechanism.., GAD 0/1, PubMedQA/BioASQ
yes/no/maybe), a number (BIOSSES), or for HoC the ten 0/1 hallmark flags in BLUE's class id order
(or BLUE's "0_0,1_1,..." text); a HoC id "<PMID>_s<n>" names its abstract.

A task whose registry entry lists this format in ``other_formats`` reads it when ``detect`` finds
it in --data (bio_roberta.readers.read_task).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from bio_roberta.readers.formats.blue_hoc import INDEX, hoc_labels
from bio_roberta.readers.source_files import (
    Split,
    TaggedSentence,
    TaskFormatError,
    TextExample,
    check_label,
    json_line_objects,
    nonempty_text,
    numbered_lines,
    read_split_files,
)
from bio_roberta.tasks.kinds import MULTILABEL
from bio_roberta.tasks.registry import TaskSpec

FILES = {"train": "train.json", "valid": "dev.json", "test": "test.json"}
TOKCLS_KEYS = ("tokens", "ner_tags", "id")
SEQCLS_KEYS = ("sentence", "sentence1", "label", "id")
LAYOUT = (
    "LinkBERT's BLURB release: `train.json`, `dev.json`, `test.json` JSON lines, "
    "`tokens`/`ner_tags`/`id` (tokcls/<name>_hf) or `sentence` or `sentence1`/`sentence2`, "
    "`label`, `id` (seqcls/<name>_hf)"
)


def _first_record_keys(path: Path) -> set[str]:
    """The keys of the first JSON object of path (a cheap look, not a parse of the file)."""
    for _number, line in numbered_lines(path):
        if line.strip():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                return set()
            return set(record) if isinstance(record, dict) else set()
    return set()


def detect(data_dir: Path) -> bool:
    """Whether data_dir holds this layout: the three files, the first record with LinkBERT's keys
    (BLURB's older BioASQ JSON lines share the file names, not the keys)."""
    if not all((data_dir / name).is_file() for name in FILES.values()):
        return False
    keys = _first_record_keys(data_dir / FILES["train"])
    return {"tokens", "ner_tags"} <= keys or (
        "label" in keys and bool(keys & {"sentence", "sentence1"})
    )


def _record_id(record: dict, where: str, seen: dict, number: int) -> str:
    value = record.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    value = nonempty_text({"id": value}, "id", where)
    if value in seen:
        raise TaskFormatError(f"{where}: id {value!r} already on line {seen[value]}")
    seen[value] = number
    return value


def _tokens_and_tags(spec: TaskSpec, record: dict, where: str) -> tuple[tuple, tuple]:
    tokens, tags = record.get("tokens"), record.get("ner_tags")
    for key, value in (("tokens", tokens), ("ner_tags", tags)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskFormatError(f"{where}: field {key!r} missing or not a list of strings")
    if len(tokens) != len(tags):
        raise TaskFormatError(f"{where}: {len(tokens)} tokens but {len(tags)} ner_tags")
    if not tokens or not all(token.strip() for token in tokens):
        raise TaskFormatError(f"{where}: no tokens, or an empty token")
    return tuple(tokens), tuple(check_label(spec, tag, where) for tag in tags)


def _labels(spec: TaskSpec, label, where: str) -> tuple[str, ...]:
    if spec.kind == MULTILABEL:
        if isinstance(label, str):
            return hoc_labels(spec, label, where)
        if (
            not isinstance(label, list)
            or len(label) != len(spec.labels)
            or any(flag not in (0, 1) or isinstance(flag, float) for flag in label)
        ):
            raise TaskFormatError(
                f"{where}: label must list {len(spec.labels)} 0/1 flags (one per hallmark, "
                f"BLUE's class id order), found {label!r}"
            )
        return tuple(name for name, flag in zip(spec.labels, label) if flag)
    if not spec.labels:  # a score (BIOSSES)
        if (
            isinstance(label, bool)
            or not isinstance(label, (int, float))
            or not math.isfinite(label)
        ):
            raise TaskFormatError(f"{where}: label must be a number (a similarity score)")
        return (str(label),)
    if isinstance(label, int) and not isinstance(label, bool):
        label = str(label)
    if not isinstance(label, str):
        raise TaskFormatError(f"{where}: label {label!r} is not a class name")
    return (check_label(spec, label, where),)


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    seen: dict[str, int] = {}
    tokcls = spec.is_sequence_labelling
    expected = "one {%s} object a line" % ", ".join(TOKCLS_KEYS if tokcls else SEQCLS_KEYS)
    abstracts = set()
    for number, where, record in json_line_objects(path, split, expected):
        example_id = _record_id(record, where, seen, number)
        if tokcls:
            words, tags = _tokens_and_tags(spec, record, where)
            split.add(TaggedSentence(example_id, words, tags))
            continue
        if "label" not in record:
            raise TaskFormatError(f"{where}: field 'label' missing; expected {expected}")
        labels = _labels(spec, record["label"], where)
        if "sentence1" in record:
            text = nonempty_text(record, "sentence1", where)
            pair = nonempty_text(record, "sentence2", where)
        else:
            text, pair = nonempty_text(record, "sentence", where), None
        group = None
        if spec.kind == MULTILABEL:
            match = INDEX.match(example_id)
            group = match.group(1) if match else example_id
            abstracts.add(group)
        split.add(TextExample(example_id, text, labels, text_pair=pair, group=group))
    if spec.kind == MULTILABEL:
        split.counts["abstracts"] = len(abstracts)


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read one dataset of LinkBERT's BLURB release.

    Args:
        spec: the registry entry; its kind says tokcls (tags words) or seqcls, its labels the
            tags or classes allowed.
        data_dir: the dataset's folder, e.g. data/seqcls/chemprot_hf.

    Returns:
        train / valid / test Splits (dev.json is valid) of TaggedSentence or TextExample, id the
        record's id; HoC: group = the abstract, counts["abstracts"].

    Raises:
        TaskFormatError: a file missing, a line not one JSON object with the fields above, an id
            used twice, tokens and tags of different lengths, an unknown label.
    """
    return read_split_files(spec, data_dir, FILES, "LinkBERT BLURB JSON lines", _read_file)
