"""Readers of BLURB's four new tasks, and of BLURB's single GAD split.

Each turns a task's files into the train / valid / test ``Split``s of bio_roberta.tasks.readers,
with its example types (TextExample, TaggedSentence), counts and ``TaskFormatError``s naming the
file and the line or record. BLURB_READERS joins bio_roberta.tasks.readers.READERS.

Splits rebuilt as BLURB's (Gu et al. 2021 §4; what BLURB's data_generation/preprocessor.py does):
- BIOSSES: BLUE's 64/16/20 pair numbers, from BLUE's files (any split of the 100 pairs).
- PubMedQA: test = the 500 PMIDs of test_ground_truth.json; train/dev = fold 0 of PubMedQA's
  own preprocess/split_dataset.py (seeded, stratified by label), replayed here.
- GAD: BioBERT's fold 1; train = its train.tsv rows 1-4261, dev = the rest, test = its test.tsv.
- BioASQ and EBM-PICO: BLURB takes train/dev/test from id lists (its indexing/ files); given
  those lists beside the data (BLURB_INDEX_FILES) the split is BLURB's, else dev is a
  deterministic 1 in 10 of the training documents and the derivation says so.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import random
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator, Optional

from bio_roberta.tasks.registry import TaskSpec
from bio_roberta.tasks.source_files import (
    IS_BLURBS,
    SPLITS,
    BlurbSplit,
    Split,
    TaggedSentence,
    TaskFormatError,
    TextExample,
    _check_label,
    _columns,
    _in_valid_slice,
    _json_line_objects,
    _lines,
    _read_indexed_tsv,
    _require_file,
)
from bio_roberta_core.tagging import PICO_ELEMENTS, PICO_SEPARATOR, pico_tag

logger = logging.getLogger(__name__)

# Without BLURB's id lists, 1 in N training documents / questions goes to valid.
VALID_ONE_IN = 10
# BLURB's id lists (its data_generation/indexing/<task>/): one line of comma-separated ids.
BLURB_INDEX_FILES = {"train": "train_{}.tsv", "valid": "dev_{}.tsv", "test": "test_{}.tsv"}


def _json_file(path: Path):
    """The JSON value of a whole file; errors name the file and line."""
    text = "\n".join(line for _, line in _lines(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TaskFormatError(
            f"{path}:{error.lineno}: not JSON ({error.msg} at column {error.colno})"
        ) from None


def _nonempty_text(record: dict, key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskFormatError(f"{where}: field {key!r} missing, empty or not text")
    return value.strip()


def _index_lists(data_dir: Path, kind: str) -> Optional[dict[str, list[str]]]:
    """BLURB's train/dev/test id lists in data_dir (all three, or None when none is there)."""
    paths = {split: data_dir / name.format(kind) for split, name in BLURB_INDEX_FILES.items()}
    present = [path for path in paths.values() if path.is_file()]
    if not present:
        return None
    if len(present) != len(paths):
        missing = ", ".join(path.name for path in paths.values() if not path.is_file())
        beside = ", ".join(path.name for path in present)
        raise TaskFormatError(
            f"{data_dir}: BLURB's id lists come as three files; {missing} missing beside {beside}"
        )
    lists, seen = {}, {}
    for split, path in paths.items():
        ids = []
        for number, line in _lines(path):
            for item in line.split(","):
                item = item.strip()
                if not item:
                    continue
                if item in seen:
                    raise TaskFormatError(
                        f"{path}:{number}: id {item} already listed in {seen[item]}"
                    )
                seen[item] = f"{path.name}:{number}"
                ids.append(item)
        if not ids:
            raise TaskFormatError(f"{path}: no ids; BLURB's list holds comma-separated ids")
        lists[split] = ids
    return lists


# --- BIOSSES ----------------------------------------------------------------------------------

# BLUE's rowdata files (blue_plus/rowdata/biosses, 70/16/14): a pandas index column, then these.
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
# BLUE" in BLURB's data_generation/preprocessor.py (also BigBIO's biosses loader).
BIOSSES_BLURB_SPLIT = {
    "train": (
        1,
        3,
        4,
        5,
        6,
        10,
        11,
        12,
        13,
        14,
        15,
        16,
        17,
        18,
        19,
        21,
        26,
        27,
        28,
        29,
        30,
        31,
        32,
        34,
        35,
        36,
        37,
        39,
        42,
        43,
        44,
        45,
        46,
        48,
        50,
        51,
        53,
        54,
        55,
        56,
        58,
        60,
        61,
        62,
        65,
        66,
        67,
        73,
        74,
        75,
        76,
        77,
        78,
        79,
        84,
        85,
        86,
        87,
        92,
        93,
        94,
        95,
        98,
        99,
    ),
    "valid": (2, 8, 9, 24, 40, 41, 47, 63, 68, 72, 80, 82, 88, 90, 91, 100),
    "test": (7, 20, 22, 23, 25, 33, 38, 49, 52, 57, 59, 64, 69, 70, 71, 81, 83, 89, 96, 97),
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
    rows = csv.reader((line for _, line in _lines(path)), delimiter="\t")
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


def read_biosses(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """BIOSSES with BLURB's 64/16/20 split, from BLUE's rowdata train/dev/test.tsv (70/16/14).

    The three files together hold the 100 pairs; each pair's old_index is its position in the
    original release, so pair number old_index + 1 places it in BLURB's split (BLURB writes BLUE's
    split as these numbers). A TextExample's id is the pair number, its label the gold score as
    its text in the file (the mean of the five annotators' 0-4 scores).
    """
    paths = [_require_file(data_dir / name, "BLUE's BIOSSES rowdata tsv") for name in BIOSSES_FILES]
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
        )
        for number in BIOSSES_BLURB_SPLIT[name]:
            split.add(pairs[number])
            split.counts[f"from_{origin[number].name}"] += 1
            split.counts["sentences_whitespace_normalised"] += normalised[number]
        splits[name] = split
    return splits


# --- PubMedQA ---------------------------------------------------------------------------------

PUBMEDQA_FILE = "ori_pqal.json"
PUBMEDQA_TEST_FILE = "test_ground_truth.json"
# PubMedQA's preprocess/split_dataset.py: random.seed(0), labels grouped in this order, the 1,000
# split in 2 (CV half, test half), the CV half in 10 folds; BLURB trains on fold 0's train_set
# (450) and selects on its dev_set (50).
PUBMEDQA_SPLIT_SEED = 0
PUBMEDQA_LABEL_ORDER = ("yes", "no", "maybe")
PUBMEDQA_FOLDS = 10


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


def _pubmedqa_records(path: Path, spec: TaskSpec) -> dict[str, TextExample]:
    data = _json_file(path)
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
        label = _check_label(spec, record.get("final_decision"), where)
        examples[pmid] = TextExample(
            pmid, _nonempty_text(record, "QUESTION", where), (label,), text_pair=context
        )
    return examples


def read_pubmedqa(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """PubMedQA PQA-L as BLURB uses it: 450 train / 50 dev / 500 test.

    Input = the question; context = the abstract without its conclusion (CONTEXTS joined by
    spaces; LONG_ANSWER, the conclusion, is left out). Test = the PMIDs of test_ground_truth.json;
    train/dev = fold 0 of split_dataset.py, replayed. The replay is checked: its test half must be
    test_ground_truth.json's PMIDs, else the files are not the official ones and it stops.
    """
    path = _require_file(data_dir / PUBMEDQA_FILE, "PubMedQA's PQA-L, ori_pqal.json")
    test_path = _require_file(data_dir / PUBMEDQA_TEST_FILE, "PubMedQA's test PMIDs and answers")
    examples = _pubmedqa_records(path, spec)
    truth = _json_file(test_path)
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
    rng = random.Random(PUBMEDQA_SPLIT_SEED)
    cv_half, test_half = _stratified_parts({p: e.labels[0] for p, e in examples.items()}, 2, rng)
    if set(test_half) != set(truth):
        raise TaskFormatError(
            f"{path}: split_dataset.py's test half differs from {test_path.name} in "
            f"{len(set(test_half) ^ set(truth))} PMIDs: these are not the official files (or their "
            "record order changed), so BLURB's 450/50 fold 0 cannot be rebuilt from them"
        )
    folds = _stratified_parts({p: examples[p].labels[0] for p in cv_half}, PUBMEDQA_FOLDS, rng)
    members = {
        "train": [pmid for fold in folds[1:] for pmid in fold],
        "valid": folds[0],
        "test": list(truth),
    }
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


# --- BioASQ -----------------------------------------------------------------------------------

BIOASQ_JSONL_STEMS = {"train": "train", "valid": "dev", "test": "test"}
BIOASQ_JSONL_SUFFIXES = (".jsonl", ".json")
BIOASQ_JSONL_KEYS = ("id", "question", "context", "label")
# The Task 7b downloads as BLURB's preprocessor reads them: training questions, golden test batches.
BIOASQ_TRAINING_DIR = "BioASQ-training7b"
BIOASQ_GOLDEN_DIR = "Task7BGoldenEnriched"
BIOASQ_TYPE = "yesno"


def _bioasq_jsonl_paths(data_dir: Path) -> dict[str, Path]:
    paths = {}
    for split, stem in BIOASQ_JSONL_STEMS.items():
        found = [
            data_dir / f"{stem}{suffix}"
            for suffix in BIOASQ_JSONL_SUFFIXES
            if (data_dir / f"{stem}{suffix}").is_file()
        ]
        if len(found) > 1:
            raise TaskFormatError(f"{data_dir}: both {found[0].name} and {found[1].name}; keep one")
        if found:
            paths[split] = found[0]
    return paths


def _read_bioasq_jsonl_file(spec: TaskSpec, path: Path, split: Split) -> None:
    """BLURB's preprocessed BioASQ: one {"id", "question", "context", "label"} object a line."""
    seen = {}
    expected = f"one object with {', '.join(BIOASQ_JSONL_KEYS)} a line"
    for number, where, record in _json_line_objects(path, split, expected):
        question_id = record.get("id")
        if isinstance(question_id, int) and not isinstance(question_id, bool):
            question_id = str(question_id)
        question_id = _nonempty_text({"id": question_id}, "id", where)
        if question_id in seen:
            raise TaskFormatError(f"{where}: id {question_id} already on line {seen[question_id]}")
        seen[question_id] = number
        label = _check_label(spec, record.get("label"), where)
        split.add(
            TextExample(
                question_id,
                _nonempty_text(record, "question", where),
                (label,),
                text_pair=_nonempty_text(record, "context", where),
            )
        )


def _bioasq_challenge_questions(spec: TaskSpec, folder: Path, counts: Counter) -> dict[str, tuple]:
    """Question id -> ([example], (its file,)) for the yes/no questions of every challenge JSON
    file in folder."""
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise TaskFormatError(f"{folder}: no BioASQ challenge .json files")
    questions, where_seen = {}, {}
    for path in paths:
        data = _json_file(path)
        if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
            raise TaskFormatError(
                f"{path}: not BioASQ challenge JSON (an object with a 'questions' list)"
            )
        for position, question in enumerate(data["questions"]):
            where = f"{path}: questions[{position}]"
            if not isinstance(question, dict) or not isinstance(question.get("type"), str):
                raise TaskFormatError(f"{where}: expected a question object with a 'type'")
            counts["questions_read"] += 1
            if question["type"] != BIOASQ_TYPE:
                counts[f"skipped_type_{question['type']}"] += 1
                continue
            question_id = _nonempty_text(question, "id", where)
            where = f"{where} (id {question_id})"
            answer = question.get("exact_answer")
            if not isinstance(answer, str):
                raise TaskFormatError(
                    f"{where}: exact_answer of a yes/no question must be yes "
                    f"or no, found {answer!r}"
                )
            label = _check_label(spec, answer.strip().lower(), where)
            snippets = question.get("snippets", [])
            if not isinstance(snippets, list) or not all(
                isinstance(s, dict) and isinstance(s.get("text"), str) for s in snippets
            ):
                raise TaskFormatError(f"{where}: snippets must be a list of objects with a 'text'")
            context = " ".join(
                s["text"].replace("\n", " ").strip() for s in snippets if s["text"].strip()
            )
            if not context:
                counts["skipped_without_snippets"] += 1
                logger.warning("%s: yes/no question without snippet text; skipped", where)
                continue
            body = _nonempty_text(question, "body", where).replace("\n", " ")
            example = TextExample(question_id, body, (label,), text_pair=context)
            if question_id in questions:
                if questions[question_id][0] != [example]:
                    raise TaskFormatError(
                        f"{where}: id {question_id} also in "
                        f"{where_seen[question_id]} with another question, "
                        "answer or snippets"
                    )
                counts["skipped_duplicate_questions"] += 1
                continue
            questions[question_id], where_seen[question_id] = ([example], (path,)), where
    return questions


def _split_pool(
    spec: TaskSpec,
    data_dir: Path,
    kind: str,
    unit: str,
    train_pool: dict[str, tuple],
    test_pool: dict[str, tuple],
    counts: dict[str, Counter],
    what: dict[str, str],
) -> dict[str, Split]:
    """Splits of documents or questions keyed by id, each ([examples], (source files)).

    With BLURB's id lists (BLURB_INDEX_FILES of `kind`) in data_dir, each split holds the ids
    listed (a test id takes its test-pool version) and is BLURB's; else test = the test pool, and
    valid = the train pool's ids that _in_valid_slice picks, those also in the test pool left out:
    train and valid are not BLURB's.
    """
    lists = _index_lists(data_dir, kind)
    if lists is None:
        index_files = ", ".join(name.format(kind) for name in BLURB_INDEX_FILES.values())
        not_given = f"BLURB's id lists ({index_files}) not given beside the data"
        blurb = {
            "train": BlurbSplit(f"is {what['train']} less our dev, not BLURB's ({not_given})"),
            "valid": BlurbSplit(
                f"is ours, 1 in {VALID_ONE_IN} of {what['train']} by id hash ({not_given})"
            ),
            "test": None,
        }
        in_test = set(train_pool) & set(test_pool)
        counts["train"][f"skipped_{unit}_also_in_test"] = len(in_test)
        pool = [item for item in train_pool if item not in in_test]
        members = {
            "train": [i for i in pool if not _in_valid_slice(i, VALID_ONE_IN)],
            "valid": [i for i in pool if _in_valid_slice(i, VALID_ONE_IN)],
            "test": list(test_pool),
        }
        derivations = {
            "train": f"{what['train']} minus valid (BLURB's id lists not given)",
            "valid": f"{what['train']} whose id's sha256 is 0 mod {VALID_ONE_IN}: not BLURB's dev, "
            "whose id lists were not given",
            "test": what["test"],
        }
    else:
        members = lists
        derivations = {name: f"BLURB's {BLURB_INDEX_FILES[name].format(kind)}" for name in SPLITS}
        blurb = dict.fromkeys(SPLITS, IS_BLURBS)
    splits = {}
    for name in SPLITS:
        pools = (test_pool, train_pool) if name == "test" else (train_pool, test_pool)
        split = Split(name, derivation=derivations[name], blurb=blurb[name])
        sources = set()
        for item in members[name]:
            found = next((pool[item] for pool in pools if item in pool), None)
            if found is None:
                raise TaskFormatError(
                    f"{data_dir}: {spec.name} {name} lists {unit} {item}, which "
                    "the files do not hold"
                )
            examples, paths = found
            for example in examples:
                split.add(example)
            sources.update(paths)
            split.counts[unit] += 1
        split.sources = sorted(sources)
        split.counts.update(counts.get(name, Counter()))
        splits[name] = split
    if lists is not None:
        listed = {item for ids in lists.values() for item in ids}
        unlisted = (set(train_pool) | set(test_pool)) - listed
        splits["train"].counts[f"skipped_{unit}_not_listed"] = len(unlisted)
    return splits


def _read_bioasq_challenge(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    training_dir, golden_dir = data_dir / BIOASQ_TRAINING_DIR, data_dir / BIOASQ_GOLDEN_DIR
    for folder in (training_dir, golden_dir):
        if not folder.is_dir():
            raise TaskFormatError(
                f"{folder}: missing; the challenge layout has "
                f"{BIOASQ_TRAINING_DIR}/ (training questions) and "
                f"{BIOASQ_GOLDEN_DIR}/ (golden test batches)"
            )
    counts = {"train": Counter(), "test": Counter()}
    training = _bioasq_challenge_questions(spec, training_dir, counts["train"])
    golden = _bioasq_challenge_questions(spec, golden_dir, counts["test"])
    return _split_pool(
        spec,
        data_dir,
        "id",
        "questions",
        training,
        golden,
        counts,
        {
            "train": f"{BIOASQ_TRAINING_DIR} yes/no questions",
            "test": f"{BIOASQ_GOLDEN_DIR} yes/no questions",
        },
    )


def read_bioasq(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """BioASQ Task 7b yes/no questions: question + its snippets -> yes / no.

    Two layouts: BLURB's preprocessed JSON lines (train/dev/test .jsonl or .json, one
    {"id", "question", "context", "label"} object a line) or the challenge JSON
    ({"questions": [{"id", "body", "type", "exact_answer", "snippets": [{"text"}]}]}) in
    BioASQ-training7b/ and Task7BGoldenEnriched/, of which only type "yesno" is kept (the others
    counted) and the context is the question's snippets joined by spaces, as BLURB builds it.
    """
    jsonl = _bioasq_jsonl_paths(data_dir)
    challenge = (data_dir / BIOASQ_TRAINING_DIR).is_dir() or (data_dir / BIOASQ_GOLDEN_DIR).is_dir()
    if jsonl and challenge:
        names = ", ".join(path.name for path in jsonl.values())
        raise TaskFormatError(
            f"{data_dir}: holds both BLURB's JSON lines ({names}) and the "
            "challenge folders; keep one layout"
        )
    if challenge:
        return _read_bioasq_challenge(spec, data_dir)
    if len(jsonl) != len(BIOASQ_JSONL_STEMS):
        found = f"; found only {', '.join(path.name for path in jsonl.values())}" if jsonl else ""
        raise TaskFormatError(
            f"{data_dir}: no BioASQ files in a known layout: expected BLURB's JSON lines "
            f"train/dev/test.jsonl ({', '.join(BIOASQ_JSONL_KEYS)}), or the challenge folders "
            f"{BIOASQ_TRAINING_DIR}/ and {BIOASQ_GOLDEN_DIR}/{found}"
        )
    splits = {}
    for name, path in jsonl.items():
        splits[name] = Split(name, sources=[path], derivation=path.name)
        _read_bioasq_jsonl_file(spec, path, splits[name])
    return splits


# --- EBM-PICO ---------------------------------------------------------------------------------

# SciBERT's release (data/pico/ebmnlp): "token POS O tag" lines, -DOCSTART- (PMID) per abstract.
SCIBERT_PICO_FILES = {"train": "train.txt", "valid": "dev.txt", "test": "test.txt"}
DOCSTART = re.compile(r"-DOCSTART- \((\d+)\)")
# EBM-NLP 2.0 (ebm_nlp_2_00): documents/<PMID>.tokens and, per element, 0/1 per token in
# annotations/aggregated/starting_spans/<element>/{train,test/gold}/<PMID>.AGGREGATED.ann.
EBM_NLP_DOCUMENTS = "documents"
EBM_NLP_SPANS = Path("annotations", "aggregated", "starting_spans")
EBM_NLP_ELEMENTS = dict(zip(("participants", "interventions", "outcomes"), PICO_ELEMENTS))
EBM_NLP_PARTS = {"train": "train", "test": Path("test", "gold")}
SENTENCE_END = "."


def _read_scibert_pico_file(spec: TaskSpec, path: Path, split: Split) -> None:
    words, tags, first_line, document = [], [], 0, None
    documents = set()

    def flush():
        if words:
            split.add(TaggedSentence(f"{path.name}:{first_line}", tuple(words), tuple(tags)))
            words.clear()
            tags.clear()

    for number, line in _lines(path):
        split.counts["lines"] += 1
        where = f"{path}:{number}"
        if not line.strip():
            flush()
            continue
        if line.startswith("-DOCSTART-"):
            match = DOCSTART.fullmatch(line.strip())
            if not match:
                raise TaskFormatError(f"{where}: expected '-DOCSTART- (PMID)', found {line[:60]!r}")
            flush()
            document = match.group(1)
            if document in documents:
                raise TaskFormatError(f"{where}: abstract {document} appears twice in {path.name}")
            documents.add(document)
            continue
        if document is None:
            raise TaskFormatError(f"{where}: a token before the first '-DOCSTART- (PMID)' line")
        columns = line.split(" ")
        if len(columns) != 4 or not all(columns):
            raise TaskFormatError(
                f"{where}: expected 4 space-separated columns (token, POS, O, "
                f"tag), found {line[:60]!r}"
            )
        word, tag = columns[0], columns[3]
        if not words:
            first_line = number
        words.append(word)
        tags.append(_check_label(spec, tag, where))
    flush()
    split.counts["documents"] = len(documents)


def _ebm_nlp_labels(path: Path, tokens: int) -> list[bool]:
    labels = " ".join(line for _, line in _lines(path)).split()
    if len(labels) != tokens:
        raise TaskFormatError(f"{path}: {len(labels)} labels for the document's {tokens} tokens")
    for position, label in enumerate(labels, 1):
        if label not in ("0", "1"):
            raise TaskFormatError(
                f"{path}: token {position}: label {label!r}; starting_spans hold 0 or 1"
            )
    return [label == "1" for label in labels]


def _ebm_nlp_documents(data_dir: Path, part: str, counts: Counter) -> dict[str, tuple]:
    """PMID -> (its sentences, its files) for the documents annotated in one part (train,
    test/gold), each word tagged with every element whose aggregated span covers it."""
    annotations: dict[str, dict[str, Path]] = {}
    for folder, element in EBM_NLP_ELEMENTS.items():
        element_dir = data_dir / EBM_NLP_SPANS / folder / EBM_NLP_PARTS[part]
        if not element_dir.is_dir():
            raise TaskFormatError(
                f"{element_dir}: missing; EBM-NLP holds {EBM_NLP_SPANS}/"
                f"<element>/{EBM_NLP_PARTS[part]}/<PMID>.AGGREGATED.ann for each "
                "element"
            )
        for path in sorted(element_dir.glob("*.ann")):
            annotations.setdefault(path.name.split(".")[0], {})[element] = path
    documents = {}
    for pmid in sorted(annotations):
        token_path = _require_file(
            data_dir / EBM_NLP_DOCUMENTS / f"{pmid}.tokens",
            f"the tokens of annotated document {pmid}",
        )
        words = " ".join(line for _, line in _lines(token_path)).split()
        covered = {
            element: _ebm_nlp_labels(path, len(words))
            for element, path in annotations[pmid].items()
        }
        for element in PICO_ELEMENTS:
            if element not in covered:
                counts[f"documents_without_{element}"] += 1
                logger.warning("%s %s: no %s annotation; its words carry none", part, pmid, element)
        tags = [pico_tag(e for e in covered if covered[e][i]) for i in range(len(words))]
        counts["words_in_several_elements"] += sum(1 for tag in tags if PICO_SEPARATOR in tag)
        sentences, start = [], 0
        for i, word in enumerate(words):
            if word == SENTENCE_END or i == len(words) - 1:
                sentences.append(
                    TaggedSentence(
                        f"{pmid}:{start + 1}",
                        tuple(words[start : i + 1]),
                        tuple(tags[start : i + 1]),
                    )
                )
                start = i + 1
        documents[pmid] = (sentences, (token_path, *annotations[pmid].values()))
    return documents


def _read_ebm_nlp(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    counts = {"train": Counter(), "test": Counter()}
    train = _ebm_nlp_documents(data_dir, "train", counts["train"])
    test = _ebm_nlp_documents(data_dir, "test", counts["test"])
    return _split_pool(
        spec,
        data_dir,
        "pmid",
        "documents",
        train,
        test,
        counts,
        {"train": "starting_spans train documents", "test": "starting_spans test/gold documents"},
    )


def read_ebm_pico(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """EBM-PICO: the words of trial abstracts tagged with Participants, Interventions, Outcomes.

    Overlaps (Gu et al. §4.2: about 3% of PIO words lie in two elements): from the original
    EBM-NLP files a word keeps every element whose span covers it (tag 'I-PAR+I-INT'), as BLURB
    means to ("we instead use the original dataset"), and the model predicts a set per word
    (docs/finetune.md). SciBERT's release already removed overlapping words from the larger span,
    so its words carry one tag: read as given, its gold differs from BLURB's on those words.

    EBM-NLP: documents/<PMID>.tokens + starting_spans aggregated annotations, split into
    sentences after each '.' token (as EBM-NLP's and BLURB's preprocessing do); test = test/gold.
    SciBERT: train.txt / dev.txt / test.txt as released.
    """
    scibert = [
        data_dir / name for name in SCIBERT_PICO_FILES.values() if (data_dir / name).is_file()
    ]
    ebm_nlp = (data_dir / EBM_NLP_DOCUMENTS).is_dir() or (data_dir / EBM_NLP_SPANS).is_dir()
    if scibert and ebm_nlp:
        names = ", ".join(path.name for path in scibert)
        raise TaskFormatError(
            f"{data_dir}: holds both SciBERT's {names} and EBM-NLP's "
            "documents/annotations; keep one layout"
        )
    if ebm_nlp:
        return _read_ebm_nlp(spec, data_dir)
    if len(scibert) != len(SCIBERT_PICO_FILES):
        raise TaskFormatError(
            f"{data_dir}: no EBM-PICO files in a known layout: expected SciBERT's "
            f"{'/'.join(SCIBERT_PICO_FILES.values())} ('token POS O tag' lines) or EBM-NLP's "
            f"{EBM_NLP_DOCUMENTS}/ and {EBM_NLP_SPANS}/"
        )
    splits = {}
    for name, file_name in SCIBERT_PICO_FILES.items():
        path = data_dir / file_name
        # SciBERT's PMIDs are BLURB's train/dev lists, its test.txt EBM-NLP's test/gold
        splits[name] = Split(
            name, sources=[path], derivation=f"SciBERT's {file_name}", blurb=IS_BLURBS
        )
        _read_scibert_pico_file(spec, path, splits[name])
    return splits


# --- GAD as BLURB splits it ---------------------------------------------------------------------

GAD_BLURB_FOLD = "1"
GAD_BLURB_TRAIN_ROWS = 4261


def read_gad_blurb(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """GAD's single BLURB split from BioBERT's 10 folds (BLURB's preprocess_GAD_corpus).

    Fold 1 only: train = rows 1-4261 of 1/train.tsv, dev = its remaining rows (535), test =
    1/test.tsv (534). Table 3 prints the dev and test sizes the other way round.
    """
    fold_dir = data_dir / GAD_BLURB_FOLD
    train_path = _require_file(
        fold_dir / "train.tsv", "BioBERT GAD fold 1 train.tsv, sentence<TAB>label"
    )
    train = Split(
        "train", sources=[train_path], derivation=f"1/train.tsv rows 1-{GAD_BLURB_TRAIN_ROWS}"
    )
    valid = Split(
        "valid", sources=[train_path], derivation=f"1/train.tsv rows after {GAD_BLURB_TRAIN_ROWS}"
    )
    for number, line in _lines(train_path):
        split = train if number <= GAD_BLURB_TRAIN_ROWS else valid
        split.counts["lines"] += 1
        where = f"{train_path}:{number}"
        sentence, label = _columns(line, 2, where, "sentence, label; train.tsv has no header")
        if not sentence.strip():
            raise TaskFormatError(f"{where}: empty sentence")
        split.add(TextExample(f"train.tsv:{number}", sentence, (_check_label(spec, label, where),)))
    if not valid.examples:
        raise TaskFormatError(
            f"{train_path}: {train.counts['lines']} rows; BLURB's split takes "
            f"rows 1-{GAD_BLURB_TRAIN_ROWS} for train and the rest for dev: this "
            "is not BioBERT's GAD fold 1"
        )
    test_path = _require_file(
        fold_dir / "test.tsv", "BioBERT GAD fold 1 test.tsv, index/sentence/label"
    )
    test = Split("test", sources=[test_path], derivation="1/test.tsv")
    _read_indexed_tsv(spec, test_path, test)
    return {"train": train, "valid": valid, "test": test}


BLURB_READERS: dict[str, Callable[[TaskSpec, Path], dict[str, Split]]] = {
    "biosses_blue_rowdata": read_biosses,
    "pubmedqa_pqal": read_pubmedqa,
    "bioasq_yesno": read_bioasq,
    "ebm_pico": read_ebm_pico,
    "gad_blurb_fold1": read_gad_blurb,
}
