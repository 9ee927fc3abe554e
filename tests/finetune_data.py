"""Tiny synthetic finetune-bin/<task> directories in the documented layout (docs/task_dirs.md),
built with fairseq's Dictionary and indexed-dataset builders, for the fine-tuning plugin tests.
Words of the tiny pretraining vocabulary stand in for BPE tokens."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import torch
from fairseq.data import Dictionary, indexed_dataset

from bio_roberta.prediction.predictions import predict
from bio_roberta.tasks.kinds import MULTILABEL, label_symbols
from bio_roberta.tasks.registry import get_task
from bio_roberta_core.tagging import convert_tags
from tiny_training import TINY_ROBERTA, TINY_WORDS, fairseq_train, restore_flags

SPLITS = {"train": 48, "valid": 16, "test": 16}
ENTITY_WORDS = ("aspirin", "insulin", "glucose", "tumour", "diabetes")


def write_indexed(path: Path, rows: list[list[int]], vocab_size: int) -> None:
    builder = indexed_dataset.make_builder(f"{path}.bin", "mmap", vocab_size=vocab_size)
    for row in rows:
        builder.add_item(torch.IntTensor(row))
    builder.finalize(f"{path}.idx")


def label_dictionary(root: Path, symbols) -> Dictionary:
    dictionary = Dictionary()
    for symbol in symbols:
        dictionary.add_symbol(symbol)
    (root / "label").mkdir(parents=True, exist_ok=True)
    dictionary.save(str(root / "label" / "dict.txt"))
    return dictionary


def input_dictionary(root: Path, dict_txt: Path) -> Dictionary:
    (root / "input0").mkdir(parents=True, exist_ok=True)
    (root / "input0" / "dict.txt").write_text(dict_txt.read_text())
    return Dictionary.load(str(dict_txt))


def write_manifest(root: Path, task: str, labels, scheme=None) -> None:
    manifest = {"task": task, "labels": list(labels), "counts": SPLITS}
    if scheme:
        manifest["tagging_scheme"] = scheme
    (root / "manifest.json").write_text(json.dumps(manifest))


def ner_sentence(rng: random.Random) -> tuple[list[str], list[str]]:
    """Words and BIO tags: entity words are tagged, 'chest pain' is a two-word entity."""
    words, tags = [], []
    for _ in range(rng.randint(3, 10)):
        if rng.random() < 0.15:
            words += ["chest", "pain"]
            tags += ["B", "I"]
        else:
            word = rng.choice(TINY_WORDS)
            words.append(word)
            tags.append("B" if word in ENTITY_WORDS else "O")
    return words, tags


def build_ner(root: Path, dict_txt: Path, scheme: str = "BIO", seed: int = 0) -> Path:
    """NER finetune-bin of ncbi-disease shape; some words get a second "subword" (<pad> label)."""
    rng = random.Random(seed)
    vocab = input_dictionary(root, dict_txt)
    labels = label_dictionary(root, label_symbols(get_task("ncbi-disease"), scheme))
    for split, n in SPLITS.items():
        tokens, tag_rows, ids, conll = [], [], [], []
        for i in range(n):
            words, tags = ner_sentence(rng)
            row_tokens, row_tags = [], []
            for word, tag in zip(words, convert_tags(tags, scheme)):
                row_tokens.append(vocab.index(word))
                row_tags.append(labels.index(tag))
                if rng.random() < 0.3:  # a continuation subword
                    row_tokens.append(vocab.index(rng.choice(TINY_WORDS)))
                    row_tags.append(labels.pad())
            tokens.append(row_tokens + [vocab.eos()])
            tag_rows.append(row_tags + [labels.eos()])
            ids.append(f"{split}.tsv:{i}")
            conll.append("".join(f"{w}\t{t}\n" for w, t in zip(words, tags)) + "\n")
        write_indexed(root / "input0" / split, tokens, len(vocab))
        write_indexed(root / "label" / split, tag_rows, len(labels))
        (root / f"{split}.ids").write_text("\n".join(ids) + "\n")
        (root / f"{split}.conll").write_text("".join(conll))
    write_manifest(root, "ncbi-disease", labels.symbols[labels.nspecial :], scheme)
    return root


def fine_tune_from(
    data: Path, save_dir: Path, restore_file: Path, *options: str, max_update: int = 8
):
    """fairseq-train from the tiny pretrained checkpoint (32 positions) by the fine-tuning route."""
    return fairseq_train(
        data,
        *TINY_ROBERTA,
        *restore_flags(restore_file),
        "--max-update",
        str(max_update),
        "--batch-size",
        "8",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--seed",
        "1",
        "--max-positions",
        "32",
        "--log-format",
        "simple",
        "--log-interval",
        "1",
        *options,
        check=False,
    )


def fine_tune_selecting_best(
    data: Path,
    tmp_path: Path,
    restore_file: Path,
    metric: str,
    *options: str,
    validate_interval: int,
    max_update: int,
    min_validations: int,
    valid_output: str,
) -> str:
    """fine_tune_from keeping checkpoint_best by the task's `metric`, checked end to end: each
    validation logs it in [0, 100], best_<metric> is their maximum, and checkpoint_best re-scored
    from its valid prediction file (tmp_path/valid_output) gives that number. Returns the log."""
    run = fine_tune_from(
        data,
        tmp_path / "checkpoints",
        restore_file,
        *options,
        "--validate-interval-updates",
        str(validate_interval),
        "--best-checkpoint-metric",
        metric,
        "--maximize-best-checkpoint-metric",
        max_update=max_update,
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    scores = [float(v) for v in re.findall(rf"valid on 'valid' subset .*\| {metric} ([\d.]+)", log)]
    assert len(scores) >= min_validations and all(0 <= s <= 100 for s in scores), log[-3000:]
    best = float(re.findall(rf"best_{metric} ([\d.]+)", log)[-1])
    assert best == max(scores)
    valid = predict(
        tmp_path / "checkpoints" / "checkpoint_best.pt",
        data,
        tmp_path / valid_output,
        split="valid",
    )
    assert 100 * valid.score == pytest.approx(best, rel=1e-5)  # the log prints 6 digits
    return log


def keyword_labels(words: list[str], positives: list[str]) -> list[str]:
    """The labels the keywords of a sentence stand for: ENTITY_WORDS[k] means positives[k mod n]."""
    found = [positives[k % len(positives)] for k, word in enumerate(ENTITY_WORDS) if word in words]
    return list(dict.fromkeys(found))


def build_classification(
    root: Path, dict_txt: Path, task: str, seed: int = 0
) -> dict[str, list[list[str]]]:
    """Single-label (a keyword's label, else the negative one) or multi-label (every keyword's
    label; ids grouped four sentences to an abstract, as HOC's '<PMID>_s<n>') finetune-bin in
    root; returns the label symbols of each split's examples."""
    spec = get_task(task)
    rng = random.Random(seed)
    vocab = input_dictionary(root, dict_txt)
    symbols = label_symbols(spec)
    labels = label_dictionary(root, symbols)
    gold = {}
    for split, n in SPLITS.items():
        tokens, label_rows, ids, gold[split] = [], [], [], []
        for i in range(n):
            words = [rng.choice(TINY_WORDS) for _ in range(rng.randint(3, 12))]
            present = keyword_labels(words, [s for s in symbols if s != spec.negative_label])
            if spec.kind == MULTILABEL:
                row = present
                ids.append(f"{split}{i // 4}_s{i % 4}\t{split}{i // 4}")
            else:
                row = present[:1] or [spec.negative_label]
                ids.append(f"{split}:{i}")
            tokens.append([vocab.index(w) for w in words] + [vocab.eos()])
            label_rows.append([labels.index(s) for s in row] + [labels.eos()])
            gold[split].append(row)
        write_indexed(root / "input0" / split, tokens, len(vocab))
        write_indexed(root / "label" / split, label_rows, len(labels))
        (root / f"{split}.ids").write_text("\n".join(ids) + "\n")
    write_manifest(root, task, symbols)
    return gold
