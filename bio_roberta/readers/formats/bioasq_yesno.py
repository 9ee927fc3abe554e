"""BioASQ Task 7b yes/no questions: question + its snippets -> yes / no.

Layouts (one of them in data_dir): BLURB's preprocessed JSON lines train/dev/test .jsonl (or
.json), or the challenge JSON in BioASQ-training7b/ (train) and Task7BGoldenEnriched/ (test), whose
train/dev split comes from BLURB's id lists when given (bio_roberta/readers/blurb_id_lists.py).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from bio_roberta.readers.blurb_id_lists import pooled_layout, split_pool
from bio_roberta.readers.source_files import (
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    json_file,
    json_line_objects,
    nonempty_text,
    read_split_files,
    unique_record_id,
)
from bio_roberta.tasks.spec import TaskSpec

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "BLURB's `train/dev/test.jsonl` (`id question context label`), or `BioASQ-training7b/` + "
    "`Task7BGoldenEnriched/` (yes/no questions, snippets joined)"
)

logger = logging.getLogger(__name__)

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
    for number, where, record in json_line_objects(path, split, expected):
        question_id = unique_record_id(record, where, seen, number)
        label = check_label(spec, record.get("label"), where)
        split.add(
            TextExample(
                question_id,
                nonempty_text(record, "question", where),
                (label,),
                text_pair=nonempty_text(record, "context", where),
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
        data = json_file(path)
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
            question_id = nonempty_text(question, "id", where)
            where = f"{where} (id {question_id})"
            answer = question.get("exact_answer")
            if not isinstance(answer, str):
                raise TaskFormatError(
                    f"{where}: exact_answer of a yes/no question must be yes "
                    f"or no, found {answer!r}"
                )
            label = check_label(spec, answer.strip().lower(), where)
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
            body = nonempty_text(question, "body", where).replace("\n", " ")
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


def _read_bioasq_challenge(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    training_dir, golden_dir = data_dir / BIOASQ_TRAINING_DIR, data_dir / BIOASQ_GOLDEN_DIR
    for folder in (training_dir, golden_dir):
        if not folder.is_dir():
            raise TaskFormatError(
                f"{folder}: missing; the challenge layout has "
                f"{BIOASQ_TRAINING_DIR}/ (training questions) and "
                f"{BIOASQ_GOLDEN_DIR}/ (golden test batches)"
            )
    folders = {"train": training_dir, "test": golden_dir}
    return split_pool(
        spec,
        data_dir,
        "id",
        "questions",
        lambda part, counts: _bioasq_challenge_questions(spec, folders[part], counts),
        {
            "train": f"{BIOASQ_TRAINING_DIR} yes/no questions",
            "test": f"{BIOASQ_GOLDEN_DIR} yes/no questions",
        },
    )


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """BioASQ Task 7b yes/no questions: question + its snippets -> yes / no.

    Two layouts: BLURB's preprocessed JSON lines (train/dev/test .jsonl or .json, one
    {"id", "question", "context", "label"} object a line) or the challenge JSON
    ({"questions": [{"id", "body", "type", "exact_answer", "snippets": [{"text"}]}]}) in
    BioASQ-training7b/ and Task7BGoldenEnriched/, of which only type "yesno" is kept (the others
    counted) and the context is the question's snippets joined by spaces, as BLURB builds it.

    Args:
        spec: the registry entry; its labels are yes and no.
        data_dir: the folder holding one of the two layouts (and BLURB's id lists, if given).

    Returns:
        train / valid / test Splits of TextExample (question, context), id the question's id.

    Raises:
        TaskFormatError: both layouts or neither, a file not as above, an unknown answer, an id
            used twice with different content, an id list naming a question the files lack.
    """
    jsonl = _bioasq_jsonl_paths(data_dir)
    if pooled_layout(
        data_dir,
        "BioASQ",
        list(jsonl.values()),
        len(BIOASQ_JSONL_STEMS),
        files_layout=f"BLURB's JSON lines train/dev/test.jsonl ({', '.join(BIOASQ_JSONL_KEYS)})",
        pool_layout=f"the challenge folders {BIOASQ_TRAINING_DIR}/ and {BIOASQ_GOLDEN_DIR}/",
        pooled=(data_dir / BIOASQ_TRAINING_DIR).is_dir() or (data_dir / BIOASQ_GOLDEN_DIR).is_dir(),
    ):
        return _read_bioasq_challenge(spec, data_dir)
    files = {name: path.name for name, path in jsonl.items()}
    return read_split_files(spec, data_dir, files, "BLURB's JSON lines", _read_bioasq_jsonl_file)
