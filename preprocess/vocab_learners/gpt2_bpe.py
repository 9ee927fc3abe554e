"""The gpt2 learner: GPT-2/RoBERTa byte-level BPE, written as fairseq's encoder.json + vocab.bpe."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from preprocess.gpt2_encoder import BatchGPT2Encoder
from preprocess.text_shards import COUNT_BATCH_CHARS, batched, iter_lines
from preprocess.vocab_dir import DICT_FILE, write_dict


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
    text_counts: Counter = Counter()
    for batch in batched(iter_lines(files, max_lines, text_counts), max_chars=COUNT_BATCH_CHARS):
        ids, _ = encoder.encode_lines(batch)
        id_counts += np.bincount(ids[ids != encoder.LINE_END], minlength=len(vocab))
    counts = Counter({unit: int(count) for unit, count in zip(units, id_counts)})
    return {
        "bpe_units": len(vocab),
        "lines": text_counts["lines"],
        "long_lines_split": text_counts["long_lines_split"],
        **write_dict(out_dir / DICT_FILE, units, counts),
    }
