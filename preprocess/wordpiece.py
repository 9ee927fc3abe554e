"""WordPiece vocabulary dirs: the tokenizer of an imported BERT-family model (`bio-roberta
import-hf`), so that convert-task gives the ids the model's own tokenizer gives. An imported
ModernBERT's byte-level BPE tokenizer makes an hf_bpe dir the same way (same files, same specials).

The dir holds the model's own tokenizer as a tokenizers file (tokenizer.json: its normalizer,
cased or uncased, accent stripping, its pre-tokenizer and WordPiece model, exactly as transformers
runs them) and dict.txt. dict.txt lists the WordPiece tokens in the model's id order, without the
model's special tokens: fairseq's own specials stand for them (<s> = [CLS], <pad> = [PAD],
</s> = [SEP], <unk> = [UNK], and the <mask> the tasks append = [MASK]), so fairseq's pair layout
<s> a </s> b </s> is BERT's [CLS] a [SEP] b [SEP]. A token the tokenizer emits that dict.txt lacks
([UNK]) is fairseq's <unk>.

A blank entry (an empty or whitespace-only line of vocab.txt, as SciBERT's at line 30,107, which
transformers reads as the token '') is a row of the embeddings that no text gives; dict.txt cannot
list it, so it names it by a placeholder ([BLANK_<id>]), and the vocabulary dir's manifest records
the line, so that export-hf writes the line back as it was.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.provenance import atomic_write_text

TOKENIZER_FILE = "tokenizer.json"
VOCAB_TXT = "vocab.txt"  # a BERT tokenizer's vocabulary, one token per line in id order
# fairseq's special symbol -> the transformers tokenizer attribute naming its BERT counterpart
SPECIAL_ROLES = {
    "<s>": "cls_token",
    "<pad>": "pad_token",
    "</s>": "sep_token",
    "<unk>": "unk_token",
    "<mask>": "mask_token",
}


class WordPieceError(BioRobertaError):
    """A BERT-family tokenizer that a wordpiece vocabulary dir cannot hold."""


def special_tokens(tokenizer) -> dict[str, str]:
    """fairseq special -> the tokenizer's token for it ([CLS], ...); each must exist."""
    tokens = {}
    for symbol, role in SPECIAL_ROLES.items():
        token = getattr(tokenizer, role, None)
        if token is None or tokenizer.convert_tokens_to_ids(token) is None:
            raise WordPieceError(f"the tokenizer has no {role}; fairseq needs it as {symbol}")
        tokens[symbol] = str(token)
    return tokens


def lowercases(tokenizer) -> bool:
    """Whether the tokenizer lowercases (uncased model), as its normalizer says."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    return bool(normalizer is not None and getattr(normalizer, "lowercase", False))


def is_blank(token: str) -> bool:
    """Empty or whitespace only: the pre-tokenizer splits text at whitespace, so no text gives
    it."""
    return not "".join(token.split())


def blank_entries(tokenizer, vocab_txt: Optional[Path]) -> list[dict]:
    """The blank entries of the model's vocabulary, each as {id, line, text, token, placeholder}:
    read from vocab_txt (line: its line number, text: the line as transformers' load_vocab reads
    it) when the tokenizer was built from it, else from the tokenizer (line None); token is the
    tokenizer's name for the id (transformers 5 names an empty or whitespace line '', and, the
    vocabulary being a dict, leaves the id of an earlier such line unnamed: None)."""
    by_id = {i: token for token, i in tokenizer.get_vocab().items()}
    if vocab_txt is None:
        texts = {i: token for i, token in by_id.items() if is_blank(token)}
    else:
        with open(vocab_txt, encoding="utf-8") as reader:  # as load_vocab reads it
            lines = [line.rstrip("\n") for line in reader]
        texts = {i: line for i, line in enumerate(lines) if is_blank(line)}
    return [
        dict(
            id=i,
            line=None if vocab_txt is None else i + 1,
            text=texts[i],
            token=by_id.get(i),
            placeholder=f"[BLANK_{i}]",
        )
        for i in sorted(texts)
    ]


def token_names(tokenizer, blanks: list[dict]) -> dict[str, int]:
    """The model's tokens as dict.txt names them -> transformers id: blank entries under their
    placeholders."""
    names = {token: i for token, i in tokenizer.get_vocab().items() if not is_blank(token)}
    for entry in blanks:
        if entry["placeholder"] in names:
            raise WordPieceError(
                f"the vocabulary holds the token {entry['placeholder']} (id "
                f"{names[entry['placeholder']]}), the name dict.txt gives its blank entry at id "
                f"{entry['id']}: rename that token in vocab.txt"
            )
        names[entry["placeholder"]] = entry["id"]
    return names


def write_wordpiece_vocab(tokenizer, out_dir: Path, blanks: list[dict]) -> dict:
    """tokenizer.json and dict.txt (unpadded) of a transformers BERT tokenizer into out_dir, blank
    entries (blank_entries) under their placeholders; returns the manifest counts."""
    specials = set(special_tokens(tokenizer).values())
    names = token_names(tokenizer, blanks)
    tokens = [token for token, _ in sorted(names.items(), key=lambda item: item[1])]
    clashes = [t for t in tokens if t in SPECIAL_ROLES or t != "".join(t.split())]
    if clashes:
        raise WordPieceError(
            f"tokens {clashes[:3]} are fairseq special symbols or hold whitespace: fairseq's "
            "dict.txt cannot list them"
        )
    entries = [token for token in tokens if token not in specials]
    tokenizer.backend_tokenizer.save(str(out_dir / TOKENIZER_FILE))
    atomic_write_text(out_dir / "dict.txt", "".join(f"{token} 0\n" for token in entries))
    return {
        "bpe_units": len(names),
        "lowercase": lowercases(tokenizer),
        "blank_entries": len(blanks),
    }


class WordPieceEncoder:
    """The vocabulary dir's tokenizer as fairseq BPE objects are used: encode(text) -> the
    space-joined tokens as dict.txt names them, looked up there. A token dict.txt names otherwise
    is emitted under that name: a blank entry under its placeholder (the whitespace runs that
    OLMo-style byte-level BPE tokenizers, ModernBERT's, add as tokens, which text does give), a
    special token in the text ([CLS], as transformers reads it) as fairseq's symbol for it."""

    def __init__(self, tokenizer_json: str | os.PathLike, special: dict[str, str], blanks: list):
        """special: fairseq symbol -> the model's token; blanks: blank_entries."""
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self.symbols = {entry["id"]: entry["placeholder"] for entry in blanks}
        for symbol, token in special.items():
            token_id = self.tokenizer.token_to_id(token)
            if token_id is not None:
                self.symbols[token_id] = symbol
        self.tokens = {
            symbol: self.tokenizer.id_to_token(token_id) or ""
            for token_id, symbol in self.symbols.items()
        }

    def encode(self, text: str) -> str:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        return " ".join(self.symbols.get(i, t) for i, t in zip(encoding.ids, encoding.tokens))

    def decode(self, text: str) -> str:
        return self.tokenizer.decoder.decode([self.tokens.get(t, t) for t in text.split()])

    def is_beginning_of_word(self, token: str) -> bool:
        return not token.startswith("##")


class ByteLevelBpeEncoder(WordPieceEncoder):
    """The same for a byte-level BPE tokenizer (ModernBERT's): a word's first token holds the
    space before it ("Ġ"); a run of spaces (a blank entry's placeholder) starts one too."""

    def is_beginning_of_word(self, token: str) -> bool:
        return token.startswith("Ġ") or token in self.tokens


# vocabulary kind -> its encoder (bio_roberta_core.vocab_files.IMPORTED_KINDS)
ENCODERS = {"wordpiece": WordPieceEncoder, "hf_bpe": ByteLevelBpeEncoder}


def open_encoder(kind: str, tokenizer_json: Path, options: dict):
    """The encoder of an imported vocabulary dir, its manifest's options naming the specials and
    the blank entries."""
    return ENCODERS[kind](
        tokenizer_json, options.get("special_tokens") or {}, options.get("blank_entries") or []
    )
