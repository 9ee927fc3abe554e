"""Open a vocabulary dir as fairseq's own BPE encoder, so every stage encodes text the same way.

Task conversion, export and the equivalence tests use fairseq's encoder object (open_bpe); the
binarizer and vocabulary learning use BatchGPT2Encoder, fairseq's gpt2 BPE with a per-pre-token
cache over whole batches (same ids, several times faster).
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from preprocess.vocab import read_vocab_dir


def bpe_namespace(vocab_dir: str | os.PathLike) -> argparse.Namespace:
    """The options fairseq's --bpe registry reads, e.g. bpe='gpt2', gpt2_encoder_json=..."""
    vocab = read_vocab_dir(vocab_dir)
    return argparse.Namespace(bpe=vocab.kind, **{key: str(path) for key, path in vocab.bpe_files.items()})


def fairseq_bpe_args(vocab_dir: str | os.PathLike) -> list[str]:
    """The same options as fairseq command-line flags (--bpe gpt2 --gpt2-encoder-json ...)."""
    namespace = vars(bpe_namespace(vocab_dir))
    args = ["--bpe", namespace.pop("bpe")]
    for key, value in namespace.items():
        args += ["--" + key.replace("_", "-"), value]
    return args


def open_bpe(vocab_dir: str | os.PathLike) -> Any:
    """fairseq's BPE object (encode/decode/is_beginning_of_word) for the vocabulary dir."""
    from fairseq.data.encoders import build_bpe

    return build_bpe(bpe_namespace(vocab_dir))


def load_dictionary(vocab_dir: str | os.PathLike):
    """The vocabulary's fairseq Dictionary (dict.txt; <mask> is added by the masked_lm task)."""
    from fairseq.data import Dictionary

    return Dictionary.load(str(read_vocab_dir(vocab_dir).dict_path))


class BatchGPT2Encoder:
    """fairseq's gpt2 BPE (its own regex and merge function) over batches of lines, cached per pre-token.

    The ids are fairseq's by construction: each pre-token goes through fairseq's gpt2_bpe_utils
    Encoder exactly as Encoder.encode does. The speed comes from matching the regex once over a
    whole batch and caching a pre-token's ids (Zipf: most pre-tokens repeat), skipping the
    per-byte re-encoding and lookups fairseq repeats for each occurrence.
    """

    # Lines are stripped and non-empty, so the "\n" joining them is always a pre-token by itself.
    LINE_END = -1

    def __init__(self, encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike, max_cache: int = 2_000_000):
        from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

        self.reference = get_encoder(str(encoder_json), str(vocab_bpe))
        self.max_cache = max_cache
        self.cache: dict[str, list[int]] = {}

    def _pretoken_ids(self, pretoken: str) -> list[int]:
        reference = self.reference
        if len(self.cache) >= self.max_cache:  # bound the memory on huge corpora
            self.cache.clear()
            reference.cache.clear()
        byte_text = "".join(reference.byte_encoder[b] for b in pretoken.encode("utf-8"))
        ids = self.cache[pretoken] = [reference.encoder[unit] for unit in reference.bpe(byte_text).split(" ")]
        return ids

    def encode_lines(self, lines: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ids of all lines, each line followed by LINE_END; ids per line) for stripped non-empty lines."""
        if not lines:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        ids: list[int] = []
        extend, cached = ids.extend, self.cache.get
        self.cache.setdefault("\n", [self.LINE_END])
        for pretoken in self.reference.re.findall(self.reference.pat, "\n".join(lines)):
            found = cached(pretoken)
            extend(found if found is not None else self._pretoken_ids(pretoken))
        ids.append(self.LINE_END)
        flat = np.array(ids, dtype=np.int64)
        ends = np.flatnonzero(flat == self.LINE_END)
        if len(ends) != len(lines):
            raise ValueError("encode_lines needs stripped lines without line breaks")
        return flat, np.diff(ends, prepend=-1) - 1
