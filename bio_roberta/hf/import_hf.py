"""A transformers encoder dir as a fairseq checkpoint plus the vocabulary dir of its tokenizer.

The output dir is a vocabulary dir (preprocess/vocab.py) holding the checkpoint as model.pt, as
`learn-vocab --import ... --checkpoint` writes one for RoBERTa's own files: convert-task and
binarize take it as --vocab, fine-tuning and continued pretraining start from OUT/model.pt.

Families (families.py, each a module that maps its config and weights both ways): RoBERTa
(roberta.py; GPT-2 byte-level BPE: a gpt2 vocabulary dir) becomes fairseq's own `roberta`; BERT,
ELECTRA's discriminator and Megatron-BERT (bert.py; WordPiece: a wordpiece vocabulary dir,
preprocess/wordpiece.py) become the plugin's `bert_encoder` / `megatron_bert_encoder`
(user_dir/models/bert_encoder.py: segment embeddings, BERT's pair layout, LayerNorm eps);
ModernBERT (modernbert.py; its byte-level BPE tokenizer.json: an hf_bpe vocabulary dir) becomes
the plugin's `modernbert` (user_dir/models/modernbert.py). Embedding rows are laid out for
fairseq's dictionary (its 4 specials first, the padding entries DICT_MULTIPLE asks for, <mask>
last; ``hf_rows``). What cannot map is refused naming the config field (``check_config``, then
the family's ``config_problem``); the weights are read from the files, not through transformers'
model, after model_files.check_weights has compared them with config.json and the mapping.
Weights that have no fairseq place (the family's ``left_out``: BERT's pooler, ELECTRA's
discriminator head) and fairseq weights that start fresh (the MLM head of a model without one)
are listed in the manifest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator, Optional

from bio_roberta.hf.families import FAMILIES
from bio_roberta.hf.family import FAIRSEQ_ACTIVATIONS, Family
from bio_roberta.hf.model_files import HFImportError, check_weights, load_weights
from bio_roberta_core.vocab_files import IMPORTED_KINDS

logger = logging.getLogger(__name__)

# the files transformers builds each vocabulary kind's tokenizer from (any one set does)
TOKENIZER_FILES = {
    "gpt2": (("tokenizer.json",), ("vocab.json", "merges.txt")),
    "wordpiece": (("tokenizer.json",), ("vocab.txt",)),
    "hf_bpe": (("tokenizer.json",),),
}


def check_config(config_json: Path, raw: dict[str, Any]) -> Family:
    """The family of a config.json, or one line naming the field that cannot map."""
    model_type = raw.get("model_type")
    where = f"{config_json}"
    if model_type is None:
        raise HFImportError(
            f'{where}: no model_type; add the family\'s, e.g. "model_type": "bert" (import-hf '
            f"takes {', '.join(sorted(FAMILIES))})"
        )
    if model_type == "albert":
        raise HFImportError(
            f"{where}: model_type 'albert': ALBERT shares its layers and projects its "
            "embedding_size to hidden_size, which fairseq's RoBERTa has no place for"
        )
    if model_type not in FAMILIES:
        raise HFImportError(
            f"{where}: model_type {model_type!r}; import-hf takes {', '.join(sorted(FAMILIES))}"
        )
    position_type = raw.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise HFImportError(
            f"{where}: position_embedding_type {position_type!r}: fairseq's RoBERTa has "
            "absolute learned positions only"
        )
    embedding_size = raw.get("embedding_size", raw.get("hidden_size"))
    if embedding_size != raw.get("hidden_size"):
        raise HFImportError(
            f"{where}: embedding_size {embedding_size} != hidden_size {raw.get('hidden_size')}: "
            "fairseq's RoBERTa has no projection between embedding and hidden size"
        )
    activation = raw.get("hidden_act", "gelu")
    if activation not in FAIRSEQ_ACTIVATIONS:
        raise HFImportError(
            f"{where}: hidden_act {activation!r} has no fairseq activation "
            f"({', '.join(sorted(FAIRSEQ_ACTIVATIONS))} do)"
        )
    for field in ("is_decoder", "add_cross_attention"):
        if raw.get(field):
            raise HFImportError(f"{where}: {field} is set: import-hf takes encoders only")
    family = FAMILIES[model_type]
    problem = family.config_problem(config_json.parent, raw)
    if problem:
        raise HFImportError(f"{where}: {problem}")
    return family


def read_config(hf_dir: Path) -> tuple[Path, dict[str, Any]]:
    """(config.json's path, its JSON object), or one line saying why there is none."""
    config_json = hf_dir / "config.json"
    if not config_json.is_file():
        raise HFImportError(f"{config_json}: no such file; is {hf_dir} a transformers model dir?")
    try:
        raw = json.loads(config_json.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
        raise HFImportError(f"{config_json}: not valid JSON ({error}); fetch it again") from None
    if not isinstance(raw, dict):
        raise HFImportError(f"{config_json}: not a JSON object, as a transformers config is")
    return config_json, raw


def check_tokenizer_files(hf_dir: Path, vocabulary: str) -> None:
    """Without its files transformers makes up a tokenizer of a few special tokens, which would
    encode every word as unknown."""
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
        tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    largest = max(tokenizer.get_vocab().values())
    if largest >= vocab_size:
        raise HFImportError(
            f"{hf_dir}: the tokenizer has id {largest}, but the embeddings have {vocab_size} rows "
            "(config.json's vocab_size); are the tokenizer files this model's?"
        )
    return tokenizer


def hf_rows(dictionary, vocabulary: str, tokenizer, blanks: list[dict]) -> list[Optional[int]]:
    """The transformers id of each fairseq dictionary entry (None: a padding entry, zero row);
    blanks: the vocabulary's blank entries (preprocess/wordpiece.py), under their placeholders."""
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
    rows = []
    for symbol in dictionary.symbols:
        if symbol in specials:
            rows.append(vocab[specials[symbol]])
        elif symbol.startswith(MADEUP_WORD_PREFIX) and symbol not in vocab:
            rows.append(None)  # the dictionary's padding
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


def wordpiece_blank_entries(hf_dir: Path, tokenizer) -> list[dict]:
    """The blank entries of a BERT-family vocabulary (preprocess/wordpiece.py), each reported: read
    from vocab.txt, with its line, when transformers built the tokenizer from it (no
    tokenizer.json, as in SciBERT's release)."""
    from preprocess.wordpiece import TOKENIZER_FILE, VOCAB_TXT, blank_entries

    vocab_txt = None if (hf_dir / TOKENIZER_FILE).is_file() else hf_dir / VOCAB_TXT
    blanks = blank_entries(tokenizer, vocab_txt)
    for entry in blanks:
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


def import_hf(hf_dir: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, Any]:
    """Write OUT: a vocabulary dir of the model's tokenizer plus model.pt, its fairseq checkpoint.
    Returns the manifest.

    Everything import reads is checked first (config.json, the weights' names and shapes against
    the config, the tokenizer files: model_files.check_weights), before anything is written or
    allocated; then the output dir's lock is held for the rest of the run."""
    import torch

    from bio_roberta_core.model_dictionary import load_model_dictionary
    from bio_roberta_core.output_dir import new_output_dir
    from bio_roberta_core.provenance import atomic_file, file_record
    from preprocess.vocab_dir import (
        DICT_FILE,
        IMPORTED_CHECKPOINT,
        VOCAB_DIR_FILE,
        write_manifest,
        write_padded_dict,
    )
    from preprocess.wordpiece import WordPieceError, special_tokens, write_wordpiece_vocab

    hf_dir = Path(hf_dir)
    config_json, raw = read_config(hf_dir)
    family = check_config(config_json, raw)
    checked = check_weights(hf_dir, config_json, raw, raw["model_type"])
    check_tokenizer_files(hf_dir, family.vocabulary)
    with new_output_dir(out_dir, VOCAB_DIR_FILE) as build:
        tokenizer = load_tokenizer(hf_dir, raw["vocab_size"])
        if family.vocabulary == "wordpiece":
            warn_if_lowercasing_a_cased_vocabulary(hf_dir, tokenizer)
        hf = load_weights(checked)
        args = family.fairseq_args(hf_dir, raw, hf)
        blanks = []
        try:
            if family.vocabulary == "gpt2":
                counts = write_gpt2_vocab(tokenizer, build.path)
            else:
                blanks = wordpiece_blank_entries(hf_dir, tokenizer)
                counts = write_wordpiece_vocab(tokenizer, build.path, blanks)
        except WordPieceError as error:
            raise HFImportError(f"{hf_dir}: {error}") from None
        counts["padding_entries"] = write_padded_dict(
            build.path / DICT_FILE, build.path / DICT_FILE
        )
        dictionary = load_model_dictionary(build.path / DICT_FILE)
        rows = hf_rows(dictionary, family.vocabulary, tokenizer, blanks)
        state = family.fairseq_state(hf, rows, raw["num_hidden_layers"], checked.has_mlm_head)
        fairseq_model = build_fairseq_model(args, dictionary)
        expected = fairseq_model.state_dict()
        fresh = sorted(k for k in expected if k not in state and not k.endswith(".version"))
        wrong = [k for k in state if k not in expected or expected[k].shape != state[k].shape]
        if wrong:
            raise HFImportError(f"{hf_dir}: weights that do not fit fairseq's model: {wrong[:3]}")
        fairseq_model.load_state_dict({**expected, **state}, strict=True)
        if checked.left_out:
            logger.warning("left out (no fairseq counterpart): %s", ", ".join(checked.left_out))
        if fresh:
            logger.warning("start fresh (not in %s): %s", hf_dir, ", ".join(fresh))
        dict_record = build.file_record(DICT_FILE)
        checkpoint = {
            "cfg": {
                "model": vars(args),
                "task": {"_name": "masked_lm", "data": str(build.target)},
                "criterion": None,
            },
            "model": fairseq_model.state_dict(),
            # no training yet: what fairseq's loader expects of a checkpoint's history
            "optimizer_history": [
                {
                    "criterion_name": "MaskedLmLoss",
                    "optimizer_name": None,
                    "lr_scheduler_state": {},
                    "num_updates": 0,
                }
            ],
            "extra_state": {
                "dictionary": {"path": dict_record["path"], "sha256": dict_record["sha256"]}
            },
            "last_optimizer_state": None,
        }
        with atomic_file(build.path / IMPORTED_CHECKPOINT) as handle:
            torch.save(checkpoint, handle)
        hf_files = sorted(p for p in hf_dir.iterdir() if p.is_file())
        options = {
            "imported_from": str(hf_dir.resolve()),
            "model_type": raw["model_type"],
            "hf_model_class": (raw.get("architectures") or [None])[0],
            "checkpoint": IMPORTED_CHECKPOINT,
            "arch": args.arch,
            "left_out": checked.left_out,
            "fresh": fresh,
        }
        if family.vocabulary in IMPORTED_KINDS:  # export-hf's names of the specials
            options["special_tokens"] = special_tokens(tokenizer)
            options["blank_entries"] = blanks  # what export-hf writes back
        return write_manifest(
            build, family.vocabulary, [file_record(p) for p in hf_files], counts, options
        )


def build_fairseq_model(args: argparse.Namespace, dictionary):
    """fairseq's model of the architecture (random weights) for the dictionary."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    class Vocabulary:  # what a model's build_model reads of its task
        source_dictionary = dictionary
        cfg = None

        @staticmethod
        def max_positions():
            return args.max_positions

    return ARCH_MODEL_REGISTRY[args.arch].build_model(args, Vocabulary).eval()
