"""A token-classification head on fairseq's own RoBERTa model, for sequence labelling.

The head is attached to an unchanged ``roberta`` model (any architecture: roberta_tiny, _base,
_large), so a pretrained checkpoint loads into it by fairseq's fine-tuning route
(``--restore-file ... --reset-optimizer --reset-dataloader --reset-meters``), exactly as
sentence_prediction's classification heads do: heads missing from the checkpoint keep their fresh
weights, heads the current model lacks are dropped from it.

Parameter names, and their Hugging Face ``RobertaForTokenClassification`` counterparts::

    token_classification_heads.<head name>.out_proj.weight  -> classifier.weight  (classes x hidden)
    token_classification_heads.<head name>.out_proj.bias    -> classifier.bias    (classes)

Like RobertaForTokenClassification, the head is dropout then one linear layer over every position
of the encoder's last layer (no dense/tanh layer, unlike the sentence classification head); class
ids are the rows of label/dict.txt after its special symbols
(bio_roberta.tasks.kinds.label_symbols).
"""

from __future__ import annotations

import logging
from typing import Optional

import torch
from torch import nn

logger = logging.getLogger(__name__)

HEADS_ATTRIBUTE = "token_classification_heads"


class TokenClassificationHead(nn.Module):
    """Per-token class scores: dropout, then a linear map from the hidden size to the classes."""

    def __init__(self, input_dim: int, num_classes: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.out_proj = nn.Linear(input_dim, num_classes)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.dropout(features))


class TokenClassificationHeads(nn.ModuleDict):
    """The model's token-classification heads by name.

    fairseq calls ``upgrade_state_dict_named`` on every submodule before loading a state dict; this
    is where a checkpoint without (or with other) heads is reconciled with the current model.
    """

    def upgrade_state_dict_named(self, state_dict, name):
        prefix = name + "."
        for key in [k for k in state_dict if k.startswith(prefix)]:
            head_name, parameter = key[len(prefix) :].split(".", 1)
            current = self[head_name].state_dict() if head_name in self else {}
            if parameter not in current or current[parameter].shape != state_dict[key].shape:
                logger.warning(
                    "dropping %s from the checkpoint: the current model has no head of that "
                    "name and shape",
                    key,
                )
                del state_dict[key]
        for key, value in self.state_dict().items():
            if prefix + key not in state_dict:
                logger.info("new token-classification head parameter %s", prefix + key)
                state_dict[prefix + key] = value


def add_token_classification_head(model, name: str, num_classes: int) -> nn.Module:
    """Attach a fresh head called ``name`` to a fairseq RoBERTa model (once per name); a model
    with its own kind of token head (``build_token_classification_head``) gets that."""
    heads = getattr(model, HEADS_ATTRIBUTE, None)
    if heads is None:
        heads = TokenClassificationHeads()
        setattr(model, HEADS_ATTRIBUTE, heads)
    if name in heads:
        raise ValueError(f"the model already has a token-classification head named {name!r}")
    build_head = getattr(model, "build_token_classification_head", None)  # e.g. ModernBERT's
    heads[name] = (
        build_head(num_classes)
        if build_head is not None
        else TokenClassificationHead(model.args.encoder_embed_dim, num_classes, model.args.dropout)
    )
    return heads[name]


def token_classification_logits(
    model, name: str, src_tokens: torch.Tensor, read: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Class scores (batch x positions x classes) of head ``name`` for every input position; with
    ``read``, the B x T mask of the positions the caller reads, those are the model's and the
    others' undefined (the unpadded encoder runs its last layer at those positions only:
    user_dir/models/fused_roberta_encoder.py)."""
    heads = getattr(model, HEADS_ATTRIBUTE, None)
    if heads is None or name not in heads:
        raise ValueError(
            f"the model has no token-classification head {name!r}; train it with "
            "--task sequence_labeling (which attaches the head) or pass its "
            "--classification-head-name"
        )
    features, _ = model(src_tokens, features_only=True, features_at=read)
    return heads[name](features)
