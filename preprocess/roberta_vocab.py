"""Importing RoBERTa's own vocabulary (encoder.json, vocab.bpe, dict.txt) as a gpt2 vocabulary
dir, for continued pretraining from a RoBERTa checkpoint; with that checkpoint, its vocabulary
rows padded as the imported dict.txt is (a torch checkpoint written beside the vocabulary it
belongs to: the padding rule is preprocess/vocab_dir.py's)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import atomic_file, file_record
from preprocess.vocab_dir import (
    DICT_FILE,
    IMPORTED_CHECKPOINT,
    MADEUP_WORD_PREFIX,
    VOCAB_DIR_FILE,
    VocabDirError,
    dictionary_padding,
    write_manifest,
    write_padded_dict,
)

VOCABULARY_ROWS = ("embed_tokens.weight", "lm_head.weight", "lm_head.bias")


def import_roberta_vocab(
    encoder_json: Path, vocab_bpe: Path, dict_txt: Path, out_dir: Path
) -> dict[str, Any]:
    """Copy and check an existing RoBERTa vocabulary (for continual pretraining from its
    checkpoint)."""
    from fairseq.data import Dictionary

    try:
        encoder = json.loads(Path(encoder_json).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise VocabDirError(f"{encoder_json}: not a readable encoder.json ({error})")
    merge_lines = Path(vocab_bpe).read_text(encoding="utf-8").split("\n")[1:-1]
    for number, merge in enumerate(merge_lines, start=2):
        parts = merge.split()
        if len(parts) != 2 or parts[0] + parts[1] not in encoder:
            raise VocabDirError(
                f"{vocab_bpe}:{number}: {merge!r} is not a merge of two units "
                "into an encoder.json unit"
            )
    dictionary = Dictionary.load(str(dict_txt))
    ids = {str(i) for i in encoder.values()}
    symbols = dictionary.symbols[dictionary.nspecial :]
    stray = [s for s in symbols if s not in ids and not s.startswith(MADEUP_WORD_PREFIX)]
    if stray:
        raise VocabDirError(
            f"{dict_txt}: {len(stray)} symbols are not encoder.json ids, e.g. {stray[:3]}; "
            "is this dict.txt from the same vocabulary?"
        )
    shutil.copyfile(encoder_json, out_dir / "encoder.json")
    shutil.copyfile(vocab_bpe, out_dir / "vocab.bpe")
    padding = write_padded_dict(dict_txt, out_dir / DICT_FILE)
    return {
        "bpe_units": len(encoder),
        "ids_missing_from_dict": len(ids - set(symbols)),
        "padding_entries": padding,
    }


def pad_checkpoint_vocabulary(checkpoint: Path, dict_txt: Path, out: Path) -> int:
    """Write `checkpoint` (a RoBERTa trained with dict_txt + <mask>) to `out` with its vocabulary
    rows laid out for dict_txt padded as write_padded_dict pads it: every row keeps its id, <mask>
    (the last row) moves to the new last row, and the padding rows copy an existing padding entry's
    row (whose logit training pushed down) or are zero. No logit of an existing entry changes. The
    optimizer state is left out (continued pretraining starts its own). Returns the rows added."""
    import torch
    from fairseq.data import Dictionary

    from bio_roberta_core.checkpoints import read_checkpoint

    dictionary = Dictionary.load(str(dict_txt))
    rows, added = len(dictionary) + 1, len(dictionary_padding(dict_txt))
    state = read_checkpoint(checkpoint)
    model = state["model"]
    relaid = [name for name in model if name.endswith(VOCABULARY_ROWS)]
    if not relaid or any(model[name].shape[0] != rows for name in relaid):
        raise VocabDirError(
            f"{checkpoint}: its vocabulary rows "
            f"({', '.join(f'{n} {tuple(model[n].shape)}' for n in relaid)}) are not the {rows} of "
            f"{dict_txt} with <mask>; is it the checkpoint of this dict.txt?"
        )
    padding_rows = [
        i for i, symbol in enumerate(dictionary.symbols) if symbol.startswith(MADEUP_WORD_PREFIX)
    ]
    for name in relaid:
        tensor = model[name]
        fill = (
            tensor[padding_rows[:1]] if padding_rows else tensor.new_zeros((1, *tensor.shape[1:]))
        )
        model[name] = torch.cat([tensor[:-1], fill.expand(added, *tensor.shape[1:]), tensor[-1:]])
    state = {key: value for key, value in state.items() if key != "last_optimizer_state"}
    with atomic_file(out) as handle:
        torch.save(state, handle)
    return added


def import_vocabulary(
    encoder_json: str | os.PathLike,
    vocab_bpe: str | os.PathLike,
    dict_txt: str | os.PathLike,
    out_dir: str | os.PathLike,
    checkpoint: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """A vocabulary dir from RoBERTa's files, dict.txt padded; with `checkpoint` (the RoBERTa
    model.pt of that dict.txt) also OUT/model.pt with its vocabulary rows padded alike, the
    checkpoint that continued pretraining (recipe continue_roberta) starts from."""
    paths = [Path(encoder_json), Path(vocab_bpe), Path(dict_txt)] + (
        [Path(checkpoint)] if checkpoint else []
    )
    for path in paths:
        if not path.is_file():
            raise VocabDirError(f"{path}: no such file (need encoder.json, vocab.bpe and dict.txt)")
    with new_output_dir(out_dir, VOCAB_DIR_FILE) as build:
        counts = import_roberta_vocab(*paths[:3], build.path)
        options = {"imported": True}
        if checkpoint:
            pad_checkpoint_vocabulary(
                Path(checkpoint), Path(dict_txt), build.path / IMPORTED_CHECKPOINT
            )
            options["checkpoint"] = IMPORTED_CHECKPOINT
        return write_manifest(build, "gpt2", [file_record(p) for p in paths], counts, options)
