"""Reading one split of a finetune-bin/<task> directory (layout: sequence_labeling.py's docstring)."""
from __future__ import annotations

import os

from fairseq.data import Dictionary, PrependTokenDataset, data_utils


def load_input_dictionary(data: str) -> Dictionary:
    """input0/dict.txt plus <mask>, as masked_lm and sentence_prediction load it (same embeddings)."""
    dictionary = Dictionary.load(_require(data, "input0", "dict.txt"))
    dictionary.add_symbol("<mask>")
    return dictionary


def load_label_dictionary(data: str) -> Dictionary:
    """label/dict.txt as written: class id k is its k-th symbol after the special ones."""
    dictionary = Dictionary.load(_require(data, "label", "dict.txt"))
    if len(dictionary) == dictionary.nspecial:
        raise ValueError(f"{os.path.join(data, 'label', 'dict.txt')} lists no labels")
    return dictionary


def load_split(data: str, key: str, split: str, dictionary: Dictionary, combine: bool = False):
    """The indexed dataset <data>/<key>/<split>.{bin,idx}."""
    path = os.path.join(data, key, split)
    dataset = data_utils.load_indexed_dataset(path, dictionary, combine=combine)
    if dataset is None:
        raise FileNotFoundError(
            f"{path}.bin/.idx not found: convert the task first (bio_roberta/tasks/convert.py)"
        )
    return dataset


def source_tokens(input0, dictionary: Dictionary):
    """<s> + the example's BPE tokens + </s>, the input RoBERTa was pretrained on."""
    return PrependTokenDataset(input0, dictionary.bos())


def read_ids(data: str, split: str, expected: int) -> list[tuple[str, str]]:
    """(example id, group id) per line of <split>.ids; the group is the example id if absent."""
    path = _require(data, f"{split}.ids")
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            columns = line.rstrip("\n").split("\t")
            if len(columns) not in (1, 2) or not columns[0]:
                raise ValueError(f"{path}:{len(rows) + 1}: expected '<example id>[\\t<group id>]'")
            rows.append((columns[0], columns[-1]))
    if len(rows) != expected:
        raise ValueError(f"{path} has {len(rows)} lines but the split holds {expected} examples")
    return rows


def _require(data: str, *parts: str) -> str:
    path = os.path.join(data, *parts)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: is {data} a finetune-bin/<task> directory?")
    return path
