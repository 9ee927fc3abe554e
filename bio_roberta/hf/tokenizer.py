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
import logging
import os
import shutil
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf.original_ids import OriginalIds, imported_ids
from bio_roberta_core.model_dictionary import load_model_dictionary
from bio_roberta_core.protobuf import protobuf_fields
from bio_roberta_core.provenance import atomic_write_json, atomic_write_text
from bio_roberta_core.vocab_files import IMPORTED_KINDS

logger = logging.getLogger(__name__)


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


@dataclass
class SentencePieceModel:
    """What of a SentencePiece ModelProto the tokenizer needs (field numbers of
    sentencepiece_model.proto)."""

    pieces: list[tuple[str, float, int]]  # (piece, score, type) in spm id order
    model_type: int
    precompiled_charsmap: bytes
    unsupported: list[str]

    NORMAL, USER_DEFINED = 1, 4
    UNIGRAM, BPE = 1, 2

    @classmethod
    def read(cls, path: Path) -> "SentencePieceModel":
        proto = protobuf_fields(path.read_bytes())
        pieces = []
        for raw in proto.get(1, []):
            piece = protobuf_fields(raw)
            score = struct.unpack("<f", piece[2][0])[0] if 2 in piece else 0.0
            pieces.append((piece[1][0].decode("utf-8"), score, piece.get(3, [cls.NORMAL])[0]))
        trainer = protobuf_fields(proto.get(2, [b""])[0])
        normalizer = protobuf_fields(proto.get(3, [b""])[0])
        # proto2 booleans: absent means the default
        unsupported = [
            name
            for name, spec, number, default in (
                ("treat_whitespace_as_suffix", trainer, 24, 0),
                ("byte_fallback", trainer, 35, 0),
                ("add_dummy_prefix", normalizer, 3, 1),
                ("remove_extra_whitespaces", normalizer, 4, 1),
                ("escape_whitespaces", normalizer, 5, 1),
            )
            if spec.get(number, [default])[0] != default
        ]
        if any(kind == cls.USER_DEFINED for _, _, kind in pieces):
            unsupported.append("user_defined_symbols")
        return cls(
            pieces, trainer.get(3, [cls.UNIGRAM])[0], normalizer.get(2, [b""])[0], unsupported
        )

    def normal_pieces(self) -> dict[str, float]:
        return {piece: score for piece, score, kind in self.pieces if kind == self.NORMAL}


# fairseq's Dictionary.encode_line splits the space-joined pieces at Python's whitespace, so any
# the spm normalizer keeps (U+0085 under nmt_nfkc, tabs without normalizer) vanishes, not <unk>.
FAIRSEQ_SPLIT_WHITESPACE = "".join(
    c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and c != " "
)
# Score of dictionary entries a Unigram model must never choose: far below any path of real pieces
# (it lowers tokenizers' <unk> score too, which only counts where <unk> is the sole choice).
UNREACHABLE_SCORE = -1e9


def save_fast_tokenizer(tokenizer, out_dir: Path) -> None:
    """tokenizer.json + tokenizer_config.json naming the class as transformers 4 and 5 both load
    it."""
    tokenizer.save_pretrained(out_dir)
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    atomic_write_json(config_path, config)


@dataclass
class SentencePieceVocabulary:
    """A SentencePiece vocabulary dir: sentencepiece.model + dict.txt."""

    model: Path
    dict_txt: Path
    original = None  # a vocabulary learned here: its dictionary's ids are the model's

    def tokenizers_model(self, spm: SentencePieceModel, dictionary):
        """Unigram or BPE over the dictionary's entries, segmenting as the spm model does."""
        from tokenizers import models

        pieces = spm.normal_pieces()
        if spm.model_type == spm.UNIGRAM:
            vocab = [
                (symbol, pieces.get(symbol, UNREACHABLE_SCORE)) for symbol in dictionary.symbols
            ]
            return models.Unigram(vocab, unk_id=dictionary.unk(), byte_fallback=False)
        # spm BPE merges the adjacent pair whose concatenation is the best-scored piece
        order = {piece: i for i, (piece, _, kind) in enumerate(spm.pieces) if kind == spm.NORMAL}
        merges = sorted(
            (
                (piece[:cut], piece[cut:])
                for piece in pieces
                for cut in range(1, len(piece))
                if piece[:cut] in pieces and piece[cut:] in pieces
            ),
            key=lambda pair: (-pieces[pair[0] + pair[1]], order[pair[0] + pair[1]], order[pair[0]]),
        )
        return models.BPE(
            {symbol: i for i, symbol in enumerate(dictionary.symbols)},
            merges,
            unk_token=dictionary.unk_word,
            fuse_unk=True,
        )

    def checked_model(self, dictionary) -> SentencePieceModel:
        """The spm model, if the exported tokenizer can reproduce fairseq's ids with it."""
        spm = SentencePieceModel.read(self.model)
        problems = spm.unsupported + (
            [] if spm.model_type in (spm.UNIGRAM, spm.BPE) else [f"model type {spm.model_type}"]
        )
        if problems:
            raise ExportError(
                f"{self.model}: export reproduces unigram and BPE SentencePiece models with the "
                f"default whitespace handling; this one has {', '.join(problems)}"
            )
        pieces = spm.normal_pieces()
        absent = [piece for piece in pieces if piece not in dictionary.indices]
        if absent:
            raise ExportError(
                f"{self.dict_txt} lacks {len(absent)} of the {len(pieces)} pieces of {self.model} "
                f"(e.g. {absent[:3]}): fairseq encodes them as <unk>, which the exported "
                "tokenizer cannot (each piece needs its own id); use a dict.txt that lists every "
                "piece, as `bio-roberta learn-vocab` writes, and binarise with it"
            )
        split = [piece for piece in pieces if any(c in FAIRSEQ_SPLIT_WHITESPACE for c in piece)]
        if split:
            raise ExportError(
                f"{self.model}: pieces {split[:3]} hold whitespace at which fairseq splits them"
            )
        return spm

    def hf_tokenizer(self, model_max_length: int):
        from tokenizers import (
            AddedToken,
            Regex,
            Tokenizer,
            decoders,
            normalizers,
            pre_tokenizers,
            processors,
        )
        from transformers import PreTrainedTokenizerFast

        dictionary = load_model_dictionary(self.dict_txt)
        spm = self.checked_model(dictionary)
        tokenizer = Tokenizer(self.tokenizers_model(spm, dictionary))
        # spm's normalizer: its character rules, then strip and collapse spaces, "▁" prefix, spaces
        # as "▁"
        tokenizer.normalizer = normalizers.Sequence(
            (
                [normalizers.Precompiled(spm.precompiled_charsmap)]
                if spm.precompiled_charsmap
                else []
            )
            + [
                normalizers.Replace(Regex("^ +| +$"), ""),
                normalizers.Replace(Regex(" {2,}"), " "),
                normalizers.Prepend("▁"),
                normalizers.Replace(" ", "▁"),
            ]
        )
        tokenizer.pre_tokenizer = pre_tokenizers.Split(
            Regex("[" + "".join(f"\\x{{{ord(c):x}}}" for c in FAIRSEQ_SPLIT_WHITESPACE) + "]+"),
            behavior="removed",
        )
        tokenizer.decoder = decoders.Metaspace(
            replacement="▁", prepend_scheme="always", split=False
        )
        bos, eos = dictionary.bos_word, dictionary.eos_word
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}",
            pair=f"{bos} $A {eos} {eos} $B {eos}",  # as RobertaHubInterface.encode
            special_tokens=[(bos, dictionary.bos()), (eos, dictionary.eos())],
        )
        specials = [bos, dictionary.pad_word, eos, dictionary.unk_word, "<mask>"]
        tokenizer.add_special_tokens(
            [AddedToken(token, special=True, normalized=False) for token in specials]
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tokenizer,
            bos_token=bos,
            eos_token=eos,
            cls_token=bos,
            sep_token=eos,
            pad_token=dictionary.pad_word,
            unk_token=dictionary.unk_word,
            mask_token="<mask>",
            model_max_length=model_max_length,
        )

    def save_tokenizer(self, tokenizer, out_dir: Path) -> None:
        """save_fast_tokenizer, and the spm model for reference (its ids are not the
        dictionary's; tokenizer.json has those)."""
        save_fast_tokenizer(tokenizer, out_dir)
        shutil.copyfile(self.model, out_dir / self.model.name)

    def files(self) -> dict[str, Path]:
        return {"sentencepiece_model": self.model, "dict_txt": self.dict_txt}


@dataclass
class WordPieceVocabulary:
    """An imported model's vocabulary dir (wordpiece: a BERT family's, preprocess/wordpiece.py;
    hf_bpe: ModernBERT's byte-level BPE): the model's own tokenizer.json + dict.txt, the model's
    tokens fairseq's specials stand for, the blank entries dict.txt names by placeholders, and the
    model's own id of each dictionary entry (original_ids.py), which the exported tokenizer, the
    model's own, gives."""

    tokenizer_json: Path
    dict_txt: Path
    special_tokens: dict[str, str]  # fairseq special (<s>, ...) -> BERT's ([CLS], ...)
    blank_entries: list[dict]  # preprocess/wordpiece.py's blank_entries, from the import manifest
    original: OriginalIds
    kind: str = "wordpiece"  # or "hf_bpe": ModernBERT's byte-level BPE (no token types)

    @property
    def token_types(self) -> bool:
        """BERT's segments; ModernBERT has none."""
        return self.kind == "wordpiece"

    def original_entries(self, blank_field: str) -> dict[int, Optional[str]]:
        """The model's own id -> its name for that token (BERT's specials at fairseq's; a blank
        entry by its record's blank_field: "token", the tokenizer's name for it, None if it had
        none, or "text", its line of the model's vocab.txt), of every row that has a token."""
        blank = {entry["placeholder"]: entry[blank_field] for entry in self.blank_entries}
        symbols = load_model_dictionary(self.dict_txt).symbols
        return {
            row: blank[symbol] if symbol in blank else self.special_tokens.get(symbol, symbol)
            for symbol, row in zip(symbols, self.original.rows)
            if row is not None and row not in self.original.without_token
        }

    def hf_tokenizer(self, model_max_length: int):
        """The model's own tokenizer (tokenizer.json as imported: its ids, added tokens and pair
        layout), checked against the import's record of each dictionary entry's id."""
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        tokenizer = Tokenizer.from_file(str(self.tokenizer_json))
        for row, token in self.original_entries("token").items():
            if token is not None and tokenizer.token_to_id(token) != row:
                raise ExportError(
                    f"{self.tokenizer_json} gives {token!r} id {tokenizer.token_to_id(token)}, "
                    f"the import's record of its model's ids {row}: the vocabulary dir mixes "
                    "two imports; re-run import-hf"
                )
        special = self.special_tokens
        return PreTrainedTokenizerFast(
            tokenizer_object=tokenizer,
            cls_token=special["<s>"],
            sep_token=special["</s>"],
            pad_token=special["<pad>"],
            unk_token=special["<unk>"],
            mask_token=special["<mask>"],
            model_max_length=model_max_length,
            model_input_names=["input_ids", "attention_mask"]
            + (["token_type_ids"] if self.token_types else []),
        )

    def save_tokenizer(self, tokenizer, out_dir: Path) -> None:
        """save_fast_tokenizer, and a BERT-family model's vocab.txt for tools that read BERT's:
        a line per id, a blank entry's as the model's vocab.txt had it, which BertTokenizer reads
        as the model's tokenizer did."""
        save_fast_tokenizer(tokenizer, out_dir)
        if self.kind != "wordpiece":
            return
        lines = self.original_entries("text")
        if sorted(lines) != list(range(len(lines))):
            logger.warning(
                "no vocab.txt in %s: ids %s of the model's tokenizer have no token, which a "
                "vocab.txt (a token per line) cannot leave out; tokenizer.json is the tokenizer",
                out_dir,
                sorted(set(range(max(lines) + 1)) - set(lines))[:3],
            )
            return
        atomic_write_text(out_dir / "vocab.txt", "".join(f"{lines[i]}\n" for i in sorted(lines)))

    def files(self) -> dict[str, Path]:
        return {f"{self.kind}_tokenizer": self.tokenizer_json, "dict_txt": self.dict_txt}


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
