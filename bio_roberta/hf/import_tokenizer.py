"""The tokenizer of a transformers dir as import-hf reads it (import_hf.py): its files checked whole
before transformers reads them, transformers' tokenizer of them, and each fairseq dictionary
entry's row of the model's embeddings.

fairseq's dictionary lists the tokens in the model's id order after its own 4 specials (which
stand for the model's [CLS] [PAD] [SEP] [UNK]; <mask> for [MASK] is last) and before the padding
entries DICT_MULTIPLE asks for (``hf_rows``); rows of the embeddings that no token names ride in
padding entries, so that export-hf gives every row back (original_ids.py). Blank entries
(preprocess/wordpiece.py) are named by placeholders: a blank line of a BERT vocab.txt, which no
text gives, and the whitespace runs OLMo-style byte-level BPE tokenizers (ModernBERT's) add as
tokens, which text does give.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Iterator, Optional

from bio_roberta.hf.model_files import HFImportError
from bio_roberta_core.vocab_files import IMPORTED_KINDS

logger = logging.getLogger(__name__)

# the files transformers builds each vocabulary kind's tokenizer from (any one set does)
TOKENIZER_FILES = {
    "gpt2": (("tokenizer.json",), ("vocab.json", "merges.txt")),
    "wordpiece": (("tokenizer.json",), ("vocab.txt",)),
    "hf_bpe": (("tokenizer.json",),),
}
# every file transformers reads to build a tokenizer
TOKENIZER_SIDE_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
)


def check_tokenizer_file(path: Path) -> None:
    """A tokenizer file present must be a readable UTF-8 file (a link to one, as in the Hugging Face
    cache, will do), JSON where its name says so, tokenizer.json a tokenizers file: else one line
    naming it, not transformers' traceback."""
    if not path.is_file():  # a dangling or looping link, a dir, a device
        link = f" (a link to {os.readlink(path)})" if path.is_symlink() else ""
        raise HFImportError(
            f"{path}{link}: not a regular file; fetch the model's {path.name} into {path.parent}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        bad = error.object[error.start : error.start + 1]
        raise HFImportError(
            f"{path}: not UTF-8 (byte {error.start}: {bad!r}); fetch it again"
        ) from None
    except OSError as error:
        raise HFImportError(f"{path}: cannot be read ({error.strerror})") from None
    if path.suffix == ".json":
        try:
            json.loads(text)
        except ValueError as error:
            raise HFImportError(f"{path}: not valid JSON ({error}); fetch it again") from None
    if path.name == "tokenizer.json":
        from tokenizers import Tokenizer

        try:
            Tokenizer.from_str(text)
        except Exception as error:  # noqa: BLE001 - tokenizers' own exception type: one line
            reason = " ".join(str(error).split())
            raise HFImportError(
                f"{path}: not a tokenizers file ({reason}); fetch it again"
            ) from None


def check_tokenizer_files(hf_dir: Path, vocabulary: str) -> None:
    """The tokenizer files there are whole (check_tokenizer_file); without them transformers makes
    up a tokenizer of a few special tokens, which would encode every word as unknown."""
    for name in TOKENIZER_SIDE_FILES:
        if os.path.lexists(hf_dir / name):
            check_tokenizer_file(hf_dir / name)
    choices = TOKENIZER_FILES[vocabulary]
    if not any(all((hf_dir / name).is_file() for name in names) for names in choices):
        looked_for = " or ".join(" + ".join(names) for names in choices)
        raise HFImportError(
            f"{hf_dir}: no tokenizer files (looked for {looked_for}); fetch the model's "
            "tokenizer files into it"
        )


@contextlib.contextmanager
def transformers_quiet() -> Iterator[None]:
    """transformers' logging (loading chatter) at errors only while the block runs."""
    from transformers.utils import logging as transformers_logging

    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)


def load_tokenizer(hf_dir: Path, vocab_size: int):
    """The model's transformers tokenizer, whose ids must be rows of the embeddings."""
    import transformers

    with transformers_quiet():
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
        except Exception as error:  # noqa: BLE001 - whatever transformers raises: one line
            reason = " ".join(str(error).split())[:300]
            raise HFImportError(
                f"{hf_dir}: transformers cannot build its tokenizer ({type(error).__name__}: "
                f"{reason}); fetch the model's tokenizer files again"
            ) from None
    largest = max(tokenizer.get_vocab().values())
    if largest >= vocab_size:
        raise HFImportError(
            f"{hf_dir}: the tokenizer has id {largest}, but the embeddings have {vocab_size} rows "
            "(config.json's vocab_size); are the tokenizer files this model's?"
        )
    return tokenizer


def rows_without_token(tokenizer, blanks: list[dict], vocab_size: int) -> list[int]:
    """The ids of the embeddings' rows that no token of the tokenizer names (Megatron pads its
    vocabulary to a multiple of 128; a config's vocab_size may pass its tokenizer's)."""
    named = set(tokenizer.get_vocab().values()) | {entry["id"] for entry in blanks}
    return sorted(set(range(vocab_size)) - named)


def hf_rows(
    dictionary, vocabulary: str, tokenizer, blanks: list[dict], without_token: list[int]
) -> list[Optional[int]]:
    """The transformers id of each fairseq dictionary entry (None: a padding entry, zero row);
    blanks: the vocabulary's blank entries (preprocess/wordpiece.py), under their placeholders;
    the rows without a token go to the first padding entries, which the import added for them."""
    from preprocess.vocab_dir import MADEUP_WORD_PREFIX
    from preprocess.wordpiece import special_tokens, token_names

    specials = (
        special_tokens(tokenizer)
        if vocabulary in IMPORTED_KINDS
        else {symbol: symbol for symbol in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")}
    )
    vocab = (
        token_names(tokenizer, blanks) if vocabulary in IMPORTED_KINDS else tokenizer.get_vocab()
    )
    rows, carried = [], iter(without_token)
    for symbol in dictionary.symbols:
        if symbol in specials:
            rows.append(vocab[specials[symbol]])
        elif symbol.startswith(MADEUP_WORD_PREFIX) and symbol not in vocab:
            rows.append(next(carried, None))  # the dictionary's padding
        elif vocabulary == "gpt2" and symbol.isdigit():
            rows.append(int(symbol))  # a BPE id: encoder.json's ids are the model's
        else:  # a token of the model's own tokenizer, or a padding word its vocabulary has
            rows.append(vocab[symbol])
    return rows


def write_gpt2_vocab(tokenizer, out_dir: Path) -> dict:
    """encoder.json (token -> transformers id; specials left out: fairseq adds its own) +
    vocab.bpe + dict.txt (those ids in order) of a RoBERTa tokenizer. Its madeupword tokens
    (fairseq's padding words, which roberta-base's vocab.json keeps) are dict.txt words, as in
    fairseq's own RoBERTa dict.txt, not BPE tokens."""
    from bio_roberta_core.provenance import atomic_write_text
    from preprocess.vocab_dir import MADEUP_WORD_PREFIX

    specials = set(tokenizer.all_special_tokens)
    vocab = {t: i for t, i in tokenizer.get_vocab().items() if t not in specials}
    encoder = {t: i for t, i in vocab.items() if not t.startswith(MADEUP_WORD_PREFIX)}
    entries = {i: str(i) if t in encoder else t for t, i in vocab.items()}
    model = json.loads(tokenizer.backend_tokenizer.to_str())["model"]
    if model.get("type") != "BPE":
        raise HFImportError(f"a RoBERTa tokenizer of type {model.get('type')!r}; gpt2 needs BPE")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    atomic_write_text(out_dir / "encoder.json", json.dumps(encoder, ensure_ascii=False) + "\n")
    atomic_write_text(out_dir / "vocab.bpe", "#version: 0.2\n" + "\n".join(merges) + "\n")
    atomic_write_text(out_dir / "dict.txt", "".join(f"{entries[i]} 0\n" for i in sorted(entries)))
    return {"bpe_units": len(encoder)}


def warn_if_lowercasing_a_cased_vocabulary(hf_dir: Path, tokenizer) -> None:
    """A BERT tokenizer built from vocab.txt alone lowercases (transformers' default) even for a
    cased model, whose capitalised tokens it then never emits: say so."""
    from preprocess.wordpiece import lowercases

    if not lowercases(tokenizer):
        return
    specials = set(tokenizer.all_special_tokens)
    cased = [t for t in tokenizer.get_vocab() if t not in specials and t != t.lower()]
    if cased:
        settings = (
            "its tokenizer_config.json says so"
            if (hf_dir / "tokenizer_config.json").is_file()
            else "transformers' default, without tokenizer_config.json"
        )
        logger.warning(
            "%s: the tokenizer lowercases (%s), but %d of its tokens hold capitals (e.g. %s), "
            "which it never emits: if the model is cased, add tokenizer_config.json with "
            '"do_lower_case": false and import again',
            hf_dir,
            settings,
            len(cased),
            ", ".join(sorted(cased)[:3]),
        )


def shown_ids(ids: list[int]) -> str:
    """Sorted ids as ranges: 50254-50276, 50280."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] + 1 == i:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def wordpiece_blank_entries(hf_dir: Path, tokenizer) -> list[dict]:
    """The blank entries of an imported vocabulary (preprocess/wordpiece.py), reported: read from
    vocab.txt, with its line, when transformers built the tokenizer from it (no tokenizer.json, as
    in SciBERT's release), each a row no text gives; the tokenizer's added tokens among them (the
    runs of 2-24 spaces of OLMo-style byte-level BPE tokenizers, ModernBERT's), which text does
    give, in one line."""
    from preprocess.wordpiece import TOKENIZER_FILE, VOCAB_TXT, blank_entries

    vocab_txt = None if (hf_dir / TOKENIZER_FILE).is_file() else hf_dir / VOCAB_TXT
    blanks = blank_entries(tokenizer, vocab_txt)
    added = [entry for entry in blanks if entry["id"] in tokenizer.added_tokens_decoder]
    if added:
        logger.info(
            "%s/%s: %d added tokens are whitespace (ids %s, e.g. %r): dict.txt names each "
            "[BLANK_<id>], which convert-task, binarize and predict give where the text has it",
            hf_dir,
            TOKENIZER_FILE,
            len(added),
            shown_ids([entry["id"] for entry in added]),
            added[-1]["text"],
        )
    for entry in blanks:
        if entry in added:
            continue
        where = f"{vocab_txt} line {entry['line']}" if vocab_txt else f"{hf_dir}/{TOKENIZER_FILE}"
        logger.warning(
            "%s (id %d) is blank (%r), a token no text gives: dict.txt names it %s, the "
            "manifest's options.blank_entries records it, export-hf writes it back",
            where,
            entry["id"],
            entry["text"],
            entry["placeholder"],
        )
    return blanks
