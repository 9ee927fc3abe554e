"""LinkBERT's preprocessed BLURB release (the layout its scripts/preprocess_blurb.py writes,
michiyasunaga/LinkBERT at 210bc47): all 13 BLURB datasets as JSON lines, one example a line, in
``<kind>/<name>_hf/{train,dev,test}.json``.

tokcls (NER, EBM-PICO): {"tokens": [...], "ner_tags": [...], "id": "<n>"}, one tag per token, id
the sentence's number in its file from "0". seqcls (the others): {"sentence": ...} or
{"sentence1": ..., "sentence2": ...}, "label", "id"; label is the class name (ChemProt CPR:3..,
DDI DDI-mechanism.., GAD 0/1, PubMedQA/BioASQ yes/no/maybe), a number (BIOSSES), or for HoC the
ten 0/1 hallmark flags in BLUE's class id order (or BLUE's "0_0,1_1,..." text). HoC's records are
abstracts: preprocess_blurb.py joins an abstract's sentences, ORs their flags and ids the record by
the bare PMID (an id ``<PMID>_s<n>`` of a sentence still names its abstract).

The script writes some labels as none of our readers do: "0" for ChemProt's and DDI's negative
class (``if "false" in label: label = "0"``) and B-PAR/B-INT/B-OUT for EBM-PICO's I- word tags.
TaskSpec.linkbert_labels (bio_roberta/tasks/registry.py) reads them as ours; the split's counts
say how many (``linkbert_label_<theirs>``).

The same columns from Parquet files, as the Hugging Face hub distributes datasets, read the same:
``{train,dev,validation,test}.parquet`` or sharded ``<split>-00000-of-00002.parquet``, in the folder
or its ``data/`` (pyarrow needed: the package's ``parquet`` extra). Integer ``ner_tags``/``label``
columns of a datasets ClassLabel are read as their names, from the file's ``huggingface`` metadata.

A task whose registry entry lists this format in ``other_formats`` reads it when ``detect`` finds
it in --data (bio_roberta.readers.read_task).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

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
    unique_record_id,
)
from bio_roberta.tasks.kinds import MULTILABEL
from bio_roberta.tasks.spec import TaskSpec

FILES = {"train": "train.json", "valid": "dev.json", "test": "test.json"}
# split -> the names its Parquet files start with (datasets calls dev "validation")
PARQUET_SPLITS = {"train": ("train",), "valid": ("dev", "validation"), "test": ("test",)}
TOKCLS_KEYS = ("tokens", "ner_tags", "id")
SEQCLS_KEYS = ("sentence", "sentence1", "label", "id")
# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "LinkBERT's BLURB release, its `<kind>/<name>_hf` folder (docs/blurb.md): `train.json`, "
    "`dev.json`, `test.json` JSON lines, or the same columns in Parquet files (`train`, "
    "`dev`/`validation`, `test`, as the Hugging Face hub ships them)"
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


def _json_files(data_dir: Path) -> list[Path]:
    return [data_dir / name for name in FILES.values() if (data_dir / name).is_file()]


def detect(data_dir: Path) -> bool:
    """Whether data_dir holds this layout: one of the three files (read names one missing)
    whose first record (the first file's that has one) has LinkBERT's keys (BLURB's older BioASQ
    JSON lines share the file names, not the keys), its files all blank (the reader then names
    the empty split), or Parquet files of a split with those columns."""
    parquet = [paths[0] for paths in parquet_files(data_dir).values() if paths]
    if _json_files(data_dir):
        keys = next(filter(None, map(_first_record_keys, _json_files(data_dir))), None)
        if keys is None:  # its file names, each blank (an empty train.json): the split is named
            return all(not path.read_bytes().strip() for path in _json_files(data_dir))
    elif parquet:
        keys = parquet_columns(parquet[0])
    else:
        return False
    return {"tokens", "ner_tags"} <= keys or (
        "label" in keys and bool(keys & {"sentence", "sentence1"})
    )


def parquet_files(data_dir: Path) -> dict[str, list[Path]]:
    """split -> its Parquet files (shards in order) in data_dir or data_dir/data; [] when none."""
    found = {}
    for split, stems in PARQUET_SPLITS.items():
        found[split] = []
        for folder in (data_dir, data_dir / "data"):
            for stem in stems:
                found[split] += (
                    [folder / f"{stem}.parquet"]
                    if (folder / f"{stem}.parquet").is_file()
                    else sorted(folder.glob(f"{stem}-*.parquet"))
                )
            if found[split]:
                break
    return found


def _pyarrow_parquet(path: Path):
    try:
        import pyarrow.parquet
    except ImportError:
        raise TaskFormatError(
            f"{path}: reading Parquet needs pyarrow; install it (pip install pyarrow, or this "
            "package's `parquet` extra) or give the JSON lines files"
        ) from None
    return pyarrow.parquet


def parquet_columns(path: Path) -> set[str]:
    """The column names of a Parquet file (its schema only)."""
    return set(_pyarrow_parquet(path).read_schema(path).names)


def class_names(schema, path: Path) -> dict[str, list[str]]:
    """column -> class names, for the columns a datasets ClassLabel (or a list of one) encodes as
    integers, from the schema's `huggingface` metadata (Parquet files datasets exports, and the
    Arrow shards of its save_to_disk)."""
    metadata = (schema.metadata or {}).get(b"huggingface")
    if not metadata:
        return {}
    try:
        features = json.loads(metadata)["info"]["features"]
    except (ValueError, KeyError, TypeError):
        raise TaskFormatError(f"{path}: its `huggingface` metadata is not datasets' JSON") from None
    names = {}
    for column, feature in features.items():
        feature = feature.get("feature", feature) if isinstance(feature, dict) else feature
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel":
            names[column] = feature["names"]
    return names


def parquet_records(path: Path, split: Split) -> Iterator[tuple[int, str, dict]]:
    """(row number from 1, "file: row N", record) of each row of a Parquet file; ClassLabel
    integers become their names."""
    parquet = _pyarrow_parquet(path)
    try:
        table = parquet.ParquetFile(path)
    except Exception as error:  # pyarrow's ArrowInvalid and OSError alike
        raise TaskFormatError(f"{path}: not a readable Parquet file ({error})") from None
    classes = class_names(table.schema_arrow, path)
    number = 0
    for batch in table.iter_batches():
        for record in batch.to_pylist():
            number += 1
            split.counts["lines"] += 1
            where = f"{path}: row {number}"
            yield number, where, with_class_names(record, classes, where)


def with_class_names(record: dict, classes: dict[str, list[str]], where: str) -> dict:
    """record with the ClassLabel integers of its columns in classes (class_names) as names."""
    for column, names in classes.items():
        record[column] = _class_name(record.get(column), names, column, where)
    return record


def _class_name(value, names: list[str], column: str, where: str):
    if isinstance(value, list):
        return [_class_name(v, names, column, where) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < len(names):
            raise TaskFormatError(
                f"{where}: {column} {value} is not a class id 0..{len(names) - 1}"
            )
        return names[value]
    return value


def _label(spec: TaskSpec, label: str, where: str, split: Split) -> str:
    """Our label for one LinkBERT's release writes (TaskSpec.linkbert_labels, counted), else the
    label itself when the registry allows it."""
    if label in spec.linkbert_labels:
        split.counts[f"linkbert_label_{label}"] += 1
        return spec.linkbert_labels[label]
    try:
        return check_label(spec, label, where)
    except TaskFormatError as error:
        if not spec.linkbert_labels:
            raise
        theirs = ", ".join(f"{k} for {v}" for k, v in spec.linkbert_labels.items())
        raise TaskFormatError(f"{error}, and LinkBERT's release writes {theirs}") from None


def _tokens_and_tags(spec: TaskSpec, record: dict, where: str, split: Split) -> tuple[tuple, tuple]:
    tokens, tags = record.get("tokens"), record.get("ner_tags")
    for key, value in (("tokens", tokens), ("ner_tags", tags)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskFormatError(f"{where}: field {key!r} missing or not a list of strings")
    if len(tokens) != len(tags):
        raise TaskFormatError(f"{where}: {len(tokens)} tokens but {len(tags)} ner_tags")
    if not tokens or not all(token.strip() for token in tokens):
        raise TaskFormatError(f"{where}: no tokens, or an empty token")
    return tuple(tokens), tuple(_label(spec, tag, where, split) for tag in tags)


def _labels(spec: TaskSpec, label, where: str, split: Split) -> tuple[str, ...]:
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
    return (_label(spec, label, where, split),)


def _read_records(spec: TaskSpec, records, split: Split) -> None:
    """Add the (number, where, record) records of one split's files to split."""
    seen: dict[str, int] = {}
    tokcls = spec.is_sequence_labelling
    expected = _expected(spec)
    abstracts = set()
    for number, where, record in records:
        example_id = unique_record_id(record, where, seen, number)
        if tokcls:
            words, tags = _tokens_and_tags(spec, record, where, split)
            split.add(TaggedSentence(example_id, words, tags))
            continue
        if "label" not in record:
            raise TaskFormatError(f"{where}: field 'label' missing; expected {expected}")
        labels = _labels(spec, record["label"], where, split)
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


def _expected(spec: TaskSpec) -> str:
    keys = TOKCLS_KEYS if spec.is_sequence_labelling else SEQCLS_KEYS
    return "one {%s} object a line" % ", ".join(keys)


def _read_file(spec: TaskSpec, path: Path, split: Split) -> None:
    _read_records(spec, json_line_objects(path, split, _expected(spec)), split)


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read one dataset of LinkBERT's BLURB release.

    Args:
        spec: the registry entry; its kind says tokcls (tags words) or seqcls, its labels the
            tags or classes allowed.
        data_dir: the dataset's folder, e.g. data/seqcls/chemprot_hf.

    Returns:
        train / valid / test Splits (dev.json is valid) of TaggedSentence or TextExample, id the
        record's id, labels ours (TaskSpec.linkbert_labels); HoC: group = the abstract (the id,
        or its PMID part), counts["abstracts"].

    Raises:
        TaskFormatError: a file missing, a line (row) not one JSON object with the fields above,
            an id used twice, tokens and tags of different lengths, an unknown label.
    """
    if _json_files(data_dir):
        return read_split_files(
            spec,
            data_dir,
            FILES,
            "JSON lines, as LinkBERT's preprocess_blurb.py writes",
            _read_file,
        )
    shards = parquet_files(data_dir)
    if not all(shards.values()):
        missing = [name for name, paths in shards.items() if not paths]
        raise TaskFormatError(
            f"{data_dir}: no {spec.name} {', '.join(missing)} split: expected "
            f"{', '.join(FILES.values())} (JSON lines) or Parquet files of each split"
        )
    splits = {}
    for name, paths in shards.items():
        splits[name] = Split(name, sources=paths, derivation=", ".join(p.name for p in paths))
        records = (record for path in paths for record in parquet_records(path, splits[name]))
        _read_records(spec, records, splits[name])
    return splits
