"""The ModernBERT family (transformers' ModernBertModel and its MLM / classification models) and the
plugin's `modernbert` architecture (user_dir/models/modernbert.py), both ways. Its byte-level BPE
tokenizer.json is an hf_bpe vocabulary dir.

The fairseq modules keep transformers' names inside the encoder (layers.<i>.attn.Wqkv, ...), so
the mapping is a prefix per module: the token embeddings (rows in fairseq's dictionary order, as
every family's), the embedding norm, the final norm, and the heads. Which biases exist is the
config's (norm_bias, attention_bias, mlp_bias, classifier_bias, decoder_bias). The attention
pattern (layer_types, local_attention) and the RoPE thetas are read through transformers'
ModernBertConfig, which also understands the older config.json fields the hub's copies hold
(global_attn_every_n_layers, global_rope_theta, local_rope_theta). Positions are rotary: the
model reads as many tokens as its max_positions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from bio_roberta.hf.family import (
    CONFIG_SPECIAL_TOKENS,
    FAIRSEQ_ACTIVATIONS,
    HF_ACTIVATIONS,
    ConfigProblem,
    Family,
    Shapes,
    take_rows,
)
from bio_roberta_core.fairseq_keys import ENCODER, HEAD_PREFIXES, LM_HEAD, MASKED_LM, option

ARCH = "modernbert"
# transformers module (without the base model's "model.") -> fairseq module
ENCODER_NAMES = {
    "embeddings.tok_embeddings": ENCODER + "embed_tokens",
    "embeddings.norm": ENCODER + "embedding_norm",
    "final_norm": ENCODER + "final_norm",
    "layers.": ENCODER + "layers.",
}
MLM_NAMES = {"head.dense": LM_HEAD + "dense", "head.norm": LM_HEAD + "layer_norm"}
TIED_DECODER = "decoder.weight"
# transformers' ModernBertPredictionHead inside a classification model -> our head's modules
HEAD_NAMES = {"head.dense": "dense", "head.norm": "layer_norm", "classifier": "out_proj"}
# the options the plugin's model names as ModernBertConfig does (export: biases as bools, an unset
# dropout 0)
SAME_NAMED = ("local_attention", "norm_eps", "classifier_pooling")
BIASES = ("norm_bias", "attention_bias", "mlp_bias", "classifier_bias", "decoder_bias")
DROPOUTS = ("embedding_dropout", "attention_dropout", "mlp_dropout")
# derived sizes that weight shapes name (derived_sizes)
QKV, GLU = "3 x hidden_size", "2 x intermediate_size"


def transformers_config(hf_dir: Path):
    """transformers' reading of config.json (layer_types, rope_parameters, sliding window)."""
    from transformers import ModernBertConfig

    return ModernBertConfig.from_pretrained(hf_dir)


def fairseq_name(name: str) -> str:
    """A transformers weight name (without "model.") as the plugin's model names it."""
    for names in (ENCODER_NAMES, MLM_NAMES):
        for hf_prefix, fairseq_prefix in names.items():
            if name.startswith(hf_prefix):
                return fairseq_prefix + name[len(hf_prefix) :]
    if name == "decoder.bias":
        return LM_HEAD + "bias"
    raise KeyError(name)


class ModernBertFamily(Family):
    model_type = "modernbert"
    arch = ARCH
    vocabulary = "hf_bpe"
    base_prefix = "model."
    layer_prefix = "layers."
    left_out = ()
    hf_class_prefix = "ModernBert"
    decoder_weight = TIED_DECODER
    token_embeddings = "embeddings.tok_embeddings.weight"
    config_special_tokens = tuple(CONFIG_SPECIAL_TOKENS)  # <s> is [CLS] and bos, </s> [SEP], eos

    # import-hf

    def read_config(self, hf_dir: Path, raw: dict[str, Any]):
        """transformers' ModernBertConfig of it; a ConfigProblem: what it refuses, or the field the
        plugin's model cannot compute."""
        from huggingface_hub.errors import StrictDataclassError

        try:
            config = transformers_config(hf_dir)
        except (ValueError, TypeError, StrictDataclassError) as error:  # its fields' validation
            reason = " ".join(str(error).split())
            raise ConfigProblem(f"transformers refuses it: {reason}") from None
        for field in ("hidden_activation", "classifier_activation"):
            if getattr(config, field) not in FAIRSEQ_ACTIVATIONS:
                raise ConfigProblem(
                    f"{field} {getattr(config, field)!r} has no fairseq activation "
                    f"({', '.join(sorted(FAIRSEQ_ACTIVATIONS))} do)"
                )
        for layer_type, rope in config.rope_parameters.items():
            if rope.get("rope_type", "default") != "default":
                raise ConfigProblem(
                    f"rope_parameters[{layer_type!r}] rope_type {rope['rope_type']!r}: the "
                    "plugin's ModernBERT has plain RoPE only"
                )
        if config.classifier_pooling not in ("cls", "mean"):
            raise ConfigProblem(f"classifier_pooling {config.classifier_pooling!r}: cls or mean")
        return config

    def derived_sizes(self, sizes: dict[str, int]) -> dict[str, int]:
        """The fused query/key/value and GeGLU input projections."""
        return {QKV: 3 * sizes["hidden_size"], GLU: 2 * sizes["intermediate_size"]}

    def expected_weights(self, raw: dict[str, Any], layers: int) -> Shapes:
        hidden = "hidden_size"
        norm = ("weight", "bias") if raw.get("norm_bias", False) else ("weight",)
        linear = ("weight", "bias") if raw.get("attention_bias", False) else ("weight",)
        mlp = ("weight", "bias") if raw.get("mlp_bias", False) else ("weight",)
        weights = {self.token_embeddings: ("vocab_size", hidden)}
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
                    weights[f"{self.layer_prefix}{i}.{module}.{param}"] = (
                        shape if param == "weight" else shape[:1]
                    )
        return weights

    def mlm_head_weights(self, raw: dict[str, Any]) -> tuple[Shapes, set[str]]:
        """The optional one: the decoder's weight."""
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

    def model_options(self, config) -> dict[str, Any]:
        """The plugin's modernbert options of transformers' ModernBertConfig (read_config's; its
        architecture fills RoBERTa's other options)."""
        return dict(
            encoder_layers=config.num_hidden_layers,
            encoder_embed_dim=config.hidden_size,
            encoder_ffn_embed_dim=config.intermediate_size,
            encoder_attention_heads=config.num_attention_heads,
            activation_fn=FAIRSEQ_ACTIVATIONS[config.hidden_activation],
            head_activation_fn=FAIRSEQ_ACTIVATIONS[config.classifier_activation],
            max_positions=config.max_position_embeddings,
            layer_types=",".join(config.layer_types),
            global_rope_theta=float(config.rope_parameters["full_attention"]["rope_theta"]),
            local_rope_theta=float(config.rope_parameters["sliding_attention"]["rope_theta"]),
            pooler_dropout=config.classifier_dropout,
            **{name: getattr(config, name) for name in (*SAME_NAMED, *BIASES, *DROPOUTS)},
        )

    def fairseq_state(
        self, hf: dict[str, Any], rows: list[Optional[int]], layers: int, mlm: bool, untied: bool
    ) -> dict[str, Any]:
        """Every weight read maps by its prefix (the MLM head's too, where the file has it)."""
        state = {}
        for name, tensor in hf.items():
            if name == TIED_DECODER:
                continue
            vocabulary_sized = name in (self.token_embeddings, "decoder.bias")
            state[fairseq_name(name)] = take_rows(tensor, rows) if vocabulary_sized else tensor
        # the decoder: its own weight when untied, else the embeddings (import-hf listed a tied
        # one among the weights that "start fresh")
        state[LM_HEAD + "weight"] = (
            take_rows(hf[TIED_DECODER], rows) if untied else state[ENCODER + "embed_tokens.weight"]
        )
        return state

    # export-hf

    def max_length(self, state: dict[str, Any], model_cfg) -> int:
        return option(model_cfg, "max_positions")

    def config_options(self, state: dict[str, Any], model_cfg, kind: str) -> dict[str, Any]:
        """ModernBertConfig's fields of the plugin's model options."""
        embed = state[ENCODER + "embed_tokens.weight"]
        tied = kind != MASKED_LM or LM_HEAD + "weight" not in state
        tied = tied or bool(state[LM_HEAD + "weight"].equal(embed))
        layer_types = option(model_cfg, "layer_types").split(",")
        return dict(
            intermediate_size=state[ENCODER + "layers.0.mlp.Wo.weight"].shape[1],
            num_hidden_layers=len(layer_types),
            num_attention_heads=option(model_cfg, "encoder_attention_heads"),
            hidden_activation=HF_ACTIVATIONS[option(model_cfg, "activation_fn")],
            classifier_activation=HF_ACTIVATIONS[option(model_cfg, "head_activation_fn")],
            max_position_embeddings=option(model_cfg, "max_positions"),
            layer_types=layer_types,
            rope_parameters={
                "full_attention": {
                    "rope_type": "default",
                    "rope_theta": option(model_cfg, "global_rope_theta"),
                },
                "sliding_attention": {
                    "rope_type": "default",
                    "rope_theta": option(model_cfg, "local_rope_theta"),
                },
            },
            **{name: option(model_cfg, name) for name in SAME_NAMED},
            **{name: bool(option(model_cfg, name)) for name in BIASES},
            **{name: option(model_cfg, name) or 0.0 for name in DROPOUTS},
            classifier_dropout=option(model_cfg, "pooler_dropout") or 0.0,
            tie_word_embeddings=tied,
        )

    def hf_state(
        self, state: dict[str, Any], model_cfg, kind: str, head: Optional[str]
    ) -> dict[str, Any]:
        """The encoder under "model.", and the MLM head or the named classification head
        (transformers' ModernBertPredictionHead and classifier)."""
        hf = {}
        for name, tensor in state.items():
            for hf_prefix, fairseq_prefix in ENCODER_NAMES.items():
                if name.startswith(fairseq_prefix):
                    hf["model." + hf_prefix + name[len(fairseq_prefix) :]] = tensor
        if kind == MASKED_LM:
            for hf_prefix, fairseq_prefix in MLM_NAMES.items():
                for name in state:
                    if name.startswith(fairseq_prefix + "."):
                        hf[hf_prefix + name[len(fairseq_prefix) :]] = state[name]
            hf[TIED_DECODER] = state[LM_HEAD + "weight"]
            if LM_HEAD + "bias" in state:
                hf["decoder.bias"] = state[LM_HEAD + "bias"]
            return hf
        head_prefix = f"{HEAD_PREFIXES[kind]}{head}."
        for hf_prefix, ours in HEAD_NAMES.items():
            for name in state:
                if name.startswith(f"{head_prefix}{ours}."):
                    hf[hf_prefix + name[len(head_prefix + ours) :]] = state[name]
        return hf


MODERNBERT = ModernBertFamily()
