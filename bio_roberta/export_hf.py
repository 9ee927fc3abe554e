"""A fairseq RoBERTa checkpoint as a Hugging Face transformers model directory.

The checkpoint may be pretrained or distilled (-> RobertaForMaskedLM) or fine-tuned with a
sentence classification head (-> RobertaForSequenceClassification) or a token classification
head (-> RobertaForTokenClassification). The tokenizer files are written so that the exported
tokenizer gives the ids fairseq gives. fairseq encodes text with the vocabulary's BPE and looks
what it emits up in dict.txt, whose order is its own (4 specials first, then the symbols by
frequency, madeupword padding, <mask> added last by the task), so the tokenizer's vocabulary is
the dictionary, not the BPE's own ids:

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

As transformers tokenizers do, the exported ones read <s>, </s>, <pad>, <unk> and <mask> in the
text as those special tokens (fairseq would encode their characters), so <mask> works for fill-mask.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bio_roberta.provenance import atomic_write_json, atomic_write_text, environment_record, file_record

MASKED_LM = "masked_lm"
SEQUENCE_CLASSIFICATION = "sequence_classification"
TOKEN_CLASSIFICATION = "token_classification"
HF_MODEL_CLASSES = {
    MASKED_LM: "RobertaForMaskedLM",
    SEQUENCE_CLASSIFICATION: "RobertaForSequenceClassification",
    TOKEN_CLASSIFICATION: "RobertaForTokenClassification",
}
# fairseq activation -> transformers hidden_act with the same formula.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_accurate": "gelu_new", "relu": "relu", "tanh": "tanh"}
ENCODER = "encoder.sentence_encoder."
TOKEN_HEAD_PREFIX = "token_classification_heads."
SENTENCE_HEAD_PREFIX = "classification_heads."

logger = logging.getLogger(__name__)


class ExportError(Exception):
    """The checkpoint or vocabulary cannot be exported as asked; the message says why."""


def fairseq_dictionary(dict_txt: Path):
    """dict.txt as the fine-tuning and masked_lm tasks see it, with <mask> appended."""
    from fairseq.data import Dictionary

    dictionary = Dictionary.load(str(dict_txt))
    dictionary.add_symbol("<mask>")
    return dictionary


@dataclass
class Gpt2Vocabulary:
    """A byte-level BPE vocabulary dir: encoder.json + vocab.bpe + dict.txt."""

    encoder_json: Path
    vocab_bpe: Path
    dict_txt: Path

    def merges(self) -> list[str]:
        """The merge lines of vocab.bpe (fairseq's reader skips its first, '#version' line)."""
        lines = self.vocab_bpe.read_text(encoding="utf-8").split("\n")[1:]
        return [line for line in lines if line.strip()]

    def hf_vocab(self) -> dict[str, int]:
        """BPE token -> fairseq dictionary index (see the module docstring)."""
        dictionary = fairseq_dictionary(self.dict_txt)
        encoder = json.loads(self.encoder_json.read_text(encoding="utf-8"))
        bpe_token = {str(bpe_id): token for token, bpe_id in encoder.items()}
        vocab = {bpe_token.get(symbol, symbol): index for index, symbol in enumerate(dictionary.symbols)}
        absent = [token for token in encoder if token not in vocab]
        if absent:
            raise ExportError(
                f"{self.dict_txt} lacks {len(absent)} of the {len(encoder)} BPE ids of {self.encoder_json} "
                f"(e.g. {absent[:3]}): fairseq encodes them as <unk>, which a BPE tokenizer cannot "
                "(each BPE token needs its own id); use a dict.txt that lists every BPE id, as "
                "`bio-roberta learn-vocab` writes, and binarise with it"
            )
        return vocab

    def hf_tokenizer(self, model_max_length: int):
        """RobertaTokenizerFast over hf_vocab and the vocab.bpe merges."""
        from transformers import RobertaTokenizerFast

        return RobertaTokenizerFast(vocab=self.hf_vocab(), merges=[tuple(m.split(" ")) for m in self.merges()],
                                    add_prefix_space=False, model_max_length=model_max_length)

    def save_tokenizer(self, tokenizer, out_dir: Path) -> None:
        """tokenizer.json + tokenizer_config.json, and vocab.json + merges.txt for tools that read those."""
        tokenizer.save_pretrained(out_dir)
        atomic_write_text(out_dir / "vocab.json", json.dumps(self.hf_vocab(), ensure_ascii=False) + "\n")
        atomic_write_text(out_dir / "merges.txt", "#version: 0.2\n" + "\n".join(self.merges()) + "\n")

    def files(self) -> dict[str, Path]:
        return {"encoder_json": self.encoder_json, "vocab_bpe": self.vocab_bpe, "dict_txt": self.dict_txt}


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position


def protobuf_fields(data: bytes) -> dict[int, list]:
    """Field number -> values (ints for varints, bytes otherwise) of a serialised protobuf message:
    enough to read a SentencePiece model without the protobuf package."""
    fields: dict[int, list] = {}
    position = 0
    while position < len(data):
        key, position = read_varint(data, position)
        wire_type = key & 7
        if wire_type == 0:
            value, position = read_varint(data, position)
        else:
            if wire_type == 2:
                size, position = read_varint(data, position)
            else:
                size = {1: 8, 5: 4}[wire_type]
            value, position = data[position:position + size], position + size
        fields.setdefault(key >> 3, []).append(value)
    return fields


@dataclass
class SentencePieceModel:
    """What of a SentencePiece ModelProto the tokenizer needs (field numbers of sentencepiece_model.proto)."""

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
        unsupported = [name for name, spec, number, default in (
            ("treat_whitespace_as_suffix", trainer, 24, 0), ("byte_fallback", trainer, 35, 0),
            ("add_dummy_prefix", normalizer, 3, 1), ("remove_extra_whitespaces", normalizer, 4, 1),
            ("escape_whitespaces", normalizer, 5, 1)) if spec.get(number, [default])[0] != default]
        if any(kind == cls.USER_DEFINED for _, _, kind in pieces):
            unsupported.append("user_defined_symbols")
        return cls(pieces, trainer.get(3, [cls.UNIGRAM])[0], normalizer.get(2, [b""])[0], unsupported)

    def normal_pieces(self) -> dict[str, float]:
        return {piece: score for piece, score, kind in self.pieces if kind == self.NORMAL}


# fairseq's Dictionary.encode_line splits the space-joined pieces at Python's whitespace, so any
# the spm normalizer keeps (U+0085 under nmt_nfkc, tabs without normalizer) vanishes, not <unk>.
FAIRSEQ_SPLIT_WHITESPACE = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and c != " ")
# Score of dictionary entries a Unigram model must never choose: far below any path of real pieces
# (it lowers tokenizers' <unk> score too, which only counts where <unk> is the sole choice).
UNREACHABLE_SCORE = -1e9


@dataclass
class SentencePieceVocabulary:
    """A SentencePiece vocabulary dir: sentencepiece.model + dict.txt."""

    model: Path
    dict_txt: Path

    def tokenizers_model(self, spm: SentencePieceModel, dictionary):
        """Unigram or BPE over the dictionary's entries, segmenting as the spm model does."""
        from tokenizers import models

        pieces = spm.normal_pieces()
        if spm.model_type == spm.UNIGRAM:
            vocab = [(symbol, pieces.get(symbol, UNREACHABLE_SCORE)) for symbol in dictionary.symbols]
            return models.Unigram(vocab, unk_id=dictionary.unk(), byte_fallback=False)
        # spm BPE merges the adjacent pair whose concatenation is the best-scored piece
        order = {piece: i for i, (piece, _, kind) in enumerate(spm.pieces) if kind == spm.NORMAL}
        merges = sorted(((piece[:cut], piece[cut:]) for piece in pieces for cut in range(1, len(piece))
                         if piece[:cut] in pieces and piece[cut:] in pieces),
                        key=lambda pair: (-pieces[pair[0] + pair[1]], order[pair[0] + pair[1]], order[pair[0]]))
        return models.BPE({symbol: i for i, symbol in enumerate(dictionary.symbols)}, merges,
                          unk_token=dictionary.unk_word, fuse_unk=True)

    def checked_model(self, dictionary) -> SentencePieceModel:
        """The spm model, if the exported tokenizer can reproduce fairseq's ids with it."""
        spm = SentencePieceModel.read(self.model)
        problems = spm.unsupported + ([] if spm.model_type in (spm.UNIGRAM, spm.BPE) else [f"model type {spm.model_type}"])
        if problems:
            raise ExportError(f"{self.model}: export reproduces unigram and BPE SentencePiece models with the "
                              f"default whitespace handling; this one has {', '.join(problems)}")
        pieces = spm.normal_pieces()
        absent = [piece for piece in pieces if piece not in dictionary.indices]
        if absent:
            raise ExportError(
                f"{self.dict_txt} lacks {len(absent)} of the {len(pieces)} pieces of {self.model} "
                f"(e.g. {absent[:3]}): fairseq encodes them as <unk>, which the exported tokenizer cannot "
                "(each piece needs its own id); use a dict.txt that lists every piece, as "
                "`bio-roberta learn-vocab` writes, and binarise with it"
            )
        split = [piece for piece in pieces if any(c in FAIRSEQ_SPLIT_WHITESPACE for c in piece)]
        if split:
            raise ExportError(f"{self.model}: pieces {split[:3]} hold whitespace at which fairseq splits them")
        return spm

    def hf_tokenizer(self, model_max_length: int):
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
        from transformers import PreTrainedTokenizerFast

        dictionary = fairseq_dictionary(self.dict_txt)
        spm = self.checked_model(dictionary)
        tokenizer = Tokenizer(self.tokenizers_model(spm, dictionary))
        # spm's normalizer: its character rules, then strip and collapse spaces, "▁" prefix, spaces as "▁"
        tokenizer.normalizer = normalizers.Sequence(
            ([normalizers.Precompiled(spm.precompiled_charsmap)] if spm.precompiled_charsmap else []) + [
                normalizers.Replace(Regex("^ +| +$"), ""), normalizers.Replace(Regex(" {2,}"), " "),
                normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tokenizer.pre_tokenizer = pre_tokenizers.Split(
            Regex("[" + "".join(f"\\x{{{ord(c):x}}}" for c in FAIRSEQ_SPLIT_WHITESPACE) + "]+"), behavior="removed")
        tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
        bos, eos = dictionary.bos_word, dictionary.eos_word
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",  # as RobertaHubInterface.encode
            special_tokens=[(bos, dictionary.bos()), (eos, dictionary.eos())])
        specials = [bos, dictionary.pad_word, eos, dictionary.unk_word, "<mask>"]
        tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in specials])
        return PreTrainedTokenizerFast(
            tokenizer_object=tokenizer, bos_token=bos, eos_token=eos, cls_token=bos, sep_token=eos,
            pad_token=dictionary.pad_word, unk_token=dictionary.unk_word, mask_token="<mask>",
            model_max_length=model_max_length)

    def save_tokenizer(self, tokenizer, out_dir: Path) -> None:
        """tokenizer.json + tokenizer_config.json naming the class as transformers 4 and 5 both load it,
        and the spm model for reference (its ids are not the dictionary's; tokenizer.json has those)."""
        tokenizer.save_pretrained(out_dir)
        config_path = out_dir / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
        atomic_write_json(config_path, config)
        shutil.copyfile(self.model, out_dir / self.model.name)

    def files(self) -> dict[str, Path]:
        return {"sentencepiece_model": self.model, "dict_txt": self.dict_txt}


def open_vocabulary(vocab_dir: str | os.PathLike, dict_txt: Optional[str | os.PathLike] = None):
    """The vocabulary dir as a Gpt2Vocabulary or SentencePieceVocabulary (dict.txt: VOCAB/dict.txt by default)."""
    from preprocess.vocab import VocabDirError, read_vocab_dir

    try:
        vocab = read_vocab_dir(vocab_dir)
    except VocabDirError as error:
        raise ExportError(str(error)) from None
    dict_txt = Path(dict_txt) if dict_txt else vocab.dict_path
    if not dict_txt.is_file():
        raise ExportError(f"{dict_txt}: no such dict.txt")
    files = vocab.bpe_files
    if vocab.kind == "gpt2":
        return Gpt2Vocabulary(files["gpt2_encoder_json"], files["gpt2_vocab_bpe"], dict_txt)
    if vocab.kind == "sentencepiece":
        return SentencePieceVocabulary(files["sentencepiece_model"], dict_txt)
    raise ExportError(f"{vocab_dir}: a {vocab.kind} vocabulary; export writes gpt2 and sentencepiece tokenizers")


def load_checkpoint(path: str | os.PathLike) -> tuple[dict[str, Any], Any, Optional[str], Optional[dict]]:
    """The model state dict, model options, training data dir and training dictionary record
    (user_dir/checkpointing.py; None in checkpoints written before it) of a fairseq checkpoint file."""
    from fairseq import checkpoint_utils

    import user_dir  # noqa: F401  (allowlist for torch's weights_only load; unreadable files as CheckpointError)

    path = Path(path)
    if not path.is_file():
        raise ExportError(f"checkpoint {path} does not exist")
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    cfg = state.get("cfg") or {}
    model_cfg = cfg["model"] if "model" in cfg else state.get("args")
    if model_cfg is None:
        raise ExportError(f"{path} holds no model options (cfg.model / args); not a fairseq checkpoint?")
    task_cfg = cfg["task"] if "task" in cfg and cfg["task"] is not None else model_cfg
    return state["model"], model_cfg, option(task_cfg, "data"), (state.get("extra_state") or {}).get("dictionary")


def check_dictionary(dict_txt: Path, checkpoint, recorded: Optional[dict], data_dir: Optional[str]) -> None:
    """Refuse a dict.txt other than the one the checkpoint was trained with: one of the same size
    gives the exported tokenizer wrong ids. The reference is the dictionary recorded in the
    checkpoint, else its data dir's; a copy with other counts but the same entries (fairseq-preprocess
    rewrites dict.txt) passes."""
    from bio_roberta.checkpoints import training_dictionary
    from bio_roberta.provenance import sha256_file

    if recorded is None and data_dir is not None and training_dictionary(data_dir).is_file():
        reference = training_dictionary(data_dir)
        recorded = {"path": str(reference), "sha256": sha256_file(reference)}
    if recorded is None:
        logger.warning("%s records no dictionary and its training data (%s) is not here: %s is checked by its "
                       "size only", checkpoint, data_dir, dict_txt)
        return
    if sha256_file(dict_txt) == recorded["sha256"]:
        return
    reference = Path(recorded["path"])
    if (reference.is_file() and sha256_file(reference) == recorded["sha256"]
            and fairseq_dictionary(reference).symbols == fairseq_dictionary(dict_txt).symbols):
        return
    gone = "" if reference.is_file() else ", which is gone"
    raise ExportError(f"{dict_txt} is not the dictionary {checkpoint} was trained with ({reference}{gone}): "
                      f"its ids would be wrong; pass --vocab/--dict of the vocabulary that data was binarized with")


def option(model_cfg, name: str, default=None):
    """One model option from an argparse Namespace or a DictConfig."""
    if isinstance(model_cfg, argparse.Namespace):
        value = getattr(model_cfg, name, default)
    else:
        value = model_cfg.get(name, default)
    return default if value is None else value


def head_of(state: dict[str, Any], head_name: Optional[str]) -> tuple[str, Optional[str]]:
    """(kind, head name) of the checkpoint: a classification head if it has one, else masked LM."""
    heads = {}
    for prefix, kind in ((SENTENCE_HEAD_PREFIX, SEQUENCE_CLASSIFICATION), (TOKEN_HEAD_PREFIX, TOKEN_CLASSIFICATION)):
        for key in state:
            if key.startswith(prefix):
                heads[key[len(prefix):].split(".")[0]] = kind
    if head_name is not None:
        if head_name not in heads:
            raise ExportError(f"no classification head {head_name!r}; the checkpoint has {sorted(heads) or 'none'}")
        return heads[head_name], head_name
    if not heads:
        return MASKED_LM, None
    if len(heads) > 1:
        raise ExportError(f"the checkpoint has several heads {sorted(heads)}; choose one with --head")
    (name, kind), = heads.items()
    return kind, name


def label_names(label_dict: Path) -> list[str]:
    """Class index -> label: fairseq offsets label-dictionary ids by its 4 specials; the padding
    entries fairseq-preprocess appends (madeupword...) are no classes."""
    from fairseq.data import Dictionary

    from preprocess.vocab import MADEUP_WORD_PREFIX

    dictionary = Dictionary.load(str(label_dict))
    return [s for s in dictionary.symbols[dictionary.nspecial:] if not s.startswith(MADEUP_WORD_PREFIX)]


def entity_label_names(tags: list[str], label_dict: Path) -> list[str]:
    """Tags named with their entity type: BioBERT's untyped B/I/O files give B/I tags, which
    transformers' token-classification pipeline takes for two entity types named "B" and "I"; the
    registry's entity type of the task (finetune-bin/<task>/manifest.json beside label/) makes them
    B-<Type>/I-<Type>, which it groups into entities. Typed tags are kept."""
    from bio_roberta.predictions import task_spec_of
    from bio_roberta.tagging import entity_types, typed_tags

    if entity_types(tags) != ("",):
        return tags
    try:
        spec = task_spec_of(label_dict.parent.parent)
    except (OSError, ValueError) as error:
        logger.warning("labels %s stay untyped: no task to take their entity type from (%s)", tags, error)
        return tags
    if spec.entity_type is None:
        logger.warning("labels %s stay untyped: the registry gives %s no entity type", tags, spec.name)
        return tags
    return list(typed_tags(tags, spec.entity_type))


def hf_config(state, model_cfg, vocab_size: int, kind: str, labels: Optional[list[str]]):
    from transformers import RobertaConfig

    if option(model_cfg, "encoder_normalize_before", False):
        raise ExportError("encoder_normalize_before=True (pre-LN) has no RobertaModel equivalent")
    if ENCODER + "layernorm_embedding.weight" not in state:
        raise ExportError("the checkpoint has no embedding layer norm; RobertaModel needs one")
    activation = option(model_cfg, "activation_fn", "gelu")
    if activation not in HF_ACTIVATIONS:
        raise ExportError(f"activation {activation!r} has no transformers equivalent")
    embed = state[ENCODER + "embed_tokens.weight"]
    if embed.shape[0] != vocab_size:
        raise ExportError(
            f"the checkpoint's embedding has {embed.shape[0]} rows but the dictionary (+<mask>) has "
            f"{vocab_size} entries: pass the dict.txt the model was trained with (--dict)"
        )
    layers = 1 + max(int(key[len(ENCODER + "layers."):].split(".")[0]) for key in state if key.startswith(ENCODER + "layers."))
    config = RobertaConfig(
        vocab_size=vocab_size,
        hidden_size=embed.shape[1],
        num_hidden_layers=layers,
        num_attention_heads=option(model_cfg, "encoder_attention_heads"),
        intermediate_size=state[ENCODER + "layers.0.fc1.weight"].shape[0],
        hidden_act=HF_ACTIVATIONS[activation],
        max_position_embeddings=state[ENCODER + "embed_positions.weight"].shape[0],
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
        hidden_dropout_prob=option(model_cfg, "dropout", 0.1),
        attention_probs_dropout_prob=option(model_cfg, "attention_dropout", 0.1),
        tie_word_embeddings=kind == MASKED_LM and "encoder.lm_head.weight" in state
        and bool((state["encoder.lm_head.weight"] == embed).all()),
    )
    if labels is not None:
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
    return config


def hf_encoder_state(state: dict[str, Any], num_layers: int, prefix: str) -> dict[str, Any]:
    """RobertaModel weights (under prefix, e.g. 'roberta.') from fairseq's sentence encoder."""
    import torch

    embed = state[ENCODER + "embed_tokens.weight"]
    hf = {
        prefix + "embeddings.word_embeddings.weight": embed,
        prefix + "embeddings.position_embeddings.weight": state[ENCODER + "embed_positions.weight"],
        prefix + "embeddings.token_type_embeddings.weight": torch.zeros(1, embed.shape[1], dtype=embed.dtype),
        prefix + "embeddings.LayerNorm.weight": state[ENCODER + "layernorm_embedding.weight"],
        prefix + "embeddings.LayerNorm.bias": state[ENCODER + "layernorm_embedding.bias"],
    }
    layer_map = {
        "attention.self.query": "self_attn.q_proj",
        "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj",
        "attention.output.dense": "self_attn.out_proj",
        "attention.output.LayerNorm": "self_attn_layer_norm",
        "intermediate.dense": "fc1",
        "output.dense": "fc2",
        "output.LayerNorm": "final_layer_norm",
    }
    for i in range(num_layers):
        for hf_name, fs_name in layer_map.items():
            for param in ("weight", "bias"):
                hf[f"{prefix}encoder.layer.{i}.{hf_name}.{param}"] = state[f"{ENCODER}layers.{i}.{fs_name}.{param}"]
    return hf


def hf_head_state(state: dict[str, Any], kind: str, head: Optional[str], model_cfg) -> dict[str, Any]:
    if kind == MASKED_LM:
        return {
            "lm_head.dense.weight": state["encoder.lm_head.dense.weight"],
            "lm_head.dense.bias": state["encoder.lm_head.dense.bias"],
            "lm_head.layer_norm.weight": state["encoder.lm_head.layer_norm.weight"],
            "lm_head.layer_norm.bias": state["encoder.lm_head.layer_norm.bias"],
            "lm_head.decoder.weight": state["encoder.lm_head.weight"],
            "lm_head.decoder.bias": state["encoder.lm_head.bias"],
            "lm_head.bias": state["encoder.lm_head.bias"],
        }
    if kind == SEQUENCE_CLASSIFICATION:
        pooler = option(model_cfg, "pooler_activation_fn", "tanh")
        if pooler != "tanh":
            raise ExportError(f"classification head activation {pooler!r}: transformers' head uses tanh")
        if option(model_cfg, "spectral_norm_classification_head", False):
            raise ExportError("spectral-norm classification heads have no transformers equivalent")
        base = f"{SENTENCE_HEAD_PREFIX}{head}."
        return {
            f"classifier.{layer}.{param}": state[f"{base}{layer}.{param}"]
            for layer in ("dense", "out_proj") for param in ("weight", "bias")
        }
    base = f"{TOKEN_HEAD_PREFIX}{head}."
    head_keys = {key[len(base):] for key in state if key.startswith(base)}
    if head_keys != {"out_proj.weight", "out_proj.bias"}:
        raise ExportError(
            f"token head {head!r} has {sorted(head_keys)}; RobertaForTokenClassification needs one linear layer"
        )
    return {"classifier.weight": state[base + "out_proj.weight"], "classifier.bias": state[base + "out_proj.bias"]}


def build_hf_model(state, model_cfg, vocab_size: int, kind: str, head: Optional[str], labels):
    """The transformers model holding exactly the checkpoint's weights (missing keys are an error)."""
    import transformers

    config = hf_config(state, model_cfg, vocab_size, kind, labels)
    head_state = hf_head_state(state, kind, head, model_cfg)
    if labels is not None:
        classes = head_state["classifier.out_proj.bias" if kind == SEQUENCE_CLASSIFICATION else "classifier.bias"].shape[0]
        if classes != len(labels):
            raise ExportError(f"head {head!r} has {classes} outputs but the label dictionary lists {len(labels)} labels")
    if config.tie_word_embeddings:
        del head_state["lm_head.decoder.weight"]
    model = getattr(transformers, HF_MODEL_CLASSES[kind])(config)
    hf_state = hf_encoder_state(state, config.num_hidden_layers, "roberta.")
    hf_state.update(head_state)
    missing, unexpected = model.load_state_dict(hf_state, strict=False)
    missing = [key for key in missing if not (config.tie_word_embeddings and key == "lm_head.decoder.weight")]
    if missing or unexpected:
        raise ExportError(f"weight mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model.eval()


def export(
    checkpoint: str | os.PathLike,
    out_dir: str | os.PathLike,
    vocab_dir: str | os.PathLike,
    dict_txt: Optional[str | os.PathLike] = None,
    label_dict: Optional[str | os.PathLike] = None,
    head: Optional[str] = None,
) -> dict[str, Any]:
    """Write the transformers model + tokenizer + manifest.json to out_dir; returns the manifest."""
    out_dir = Path(out_dir)
    vocab = open_vocabulary(vocab_dir, dict_txt)
    state, model_cfg, data_dir, dictionary = load_checkpoint(checkpoint)
    # fairseq's learned positions reserve padding_idx + 1 = 2 rows
    tokenizer = vocab.hf_tokenizer(model_max_length=state[ENCODER + "embed_positions.weight"].shape[0] - 2)
    check_dictionary(vocab.dict_txt, checkpoint, dictionary, data_dir)
    kind, head = head_of(state, head)
    labels = None
    if kind != MASKED_LM:
        label_dict = Path(label_dict) if label_dict else default_label_dict(data_dir, checkpoint)
        labels = label_names(label_dict)
        if kind == TOKEN_CLASSIFICATION:
            labels = entity_label_names(labels, label_dict)
    vocab_size = len(fairseq_dictionary(vocab.dict_txt))
    model = build_hf_model(state, model_cfg, vocab_size, kind, head, labels)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    vocab.save_tokenizer(tokenizer, out_dir)
    manifest = {
        "kind": kind,
        "hf_model_class": HF_MODEL_CLASSES[kind],
        "head": head,
        "labels": labels,
        "vocab_size": vocab_size,
        "checkpoint": file_record(checkpoint),
        "vocabulary": {name: file_record(path) for name, path in vocab.files().items()},
        "label_dict": file_record(label_dict) if labels is not None else None,
        **environment_record(),
    }
    atomic_write_json(out_dir / "manifest.json", manifest)
    return manifest


def default_label_dict(data_dir: Optional[str], checkpoint) -> Path:
    """<task data>/label/dict.txt of the fine-tuning run, where the checkpoint's options name it."""
    hint = f"pass --label-dict (the label/dict.txt of the data {checkpoint} was fine-tuned on)"
    if data_dir is None:
        raise ExportError(f"the checkpoint does not name its data dir; {hint}")
    path = Path(str(data_dir).split(os.pathsep)[0]) / "label" / "dict.txt"
    if not path.exists():
        raise ExportError(f"{path} does not exist; {hint}")
    return path
