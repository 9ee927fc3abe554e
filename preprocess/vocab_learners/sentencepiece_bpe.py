"""The sentencepiece learner: a SentencePiece BPE or unigram model (sentencepiece.model)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from preprocess.text_shards import COUNT_BATCH_CHARS, batched, iter_lines
from preprocess.vocab_dir import DICT_FILE, write_dict


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
    text_counts: Counter = Counter()
    for batch in batched(iter_lines(files, max_lines, text_counts), max_chars=COUNT_BATCH_CHARS):
        for pieces in processor.encode(batch, out_type=str):
            counts.update(pieces)
    known = set(units)
    unknown = sum(n for piece, n in counts.items() if piece not in known)
    return {
        "bpe_units": processor.get_piece_size(),
        "lines": text_counts["lines"],
        "long_lines_split": text_counts["long_lines_split"],
        "unknown_tokens": unknown,
        **write_dict(out_dir / DICT_FILE, units, counts),
    }
