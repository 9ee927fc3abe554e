"""How transformers encoder families map onto fairseq's RoBERTa: module names, activations,
positions. import_hf.py reads them one way, hf_weights.py (export-hf) the other."""

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
    final_layer_norm: Optional[str] = None  # transformers' final LayerNorm (pre-LN models)
    mlm_head: Optional[dict[str, str]] = None  # transformers MLM head module -> fairseq lm_head's


BERT_MLM_HEAD = {
    "cls.predictions.transform.dense": "dense",
    "cls.predictions.transform.LayerNorm": "layer_norm",
}
FAMILIES = {
    "roberta": Family(
        "roberta",
        "gpt2",
        HF_LAYER_NAMES,
        mlm_head={"lm_head.dense": "dense", "lm_head.layer_norm": "layer_norm"},
    ),
    "bert": Family("bert_encoder", "wordpiece", HF_LAYER_NAMES, mlm_head=BERT_MLM_HEAD),
    "electra": Family("bert_encoder", "wordpiece", HF_LAYER_NAMES),
    "megatron-bert": Family(
        "megatron_bert_encoder",
        "wordpiece",
        {
            **{k: v for k, v in HF_LAYER_NAMES.items() if "LayerNorm" not in k},
            "attention.ln": "self_attn_layer_norm",
            "ln": "final_layer_norm",
        },
        final_layer_norm="encoder.ln",
        mlm_head=BERT_MLM_HEAD,
    ),
}
MLM_DECODER = {"roberta": "lm_head.decoder", "bert": "cls.predictions.decoder"}
MLM_BIAS = {"roberta": "lm_head.bias", "bert": "cls.predictions.bias"}
