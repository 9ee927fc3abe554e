"""Open a vocabulary dir (a VocabularyDir that read_vocab_dir checked) as fairseq's own BPE
encoder, so every stage encodes text the same way.

Task conversion, export and the equivalence tests use fairseq's encoder object (open_bpe); the
binarizer and vocabulary learning use the same BPE faster, without importing fairseq
(gpt2_encoder.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from bio_roberta_core.vocab_files import IMPORTED_KINDS, bpe_options
from preprocess.vocab_dir import VocabularyDir


def bpe_namespace(vocab: VocabularyDir) -> argparse.Namespace:
    """The options fairseq's --bpe registry reads, e.g. bpe='gpt2', gpt2_encoder_json=..."""
    return bpe_options(vocab.kind, vocab.path)


def open_bpe(vocab: VocabularyDir) -> Any:
    """fairseq's BPE object (encode/decode/is_beginning_of_word) for the vocabulary dir."""
    from fairseq.data.encoders import build_bpe

    if vocab.kind in IMPORTED_KINDS:  # no fairseq --bpe: the imported model's own tokenizer
        from preprocess.wordpiece import open_encoder

        (tokenizer_json,) = vocab.bpe_files.values()
        return open_encoder(vocab.kind, tokenizer_json, vocab.manifest.get("options", {}))
    return build_bpe(bpe_namespace(vocab))


def load_dictionary(vocab: VocabularyDir):
    """The vocabulary's fairseq Dictionary (dict.txt; <mask> is added by the masked_lm task)."""
    from fairseq.data import Dictionary

    return Dictionary.load(str(vocab.dict_path))
