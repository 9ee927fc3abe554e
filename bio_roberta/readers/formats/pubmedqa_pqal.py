"""PubMedQA PQA-L as BLURB uses it: 450 train / 50 dev / 500 test.

Layout: ori_pqal.json (an object PMID -> {QUESTION, CONTEXTS, final_decision, ...}) and
test_ground_truth.json (PMID -> answer of the 500 test questions) in data_dir. Train/dev = fold 0
of PubMedQA's own preprocess/split_dataset.py (seeded, stratified by label), replayed here.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from bio_roberta.readers.source_files import (
    SPLITS,
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    json_file,
    nonempty_text,
    require_file,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "`ori_pqal.json`, `test_ground_truth.json`; train/dev = fold 0 of PubMedQA's "
    "`split_dataset.py`, replayed; context = `CONTEXTS` joined (the abstract without its "
    "conclusion)"
)

PUBMEDQA_FILE = "ori_pqal.json"
PUBMEDQA_TEST_FILE = "test_ground_truth.json"
# PubMedQA's preprocess/split_dataset.py: random.seed(0), labels grouped in this order, the 1,000
# split in 2 (CV half, test half), the CV half in 10 folds; BLURB trains on fold 0's train_set
# (450) and selects on its dev_set (50).
PUBMEDQA_SPLIT_SEED = 0
PUBMEDQA_LABEL_ORDER = ("yes", "no", "maybe")
PUBMEDQA_FOLDS = 10
BLURB_FOLD = 0


def _stratified_parts(labels: dict[str, str], parts: int, rng: random.Random) -> list[list[str]]:
    """split_dataset.py's split(): per label, shuffle and cut into `parts` chunks of ceil(n/parts);
    part i joins chunk i of each label; when the last part comes out shorter than the first, one
    random PMID of each other part moves to it. Keys keep insertion order throughout."""
    by_label = {
        label: [pmid for pmid, value in labels.items() if value == label]
        for label in PUBMEDQA_LABEL_ORDER
    }
    chunks = {}
    for label, pmids in by_label.items():
        rng.shuffle(pmids)
        size = math.ceil(len(pmids) / parts)
        chunks[label] = [
            pmids[i * size :] if i == parts - 1 else pmids[i * size : (i + 1) * size]
            for i in range(parts)
        ]
    out = [
        [pmid for label in PUBMEDQA_LABEL_ORDER for pmid in chunks[label][i]] for i in range(parts)
    ]
    if len(out[-1]) != len(out[0]):
        for part in out[:-1]:
            picked = rng.choice(part)
            part.remove(picked)
            out[-1].append(picked)
    return out


def split_dataset_pqal(labels: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    """split_dataset.py's `pqal` split of PMID -> final_decision (in the file's order): the test
    half and the 10 cross-validation folds of the other half, from random.seed(0) as it runs."""
    rng = random.Random(PUBMEDQA_SPLIT_SEED)
    cv_half, test_half = _stratified_parts(labels, 2, rng)
    return test_half, _stratified_parts({p: labels[p] for p in cv_half}, PUBMEDQA_FOLDS, rng)


def fold_split(folds: list[list[str]], fold: int) -> dict[str, list[str]]:
    """split_dataset.py's pqal_fold<fold>: dev_set = that fold, train_set = the other nine."""
    return {
        "train": [pmid for i, part in enumerate(folds) if i != fold for pmid in part],
        "valid": list(folds[fold]),
    }


def _pubmedqa_records(path: Path, spec: TaskSpec) -> dict[str, TextExample]:
    data = json_file(path)
    if not isinstance(data, dict):
        raise TaskFormatError(
            f"{path}: expected a JSON object keyed by PMID, found {type(data).__name__}"
        )
    examples = {}
    for pmid, record in data.items():
        where = f"{path}: PMID {pmid}"
        if not pmid.isdigit() or not isinstance(record, dict):
            raise TaskFormatError(f"{where}: expected a PMID key holding an object")
        contexts = record.get("CONTEXTS")
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise TaskFormatError(f"{where}: CONTEXTS missing or not a list of text")
        context = " ".join(c.strip() for c in contexts if c.strip())
        if not context:
            raise TaskFormatError(f"{where}: CONTEXTS holds no text")
        label = check_label(spec, record.get("final_decision"), where)
        examples[pmid] = TextExample(
            pmid, nonempty_text(record, "QUESTION", where), (label,), text_pair=context
        )
    return examples


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """PubMedQA PQA-L as BLURB uses it: 450 train / 50 dev / 500 test.

    Input = the question; context = the abstract without its conclusion (CONTEXTS joined by
    spaces; LONG_ANSWER, the conclusion, is left out). Test = the PMIDs of test_ground_truth.json;
    train/dev = fold 0 of split_dataset.py, replayed. The replay is checked: its test half must be
    test_ground_truth.json's PMIDs, else the files are not the official ones and it stops.

    Args:
        spec: the registry entry; its labels are yes, no, maybe.
        data_dir: the folder holding ori_pqal.json and test_ground_truth.json.

    Returns:
        train / valid / test Splits of TextExample (question, context), id the PMID.

    Raises:
        TaskFormatError: a file missing or not JSON of the shape above, a test answer differing
            from ori_pqal.json, files whose replayed split is not the official one.
    """
    path = require_file(data_dir / PUBMEDQA_FILE, "PubMedQA's PQA-L, ori_pqal.json")
    test_path = require_file(data_dir / PUBMEDQA_TEST_FILE, "PubMedQA's test PMIDs and answers")
    examples = _pubmedqa_records(path, spec)
    truth = json_file(test_path)
    if not isinstance(truth, dict):
        raise TaskFormatError(f"{test_path}: expected a JSON object PMID -> answer")
    for pmid, answer in truth.items():
        if pmid not in examples:
            raise TaskFormatError(f"{test_path}: PMID {pmid} is not in {path.name}")
        if (answer,) != examples[pmid].labels:
            raise TaskFormatError(
                f"{test_path}: PMID {pmid} answers {answer!r}, {path.name} says "
                f"{examples[pmid].labels[0]!r}"
            )
    test_half, folds = split_dataset_pqal({p: e.labels[0] for p, e in examples.items()})
    if set(test_half) != set(truth):
        raise TaskFormatError(
            f"{path}: split_dataset.py's test half differs from {test_path.name} in "
            f"{len(set(test_half) ^ set(truth))} PMIDs: these are not the official files (or their "
            "record order changed), so BLURB's 450/50 fold 0 cannot be rebuilt from them"
        )
    members = {**fold_split(folds, BLURB_FOLD), "test": list(truth)}
    derivations = {
        "train": "split_dataset.py fold 0 train_set (folds 1-9 of the 500 not in the test set)",
        "valid": "split_dataset.py fold 0 dev_set",
        "test": f"{PUBMEDQA_TEST_FILE}",
    }
    splits = {}
    for name in SPLITS:
        sources = [path, test_path] if name == "test" else [path]
        splits[name] = Split(name, sources=sources, derivation=derivations[name])
        for pmid in members[name]:
            splits[name].add(examples[pmid])
    return splits
