"""ModernBERT's initialisation for pretraining from scratch: FlexBERT's ``full_megatron`` init, with
which ModernBERT was trained (AnswerDotAI/ModernBERT src/bert_layers/initialization.py,
init_weights; the configs' init_std 0.02 and init_cutoff_factor 2.0). Every weight is drawn from a
normal truncated at 2 standard deviations: 0.02 for the token embeddings and the input projections
(Wqkv, Wi), 0.02 / sqrt(2 x layers) for the projections that write into the residual stream (the
attention's and the MLP's Wo, the MLM head's dense), hidden_size ** -0.5 for an untied decoder;
biases are zero, norms one. fairseq's RobertaModel, which the plugin's model extends, applies
BERT's init_bert_params instead: N(0, 0.02) everywhere, untruncated, the output projections of a
22-layer model 6.6 times larger than ModernBERT's (0.02 against 0.003), which is what its deep
pre-norm residual stream was trained from. transformers' ModernBertPreTrainedModel._init_weights
draws the same as FlexBERT, but for the decoder (its "out" deviation), which FlexBERT leaves tied
to the embeddings."""

from __future__ import annotations

import math

import torch
from torch import nn

STD = 0.02  # init_std
CUTOFF = 2.0  # init_cutoff_factor: truncated at +-2 standard deviations


def truncated_normal_(weight: torch.Tensor, std: float) -> None:
    nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-CUTOFF * std, b=CUTOFF * std)


def init_modernbert_weights(model, args) -> None:
    """Initialise a freshly built plugin ModernBERT (user_dir/models/modernbert.py) in place."""
    encoder = model.encoder.sentence_encoder
    out_std = STD / math.sqrt(2.0 * len(encoder.layers))
    with torch.no_grad():
        truncated_normal_(encoder.embed_tokens.weight, STD)
        encoder.embed_tokens.weight[encoder.padding_idx].zero_()  # as nn.Embedding has it
        for layer in encoder.layers:
            for linear, std in (
                (layer.attn.Wqkv, STD),
                (layer.attn.Wo, out_std),
                (layer.mlp.Wi, STD),
                (layer.mlp.Wo, out_std),
            ):
                truncated_normal_(linear.weight, std)
                if linear.bias is not None:
                    linear.bias.zero_()
        head = model.encoder.lm_head
        truncated_normal_(head.dense.weight, out_std)
        if head.dense.bias is not None:
            head.dense.bias.zero_()
        if head.weight is not encoder.embed_tokens.weight:  # untied
            truncated_normal_(head.weight, args.encoder_embed_dim**-0.5)
        if head.bias is not None:
            head.bias.zero_()
