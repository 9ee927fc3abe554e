"""Vocabulary dirs: the contract between vocabulary learning, binarization, task conversion and
export. This module reads and checks one (read_vocab_dir -> VocabularyDir) and holds what every
writer shares: the dict.txt rules and the manifest. The learners are preprocess/vocab_learners/
(learn_vocabulary in preprocess/learn_vocab.py), the RoBERTa import preprocess/roberta_vocab.py.

A vocabulary dir holds one BPE model plus fairseq's dict.txt and a manifest.json naming its kind:
    gpt2           encoder.json + vocab.bpe (byte-level BPE, RoBERTa's own format)
    sentencepiece  sentencepiece.model (BPE or unigram; BioMegatron-style ablations)
    fastbpe        codes (subword-nmt style BPE over whitespace words)
dict.txt maps what the BPE emits (BPE ids as strings for gpt2, pieces otherwise) to fairseq
indices, counts from the training text, most frequent first. Every unit the BPE can emit is
listed, so nothing the encoder writes becomes <unk> (unseen units get count 0).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.output_dir import OutputBuild
from bio_roberta_core.provenance import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    environment_record,
    sha256_file,
)
from bio_roberta_core.vocab_files import KIND_FILES
from preprocess.gpt2_encoder import read_dictionary_indices

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
DICT_FILE = "dict.txt"
# fairseq's RoBERTa dict.txt pads the GPT-2 vocabulary with these to a multiple of 8.
MADEUP_WORD_PREFIX = "madeupword"
# Our dictionaries have a multiple of this many entries, fairseq's 4 specials and the <mask> that
# the masked-LM and fine-tuning tasks append included: the vocabulary GEMMs of the LM head then run
# on aligned sizes (RoBERTa's 50,265 entries took a slow unaligned kernel, 12% of a step on an
# H100).
DICT_MULTIPLE = 64
# The RoBERTa checkpoint an imported vocabulary dir may hold, its rows padded as dict.txt is
IMPORTED_CHECKPOINT = "model.pt"
# What a vocabulary dir holds (and the tmp* dir of a learner killed before its files moved in)
VOCAB_DIR_FILE = re.compile(
    "^("
    + "|".join(
        re.escape(name)
        for name in [MANIFEST, DICT_FILE, IMPORTED_CHECKPOINT]
        + [name for files in KIND_FILES.values() for name in files.values()]
    )
    + r"|tmp\w+)$"
)


class VocabDirError(BioRobertaError):
    """A vocabulary dir or its inputs are missing or inconsistent."""


@dataclass(frozen=True)
class VocabularyDir:
    """A vocabulary dir as read_vocab_dir read and checked it: a run passes this on, not the path,
    so it reads the dir once."""

    path: Path
    kind: str
    manifest: dict[str, Any]

    @property
    def bpe_files(self) -> dict[str, Path]:
        return {key: self.path / name for key, name in KIND_FILES[self.kind].items()}

    @property
    def dict_path(self) -> Path:
        return self.path / DICT_FILE

    @property
    def checkpoint(self) -> Optional[Path]:
        """The model the dir was imported with (import-hf, learn-vocab --import --checkpoint)."""
        name = self.manifest.get("options", {}).get("checkpoint")
        return self.path / name if name else None


def read_vocab_dir(vocab_dir: str | os.PathLike) -> VocabularyDir:
    """Read and check a vocabulary dir: manifest, known kind, every file present."""
    path = Path(vocab_dir)
    manifest_path = path / MANIFEST
    if path.is_file():
        beside = f" ({path.parent})" if (path.parent / MANIFEST).is_file() else ""
        raise VocabDirError(
            f"--vocab {path} is a file; it takes the vocabulary directory{beside} that "
            "`bio-roberta learn-vocab` wrote (manifest.json, dict.txt and the BPE files)"
        )
    if not manifest_path.is_file():
        raise VocabDirError(
            f"{manifest_path}: no vocabulary manifest; create the dir with "
            "`bio-roberta learn-vocab`"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise VocabDirError(
            f"{manifest_path}: not valid JSON ({error}); re-run `bio-roberta learn-vocab`"
        )
    kind = manifest.get("kind")
    if kind not in KIND_FILES:
        raise VocabDirError(f"{manifest_path}: kind {kind!r} is not one of {sorted(KIND_FILES)}")
    vocab = VocabularyDir(path=path, kind=kind, manifest=manifest)
    recorded = {
        Path(output["path"]).name: output["sha256"] for output in manifest.get("outputs", [])
    }
    for file in [*vocab.bpe_files.values(), vocab.dict_path]:
        if not file.is_file():
            raise VocabDirError(f"{file}: missing from the {kind} vocabulary dir {path}")
        if file.name in recorded and sha256_file(file) != recorded[file.name]:
            raise VocabDirError(
                f"{file}: not the file {manifest_path} lists (another sha256): the dir mixes two "
                "vocabularies; re-run `bio-roberta learn-vocab` into it"
            )
    return vocab


def dictionary_padding(dict_txt: Path, at_least: int = 0) -> list[str]:
    """The madeupwordNNNN entries (fairseq's padding entries, count 0) that dict_txt needs so that
    its dictionary with <mask> has a multiple of DICT_MULTIPLE entries, and at least at_least of
    them (an import's embedding rows that no token names: bio_roberta/hf/import_hf.py); none when
    it already has. Appended at the end they leave every other id as it is."""
    indices, size = read_dictionary_indices(dict_txt)  # as fairseq reads it, without importing it
    needed = at_least + -(size + 1 + at_least) % DICT_MULTIPLE
    names = (f"{MADEUP_WORD_PREFIX}{i:04d}" for i in itertools.count())
    return list(itertools.islice((name for name in names if name not in indices), needed))


def write_padded_dict(source: Path, target: Path, at_least: int = 0) -> int:
    """Copy dict.txt from source to target (which may be source itself) with its dictionary_padding
    appended; returns the number of entries added."""
    text = Path(source).read_bytes()
    padding = dictionary_padding(Path(source), at_least)
    if text and not text.endswith(b"\n"):
        text += b"\n"
    atomic_write_bytes(target, text + "".join(f"{name} 0\n" for name in padding).encode("utf-8"))
    return len(padding)


def write_dict(path: Path, units: list[str], counts: Counter) -> dict[str, int]:
    """fairseq dict.txt: every unit, most frequent first (ties in vocabulary order). Returns the
    manifest's counts of the training text's `tokens` and the `units_never_seen` in it."""
    order = sorted(range(len(units)), key=lambda i: (-counts[units[i]], i))
    atomic_write_text(path, "".join(f"{units[i]} {counts[units[i]]}\n" for i in order))
    return {
        "tokens": sum(counts.values()),
        "units_never_seen": sum(1 for unit in units if counts[unit] == 0),
    }


def write_manifest(
    build: OutputBuild, kind: str, inputs: list[dict], counts: dict, options: dict
) -> dict[str, Any]:
    """manifest.json of the vocabulary dir being built, its last file."""
    out = build.path
    files = {key: name for key, name in KIND_FILES[kind].items()}
    files["dict"] = DICT_FILE
    with open(out / DICT_FILE, encoding="utf-8") as handle:
        dict_size = sum(1 for _ in handle)
    manifest = {
        "kind": kind,
        "files": files,
        "dict_size": dict_size,
        "inputs": inputs,
        "outputs": [build.file_record(name) for name in files.values()],
        "counts": counts,
        "options": options,
        **environment_record(),
    }
    atomic_write_json(out / MANIFEST, manifest)
    logger.info(
        "%s vocabulary in %s: %d BPE units, %d dict.txt entries",
        kind,
        build.target,
        counts["bpe_units"],
        dict_size,
    )
    return manifest
