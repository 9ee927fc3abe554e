"""How transformers encoder families map onto fairseq's RoBERTa: module names, activations,
positions. import_hf.py reads them one way, weights.py (export-hf) the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# fairseq activation -> transformers hidden_act with the same formula.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_accurate": "gelu_new", "relu": "relu", "tanh": "tanh"}
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
# fairseq's learned positions start at padding_idx + 1
POSITION_OFFSET = 2


@dataclass(frozen=True)
class Family:
    """How one transformers model type maps onto fairseq."""

    arch: str  # fairseq architecture
    vocabulary: str  # vocabulary dir kind
    layer_names: dict[str, str]  # transformers layer module -> fairseq layer module
    base_prefix: str  # what transformers' task models put before the base model's weights
    final_layer_norm: Optional[str] = None  # transformers' final LayerNorm (pre-LN models)
    embedding_layer_norm: bool = True  # embeddings.LayerNorm (Megatron-BERT has none)
    mlm_head: Optional[dict[str, str]] = None  # transformers MLM head module -> fairseq lm_head's
    mlm_bias: Optional[str] = None  # the MLM head's output bias
    mlm_decoder: Optional[str] = None  # its output projection (absent from the file: tied)


BERT_MLM_HEAD = {
    "cls.predictions.transform.dense": "dense",
    "cls.predictions.transform.LayerNorm": "layer_norm",
}
BERT_MLM = dict(
    mlm_head=BERT_MLM_HEAD, mlm_bias="cls.predictions.bias", mlm_decoder="cls.predictions.decoder"
)
FAMILIES = {
    "roberta": Family(
        "roberta",
        "gpt2",
        HF_LAYER_NAMES,
        "roberta.",
        mlm_head={"lm_head.dense": "dense", "lm_head.layer_norm": "layer_norm"},
        mlm_bias="lm_head.bias",
        mlm_decoder="lm_head.decoder",
    ),
    "bert": Family("bert_encoder", "wordpiece", HF_LAYER_NAMES, "bert.", **BERT_MLM),
    "electra": Family("bert_encoder", "wordpiece", HF_LAYER_NAMES, "electra."),
    "megatron-bert": Family(
        "megatron_bert_encoder",
        "wordpiece",
        {
            **{k: v for k, v in HF_LAYER_NAMES.items() if "LayerNorm" not in k},
            "attention.ln": "self_attn_layer_norm",
            "ln": "final_layer_norm",
        },
        "bert.",
        final_layer_norm="encoder.ln",
        embedding_layer_norm=False,
        **BERT_MLM,
    ),
}
# ModernBERT: its own module names and optional biases (bio_roberta/hf/modernbert.py holds its
# mapping); layer_names unused
FAMILIES["modernbert"] = Family("modernbert", "hf_bpe", {}, "model.")
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
# Weights of transformers models that import-hf reads nowhere, as it says in docs/import.md:
# heads fairseq's RoBERTa has no place for, and a buffer transformers rebuilds. Any other weight
# a file holds that the mapping leaves unread is refused.
KNOWN_LEFT_OUT = (
    "pooler.",  # BERT's pooler (fine-tuning's sentence head starts fresh)
    "cls.seq_relationship.",  # BERT's next-sentence head (BertForPreTraining)
    "discriminator_predictions.",  # ELECTRA's replaced-token head
    "embeddings.position_ids",  # a buffer: 0..max_position_embeddings - 1
)
