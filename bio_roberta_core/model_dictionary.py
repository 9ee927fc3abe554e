"""The dictionary a RoBERTa model is trained with: the fairseq Dictionary its embedding rows index,
where a task's data keeps its dict.txt, the record of it that checkpoints carry, and where the
dict.txt of a given checkpoint is."""

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


def recorded_dictionary(state: dict) -> Optional[dict[str, str]]:
    """The dictionary_record a checkpoint's extra_state carries (our training runs'), or None."""
    return (state.get("extra_state") or {}).get("dictionary")


def checkpoint_dictionaries(checkpoint: str | os.PathLike, state: dict) -> list[Path]:
    """Where the dict.txt whose entries a checkpoint's embedding rows are may be, in the order to
    look: beside it (fairseq's from_pretrained layout; import-hf and learn-vocab --checkpoint
    write model.pt there), the one its extra_state records (our training runs' checkpoints), its
    training data's (cfg.task.data)."""
    candidates = [Path(checkpoint).parent / "dict.txt"]
    recorded = recorded_dictionary(state)
    if recorded:
        candidates.append(Path(recorded["path"]))
    task = (state.get("cfg") or {}).get("task") or {}
    data = task.get("data") if hasattr(task, "get") else getattr(task, "data", None)
    if data:
        candidates.append(training_dictionary(str(data)))
    return list(dict.fromkeys(candidates))


def first_difference(ours, theirs) -> str:
    """Where two fairseq dictionaries stop agreeing, for an error message."""
    for index, (a, b) in enumerate(zip(ours.symbols, theirs.symbols)):
        if a != b:
            return f"entry {index} is {a!r} in the data but {b!r} in the model's"
    return f"the data has {len(ours)} entries, the model's {len(theirs)}"
