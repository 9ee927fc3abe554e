"""The fastbpe learner: subword-nmt style BPE over whitespace words, written as fastBPE codes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from bio_roberta_core.provenance import atomic_write_text
from preprocess.text_shards import iter_lines
from preprocess.vocab_dir import DICT_FILE, write_dict


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
    text_counts: Counter = Counter()
    for line in iter_lines(files, max_lines, text_counts):
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
    return {
        "bpe_units": len(merges),
        "lines": text_counts["lines"],
        "long_lines_split": text_counts["long_lines_split"],
        **write_dict(out_dir / DICT_FILE, units, unit_counts),
    }
