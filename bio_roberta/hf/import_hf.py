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
the family's ``read_config``); the weights are read from the files, not through transformers'
model, after model_files.check_weights has compared them with config.json and the mapping.
Weights that have no fairseq place (the family's ``left_out``: BERT's pooler, ELECTRA's
discriminator head) and fairseq weights that start fresh (the MLM head of a model without one)
are listed in the manifest.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path
from typing import Any

from bio_roberta.hf.families import FAMILIES
from bio_roberta.hf.family import FAIRSEQ_ACTIVATIONS, ConfigProblem, Family
from bio_roberta.hf.import_tokenizer import (
    check_tokenizer_files,
    hf_rows,
    load_tokenizer,
    rows_without_token,
    shown_ids,
    warn_if_lowercasing_a_cased_vocabulary,
    wordpiece_blank_entries,
    write_gpt2_vocab,
)
from bio_roberta.hf.model_files import HFImportError, check_weights, load_weights
from bio_roberta.hf.original_ids import RECORD, OriginalIds
from bio_roberta_core.vocab_files import IMPORTED_KINDS

logger = logging.getLogger(__name__)


def check_config(config_json: Path, raw: dict[str, Any]) -> tuple[Family, Any]:
    """(the family of a config.json, its reading of it: Family.read_config), or one line naming
    the field that cannot map."""
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
    try:
        return family, family.read_config(config_json.parent, raw)
    except ConfigProblem as problem:
        raise HFImportError(f"{where}: {problem}") from None


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
    family, config = check_config(config_json, raw)
    checked = check_weights(hf_dir, config_json, raw, raw["model_type"])
    check_tokenizer_files(hf_dir, family.vocabulary)
    with new_output_dir(out_dir, VOCAB_DIR_FILE) as build:
        tokenizer = load_tokenizer(hf_dir, raw["vocab_size"])
        if family.vocabulary == "wordpiece":
            warn_if_lowercasing_a_cased_vocabulary(hf_dir, tokenizer)
        hf = load_weights(checked)
        args = family.fairseq_args(config, hf)
        blanks = []
        try:
            if family.vocabulary == "gpt2":
                counts = write_gpt2_vocab(tokenizer, build.path)
            else:
                blanks = wordpiece_blank_entries(hf_dir, tokenizer)
                counts = write_wordpiece_vocab(tokenizer, build.path, blanks)
        except WordPieceError as error:
            raise HFImportError(f"{hf_dir}: {error}") from None
        without_token = rows_without_token(tokenizer, blanks, raw["vocab_size"])
        counts["padding_entries"] = write_padded_dict(
            build.path / DICT_FILE, build.path / DICT_FILE, at_least=len(without_token)
        )
        counts["rows_without_token"] = len(without_token)
        if without_token:
            logger.warning(
                "%d rows of the embeddings (ids %s) have no token in %s's tokenizer: padding "
                "entries of dict.txt carry them, and export-hf writes them back",
                len(without_token),
                shown_ids(without_token),
                hf_dir,
            )
        dictionary = load_model_dictionary(build.path / DICT_FILE)
        rows = hf_rows(dictionary, family.vocabulary, tokenizer, blanks, without_token)
        original_ids = OriginalIds(rows, raw["vocab_size"], frozenset(without_token))
        problem = original_ids.problem(len(dictionary))
        assert problem is None, problem  # each original row once: export-hf checks it too
        state = family.fairseq_state(
            hf, rows, raw["num_hidden_layers"], checked.has_mlm_head, args.untie_weights_roberta
        )
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
            RECORD: original_ids.record(),  # what export-hf numbers the tokens by
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
