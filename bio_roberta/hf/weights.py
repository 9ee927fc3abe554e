"""A fairseq RoBERTa checkpoint's weights as a transformers model: RobertaForMaskedLM, or
RobertaForSequenceClassification / RobertaForTokenClassification for a fine-tuned head; the
config says the same architecture, and no weight is left out (missing keys are an error). An
imported BERT-family checkpoint (bert_encoder: bio_roberta/hf/import_hf.py) becomes the
Bert/MegatronBert classes instead: the import's mapping read backwards, the RoBERTa head weights
under BERT's names (BERT_HEAD_NAMES), positions without the two rows fairseq reserves before the
first token; a `modernbert` checkpoint the ModernBertFor* classes (bio_roberta/hf/modernbert.py)."""

from __future__ import annotations

import argparse
from typing import Any, Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf import modernbert as hf_modernbert
from bio_roberta.hf.families import FAMILIES, HF_ACTIVATIONS, HF_LAYER_NAMES, POSITION_OFFSET

MASKED_LM = "masked_lm"
SEQUENCE_CLASSIFICATION = "sequence_classification"
TOKEN_CLASSIFICATION = "token_classification"
HF_MODEL_CLASSES = {
    MASKED_LM: "RobertaForMaskedLM",
    SEQUENCE_CLASSIFICATION: "RobertaForSequenceClassification",
    TOKEN_CLASSIFICATION: "RobertaForTokenClassification",
}
ENCODER = "encoder.sentence_encoder."
TOKEN_HEAD_PREFIX = "token_classification_heads."
SENTENCE_HEAD_PREFIX = "classification_heads."


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
    for prefix, kind in (
        (SENTENCE_HEAD_PREFIX, SEQUENCE_CLASSIFICATION),
        (TOKEN_HEAD_PREFIX, TOKEN_CLASSIFICATION),
    ):
        for key in state:
            if key.startswith(prefix):
                heads[key[len(prefix) :].split(".")[0]] = kind
    if head_name is not None:
        if head_name not in heads:
            raise ExportError(
                f"no classification head {head_name!r}; the checkpoint has "
                f"{sorted(heads) or 'none'}"
            )
        return heads[head_name], head_name
    if not heads:
        return MASKED_LM, None
    if len(heads) > 1:
        raise ExportError(
            f"the checkpoint has several heads {sorted(heads)}; choose one with --head"
        )
    ((name, kind),) = heads.items()
    return kind, name


def hf_config(state, model_cfg, vocab_size: int, kind: str, labels: Optional[list[str]]):
    from transformers import RobertaConfig

    arch = bert_arch(model_cfg)
    if arch is None and option(model_cfg, "encoder_normalize_before", False):
        raise ExportError("encoder_normalize_before=True (pre-LN) has no RobertaModel equivalent")
    if arch is None and ENCODER + "layernorm_embedding.weight" not in state:
        raise ExportError("the checkpoint has no embedding layer norm; RobertaModel needs one")
    activation = option(model_cfg, "activation_fn", "gelu")
    if activation not in HF_ACTIVATIONS:
        raise ExportError(f"activation {activation!r} has no transformers equivalent")
    embed = state[ENCODER + "embed_tokens.weight"]
    if embed.shape[0] != vocab_size:
        raise ExportError(
            f"the checkpoint's embedding has {embed.shape[0]} rows but the dictionary (+<mask>) "
            f"has {vocab_size} entries: pass the dict.txt the model was trained with (--dict)"
        )
    layers = 1 + max(
        int(key[len(ENCODER + "layers.") :].split(".")[0])
        for key in state
        if key.startswith(ENCODER + "layers.")
    )
    config = (
        bert_config(arch, state, model_cfg, vocab_size, layers)
        if arch
        else RobertaConfig(
            vocab_size=vocab_size,
            hidden_size=embed.shape[1],
            num_hidden_layers=layers,
            num_attention_heads=option(model_cfg, "encoder_attention_heads"),
            intermediate_size=state[ENCODER + "layers.0.fc1.weight"].shape[0],
            hidden_act=HF_ACTIVATIONS[activation],
            max_position_embeddings=state[ENCODER + "embed_positions.weight"].shape[0],
            type_vocab_size=1,
            layer_norm_eps=1e-5,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            hidden_dropout_prob=option(model_cfg, "dropout", 0.1),
            attention_probs_dropout_prob=option(model_cfg, "attention_dropout", 0.1),
            tie_word_embeddings=kind == MASKED_LM
            and "encoder.lm_head.weight" in state
            and bool((state["encoder.lm_head.weight"] == embed).all()),
        )
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
        prefix + "embeddings.token_type_embeddings.weight": torch.zeros(
            1, embed.shape[1], dtype=embed.dtype
        ),
        prefix + "embeddings.LayerNorm.weight": state[ENCODER + "layernorm_embedding.weight"],
        prefix + "embeddings.LayerNorm.bias": state[ENCODER + "layernorm_embedding.bias"],
    }
    for i in range(num_layers):
        for hf_name, fs_name in HF_LAYER_NAMES.items():
            for param in ("weight", "bias"):
                hf[f"{prefix}encoder.layer.{i}.{hf_name}.{param}"] = state[
                    f"{ENCODER}layers.{i}.{fs_name}.{param}"
                ]
    return hf


def hf_head_state(
    state: dict[str, Any], kind: str, head: Optional[str], model_cfg
) -> dict[str, Any]:
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
            raise ExportError(
                f"classification head activation {pooler!r}: transformers' head uses tanh"
            )
        if option(model_cfg, "spectral_norm_classification_head", False):
            raise ExportError("spectral-norm classification heads have no transformers equivalent")
        base = f"{SENTENCE_HEAD_PREFIX}{head}."
        return {
            f"classifier.{layer}.{param}": state[f"{base}{layer}.{param}"]
            for layer in ("dense", "out_proj")
            for param in ("weight", "bias")
        }
    base = f"{TOKEN_HEAD_PREFIX}{head}."
    head_keys = {key[len(base) :] for key in state if key.startswith(base)}
    if head_keys != {"out_proj.weight", "out_proj.bias"}:
        raise ExportError(
            f"token head {head!r} has {sorted(head_keys)}; "
            "RobertaForTokenClassification needs one linear layer"
        )
    return {
        "classifier.weight": state[base + "out_proj.weight"],
        "classifier.bias": state[base + "out_proj.bias"],
    }


def build_hf_model(
    state,
    model_cfg,
    vocab_size: int,
    kind: str,
    head: Optional[str],
    labels: Optional[list[str]],
    problem_type: Optional[str] = None,
    decoding: Optional[str] = None,
):
    """The transformers model holding exactly the checkpoint's weights (missing keys are an
    error). A head's outputs are named by labels, or left unnamed (labels None: a score);
    problem_type and decoding go to the config (bio_roberta.tasks.kinds.HFExport)."""
    import transformers

    if option(model_cfg, "arch", option(model_cfg, "_name")) == hf_modernbert.ARCH:
        return build_modernbert(
            state, model_cfg, vocab_size, kind, head, labels, problem_type, decoding
        )
    config = hf_config(state, model_cfg, vocab_size, kind, labels)
    head_state = hf_head_state(state, kind, head, model_cfg)
    if kind != MASKED_LM:
        outputs = head_state[
            "classifier.out_proj.bias" if kind == SEQUENCE_CLASSIFICATION else "classifier.bias"
        ].shape[0]
        set_head_outputs(config, head, outputs, labels, problem_type, decoding)
    if config.tie_word_embeddings:
        del head_state["lm_head.decoder.weight"]
    arch = bert_arch(model_cfg)
    if arch is None:
        model = getattr(transformers, HF_MODEL_CLASSES[kind])(config)
        hf_state = hf_encoder_state(state, config.num_hidden_layers, "roberta.")
        hf_state.update(head_state)
    else:  # an imported BERT-family model (bio_roberta/hf/import_hf.py)
        model = getattr(transformers, bert_class_name(arch, kind))(config)
        hf_state = bert_state(arch, state, config.num_hidden_layers, head_state)
    missing, unexpected = model.load_state_dict(hf_state, strict=False)
    missing = [
        key
        for key in missing
        if not (config.tie_word_embeddings and key == "lm_head.decoder.weight")
    ]
    if missing or unexpected:
        raise ExportError(f"weight mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model.eval()


def set_head_outputs(
    config, head, outputs: int, labels, problem_type: Optional[str], decoding: Optional[str]
) -> None:
    """A head's outputs in its config: counted (labels None: a score each) or checked against the
    labels; problem_type and decoding (bio_roberta.tasks.kinds.HFExport) where given."""
    if labels is None:
        config.num_labels = outputs
    elif outputs != len(labels):
        raise ExportError(
            f"head {head!r} has {outputs} outputs but there are {len(labels)} labels "
            f"({', '.join(labels)}): is it a model of that task?"
        )
    if problem_type is not None:
        config.problem_type = problem_type
    if decoding is not None:
        config.decoding = decoding


def build_modernbert(
    state, model_cfg, vocab_size: int, kind: str, head, labels, problem_type, decoding
):
    """The ModernBertFor* model of an imported (or trained) plugin ModernBERT
    (bio_roberta/hf/modernbert.py maps the weights); what build_hf_model checks of the others."""
    import transformers

    tied = kind != MASKED_LM or "encoder.lm_head.weight" not in state
    tied = tied or bool(
        state["encoder.lm_head.weight"].equal(state[ENCODER + "embed_tokens.weight"])
    )
    config = hf_modernbert.export_config(
        lambda name: option(model_cfg, name), state, vocab_size, tied
    )
    prefix = {
        MASKED_LM: None,
        SEQUENCE_CLASSIFICATION: f"{SENTENCE_HEAD_PREFIX}{head}.",
        TOKEN_CLASSIFICATION: f"{TOKEN_HEAD_PREFIX}{head}.",
    }[kind]
    hf_state = hf_modernbert.export_state(state, prefix)
    if kind != MASKED_LM:
        set_head_outputs(
            config, head, hf_state["classifier.bias"].shape[0], labels, problem_type, decoding
        )
        if labels is not None:
            config.id2label = dict(enumerate(labels))
            config.label2id = {label: i for i, label in enumerate(labels)}
    model = getattr(transformers, "ModernBert" + CLASS_SUFFIX[kind])(config)
    missing, unexpected = model.load_state_dict(hf_state, strict=False)
    if tied:
        missing = [key for key in missing if key != hf_modernbert.TIED_DECODER]
    if missing or unexpected:
        raise ExportError(f"weight mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model.eval()


# fairseq architecture -> (transformers model family prefix, the import family it came from)
BERT_ARCHS = {
    "bert_encoder": ("Bert", "bert"),
    "megatron_bert_encoder": ("MegatronBert", "megatron-bert"),
}
# RobertaFor* weight name prefix (weights.hf_head_state) -> BertFor* / MegatronBertFor*
BERT_HEAD_NAMES = {
    "lm_head.dense.": "cls.predictions.transform.dense.",
    "lm_head.layer_norm.": "cls.predictions.transform.LayerNorm.",
    "lm_head.decoder.": "cls.predictions.decoder.",
    "lm_head.bias": "cls.predictions.bias",
    "classifier.dense.": "bert.pooler.dense.",  # BERT's pooler is the sentence head's dense+tanh
    "classifier.out_proj.": "classifier.",
    "classifier.": "classifier.",  # the token head's one linear layer
}
CLASS_SUFFIX = {
    MASKED_LM: "ForMaskedLM",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
}


def bert_arch(model_cfg) -> str | None:
    """The checkpoint's architecture if it is a BERT-family one, else None."""
    arch = option(model_cfg, "arch", option(model_cfg, "_name"))
    return arch if arch in BERT_ARCHS else None


def bert_class_name(arch: str, kind: str) -> str:
    return BERT_ARCHS[arch][0] + CLASS_SUFFIX[kind]


def bert_config(arch: str, state: dict[str, Any], model_cfg, vocab_size: int, layers: int):
    import transformers

    embed = state[ENCODER + "embed_tokens.weight"]
    return getattr(transformers, BERT_ARCHS[arch][0] + "Config")(
        vocab_size=vocab_size,
        hidden_size=embed.shape[1],
        num_hidden_layers=layers,
        num_attention_heads=option(model_cfg, "encoder_attention_heads"),
        intermediate_size=state[ENCODER + "layers.0.fc1.weight"].shape[0],
        hidden_act=HF_ACTIVATIONS[option(model_cfg, "activation_fn", "gelu")],
        max_position_embeddings=state[ENCODER + "embed_positions.weight"].shape[0]
        - POSITION_OFFSET,
        type_vocab_size=state[ENCODER + "segment_embeddings.weight"].shape[0],
        layer_norm_eps=option(model_cfg, "layer_norm_eps"),
        pad_token_id=1,
        hidden_dropout_prob=option(model_cfg, "dropout", 0.1),
        attention_probs_dropout_prob=option(model_cfg, "attention_dropout", 0.1),
        tie_word_embeddings=False,
    )


def bert_state(
    arch: str, state: dict[str, Any], layers: int, head_state: dict[str, Any]
) -> dict[str, Any]:
    """transformers weights of the encoder (under "bert.") and of the RoBERTa-named head_state."""
    family = FAMILIES[BERT_ARCHS[arch][1]]
    hf = {
        "bert.embeddings.word_embeddings.weight": state[ENCODER + "embed_tokens.weight"],
        "bert.embeddings.position_embeddings.weight": state[ENCODER + "embed_positions.weight"][
            POSITION_OFFSET:
        ],
        "bert.embeddings.token_type_embeddings.weight": state[
            ENCODER + "segment_embeddings.weight"
        ],
    }
    norms = {"layernorm_embedding": "embeddings.LayerNorm"}
    if family.final_layer_norm:
        norms["layer_norm"] = family.final_layer_norm
    for fairseq_name, hf_name in norms.items():
        for param in ("weight", "bias"):
            if f"{ENCODER}{fairseq_name}.{param}" in state:
                hf[f"bert.{hf_name}.{param}"] = state[f"{ENCODER}{fairseq_name}.{param}"]
    for i in range(layers):
        for hf_name, fairseq_name in family.layer_names.items():
            for param in ("weight", "bias"):
                hf[f"bert.encoder.layer.{i}.{hf_name}.{param}"] = state[
                    f"{ENCODER}layers.{i}.{fairseq_name}.{param}"
                ]
    for name, value in head_state.items():
        prefix = next(p for p in BERT_HEAD_NAMES if name.startswith(p))
        hf[BERT_HEAD_NAMES[prefix] + name[len(prefix) :]] = value
    return hf
