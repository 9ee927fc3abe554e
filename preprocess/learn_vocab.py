"""Learning a vocabulary dir (`bio-roberta learn-vocab`): the learners, one per kind, and the run
that gives one the text files and writes the dir around what it learns (dict.txt padded, the
manifest last). A new kind is one row in LEARNERS and its module in preprocess/vocab_learners/,
with its files named in bio_roberta_core.vocab_files.KIND_FILES."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Callable

from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import file_record, kill_point
from preprocess.text_shards import MAX_LEARN_LINE_CHARS, text_files
from preprocess.vocab_dir import (
    DICT_FILE,
    VOCAB_DIR_FILE,
    VocabDirError,
    write_manifest,
    write_padded_dict,
)
from preprocess.vocab_learners.fastbpe import learn_fastbpe
from preprocess.vocab_learners.gpt2_bpe import learn_byte_bpe
from preprocess.vocab_learners.sentencepiece_bpe import learn_sentencepiece

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Learner:
    """learn(files, out_dir, max_lines=..., **options) writes the kind's BPE files and dict.txt
    into out_dir and returns the manifest's counts; `options` are the learn_vocabulary options it
    takes, recorded in the manifest in this order."""

    learn: Callable[..., dict[str, Any]]
    options: tuple[str, ...]


# Vocabulary kind -> its learner; `learn-vocab --kind` offers these (every kind of
# bio_roberta_core.vocab_files but the IMPORTED_KINDS, which import-hf writes).
LEARNERS = {
    "gpt2": Learner(learn_byte_bpe, ("vocab_size", "min_frequency")),
    "sentencepiece": Learner(
        learn_sentencepiece, ("vocab_size", "model_type", "character_coverage")
    ),
    "fastbpe": Learner(learn_fastbpe, ("vocab_size", "min_frequency")),
}


def learn_vocabulary(
    kind: str,
    inputs: list[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    vocab_size: int = 50_000,
    min_frequency: int = 2,
    max_lines: int | None = None,
    model_type: str = "bpe",
    character_coverage: float = 0.9999,
) -> dict[str, Any]:
    """Learn a vocabulary of `kind` over text shards/files and write the vocabulary dir +
    manifest."""
    if kind not in LEARNERS:
        raise VocabDirError(f"unknown vocabulary kind {kind!r}; choose one of {sorted(LEARNERS)}")
    learner = LEARNERS[kind]
    given = {
        "vocab_size": vocab_size,
        "min_frequency": min_frequency,
        "model_type": model_type,
        "character_coverage": character_coverage,
    }
    options = {name: given[name] for name in learner.options}
    files = text_files(inputs)
    with new_output_dir(out_dir, VOCAB_DIR_FILE) as build:
        out = build.path
        counts = learner.learn(files, out, max_lines=max_lines, **options)
        if counts["lines"] == 0:
            raise VocabDirError(
                f"no non-empty lines in {[str(f) for f in files]}; nothing to learn from"
            )
        kill_point("learn_vocab:learned")
        if counts["long_lines_split"]:
            logger.warning(
                "%d lines over %d characters were cut at spaces into pieces for the learner",
                counts["long_lines_split"],
                MAX_LEARN_LINE_CHARS,
            )
        counts["padding_entries"] = write_padded_dict(out / DICT_FILE, out / DICT_FILE)
        options["max_lines"] = max_lines
        return write_manifest(build, kind, [file_record(f) for f in files], counts, options)
