"""The RoBERTa family (transformers' RobertaModel, RobertaFor*) and fairseq's own `roberta`, both
ways; BERT's layout (bert_layout.py) under RoBERTa's names. Its GPT-2 byte-level BPE tokenizer is
a gpt2 vocabulary dir. Export-hf writes every fairseq RoBERTa (roberta_base, roberta_tiny, a
distilled student, an import) as RobertaFor*.

transformers' position rows count from padding_idx + 1 as fairseq's do, so they map as they are
(max_positions = rows - 2); the single token-type row is the same for every token, so import adds
it to the position rows and export writes a zero row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bio_roberta.errors import ExportError
from bio_roberta.hf.bert_layout import (
    HF_DEFAULT_EPS,
    POSITION_IDS,
    POSITION_OFFSET,
    BertLayoutFamily,
)
from bio_roberta.hf.family import ConfigProblem
from bio_roberta_core.fairseq_keys import ENCODER, LM_HEAD, MASKED_LM, option

# fairseq's LayerNorm eps, which its RoBERTa has
FAIRSEQ_EPS = 1e-5


@dataclass(frozen=True, kw_only=True)
class RobertaFamily(BertLayoutFamily):
    sentence_head = {"dense": "classifier.dense", "out_proj": "classifier.out_proj"}
    config_special_tokens = ("pad_token_id", "bos_token_id", "eos_token_id")

    def read_config(self, hf_dir: Path, raw: dict[str, Any]) -> dict[str, Any]:
        if raw.get("pad_token_id", 1) != 1:
            raise ConfigProblem(
                f"pad_token_id {raw['pad_token_id']}: RoBERTa's positions count from "
                "padding_idx + 1 and fairseq's padding_idx is 1"
            )
        eps = raw.get("layer_norm_eps", HF_DEFAULT_EPS)
        if eps != FAIRSEQ_EPS:
            raise ConfigProblem(f"layer_norm_eps {eps}: fairseq's RoBERTa has {FAIRSEQ_EPS}")
        return raw

    def arch_options(self, raw: dict[str, Any]) -> dict[str, Any]:
        return {"max_positions": raw["max_position_embeddings"] - POSITION_OFFSET}

    def fairseq_positions(self, positions, token_types) -> dict[str, Any]:
        return {ENCODER + "embed_positions.weight": positions + token_types[0]}

    def layout_options(self, state: dict[str, Any], model_cfg, kind: str) -> dict[str, Any]:
        if option(model_cfg, "encoder_normalize_before", False):
            raise ExportError(
                "encoder_normalize_before=True (pre-LN) has no RobertaModel equivalent"
            )
        if ENCODER + "layernorm_embedding.weight" not in state:
            raise ExportError("the checkpoint has no embedding layer norm; RobertaModel needs one")
        embed = state[ENCODER + "embed_tokens.weight"]
        return dict(
            max_position_embeddings=state[ENCODER + "embed_positions.weight"].shape[0],
            type_vocab_size=1,
            layer_norm_eps=FAIRSEQ_EPS,
            tie_word_embeddings=kind == MASKED_LM
            and LM_HEAD + "weight" in state
            and bool((state[LM_HEAD + "weight"] == embed).all()),
        )

    def hf_positions(self, state: dict[str, Any]) -> dict[str, Any]:
        import torch

        embed = state[ENCODER + "embed_tokens.weight"]
        return {
            "embeddings.position_embeddings.weight": state[ENCODER + "embed_positions.weight"],
            "embeddings.token_type_embeddings.weight": torch.zeros(
                1, embed.shape[1], dtype=embed.dtype
            ),
        }


ROBERTA = RobertaFamily(
    model_type="roberta",
    arch="roberta",
    vocabulary="gpt2",
    base_prefix="roberta.",
    hf_class_prefix="Roberta",
    # RobertaModel's pooler (fine-tuning's sentence head starts fresh); a buffer: 0..positions - 1
    left_out=("pooler.", POSITION_IDS),
    mlm_head={"lm_head.dense": "dense", "lm_head.layer_norm": "layer_norm"},
    mlm_bias="lm_head.bias",
    mlm_decoder="lm_head.decoder",
)
