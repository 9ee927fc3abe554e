"""The BERT family: BERT (BertModel, BertFor*), ELECTRA's discriminator (ElectraModel,
ElectraForPreTraining) and Megatron-BERT (MegatronBertModel, MegatronBertFor*), as the plugin's
`bert_encoder` / `megatron_bert_encoder` (user_dir/models/bert_encoder.py), both ways.

They share a module because they are one model under three names: BERT's layout (bert_layout.py)
with its segment embeddings and learned positions, the same plugin model (Megatron-BERT's is the
pre-LN one, with a final LayerNorm and none on the embeddings), the same WordPiece tokenizer (a
wordpiece vocabulary dir) and the same export classes (ELECTRA's discriminator, a `bert_encoder`,
comes back as BertFor*); what differs is data: the weights' prefix, the layer and norm names, the
heads the files hold.

BERT's position row p becomes fairseq's row p + 2 (fairseq counts from padding_idx + 1; the two
rows before are zero and export drops them); the token-type rows are the segment embeddings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from bio_roberta.hf.bert_layout import (
    HF_DEFAULT_EPS,
    HF_LAYER_NAMES,
    POSITION_IDS,
    POSITION_OFFSET,
    BertLayoutFamily,
)
from bio_roberta_core.fairseq_keys import ENCODER, option

SEGMENTS = ENCODER + "segment_embeddings.weight"
# a buffer: 0..max_position_embeddings - 1


@dataclass(frozen=True, kw_only=True)
class BertFamily(BertLayoutFamily):
    """BERT's names by default; ELECTRA and Megatron-BERT say how they differ."""

    arch: str = "bert_encoder"
    vocabulary: str = "wordpiece"
    base_prefix: str = "bert."
    hf_class_prefix: str = "Bert"
    # BERT's pooler (fine-tuning's sentence head starts fresh), its next-sentence head
    # (BertForPreTraining)
    left_out: tuple[str, ...] = ("pooler.", "cls.seq_relationship.", POSITION_IDS)
    mlm_head: Optional[dict[str, str]] = field(
        default_factory=lambda: {
            "cls.predictions.transform.dense": "dense",
            "cls.predictions.transform.LayerNorm": "layer_norm",
        }
    )
    mlm_bias: Optional[str] = "cls.predictions.bias"
    mlm_decoder: Optional[str] = "cls.predictions.decoder"
    # BERT's pooler is the sentence head's dense+tanh
    sentence_head = {"dense": "bert.pooler.dense", "out_proj": "classifier"}
    config_special_tokens = ("pad_token_id",)

    def arch_options(self, raw: dict[str, Any]) -> dict[str, Any]:
        return {
            "max_positions": raw["max_position_embeddings"],
            "layer_norm_eps": raw.get("layer_norm_eps", HF_DEFAULT_EPS),
            "type_vocab_size": raw.get("type_vocab_size", 2),
        }

    def fairseq_positions(self, positions, token_types) -> dict[str, Any]:
        import torch

        reserved = positions.new_zeros(POSITION_OFFSET, positions.shape[1])
        return {
            ENCODER + "embed_positions.weight": torch.cat([reserved, positions]),
            SEGMENTS: token_types,
        }

    def layout_options(self, state: dict[str, Any], model_cfg, kind: str) -> dict[str, Any]:
        return dict(
            max_position_embeddings=self.max_length(state, model_cfg),
            type_vocab_size=state[SEGMENTS].shape[0],
            layer_norm_eps=option(model_cfg, "layer_norm_eps"),
            tie_word_embeddings=False,
        )

    def hf_positions(self, state: dict[str, Any]) -> dict[str, Any]:
        return {
            "embeddings.position_embeddings.weight": state[ENCODER + "embed_positions.weight"][
                POSITION_OFFSET:
            ],
            "embeddings.token_type_embeddings.weight": state[SEGMENTS],
        }


BERT = BertFamily(model_type="bert")
# the discriminator: no MLM head; its replaced-token head has no fairseq place. Its bert_encoder
# exports as BERT (families.py)
ELECTRA = BertFamily(
    model_type="electra",
    base_prefix="electra.",
    left_out=("discriminator_predictions.", POSITION_IDS),
    mlm_head=None,
    mlm_bias=None,
    mlm_decoder=None,
)
# pre-LN: a LayerNorm before attention and MLM, a final one, none on the embeddings
MEGATRON_BERT = BertFamily(
    model_type="megatron-bert",
    arch="megatron_bert_encoder",
    hf_class_prefix="MegatronBert",
    layer_names={
        **{k: v for k, v in HF_LAYER_NAMES.items() if "LayerNorm" not in k},
        "attention.ln": "self_attn_layer_norm",
        "ln": "final_layer_norm",
    },
    final_layer_norm="encoder.ln",
    embedding_layer_norm=False,
)
