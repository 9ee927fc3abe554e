"""A user's own tasks as the issue's evidence asks for them (docs/own_tasks.md): an NER set in
CoNLL with -DOCSTART- lines, a CSV sentence-classification set and a Hugging Face `datasets`
directory written by save_to_disk, each with its task file. Words are TINY_WORDS, so one tiny
vocabulary covers all three.

The layouts are written from their producers' code:
- CoNLL: spaCy's CoNLL-2003 converter (explosion/spaCy spacy/training/converters/
  conll_ner_to_docs.py, commit 0a700af): whitespace-separated columns, the token first and the
  IOB tag last, a blank line between sentences, documents started by "-DOCSTART- -X- O O".
- CSV: Python's csv module with a header line, as transformers' run_glue.py reads --train_file.
- save_to_disk: `datasets` is not installed in the venv, so its files are written as
  huggingface/datasets' own code writes them (src/datasets/dataset_dict.py DatasetDict.save_to_disk,
  src/datasets/arrow_dataset.py Dataset.save_to_disk and arrow_writer.py ArrowWriter, commit
  b7cb10b): dataset_dict.json {"splits": [...]}, and per split a dir of
  data-00000-of-00001.arrow (an Arrow IPC stream whose schema metadata "huggingface" holds the
  features), state.json (_data_files, _fingerprint, _format_*, _output_all_columns, _split) and
  dataset_info.json (features: a List of ClassLabel for the tags).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from tiny_training import TINY_WORDS

SPLIT_SIZES = {"train": 40, "dev": 12, "test": 12}
CHEMICALS = ("aspirin", "insulin", "glucose")
DISEASES = ("tumour", "diabetes")
TAGS = ("O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease")  # the ClassLabel's names
DOCSTART = "-DOCSTART- -X- O O"


def tagged_sentence(rng: random.Random) -> list[tuple[str, str]]:
    """(word, typed BIO tag) pairs: chemicals and diseases tagged, 'chest pain' a two-word
    disease."""
    pairs = []
    for _ in range(rng.randint(3, 9)):
        if rng.random() < 0.15:
            pairs += [("chest", "B-Disease"), ("pain", "I-Disease")]
            continue
        word = rng.choice(TINY_WORDS)
        kind = "Chemical" if word in CHEMICALS else "Disease" if word in DISEASES else None
        pairs.append((word, f"B-{kind}" if kind else "O"))
    return pairs


def write_task_file(path: Path, declaration: dict) -> Path:
    """A task file as YAML (.yaml) or JSON (.json)."""
    import yaml

    text = yaml.safe_dump(declaration) if path.suffix == ".yaml" else json.dumps(declaration)
    path.write_text(text)
    return path


def declare(path: Path, kind: str, source_format: str, files: dict, **fields) -> Path:
    """The task file of one of these sets, its task named as the file (my-ner.yaml: my-ner)."""
    declaration = {"name": path.stem, "kind": kind, "format": source_format, "files": files}
    return write_task_file(path, {**declaration, **fields})


def conll_ner(root: Path, seed: int = 0) -> Path:
    """CoNLL files (token, a POS-like column, tag; two sentences per -DOCSTART- document) and
    their task file, labels inferred."""
    rng = random.Random(seed)
    (root / "data").mkdir(parents=True)
    for split, size in SPLIT_SIZES.items():
        lines = []
        for number in range(size):
            if number % 2 == 0:
                lines += [DOCSTART, ""]
            lines += [f"{word} NN {tag}" for word, tag in tagged_sentence(rng)] + [""]
        (root / "data" / f"{split}.conll").write_text("\n".join(lines))
    files = {split: f"data/{split}.conll" for split in SPLIT_SIZES}
    return declare(root / "my-ner.yaml", "ner", "conll", files, labels="infer")


def csv_classification(root: Path, seed: int = 1) -> Path:
    """sentence,label CSV files (label: whether a chemical is named) and their task file."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, size in SPLIT_SIZES.items():
        with open(root / f"{split}.csv", "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["sentence", "label"])
            for _ in range(size):
                words = [word for word, _ in tagged_sentence(rng)]
                label = "chemical" if set(words) & set(CHEMICALS) else "none"
                writer.writerow([" ".join(words), label])
    return declare(
        root / "my-cls.json",
        "relation",
        "csv",
        {split: f"{split}.csv" for split in SPLIT_SIZES},
        columns={"text": "sentence"},
        labels=["none", "chemical"],
        negative_label="none",
        metric="micro_f1",
    )


def save_to_disk(root: Path, seed: int = 2) -> Path:
    """A DatasetDict of tokens + ner_tags (ClassLabel ids) saved as save_to_disk writes it, and
    the task file naming its split dirs."""
    import pyarrow

    rng = random.Random(seed)
    dataset = root / "ner-dataset"
    dataset.mkdir(parents=True)
    splits = {"train": "train", "dev": "validation", "test": "test"}
    (dataset / "dataset_dict.json").write_text(json.dumps({"splits": list(splits.values())}))
    features = {
        "tokens": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
        "ner_tags": {"feature": {"names": list(TAGS), "_type": "ClassLabel"}, "_type": "List"},
    }
    schema = pyarrow.schema(
        [("tokens", pyarrow.list_(pyarrow.string())), ("ner_tags", pyarrow.list_(pyarrow.int64()))]
    ).with_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    for split, name in splits.items():
        sentences = [tagged_sentence(rng) for _ in range(SPLIT_SIZES[split])]
        table = pyarrow.table(
            {
                "tokens": [[w for w, _ in s] for s in sentences],
                "ner_tags": [[TAGS.index(t) for _, t in s] for s in sentences],
            },
            schema=schema,
        )
        (dataset / name).mkdir()
        shard = "data-00000-of-00001.arrow"
        with pyarrow.OSFile(str(dataset / name / shard), "wb") as sink:
            with pyarrow.RecordBatchStreamWriter(sink, schema) as writer:
                writer.write_table(table)
        state = {
            "_data_files": [{"filename": shard}],
            "_fingerprint": f"{seed:016x}",
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": name,
        }
        (dataset / name / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
        info = {"citation": "", "description": "", "features": features, "homepage": ""}
        (dataset / name / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return declare(
        root / "my-hf-ner.yaml",
        "ner",
        "hf_disk",
        {split: f"ner-dataset/{name}" for split, name in splits.items()},
        columns={"words": "tokens", "tags": "ner_tags"},
        hparams={"lr": 5e-5},
    )
