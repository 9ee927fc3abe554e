"""fairseq's names in a RoBERTa-family checkpoint that several of our packages read: the sentence
encoder's weights, the masked-LM head, the named heads by kind; and a model option read from either
kind of checkpoint config (an argparse Namespace of older checkpoints, a DictConfig of newer)."""

from __future__ import annotations

import argparse

# fairseq's names: the sentence encoder's weights, and the named heads' by kind
ENCODER = "encoder.sentence_encoder."
LM_HEAD = "encoder.lm_head."  # fairseq's masked-LM head
MASKED_LM = "masked_lm"
SEQUENCE_CLASSIFICATION = "sequence_classification"
TOKEN_CLASSIFICATION = "token_classification"
HEAD_PREFIXES = {
    SEQUENCE_CLASSIFICATION: "classification_heads.",
    TOKEN_CLASSIFICATION: "token_classification_heads.",
}


def option(model_cfg, name: str, default=None):
    """One model option from an argparse Namespace or a DictConfig."""
    if isinstance(model_cfg, argparse.Namespace):
        value = getattr(model_cfg, name, default)
    else:
        value = model_cfg.get(name, default)
    return default if value is None else value
