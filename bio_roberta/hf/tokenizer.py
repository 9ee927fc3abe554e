"""Hugging Face tokenizer files whose ids are a fairseq model's dictionary ids (an imported model's:
its own ids).

fairseq encodes text with the vocabulary's BPE and looks what it emits up in dict.txt, whose order
is its own (4 specials first, then the symbols by frequency, madeupword padding, <mask> added last
by the task), so the tokenizer's vocabulary is the dictionary, not the BPE's own ids:

gpt2: the GPT-2 byte-level BPE (encoder.json: token -> BPE id) emits BPE ids as strings, so the
exported vocab.json (RobertaTokenizerFast) maps each BPE token to the *dictionary* index of its
BPE id. fairseq would turn a BPE id missing from dict.txt into <unk>; a BPE tokenizer cannot (its
merges work on ids, so every token needs its own), so such a dict.txt is refused.

sentencepiece: the pieces of a SentencePiece BPE or unigram model are looked up in dict.txt.
tokenizer.json (PreTrainedTokenizerFast, AutoTokenizer) holds a tokenizers Unigram model with the
spm scores, or a BPE model with the merges the spm pieces imply, over the dictionary's entries,
behind the spm model's own normalizer (its precompiled NFKC rules, whitespace stripping and
collapsing, the "▁" prefix). Dictionary entries that are no pieces (specials, madeupword padding,
<mask>) are never produced; spm pieces missing from dict.txt are refused as for gpt2. The .model
file is copied for reference; its ids are not the model's.

An imported model (import-hf) is the exception: its export gives back the model's own ids and
vocabulary size (bio_roberta/hf/original_ids.py), so its tokenizer is the model's own. wordpiece
and hf_bpe (an imported BERT family's or ModernBERT's, preprocess/wordpiece.py): the model's
tokenizer.json as imported (normalizer, pre-tokenizer, WordPiece or BPE, added tokens, pair
layout); a BERT's vocab.txt lists its tokens in its id order, a blank entry (dict.txt's
placeholder) as the model's vocab.txt line it was. gpt2 of an imported RoBERTa: its BPE ids.

As transformers tokenizers do, the exported ones read <s>, </s>, <pad>, <unk> and <mask> in the
text as those special tokens (fairseq would encode their characters), so <mask> works for fill-mask.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf.fast_tokenizers import SentencePieceVocabulary, WordPieceVocabulary
from bio_roberta.hf.original_ids import OriginalIds, imported_ids
from bio_roberta_core.model_dictionary import load_model_dictionary
from bio_roberta_core.provenance import atomic_write_text
from bio_roberta_core.vocab_files import IMPORTED_KINDS


@dataclass
class Gpt2Vocabulary:
    """A byte-level BPE vocabulary dir: encoder.json + vocab.bpe + dict.txt."""

    encoder_json: Path
    vocab_bpe: Path
    dict_txt: Path
    original: Optional[OriginalIds] = None  # an imported RoBERTa's own ids (original_ids.py)

    def merges(self) -> list[str]:
        """The merge lines of vocab.bpe (fairseq's reader skips its first, '#version' line)."""
        lines = self.vocab_bpe.read_text(encoding="utf-8").split("\n")[1:]
        return [line for line in lines if line.strip()]

    def hf_vocab(self) -> dict[str, int]:
        """BPE token -> fairseq dictionary index (see the module docstring), or an imported
        RoBERTa's own id."""
        dictionary = load_model_dictionary(self.dict_txt)
        encoder = json.loads(self.encoder_json.read_text(encoding="utf-8"))
        bpe_token = {str(bpe_id): token for token, bpe_id in encoder.items()}
        if self.original is not None:
            return self.original_vocab(dictionary.symbols, bpe_token)
        vocab = {
            bpe_token.get(symbol, symbol): index for index, symbol in enumerate(dictionary.symbols)
        }
        absent = [token for token in encoder if token not in vocab]
        if absent:
            raise ExportError(
                f"{self.dict_txt} lacks {len(absent)} of the {len(encoder)} BPE ids of "
                f"{self.encoder_json} (e.g. {absent[:3]}): fairseq encodes them as <unk>, which a "
                "BPE tokenizer cannot (each BPE token needs its own id); use a dict.txt that "
                "lists every BPE id, as `bio-roberta learn-vocab` writes, and binarise with it"
            )
        return vocab

    def original_vocab(self, symbols: list[str], bpe_token: dict[str, str]) -> dict[str, int]:
        """Each token of the imported model's tokenizer -> its own id: a BPE id (dict.txt's
        entry, encoder.json's value) is the model's, checked against the import's record."""
        original = self.original
        vocab = {}
        for symbol, row in zip(symbols, original.rows):
            if row is None or row in original.without_token:
                continue  # padding
            if symbol in bpe_token and int(symbol) != row:
                raise ExportError(
                    f"{self.dict_txt}: BPE id {symbol} is row {row} in the import's record of "
                    "its model's ids: the vocabulary dir mixes two imports; re-run import-hf"
                )
            vocab[bpe_token.get(symbol, symbol)] = row
        return vocab

    def hf_tokenizer(self, model_max_length: int):
        """RobertaTokenizerFast over hf_vocab and the vocab.bpe merges."""
        from transformers import RobertaTokenizerFast

        return RobertaTokenizerFast(
            vocab=self.hf_vocab(),
            merges=[tuple(m.split(" ")) for m in self.merges()],
            add_prefix_space=False,
            model_max_length=model_max_length,
        )

    def save_tokenizer(self, tokenizer, out_dir: Path) -> None:
        """tokenizer.json + tokenizer_config.json, and vocab.json + merges.txt for tools that read
        those."""
        tokenizer.save_pretrained(out_dir)
        atomic_write_text(
            out_dir / "vocab.json", json.dumps(self.hf_vocab(), ensure_ascii=False) + "\n"
        )
        atomic_write_text(
            out_dir / "merges.txt", "#version: 0.2\n" + "\n".join(self.merges()) + "\n"
        )

    def files(self) -> dict[str, Path]:
        return {
            "encoder_json": self.encoder_json,
            "vocab_bpe": self.vocab_bpe,
            "dict_txt": self.dict_txt,
        }


def open_vocabulary(vocab_dir: str | os.PathLike, dict_txt: Optional[str | os.PathLike] = None):
    """The vocabulary dir as a Gpt2Vocabulary or SentencePieceVocabulary (dict.txt: VOCAB/dict.txt
    by default)."""
    from preprocess.vocab_dir import read_vocab_dir

    vocab = read_vocab_dir(vocab_dir)
    dict_txt = Path(dict_txt) if dict_txt else vocab.dict_path
    if not dict_txt.is_file():
        raise ExportError(f"{dict_txt}: no such dict.txt")
    files = vocab.bpe_files
    original = imported_ids(vocab, dict_txt)
    if vocab.kind == "gpt2":
        return Gpt2Vocabulary(
            files["gpt2_encoder_json"], files["gpt2_vocab_bpe"], dict_txt, original
        )
    if vocab.kind == "sentencepiece":
        return SentencePieceVocabulary(files["sentencepiece_model"], dict_txt)
    if vocab.kind in IMPORTED_KINDS:  # the imported model's own tokenizer.json
        options = vocab.manifest.get("options", {})
        if options.get("special_tokens") is None:
            raise ExportError(
                f"{vocab_dir}: its manifest names no special_tokens; re-run import-hf"
            )
        (tokenizer_json,) = files.values()
        return WordPieceVocabulary(
            tokenizer_json,
            dict_txt,
            options["special_tokens"],
            options["blank_entries"],
            original,
            kind=vocab.kind,
        )
    raise ExportError(
        f"{vocab_dir}: a {vocab.kind} vocabulary; export writes gpt2, sentencepiece and "
        "wordpiece tokenizers"
    )
