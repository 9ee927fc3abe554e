"""Vocabulary dirs: the contract between vocabulary learning, binarization, task conversion and
export.

A vocabulary dir holds one BPE model plus fairseq's dict.txt and a manifest.json naming its kind:
    gpt2           encoder.json + vocab.bpe (byte-level BPE, RoBERTa's own format)
    sentencepiece  sentencepiece.model (BPE or unigram; BioMegatron-style ablations)
    fastbpe        codes (subword-nmt style BPE over whitespace words)
dict.txt maps what the BPE emits (BPE ids as strings for gpt2, pieces otherwise) to fairseq
indices, counts from the training text, most frequent first. Every unit the BPE can emit is
listed, so nothing the encoder writes becomes <unk> (unseen units get count 0).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from bio_roberta_core.provenance import (
    atomic_file,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    environment_record,
    file_record,
)
from bio_roberta_core.vocab_files import KIND_FILES
from preprocess.gpt2_encoder import BatchGPT2Encoder, read_dictionary_indices
from preprocess.text_shards import TextDirError, finished_manifest

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
DICT_FILE = "dict.txt"
TRAIN_SPLIT = "train"
COUNT_BATCH_LINES = 10_000
# fairseq's RoBERTa dict.txt pads the GPT-2 vocabulary with these to a multiple of 8.
MADEUP_WORD_PREFIX = "madeupword"
# Our dictionaries have a multiple of this many entries, fairseq's 4 specials and the <mask> that
# the masked-LM and fine-tuning tasks append included: the vocabulary GEMMs of the LM head then run
# on aligned sizes (RoBERTa's 50,265 entries took a slow unaligned kernel, 12% of a step on an
# H100).
DICT_MULTIPLE = 64


class VocabDirError(ValueError):
    """A vocabulary dir or its inputs are missing or inconsistent."""


@dataclass(frozen=True)
class VocabularyDir:
    path: Path
    kind: str
    manifest: dict[str, Any]

    @property
    def bpe_files(self) -> dict[str, Path]:
        return {key: self.path / name for key, name in KIND_FILES[self.kind].items()}

    @property
    def dict_path(self) -> Path:
        return self.path / DICT_FILE


def read_vocab_dir(vocab_dir: str | os.PathLike) -> VocabularyDir:
    """Read and check a vocabulary dir: manifest, known kind, every file present."""
    path = Path(vocab_dir)
    manifest_path = path / MANIFEST
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
    for file in [*vocab.bpe_files.values(), vocab.dict_path]:
        if not file.is_file():
            raise VocabDirError(f"{file}: missing from the {kind} vocabulary dir {path}")
    return vocab


def shard_files(text_dir: Path, split: str) -> list[Path]:
    """The `split` shards of a text-shard dir ({split}.NNNNN.txt, see preprocess/text_shards.py), in
    order."""
    return sorted(p for p in text_dir.iterdir() if p.is_file() and p.name.startswith(split + "."))


def text_files(inputs: Iterable[str | os.PathLike], split: str = TRAIN_SPLIT) -> list[Path]:
    """Files named by `inputs`: a text-shard dir contributes its `split` shards, a file itself.
    A dir whose parse did not finish (no manifest.json) is refused, as binarize refuses it: its
    shards are those of another run, or only some of them."""
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            try:
                finished_manifest(item)
            except TextDirError as error:
                raise VocabDirError(str(error)) from None
            shards = shard_files(item, split)
            if not shards:
                raise VocabDirError(f"{item}: no {split}.* text shards in this directory")
            files.extend(shards)
        elif item.is_file():
            files.append(item)
        else:
            raise VocabDirError(f"{item}: no such file or directory")
    return files


def iter_lines(files: Iterable[Path], max_lines: int | None = None) -> Iterator[str]:
    """Non-empty lines, stripped as fairseq's multiprocessing_bpe_encoder strips them."""
    taken = 0
    for file in files:
        with open(file, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                if max_lines is not None and taken >= max_lines:
                    return
                taken += 1
                yield line


def batched(lines: Iterable[str], size: int = COUNT_BATCH_LINES) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def dictionary_padding(dict_txt: Path) -> list[str]:
    """The madeupwordNNNN entries (fairseq's padding entries, count 0) that dict_txt needs so that
    its dictionary with <mask> has a multiple of DICT_MULTIPLE entries; none when it already has.
    Appended at the end they leave every other id as it is."""
    indices, size = read_dictionary_indices(dict_txt)  # as fairseq reads it, without importing it
    needed = -(size + 1) % DICT_MULTIPLE
    names = (f"{MADEUP_WORD_PREFIX}{i:04d}" for i in range(size + DICT_MULTIPLE))
    return [name for name in names if name not in indices][:needed]


def write_padded_dict(source: Path, target: Path) -> int:
    """Copy dict.txt from source to target (which may be source itself) with its dictionary_padding
    appended; returns the number of entries added."""
    text = Path(source).read_bytes()
    padding = dictionary_padding(Path(source))
    if text and not text.endswith(b"\n"):
        text += b"\n"
    atomic_write_bytes(target, text + "".join(f"{name} 0\n" for name in padding).encode("utf-8"))
    return len(padding)


def write_dict(path: Path, units: list[str], counts: Counter) -> None:
    """fairseq dict.txt: every unit, most frequent first (ties in vocabulary order)."""
    order = sorted(range(len(units)), key=lambda i: (-counts[units[i]], i))
    atomic_write_text(path, "".join(f"{units[i]} {counts[units[i]]}\n" for i in order))


def learn_byte_bpe(
    files: list[Path], out_dir: Path, vocab_size: int, min_frequency: int, max_lines: int | None
) -> dict[str, Any]:
    """GPT-2/RoBERTa byte-level BPE (GPT-2 pre-tokenisation regex, no prefix space) as fairseq gpt2
    files."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    # HF tokenizers' trainer, set up as GPT-2: its regex (use_regex), no prefix space, all 256 bytes
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    # No special tokens in the BPE: fairseq's Dictionary adds <s> <pad> </s> <unk> (and the task
    # <mask>); a special token here would make "<s>" in text encode differently from fairseq's.
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=True,
    )
    tokenizer.train_from_iterator(iter_lines(files, max_lines), trainer=trainer)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        tokenizer.model.save(tmp)
        shutil.move(os.path.join(tmp, "vocab.json"), out_dir / "encoder.json")
        shutil.move(os.path.join(tmp, "merges.txt"), out_dir / "vocab.bpe")
    vocab = tokenizer.get_vocab()
    units = [str(i) for i in range(len(vocab))]
    encoder = BatchGPT2Encoder(out_dir / "encoder.json", out_dir / "vocab.bpe")
    id_counts = np.zeros(len(vocab), dtype=np.int64)
    lines = 0
    for batch in batched(iter_lines(files, max_lines)):
        lines += len(batch)
        ids, _ = encoder.encode_lines(batch)
        id_counts += np.bincount(ids[ids != encoder.LINE_END], minlength=len(vocab))
    counts = Counter({unit: int(count) for unit, count in zip(units, id_counts)})
    write_dict(out_dir / DICT_FILE, units, counts)
    return {
        "bpe_units": len(vocab),
        "lines": lines,
        "tokens": sum(counts.values()),
        "units_never_seen": sum(1 for u in units if counts[u] == 0),
    }


def learn_sentencepiece(
    files: list[Path],
    out_dir: Path,
    vocab_size: int,
    model_type: str,
    max_lines: int | None,
    character_coverage: float,
) -> dict[str, Any]:
    """SentencePiece BPE or unigram model; its pieces (minus its own control symbols) form
    dict.txt."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter_lines(files, max_lines),
        model_prefix=str(out_dir / "sentencepiece"),
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        num_threads=os.cpu_count() or 1,
        train_extremely_large_corpus=False,
        minloglevel=2,
    )
    (out_dir / "sentencepiece.vocab").unlink()
    processor = spm.SentencePieceProcessor(model_file=str(out_dir / "sentencepiece.model"))
    units = [
        processor.id_to_piece(i)
        for i in range(processor.get_piece_size())
        if not (processor.is_control(i) or processor.is_unknown(i))
    ]
    counts: Counter = Counter()
    lines = 0
    for batch in batched(iter_lines(files, max_lines)):
        lines += len(batch)
        for pieces in processor.encode(batch, out_type=str):
            counts.update(pieces)
    known = set(units)
    unknown = sum(n for piece, n in counts.items() if piece not in known)
    write_dict(out_dir / DICT_FILE, units, counts)
    return {
        "bpe_units": processor.get_piece_size(),
        "lines": lines,
        "tokens": sum(counts.values()),
        "unknown_tokens": unknown,
        "units_never_seen": sum(1 for u in units if counts[u] == 0),
    }


def learn_fastbpe(
    files: list[Path], out_dir: Path, vocab_size: int, min_frequency: int, max_lines: int | None
) -> dict[str, Any]:
    """subword-nmt style BPE over whitespace words (`</w>` marks word ends), written as fastBPE
    codes.

    The merges are learned with HF tokenizers' BPE trainer (fastBPE's Python module only applies
    codes). The count column of `codes` is how often each merge fires on the training words.
    """
    import fastBPE
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        end_of_word_suffix="</w>",
        show_progress=True,
        special_tokens=[],
    )
    tokenizer.train_from_iterator(iter_lines(files, max_lines), trainer=trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]

    word_counts: Counter = Counter()
    lines = 0
    for line in iter_lines(files, max_lines):
        lines += 1
        word_counts.update(line.split())
    # Apply the merges with fastBPE itself to the distinct words; rebuild which merges fired.
    produced_by = {left + right: (left, right) for left, right in merges}
    codes_path = out_dir / "codes"
    atomic_write_text(codes_path, "".join(f"{left} {right} 0\n" for left, right in merges))
    words = list(word_counts)
    segmented = fastBPE.fastBPE(str(codes_path)).apply(words) if words else []
    merge_counts: Counter = Counter()
    unit_counts: Counter = Counter()
    for word, pieces in zip(words, segmented):
        frequency = word_counts[word]
        units = pieces.split(" ")
        for unit in units:
            unit_counts[unit] += frequency
        pending = [unit[:-2] if unit.endswith("@@") else unit + "</w>" for unit in units]
        while pending:
            pair = produced_by.get(pending.pop())
            if pair is not None:
                merge_counts[pair] += frequency
                pending.extend(pair)
    atomic_write_text(
        codes_path,
        "".join(f"{left} {right} {merge_counts[(left, right)]}\n" for left, right in merges),
    )
    # Units fastBPE can emit: every symbol of the merge table, as word-internal ("@@") or final.
    symbols = {s for pair in merges for s in pair} | {left + right for left, right in merges}
    units = sorted({s[:-4] if s.endswith("</w>") else s + "@@" for s in symbols} | set(unit_counts))
    write_dict(out_dir / DICT_FILE, units, unit_counts)
    return {
        "bpe_units": len(merges),
        "lines": lines,
        "tokens": sum(unit_counts.values()),
        "units_never_seen": sum(1 for u in units if unit_counts[u] == 0),
    }


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
    if kind not in KIND_FILES:
        raise VocabDirError(f"unknown vocabulary kind {kind!r}; choose one of {sorted(KIND_FILES)}")
    files = text_files(inputs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if kind == "gpt2":
        counts = learn_byte_bpe(files, out, vocab_size, min_frequency, max_lines)
        options = {"vocab_size": vocab_size, "min_frequency": min_frequency}
    elif kind == "sentencepiece":
        counts = learn_sentencepiece(
            files, out, vocab_size, model_type, max_lines, character_coverage
        )
        options = {
            "vocab_size": vocab_size,
            "model_type": model_type,
            "character_coverage": character_coverage,
        }
    else:
        counts = learn_fastbpe(files, out, vocab_size, min_frequency, max_lines)
        options = {"vocab_size": vocab_size, "min_frequency": min_frequency}
    options["max_lines"] = max_lines
    if counts["lines"] == 0:
        raise VocabDirError(
            f"no non-empty lines in {[str(f) for f in files]}; nothing to learn from"
        )
    counts["padding_entries"] = write_padded_dict(out / DICT_FILE, out / DICT_FILE)
    return write_manifest(out, kind, [file_record(f) for f in files], counts, options)


VOCABULARY_ROWS = ("embed_tokens.weight", "lm_head.weight", "lm_head.bias")
IMPORTED_CHECKPOINT = "model.pt"


def pad_checkpoint_vocabulary(checkpoint: Path, dict_txt: Path, out: Path) -> int:
    """Write `checkpoint` (a RoBERTa trained with dict_txt + <mask>) to `out` with its vocabulary
    rows laid out for dict_txt padded as write_padded_dict pads it: every row keeps its id, <mask>
    (the last row) moves to the new last row, and the padding rows copy an existing padding entry's
    row (whose logit training pushed down) or are zero. No logit of an existing entry changes. The
    optimizer state is left out (continued pretraining starts its own). Returns the rows added."""
    import torch
    from fairseq.data import Dictionary

    from bio_roberta_core.checkpoints import CheckpointError, read_checkpoint

    dictionary = Dictionary.load(str(dict_txt))
    rows, added = len(dictionary) + 1, len(dictionary_padding(dict_txt))
    try:
        state = read_checkpoint(checkpoint)
    except CheckpointError as error:
        raise VocabDirError(str(error)) from None
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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [Path(encoder_json), Path(vocab_bpe), Path(dict_txt)] + (
        [Path(checkpoint)] if checkpoint else []
    )
    for path in paths:
        if not path.is_file():
            raise VocabDirError(f"{path}: no such file (need encoder.json, vocab.bpe and dict.txt)")
    counts = import_roberta_vocab(*paths[:3], out)
    options = {"imported": True}
    if checkpoint:
        pad_checkpoint_vocabulary(Path(checkpoint), Path(dict_txt), out / IMPORTED_CHECKPOINT)
        options["checkpoint"] = IMPORTED_CHECKPOINT
    return write_manifest(out, "gpt2", [file_record(p) for p in paths], counts, options)


def write_manifest(
    out: Path, kind: str, inputs: list[dict], counts: dict, options: dict
) -> dict[str, Any]:
    files = {key: name for key, name in KIND_FILES[kind].items()}
    files["dict"] = DICT_FILE
    with open(out / DICT_FILE, encoding="utf-8") as handle:
        dict_size = sum(1 for _ in handle)
    manifest = {
        "kind": kind,
        "files": files,
        "dict_size": dict_size,
        "inputs": inputs,
        "outputs": [file_record(out / name) for name in files.values()],
        "counts": counts,
        "options": options,
        **environment_record(),
    }
    atomic_write_json(out / MANIFEST, manifest)
    logger.info(
        "%s vocabulary in %s: %d BPE units, %d dict.txt entries",
        kind,
        out,
        counts["bpe_units"],
        dict_size,
    )
    return manifest
