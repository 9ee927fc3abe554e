"""A fairseq RoBERTa checkpoint as a Hugging Face transformers model directory.

The checkpoint may be pretrained or distilled (-> RobertaForMaskedLM) or fine-tuned with a
sentence classification head (-> RobertaForSequenceClassification) or a token classification
head (-> RobertaForTokenClassification). The tokenizer files are written so that
RobertaTokenizerFast gives the ids fairseq gives:

fairseq encodes text with the GPT-2 byte-level BPE (encoder.json: token -> BPE id), writes the
BPE ids as strings and looks those strings up in dict.txt, whose order is its own (4 specials
first, then the symbols by frequency, madeupword padding, <mask> added last by the task). So the
exported vocab.json maps each BPE token to the *dictionary* index of its BPE id. fairseq would
turn a BPE id missing from dict.txt into <unk>; a BPE tokenizer cannot (its merges work on ids, so
every token needs its own), so such a dict.txt is refused with a message saying what to use.
"""
from __future__ import annotations

import argparse
import json
import os
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


class ExportError(Exception):
    """The checkpoint or vocabulary cannot be exported as asked; the message says why."""


@dataclass
class BpeVocabulary:
    """A byte-level BPE vocabulary dir: encoder.json + vocab.bpe + dict.txt."""

    encoder_json: Path
    vocab_bpe: Path
    dict_txt: Path

    @classmethod
    def from_dir(cls, vocab_dir: str | os.PathLike, dict_txt: Optional[str | os.PathLike] = None):
        from preprocess.vocab import VocabDirError, read_vocab_dir

        try:
            vocab = read_vocab_dir(vocab_dir)
        except VocabDirError as error:
            raise ExportError(str(error)) from None
        if vocab.kind != "gpt2":
            raise ExportError(f"{vocab_dir}: a {vocab.kind} vocabulary; export writes byte-level BPE (gpt2) tokenizers")
        files = vocab.bpe_files
        dict_txt = Path(dict_txt) if dict_txt else vocab.dict_path
        if not dict_txt.is_file():
            raise ExportError(f"{dict_txt}: no such dict.txt")
        return cls(files["gpt2_encoder_json"], files["gpt2_vocab_bpe"], dict_txt)

    def merges(self) -> list[str]:
        """The merge lines of vocab.bpe (fairseq's reader skips its first, '#version' line)."""
        lines = self.vocab_bpe.read_text(encoding="utf-8").split("\n")[1:]
        return [line for line in lines if line.strip()]

    def fairseq_dictionary(self):
        """dict.txt as the fine-tuning and masked_lm tasks see it, with <mask> appended."""
        from fairseq.data import Dictionary

        dictionary = Dictionary.load(str(self.dict_txt))
        dictionary.add_symbol("<mask>")
        return dictionary

    def hf_vocab(self) -> dict[str, int]:
        """BPE token -> fairseq dictionary index (see the module docstring)."""
        dictionary = self.fairseq_dictionary()
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


def load_checkpoint(path: str | os.PathLike) -> tuple[dict[str, Any], Any, Optional[str]]:
    """The model state dict, model options and training data dir of a fairseq checkpoint file."""
    import bio_roberta.checkpoints  # noqa: F401  (allowlist for torch's weights_only load)
    from fairseq import checkpoint_utils

    path = Path(path)
    if not path.is_file():
        raise ExportError(f"checkpoint {path} does not exist")
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    cfg = state.get("cfg") or {}
    model_cfg = cfg["model"] if "model" in cfg else state.get("args")
    if model_cfg is None:
        raise ExportError(f"{path} holds no model options (cfg.model / args); not a fairseq checkpoint?")
    task_cfg = cfg["task"] if "task" in cfg and cfg["task"] is not None else model_cfg
    return state["model"], model_cfg, option(task_cfg, "data")


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


def write_tokenizer(vocab: BpeVocabulary, hf_vocab: dict[str, int], out_dir: Path, model_max_length: int) -> None:
    """tokenizer.json + tokenizer_config.json (RobertaTokenizerFast), and vocab.json + merges.txt."""
    from transformers import RobertaTokenizerFast

    merges = vocab.merges()
    tokenizer = RobertaTokenizerFast(vocab=hf_vocab, merges=[tuple(m.split(" ")) for m in merges],
                                     add_prefix_space=False, model_max_length=model_max_length)
    tokenizer.save_pretrained(out_dir)
    atomic_write_text(out_dir / "vocab.json", json.dumps(hf_vocab, ensure_ascii=False) + "\n")
    atomic_write_text(out_dir / "merges.txt", "#version: 0.2\n" + "\n".join(merges) + "\n")


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
    vocab = BpeVocabulary.from_dir(vocab_dir, dict_txt)
    hf_vocab = vocab.hf_vocab()
    state, model_cfg, data_dir = load_checkpoint(checkpoint)
    kind, head = head_of(state, head)
    labels = None
    if kind != MASKED_LM:
        label_dict = Path(label_dict) if label_dict else default_label_dict(data_dir, checkpoint)
        labels = label_names(label_dict)
    vocab_size = len(vocab.fairseq_dictionary())
    model = build_hf_model(state, model_cfg, vocab_size, kind, head, labels)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    write_tokenizer(vocab, hf_vocab, out_dir, model.config.max_position_embeddings - 2)
    manifest = {
        "kind": kind,
        "hf_model_class": HF_MODEL_CLASSES[kind],
        "head": head,
        "labels": labels,
        "vocab_size": vocab_size,
        "checkpoint": file_record(checkpoint),
        "vocabulary": {name: file_record(path) for name, path in
                       (("encoder_json", vocab.encoder_json), ("vocab_bpe", vocab.vocab_bpe), ("dict_txt", vocab.dict_txt))},
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
