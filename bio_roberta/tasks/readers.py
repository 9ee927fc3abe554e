"""Readers of the benchmark tasks' source files, one per ``TaskSpec.source_format``.

Each reader turns the files of one task (or one cross-validation fold) into a ``TaskData``:
train / valid / test ``Split``s of examples plus counts of what was read, kept and skipped.
Labels are checked against the registry; malformed input raises ``TaskFormatError`` naming the
file and line. The formats are described in docs/finetune.md.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

from bio_roberta.blurb.readers import BLURB_READERS
from bio_roberta.tasks.registry import TaskSpec
from bio_roberta.tasks.source_files import (
    Split,
    TaggedSentence,
    TaskData,
    TaskFormatError,
    TextExample,
    _check_label,
    _columns,
    _in_valid_slice,
    _json_line_objects,
    _lines,
    _read_indexed_tsv,
    _read_split_files,
    _require_file,
    _rows_after_header,
)

logger = logging.getLogger(__name__)

# A row of GAD / EU-ADR train.tsv goes to valid when the hash of its sentence falls in this
# slice (1 in N): the folds have no dev split, and the fold's test must not pick checkpoints.
# Hashing the sentence keeps duplicated sentences on one side of the train/valid line.
RE_FOLDS_VALID_ONE_IN = 10
# DDI's dev split: whole Train documents whose id hashes into 1 in N (BLUE's dev is ~1/4 of Train).
DDI_VALID_ONE_IN = 4
DDI_PLACEHOLDER = "@DRUG$"


def read_task(spec: TaskSpec, data_dir: str | Path, fold: Optional[int] = None) -> TaskData:
    """Read one task (or one fold of a cross-validated task) from its source files in data_dir."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise TaskFormatError(
            f"{data_dir}: not a directory; pass the folder holding {spec.name}'s files"
        )
    if spec.folds and fold is None:
        raise TaskFormatError(f"{spec.name} has {spec.folds} folds: name one of 1..{spec.folds}")
    if not spec.folds and fold is not None:
        raise TaskFormatError(f"{spec.name} has no cross-validation folds (asked for fold {fold})")
    if spec.folds and not 1 <= fold <= spec.folds:
        raise TaskFormatError(f"{spec.name}: fold {fold} is not in 1..{spec.folds}")
    try:
        reader = READERS[spec.source_format]
    except KeyError:
        raise TaskFormatError(
            f"{spec.name}: no reader for source format {spec.source_format!r}; "
            f"known: {', '.join(READERS)}"
        ) from None
    splits = reader(spec, data_dir if fold is None else data_dir / str(fold))
    for split in splits.values():
        logger.info(
            "%s%s %s: %s",
            spec.name,
            f" fold {fold}" if fold else "",
            split.name,
            dict(split.counts),
        )
    return TaskData(spec=spec, fold=fold, splits=splits)


# BioBERT NER: token<TAB>tag per line, a blank line after each sentence.
BIOBERT_NER_FILES = {"train": "train.tsv", "valid": "devel.tsv", "test": "test.tsv"}


def _read_biobert_ner_file(spec: TaskSpec, path: Path, split: Split) -> None:
    words, tags, first_line = [], [], 0
    for number, line in _lines(path):
        split.counts["lines"] += 1
        if not line.strip():
            if words:
                split.add(TaggedSentence(f"{path.name}:{first_line}", tuple(words), tuple(tags)))
                words, tags = [], []
            continue
        word, tag = _columns(line, 2, f"{path}:{number}", "token, tag")
        if not word.strip():
            raise TaskFormatError(f"{path}:{number}: empty token before the tag {tag!r}")
        if not words:
            first_line = number
        words.append(word)
        tags.append(_check_label(spec, tag, f"{path}:{number}"))
    if words:
        split.add(TaggedSentence(f"{path.name}:{first_line}", tuple(words), tuple(tags)))


def read_biobert_ner(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    return _read_split_files(
        spec, data_dir, BIOBERT_NER_FILES, "BioBERT token<TAB>tag file", _read_biobert_ner_file
    )


# BLUE sentence classification (ChemProt, DDI's ddi2013-type, i2b2-2010 relations).
BLUE_FILES = {"train": "train.tsv", "valid": "dev.tsv", "test": "test.tsv"}


def read_blue_tsv(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    return _read_split_files(
        spec, data_dir, BLUE_FILES, "BLUE index/sentence/label tsv", _read_indexed_tsv
    )


# BLUE HOC: `labels sentence index`, labels = "0_0,1_1,...,9_0" (class id _ present flag).
HOC_HEADER = ["labels", "sentence", "index"]
HOC_INDEX = re.compile(r"^(\d+)_s(\d+)$")


def _hoc_labels(spec: TaskSpec, field_text: str, where: str) -> tuple[str, ...]:
    flags = {}
    for item in field_text.split(","):
        match = re.fullmatch(r"(\d+)_([01])", item)
        if not match:
            raise TaskFormatError(f"{where}: label item {item!r} is not <class id>_<0|1>")
        class_id = int(match.group(1))
        if class_id >= len(spec.labels):
            raise TaskFormatError(
                f"{where}: unknown label class id {class_id}; {spec.name} has ids "
                f"0..{len(spec.labels) - 1}"
            )
        if class_id in flags:
            raise TaskFormatError(f"{where}: class id {class_id} appears twice")
        flags[class_id] = match.group(2) == "1"
    if len(flags) != len(spec.labels):
        missing = sorted(set(range(len(spec.labels))) - set(flags))
        raise TaskFormatError(
            f"{where}: class ids {missing} missing; every row lists all {len(spec.labels)}"
        )
    return tuple(spec.labels[i] for i in sorted(flags) if flags[i])


def _read_hoc_tsv(spec: TaskSpec, path: Path, split: Split) -> None:
    abstracts = set()
    for _number, where, (labels, sentence, index) in _rows_after_header(path, split, HOC_HEADER):
        match = HOC_INDEX.match(index)
        if not match:
            raise TaskFormatError(f"{where}: index {index!r} is not <PMID>_s<sentence number>")
        abstracts.add(match.group(1))
        split.add(
            TextExample(index, sentence, _hoc_labels(spec, labels, where), group=match.group(1))
        )
    split.counts["abstracts"] = len(abstracts)


def read_blue_hoc(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    return _read_split_files(
        spec, data_dir, BLUE_FILES, "BLUE labels/sentence/index tsv", _read_hoc_tsv
    )


# BioBERT RE folds (GAD, EU-ADR): <fold>/train.tsv `sentence label` without header,
# <fold>/test.tsv with the `index sentence label` header.
def read_biobert_re_folds(spec: TaskSpec, fold_dir: Path) -> dict[str, Split]:
    if not fold_dir.is_dir():
        raise TaskFormatError(
            f"{fold_dir}: fold missing; {spec.name} needs folds 1..{spec.folds} as "
            f"subfolders of {fold_dir.parent}"
        )
    train_path = _require_file(
        fold_dir / "train.tsv", f"{spec.name} fold train file, sentence<TAB>label"
    )
    derivation = (
        f"train.tsv rows whose sentence's sha256 is 0 mod {RE_FOLDS_VALID_ONE_IN} "
        "(the folds have no dev split; the fold's test is never used for selection)"
    )
    train = Split("train", sources=[train_path], derivation="train.tsv minus valid")
    valid = Split("valid", sources=[train_path], derivation=derivation)
    for number, line in _lines(train_path):
        train.counts["lines"] += 1
        where = f"{train_path}:{number}"
        sentence, label = _columns(line, 2, where, "sentence, label; train.tsv has no header")
        if not sentence.strip():
            raise TaskFormatError(f"{where}: empty sentence")
        example = TextExample(f"train.tsv:{number}", sentence, (_check_label(spec, label, where),))
        (valid if _in_valid_slice(sentence, RE_FOLDS_VALID_ONE_IN) else train).add(example)
    test_path = _require_file(
        fold_dir / "test.tsv", f"{spec.name} fold test file, index/sentence/label"
    )
    test = Split("test", sources=[test_path], derivation="test.tsv")
    _read_indexed_tsv(spec, test_path, test)
    return {"train": train, "valid": valid, "test": test}


# MedNLI: JSON lines with sentence1, sentence2, gold_label.
MEDNLI_FILES = {
    "train": "mli_train_v1.jsonl",
    "valid": "mli_dev_v1.jsonl",
    "test": "mli_test_v1.jsonl",
}


def _read_mednli_file(spec: TaskSpec, path: Path, split: Split) -> None:
    expected = "one MedNLI object (sentence1, sentence2, gold_label) a line"
    for number, where, record in _json_line_objects(path, split, expected):
        for key in ("sentence1", "sentence2", "gold_label"):
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise TaskFormatError(f"{where}: field {key!r} missing or empty")
        split.add(
            TextExample(
                str(record.get("pairID", f"{path.name}:{number}")),
                record["sentence1"],
                (_check_label(spec, record["gold_label"], where),),
                text_pair=record["sentence2"],
            )
        )


def read_mednli_jsonl(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    return _read_split_files(spec, data_dir, MEDNLI_FILES, "MedNLI JSON lines", _read_mednli_file)


# DDI corpus XML, converted as BLUE's create_ddi_bert does: one example per <pair>, its two
# entities replaced by @DRUG$ (the first span of a discontinuous entity; one placeholder when
# the two overlap), other drugs kept.
DDI_TRAIN_DIRS = ("Train/DrugBank", "Train/MedLine")
DDI_TEST_DIRS = (
    "Test/Test for DDI Extraction task/DrugBank",
    "Test/Test for DDI Extraction task/MedLine",
)
DDI_OFFSET = re.compile(r"^(\d+)-(\d+)")


def _ddi_document_examples(
    spec: TaskSpec, path: Path, counts: Counter
) -> tuple[str, list[TextExample]]:
    from lxml import etree

    try:
        document = etree.parse(str(path)).getroot()
    except etree.XMLSyntaxError as error:
        raise TaskFormatError(f"{path}:{error.lineno}: not well-formed XML ({error.msg})") from None
    if document.tag != "document" or not document.get("id"):
        raise TaskFormatError(
            f"{path}:{document.sourceline}: expected <document id=...>, found <{document.tag}>"
        )
    examples = []
    for sentence in document.iter("sentence"):
        counts["sentences"] += 1
        text = sentence.get("text")
        if text is None:
            raise TaskFormatError(
                f"{path}:{sentence.sourceline}: <sentence> without a text attribute"
            )
        spans = {}
        for entity in sentence.iter("entity"):
            where = f"{path}:{entity.sourceline}"
            match = DDI_OFFSET.match(entity.get("charOffset", ""))
            if not match:
                raise TaskFormatError(
                    f"{where}: charOffset {entity.get('charOffset')!r} is not start-end"
                )
            start, end = int(match.group(1)), int(match.group(2)) + 1
            if end > len(text) or start >= end:
                raise TaskFormatError(
                    f"{where}: charOffset {start}-{end - 1} outside the "
                    f"sentence ({len(text)} chars)"
                )
            if ";" not in entity.get("charOffset") and text[start:end] != entity.get("text"):
                raise TaskFormatError(
                    f"{where}: charOffset gives {text[start:end]!r} but the entity text "
                    f"is {entity.get('text')!r}"
                )
            spans[entity.get("id")] = (start, end)
        for pair in sentence.iter("pair"):
            where = f"{path}:{pair.sourceline}"
            counts["pairs"] += 1
            if pair.get("e1") not in spans or pair.get("e2") not in spans:
                raise TaskFormatError(
                    f"{where}: pair {pair.get('id')} names an entity not in its sentence"
                )
            if pair.get("ddi") == "true":
                if not pair.get("type"):
                    counts["skipped_true_pair_without_type"] += 1
                    logger.warning(
                        "%s: pair %s has ddi=true but no type; skipped", where, pair.get("id")
                    )
                    continue
                label = f"DDI-{pair.get('type')}"
            elif pair.get("ddi") == "false":
                label = spec.negative_label
            else:
                raise TaskFormatError(f"{where}: ddi={pair.get('ddi')!r}, expected true or false")
            (s1, e1), (s2, e2) = sorted((spans[pair.get("e1")], spans[pair.get("e2")]))
            if s2 < e1:
                counts["pairs_overlapping"] += 1
                replaced = text[:s1] + DDI_PLACEHOLDER + text[max(e1, e2) :]
            else:
                replaced = text[:s1] + DDI_PLACEHOLDER + text[e1:s2] + DDI_PLACEHOLDER + text[e2:]
            examples.append(
                TextExample(
                    pair.get("id"),
                    replaced,
                    (_check_label(spec, label, where),),
                    group=document.get("id"),
                )
            )
    return document.get("id"), examples


def read_ddi_xml(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    train = Split("train", derivation=f"{' + '.join(DDI_TRAIN_DIRS)} minus valid documents")
    valid = Split(
        "valid",
        derivation=(
            f"Train documents whose id's sha256 is 0 mod {DDI_VALID_ONE_IN} "
            "(the corpus has no dev split)"
        ),
    )
    test = Split("test", derivation=" + ".join(DDI_TEST_DIRS))
    for dirs, is_train in ((DDI_TRAIN_DIRS, True), (DDI_TEST_DIRS, False)):
        for sub in dirs:
            folder = data_dir / sub
            files = sorted(folder.glob("*.xml")) if folder.is_dir() else []
            if not files:
                raise TaskFormatError(
                    f"{folder}: no DDI corpus .xml files; pass the DDICorpus folder"
                )
            for path in files:
                counts = Counter()
                doc_id, examples = _ddi_document_examples(spec, path, counts)
                split = (
                    test
                    if not is_train
                    else valid
                    if _in_valid_slice(doc_id, DDI_VALID_ONE_IN)
                    else train
                )
                split.sources.append(path)
                split.counts.update(counts)
                split.counts["documents"] += 1
                for example in examples:
                    split.add(example)
    return {"train": train, "valid": valid, "test": test}


READERS: dict[str, Callable[[TaskSpec, Path], dict[str, Split]]] = {
    "biobert_ner": read_biobert_ner,
    "blue_tsv": read_blue_tsv,
    "blue_hoc": read_blue_hoc,
    "biobert_re_folds": read_biobert_re_folds,
    "mednli_jsonl": read_mednli_jsonl,
    "ddi_xml": read_ddi_xml,
    **BLURB_READERS,  # BIOSSES, PubMedQA, BioASQ, EBM-PICO and BLURB's GAD split
}
