"""The ModernBERT family (transformers' ModernBertModel and its MLM / classification models) and the
plugin's `modernbert` architecture (user_dir/models/modernbert.py), both ways: import-hf reads
the weights it names here (model_files.check_weights, import_hf.fairseq_state), export-hf
writes them back (weights.build_hf_model).

The fairseq modules keep transformers' names inside the encoder (layers.<i>.attn.Wqkv, ...), so
the mapping is a prefix per module: the token embeddings (rows in fairseq's dictionary order, as
every family's), the embedding norm, the final norm, and the heads. Which biases exist is the
config's (norm_bias, attention_bias, mlp_bias, classifier_bias, decoder_bias). The attention
pattern (layer_types, local_attention) and the RoPE thetas are read through transformers'
ModernBertConfig, which also understands the older config.json fields the hub's copies hold
(global_attn_every_n_layers, global_rope_theta, local_rope_theta).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Optional

ARCH = "modernbert"
ENCODER = "encoder.sentence_encoder."
# transformers module (without the base model's "model.") -> fairseq module
ENCODER_NAMES = {
    "embeddings.tok_embeddings": ENCODER + "embed_tokens",
    "embeddings.norm": ENCODER + "embedding_norm",
    "final_norm": ENCODER + "final_norm",
    "layers.": ENCODER + "layers.",
}
MLM_NAMES = {"head.dense": "encoder.lm_head.dense", "head.norm": "encoder.lm_head.layer_norm"}
TIED_DECODER = "decoder.weight"
# transformers' ModernBertPredictionHead inside a classification model -> our head's modules
HEAD_NAMES = {"head.dense": "dense", "head.norm": "layer_norm", "classifier": "out_proj"}
# derived sizes that weight shapes name (model_files.check_sizes adds them)
QKV, GLU = "3 x hidden_size", "2 x intermediate_size"


def hf_config(hf_dir: Path):
    """transformers' reading of config.json (layer_types, rope_parameters, sliding window)."""
    from transformers import ModernBertConfig

    return ModernBertConfig.from_pretrained(hf_dir)


def config_problem(config, fairseq_activations) -> Optional[str]:
    """The ModernBERT config field the plugin's model cannot compute, said in one line (None: it
    computes them all)."""
    for field in ("hidden_activation", "classifier_activation"):
        if getattr(config, field) not in fairseq_activations:
            return (
                f"{field} {getattr(config, field)!r} has no fairseq activation "
                f"({', '.join(sorted(fairseq_activations))} do)"
            )
    for layer_type, rope in config.rope_parameters.items():
        if rope.get("rope_type", "default") != "default":
            return (
                f"rope_parameters[{layer_type!r}] rope_type {rope['rope_type']!r}: the plugin's "
                "ModernBERT has plain RoPE only"
            )
    if config.classifier_pooling not in ("cls", "mean"):
        return f"classifier_pooling {config.classifier_pooling!r}: cls or mean"
    return None


def expected_weights(raw: dict[str, Any], layers: int) -> dict[str, tuple[str, ...]]:
    """The encoder weights of config.json's model (names without "model."), with the config
    fields of their shapes."""
    hidden = "hidden_size"
    norm = ("weight", "bias") if raw.get("norm_bias", False) else ("weight",)
    linear = ("weight", "bias") if raw.get("attention_bias", False) else ("weight",)
    mlp = ("weight", "bias") if raw.get("mlp_bias", False) else ("weight",)
    weights = {"embeddings.tok_embeddings.weight": ("vocab_size", hidden)}
    for module in ["embeddings.norm", "final_norm"]:
        for param in norm:
            weights[f"{module}.{param}"] = (hidden,)
    for i in range(layers):
        shapes = {
            "attn.Wqkv": ((QKV, hidden), linear),
            "attn.Wo": ((hidden, hidden), linear),
            "mlp.Wi": ((GLU, hidden), mlp),
            "mlp.Wo": ((hidden, "intermediate_size"), mlp),
            "mlp_norm": ((hidden,), norm),
            **({"attn_norm": ((hidden,), norm)} if i else {}),  # layer 0 has none
        }
        for module, (shape, params) in shapes.items():
            for param in params:
                weights[f"layers.{i}.{module}.{param}"] = shape if param == "weight" else shape[:1]
    return weights


def mlm_head_weights(raw: dict[str, Any]) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """(ModernBertForMaskedLM's head weights with their shapes, the optional one: the decoder's
    weight, which a tied model's file leaves out)."""
    hidden = ("hidden_size",)
    weights = {"head.dense.weight": ("hidden_size", "hidden_size"), "head.norm.weight": hidden}
    if raw.get("classifier_bias", False):
        weights["head.dense.bias"] = hidden
    if raw.get("norm_bias", False):
        weights["head.norm.bias"] = hidden
    if raw.get("decoder_bias", True):
        weights["decoder.bias"] = ("vocab_size",)
    weights[TIED_DECODER] = ("vocab_size", "hidden_size")
    return weights, {TIED_DECODER}


def fairseq_args(config, untied: bool, fairseq_activations) -> argparse.Namespace:
    """The plugin's modernbert options of a transformers ModernBertConfig (its architecture fills
    RoBERTa's other options)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    import user_dir  # noqa: F401  (registers modernbert)

    args = argparse.Namespace(
        arch=ARCH,
        _name=ARCH,
        encoder_layers=config.num_hidden_layers,
        encoder_embed_dim=config.hidden_size,
        encoder_ffn_embed_dim=config.intermediate_size,
        encoder_attention_heads=config.num_attention_heads,
        activation_fn=fairseq_activations[config.hidden_activation],
        head_activation_fn=fairseq_activations[config.classifier_activation],
        max_positions=config.max_position_embeddings,
        layer_types=",".join(config.layer_types),
        local_attention=config.local_attention,
        global_rope_theta=float(config.rope_parameters["full_attention"]["rope_theta"]),
        local_rope_theta=float(config.rope_parameters["sliding_attention"]["rope_theta"]),
        norm_eps=config.norm_eps,
        norm_bias=config.norm_bias,
        attention_bias=config.attention_bias,
        mlp_bias=config.mlp_bias,
        classifier_bias=config.classifier_bias,
        decoder_bias=config.decoder_bias,
        classifier_pooling=config.classifier_pooling,
        embedding_dropout=config.embedding_dropout,
        attention_dropout=config.attention_dropout,
        mlp_dropout=config.mlp_dropout,
        pooler_dropout=config.classifier_dropout,
        untie_weights_roberta=untied,
    )
    ARCH_CONFIG_REGISTRY[ARCH](args)
    return args


def untied_decoder(hf: dict[str, Any]) -> bool:
    decoder = hf.get(TIED_DECODER)
    return decoder is not None and not decoder.equal(hf["embeddings.tok_embeddings.weight"])


def fairseq_name(name: str) -> str:
    """A transformers weight name (without "model.") as the plugin's model names it."""
    for names in (ENCODER_NAMES, MLM_NAMES):
        for hf_prefix, fairseq_prefix in names.items():
            if name.startswith(hf_prefix):
                return fairseq_prefix + name[len(hf_prefix) :]
    if name == "decoder.bias":
        return "encoder.lm_head.bias"
    raise KeyError(name)


def fairseq_state(hf: dict[str, Any], rows, take_rows) -> dict[str, Any]:
    """The plugin's weights of every weight read (model_files.check_weights); vocabulary-sized
    ones in fairseq's dictionary order (rows)."""
    state = {}
    for name, tensor in hf.items():
        if name == TIED_DECODER:
            continue
        vocabulary_sized = name in ("embeddings.tok_embeddings.weight", "decoder.bias")
        state[fairseq_name(name)] = take_rows(tensor, rows) if vocabulary_sized else tensor
    # the decoder: its own weight when untied, else the embeddings (import-hf listed a tied one
    # among the weights that "start fresh")
    state["encoder.lm_head.weight"] = (
        take_rows(hf[TIED_DECODER], rows)
        if untied_decoder(hf)
        else state[ENCODER + "embed_tokens.weight"]
    )
    return state


def export_config(option: Callable[[str], Any], state: dict[str, Any], vocab_size: int, tied):
    """transformers' ModernBertConfig of the plugin's model options (option: name -> value);
    fairseq's specials are the ids (<s> = [CLS] 0, <pad> 1, </s> = [SEP] 2)."""
    from transformers import ModernBertConfig

    from bio_roberta.hf.families import HF_ACTIVATIONS

    layer_types = option("layer_types").split(",")
    return ModernBertConfig(
        vocab_size=vocab_size,
        hidden_size=state[ENCODER + "embed_tokens.weight"].shape[1],
        intermediate_size=state[ENCODER + "layers.0.mlp.Wo.weight"].shape[1],
        num_hidden_layers=len(layer_types),
        num_attention_heads=option("encoder_attention_heads"),
        hidden_activation=HF_ACTIVATIONS[option("activation_fn")],
        classifier_activation=HF_ACTIVATIONS[option("head_activation_fn")],
        max_position_embeddings=option("max_positions"),
        layer_types=layer_types,
        local_attention=option("local_attention"),
        rope_parameters={
            "full_attention": {
                "rope_type": "default",
                "rope_theta": option("global_rope_theta"),
            },
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": option("local_rope_theta"),
            },
        },
        norm_eps=option("norm_eps"),
        **{
            name: bool(option(name))
            for name in ("norm_bias", "attention_bias", "mlp_bias", "classifier_bias")
        },
        decoder_bias=bool(option("decoder_bias")),
        classifier_pooling=option("classifier_pooling"),
        embedding_dropout=option("embedding_dropout") or 0.0,
        attention_dropout=option("attention_dropout") or 0.0,
        mlp_dropout=option("mlp_dropout") or 0.0,
        classifier_dropout=option("pooler_dropout") or 0.0,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        cls_token_id=0,
        sep_token_id=2,
        tie_word_embeddings=tied,
    )


def export_state(state: dict[str, Any], head_prefix: Optional[str]) -> dict[str, Any]:
    """transformers' weights of the encoder (under "model.") and of the head: the MLM head (no
    head_prefix), or the classification head under head_prefix (classification_heads.<name>. or
    token_classification_heads.<name>.)."""
    hf = {}
    for name, tensor in state.items():
        for hf_prefix, fairseq_prefix in ENCODER_NAMES.items():
            if name.startswith(fairseq_prefix):
                hf["model." + hf_prefix + name[len(fairseq_prefix) :]] = tensor
    if head_prefix is None:
        for hf_prefix, fairseq_prefix in MLM_NAMES.items():
            for name in state:
                if name.startswith(fairseq_prefix + "."):
                    hf[hf_prefix + name[len(fairseq_prefix) :]] = state[name]
        hf[TIED_DECODER] = state["encoder.lm_head.weight"]
        if "encoder.lm_head.bias" in state:
            hf["decoder.bias"] = state["encoder.lm_head.bias"]
        return hf
    for hf_prefix, ours in HEAD_NAMES.items():
        for name in state:
            if name.startswith(f"{head_prefix}{ours}."):
                hf[hf_prefix + name[len(head_prefix + ours) :]] = state[name]
    return hf
