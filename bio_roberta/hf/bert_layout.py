"""transformers' BERT encoder layout (BertModel: word, position and token-type embeddings, layers of
BertLayer's modules, the MLM head's transform), which RobertaModel copies, onto fairseq's sentence
encoder and RoBERTa heads, both ways: the mapping roberta.py and bert.py share. Each family fills
in what differs: its position and token-type rows, its transformers config, its heads' names."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf.family import FAIRSEQ_ACTIVATIONS, HF_ACTIVATIONS, Family, Shapes, take_rows
from bio_roberta_core.fairseq_keys import (
    ENCODER,
    HEAD_PREFIXES,
    LM_HEAD,
    MASKED_LM,
    SEQUENCE_CLASSIFICATION,
    option,
)

# transformers RobertaLayer / BertLayer module -> fairseq TransformerEncoderLayer module
HF_LAYER_NAMES = {
    "attention.self.query": "self_attn.q_proj",
    "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "self_attn_layer_norm",
    "intermediate.dense": "fc1",
    "output.dense": "fc2",
    "output.LayerNorm": "final_layer_norm",
}
# The shape of each transformers layer module's weight as (rows, columns) of config fields (a
# LayerNorm's: rows only); its bias has the rows.
HF_LAYER_SHAPES = {
    "attention.self.query": ("hidden_size", "hidden_size"),
    "attention.self.key": ("hidden_size", "hidden_size"),
    "attention.self.value": ("hidden_size", "hidden_size"),
    "attention.output.dense": ("hidden_size", "hidden_size"),
    "attention.output.LayerNorm": ("hidden_size",),
    "attention.ln": ("hidden_size",),
    "intermediate.dense": ("intermediate_size", "hidden_size"),
    "output.dense": ("hidden_size", "intermediate_size"),
    "output.LayerNorm": ("hidden_size",),
    "ln": ("hidden_size",),
}
# fairseq's learned positions start at padding_idx + 1
POSITION_OFFSET = 2
POSITION_IDS = "embeddings.position_ids"  # a buffer some files hold; import reads none
HF_DEFAULT_EPS = 1e-12  # transformers' configs' layer_norm_eps when config.json has none
# a token head's one linear layer: fairseq module -> transformers'
TOKEN_HEAD = {"out_proj": "classifier"}


def layer_count(state: dict[str, Any]) -> int:
    """How many layers a fairseq checkpoint's encoder has."""
    layers = ENCODER + "layers."
    return 1 + max(int(key[len(layers) :].split(".")[0]) for key in state if key.startswith(layers))


@dataclass(frozen=True, kw_only=True)
class BertLayoutFamily(Family):
    """A family of BERT's layout: which of its norms and heads it has, and their names."""

    model_type: str
    arch: str
    vocabulary: str
    base_prefix: str
    hf_class_prefix: str
    left_out: tuple[str, ...]
    mlm_head: Optional[dict[str, str]]  # transformers MLM head module -> fairseq lm_head's
    mlm_bias: Optional[str] = None  # the MLM head's output bias
    mlm_decoder: Optional[str] = None  # its output projection (absent from the file: tied)
    # transformers layer module -> fairseq's
    layer_names: dict[str, str] = field(default_factory=lambda: HF_LAYER_NAMES)
    final_layer_norm: Optional[str] = None  # transformers' final LayerNorm (pre-LN models)
    embedding_layer_norm: bool = True  # embeddings.LayerNorm (Megatron-BERT has none)
    layer_prefix: str = "encoder.layer."
    token_embeddings: str = "embeddings.word_embeddings.weight"
    # fairseq sentence head module -> transformers' (export: where its dense and out_proj go)
    sentence_head: ClassVar[dict[str, str]]

    @property
    def decoder_weight(self) -> Optional[str]:
        return None if self.mlm_decoder is None else f"{self.mlm_decoder}.weight"

    def norm_names(self) -> dict[str, str]:
        """fairseq encoder LayerNorm -> transformers' (the base model's names)."""
        norms = {"layernorm_embedding": "embeddings.LayerNorm"} if self.embedding_layer_norm else {}
        if self.final_layer_norm:
            norms["layer_norm"] = self.final_layer_norm
        return norms

    # import-hf

    @abstractmethod
    def arch_options(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The fairseq options of config.json (raw) that the family's architecture has beyond
        RoBERTa's shape, max_positions included (its rows count from padding_idx + 1)."""

    @abstractmethod
    def fairseq_positions(self, positions, token_types) -> dict[str, Any]:
        """The fairseq weights of transformers' position and token-type rows."""

    def expected_weights(self, raw: dict[str, Any], layers: int) -> Shapes:
        hidden = "hidden_size"
        weights = {
            self.token_embeddings: ("vocab_size", hidden),
            "embeddings.position_embeddings.weight": ("max_position_embeddings", hidden),
            "embeddings.token_type_embeddings.weight": ("type_vocab_size", hidden),
        }
        for norm in self.norm_names().values():
            weights[f"{norm}.weight"] = weights[f"{norm}.bias"] = (hidden,)
        for i in range(layers):
            for module in self.layer_names:
                weights[f"{self.layer_prefix}{i}.{module}.weight"] = HF_LAYER_SHAPES[module]
                weights[f"{self.layer_prefix}{i}.{module}.bias"] = HF_LAYER_SHAPES[module][:1]
        return weights

    def mlm_head_weights(self, raw: dict[str, Any]) -> tuple[Shapes, set[str]]:
        """The optional ones: the decoder and its copy of the bias."""
        if self.mlm_head is None:
            return {}, set()
        hidden, vocab = "hidden_size", "vocab_size"
        weights = {self.mlm_bias: (vocab,)}
        for module, fairseq_module in self.mlm_head.items():
            dense = fairseq_module == "dense"
            weights[f"{module}.weight"] = (hidden, hidden) if dense else (hidden,)
            weights[f"{module}.bias"] = (hidden,)
        optional = {self.decoder_weight: (vocab, hidden), f"{self.mlm_decoder}.bias": (vocab,)}
        return {**weights, **optional}, set(optional)

    def model_options(self, raw: dict[str, Any]) -> dict[str, Any]:
        return dict(
            encoder_layers=raw["num_hidden_layers"],
            encoder_embed_dim=raw["hidden_size"],
            encoder_ffn_embed_dim=raw["intermediate_size"],
            encoder_attention_heads=raw["num_attention_heads"],
            activation_fn=FAIRSEQ_ACTIVATIONS[raw.get("hidden_act", "gelu")],
            dropout=raw.get("hidden_dropout_prob", 0.1),
            attention_dropout=raw.get("attention_probs_dropout_prob", 0.1),
            **self.arch_options(raw),
        )

    def fairseq_state(
        self, hf: dict[str, Any], rows: list[Optional[int]], layers: int, mlm: bool, untied: bool
    ) -> dict[str, Any]:
        used: set[str] = set()

        def take(name: str):
            used.add(name)
            return hf[name]

        embed = take_rows(take(self.token_embeddings), rows)
        fs = {ENCODER + "embed_tokens.weight": embed}
        fs.update(
            self.fairseq_positions(
                take("embeddings.position_embeddings.weight"),
                take("embeddings.token_type_embeddings.weight"),
            )
        )
        for fairseq_norm, hf_norm in self.norm_names().items():
            for param in ("weight", "bias"):
                fs[f"{ENCODER}{fairseq_norm}.{param}"] = take(f"{hf_norm}.{param}")
        for i in range(layers):
            for hf_name, fs_name in self.layer_names.items():
                for param in ("weight", "bias"):
                    fs[f"{ENCODER}layers.{i}.{fs_name}.{param}"] = take(
                        f"{self.layer_prefix}{i}.{hf_name}.{param}"
                    )
        if mlm:
            for hf_name, fs_name in self.mlm_head.items():
                for param in ("weight", "bias"):
                    fs[f"{LM_HEAD}{fs_name}.{param}"] = take(f"{hf_name}.{param}")
            fs[LM_HEAD + "bias"] = take_rows(take(self.mlm_bias), rows)
            for param in ("weight", "bias"):  # the bias: transformers' copy of the one above
                if f"{self.mlm_decoder}.{param}" in hf:
                    take(f"{self.mlm_decoder}.{param}")
            if untied:
                fs[LM_HEAD + "weight"] = take_rows(hf[self.decoder_weight], rows)
        fs.setdefault(LM_HEAD + "weight", embed)  # tied
        assert used == set(hf), f"read but not mapped: {sorted(set(hf) - used)}"
        return fs

    # export-hf

    @abstractmethod
    def layout_options(self, state: dict[str, Any], model_cfg, kind: str) -> dict[str, Any]:
        """The family's transformers config fields beyond the encoder's shape (positions, token
        types, LayerNorm eps, tying); a checkpoint its classes cannot hold is an ExportError."""

    @abstractmethod
    def hf_positions(self, state: dict[str, Any]) -> dict[str, Any]:
        """transformers' position and token-type rows of the checkpoint (the base model's names)."""

    def max_length(self, state: dict[str, Any], model_cfg) -> int:
        return state[ENCODER + "embed_positions.weight"].shape[0] - POSITION_OFFSET

    def config_options(self, state: dict[str, Any], model_cfg, kind: str) -> dict[str, Any]:
        options = self.layout_options(state, model_cfg, kind)
        activation = option(model_cfg, "activation_fn", "gelu")
        if activation not in HF_ACTIVATIONS:
            raise ExportError(f"activation {activation!r} has no transformers equivalent")
        return dict(
            num_hidden_layers=layer_count(state),
            num_attention_heads=option(model_cfg, "encoder_attention_heads"),
            intermediate_size=state[ENCODER + "layers.0.fc1.weight"].shape[0],
            hidden_act=HF_ACTIVATIONS[activation],
            hidden_dropout_prob=option(model_cfg, "dropout", 0.1),
            attention_probs_dropout_prob=option(model_cfg, "attention_dropout", 0.1),
            **options,
        )

    def hf_state(
        self, state: dict[str, Any], model_cfg, kind: str, head: Optional[str]
    ) -> dict[str, Any]:
        hf = {self.token_embeddings: state[ENCODER + "embed_tokens.weight"]}
        hf.update(self.hf_positions(state))
        for fairseq_norm, hf_norm in self.norm_names().items():
            for param in ("weight", "bias"):
                if f"{ENCODER}{fairseq_norm}.{param}" in state:
                    hf[f"{hf_norm}.{param}"] = state[f"{ENCODER}{fairseq_norm}.{param}"]
        for i in range(layer_count(state)):
            for hf_name, fairseq_name in self.layer_names.items():
                for param in ("weight", "bias"):
                    hf[f"{self.layer_prefix}{i}.{hf_name}.{param}"] = state[
                        f"{ENCODER}layers.{i}.{fairseq_name}.{param}"
                    ]
        hf = {self.base_prefix + name: tensor for name, tensor in hf.items()}
        return {**hf, **self.hf_head_state(state, kind, head, model_cfg)}

    def hf_head_state(
        self, state: dict[str, Any], kind: str, head: Optional[str], model_cfg
    ) -> dict[str, Any]:
        """transformers' weights of the MLM head (the import's names read backwards) or of the
        named classification head."""
        if kind == MASKED_LM:
            hf = {
                f"{hf_name}.{param}": state[f"{LM_HEAD}{fs_name}.{param}"]
                for hf_name, fs_name in self.mlm_head.items()
                for param in ("weight", "bias")
            }
            hf[self.decoder_weight] = state[LM_HEAD + "weight"]
            hf[f"{self.mlm_decoder}.bias"] = state[LM_HEAD + "bias"]
            hf[self.mlm_bias] = state[LM_HEAD + "bias"]
            return hf
        base = f"{HEAD_PREFIXES[kind]}{head}."
        if kind == SEQUENCE_CLASSIFICATION:
            pooler = option(model_cfg, "pooler_activation_fn", "tanh")
            if pooler != "tanh":
                raise ExportError(
                    f"classification head activation {pooler!r}: transformers' head uses tanh"
                )
            if option(model_cfg, "spectral_norm_classification_head", False):
                raise ExportError(
                    "spectral-norm classification heads have no transformers equivalent"
                )
            names = self.sentence_head
        else:
            head_keys = {key[len(base) :] for key in state if key.startswith(base)}
            if head_keys != {"out_proj.weight", "out_proj.bias"}:
                raise ExportError(
                    f"token head {head!r} has {sorted(head_keys)}; "
                    f"{self.hf_class(kind)} needs one linear layer"
                )
            names = TOKEN_HEAD
        return {
            f"{hf_module}.{param}": state[f"{base}{module}.{param}"]
            for module, hf_module in names.items()
            for param in ("weight", "bias")
        }
