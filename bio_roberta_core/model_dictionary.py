"""The dictionary a RoBERTa model is trained with: the fairseq Dictionary its embedding rows index,
where a task's data keeps its dict.txt, and the record of it that checkpoints carry."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from bio_roberta_core.provenance import sha256_file

MASK = "<mask>"


def load_model_dictionary(dict_txt: str | os.PathLike):
    """dict.txt with <mask> appended, as fairseq's masked_lm and sentence_prediction tasks load it
    (and ours): one entry per row of the model's embedding."""
    from fairseq.data import Dictionary

    dictionary = Dictionary.load(str(dict_txt))
    dictionary.add_symbol(MASK)
    return dictionary


def training_dictionary(data: str) -> Path:
    """The dict.txt a fairseq task reads from its data option: <first dir>/input0/dict.txt for the
    fine-tuning layout (finetune-bin, sentence_prediction), else <first dir>/dict.txt (masked
    LM)."""
    first = Path(data.split(os.pathsep)[0])
    return (
        first / "input0" / "dict.txt"
        if (first / "input0" / "dict.txt").exists()
        else first / "dict.txt"
    )


def dictionary_record(data: str) -> Optional[dict[str, str]]:
    """Path and sha256 of the dict.txt a model is trained with (None where there is none), which its
    checkpoints carry as extra_state["dictionary"] so an export can check the vocabulary it is
    given."""
    path = training_dictionary(data)
    return {"path": str(path.resolve()), "sha256": sha256_file(path)} if path.is_file() else None
