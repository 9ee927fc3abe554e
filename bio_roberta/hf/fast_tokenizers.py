"""The vocabularies exported as tokenizer.json (PreTrainedTokenizerFast): a SentencePiece model's
pieces over the dictionary's entries, and an imported model's own WordPiece or BPE tokenizer
(bio_roberta/hf/tokenizer.py states what each holds and why)."""

from __future__ import annotations

import json
import logging
import shutil
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf.original_ids import OriginalIds
from bio_roberta_core.model_dictionary import load_model_dictionary
from bio_roberta_core.protobuf import protobuf_fields
from bio_roberta_core.provenance import atomic_write_json, atomic_write_text

logger = logging.getLogger(__name__)


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
