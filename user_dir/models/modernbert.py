"""ModernBERT (Warner et al. 2024) as a fairseq model of the plugin, computing what transformers'
ModernBertModel / ModernBertForMaskedLM / ...ForSequenceClassification / ...ForTokenClassification
compute (transformers/models/modernbert/modeling_modernbert.py, its sdpa/eager path):

- embeddings: token embeddings, then a LayerNorm (no positions: rotary embeddings in attention);
- pre-norm layers (layer 0 has no attention norm): fused Wqkv, RoPE with the theta of the layer's
  type (``global_rope_theta`` for full attention, ``local_rope_theta`` for sliding), GeGLU MLP
  (Wi -> input * act(gate) -> Wo); a final LayerNorm;
- ``layer_types``: each layer full or sliding attention; a sliding layer lets token i attend to
  token j where |i - j| <= local_attention // 2. No T x T mask or score matrix is built: a full
  layer gives SDPA the padding as one row of keys (B x 1 x 1 x T; none without padding), so
  SDPA's flash/memory-efficient kernels run it in memory linear in T (CPU and GPU); a sliding
  layer runs SDPA on blocks of queries, each with only the keys its window can reach
  (``SlidingWindowAttention``), so its memory grows with T x window, not T x T;
- biases where the config has them (norm_bias, attention_bias, mlp_bias, classifier_bias,
  decoder_bias);
- the MLM head: dense, activation, LayerNorm, then the decoder tied to the token embeddings;
  sentence and token heads are transformers' ``head`` (dense, activation, LayerNorm), dropout and a
  linear classifier; a sentence head pools the first token (``cls``) or the mean of the real
  tokens (``mean``, ``classifier_pooling``).

Positions count from 0 at the first token, as transformers' do with right padding (fairseq's).
A pair is ``[CLS] a [SEP] b [SEP]`` (one separator, no token types): built for fairseq's
sentence_prediction the model unsets the task's separator_token, as bert_encoder does. fairseq's
``--dropout`` is not used: ModernBERT's dropouts are their own options (all 0 in the published
configs); ``--pooler-dropout`` is its classifier dropout. `bio-roberta import-hf` maps a
transformers ModernBERT onto this model and export-hf back (bio_roberta/hf/modernbert.py).
"""

from __future__ import annotations

import logging
from typing import Optional

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.models import FairseqEncoder, register_model, register_model_architecture
from fairseq.models.roberta.model import RobertaEncoder, RobertaModel, base_architecture
from torch import nn

from user_dir.models._modernbert_attention import (
    FullAttention,
    RotaryEmbedding,
    SlidingWindowAttention,
    rotate_half,
)
from user_dir.models._modernbert_init import init_modernbert_weights
from user_dir.models.bert_encoder import build_one_separator_model

logger = logging.getLogger(__name__)

FULL, SLIDING = "full_attention", "sliding_attention"


def parse_bool(value) -> bool:
    """An argparse boolean that round-trips through str() (True/False)."""
    if isinstance(value, bool):
        return value
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise ValueError(f"{value!r} is not a boolean (True or False)")


def layer_type_list(args) -> list[str]:
    """Each layer's attention type from the comma-separated --layer-types."""
    types = args.layer_types.split(",")
    if len(types) != args.encoder_layers or set(types) - {FULL, SLIDING}:
        raise ValueError(
            f"--layer-types {args.layer_types!r}: one of {FULL}, {SLIDING} per layer "
            f"({args.encoder_layers} layers)"
        )
    return types


def layer_norm(args) -> nn.LayerNorm:
    return nn.LayerNorm(args.encoder_embed_dim, eps=args.norm_eps, bias=args.norm_bias)


class ModernBertAttention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.num_heads = args.encoder_attention_heads
        self.head_dim = args.encoder_embed_dim // self.num_heads
        self.dropout = args.attention_dropout
        dim = args.encoder_embed_dim
        self.Wqkv = nn.Linear(dim, 3 * dim, bias=args.attention_bias)
        self.Wo = nn.Linear(dim, dim, bias=args.attention_bias)

    def forward(self, x, rotary: tuple[torch.Tensor, torch.Tensor], attention):
        batch, length, _ = x.shape
        qkv = self.Wqkv(x).view(batch, length, 3, self.num_heads, self.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(dim=2))  # B x H x T x D
        cos, sin = rotary
        q = (q.float() * cos + rotate_half(q.float()) * sin).to(v.dtype)
        k = (k.float() * cos + rotate_half(k.float()) * sin).to(v.dtype)
        out = attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, scale=self.head_dim**-0.5
        )
        out = self.Wo(out.transpose(1, 2).reshape(batch, length, -1))
        return F.dropout(out, p=self.dropout, training=self.training)


class ModernBertMLP(nn.Module):
    """GeGLU: Wi gives input and gate; Wo(act(input) * gate)."""

    def __init__(self, args):
        super().__init__()
        self.Wi = nn.Linear(args.encoder_embed_dim, 2 * args.encoder_ffn_embed_dim, args.mlp_bias)
        self.Wo = nn.Linear(args.encoder_ffn_embed_dim, args.encoder_embed_dim, args.mlp_bias)
        self.activation_fn = utils.get_activation_fn(args.activation_fn)
        self.dropout = args.mlp_dropout

    def forward(self, x):
        value, gate = self.Wi(x).chunk(2, dim=-1)
        hidden = F.dropout(self.activation_fn(value) * gate, p=self.dropout, training=self.training)
        return self.Wo(hidden)


class ModernBertLayer(nn.Module):
    def __init__(self, args, index: int, attention_type: str):
        super().__init__()
        self.attention_type = attention_type
        self.attn_norm = nn.Identity() if index == 0 else layer_norm(args)
        self.attn = ModernBertAttention(args)
        self.mlp_norm = layer_norm(args)
        self.mlp = ModernBertMLP(args)

    def forward(self, x, rotary, attention):
        x = x + self.attn(self.attn_norm(x), rotary, attention)
        return x + self.mlp(self.mlp_norm(x))


class ModernBertSentenceEncoder(FairseqEncoder):
    """The encoder, with fairseq TransformerEncoder's output (encoder_out T x B x C, encoder_states,
    encoder_padding_mask), so RobertaEncoder and our tasks use it unchanged."""

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(dictionary)
        self.args = args
        self.padding_idx = dictionary.pad()
        self.embed_tokens = embed_tokens
        self.embedding_norm = layer_norm(args)
        self.layer_types = layer_type_list(args)
        self.layers = nn.ModuleList(
            ModernBertLayer(args, i, kind) for i, kind in enumerate(self.layer_types)
        )
        self.final_norm = layer_norm(args)
        head_dim = args.encoder_embed_dim // args.encoder_attention_heads
        self.rotary = nn.ModuleDict(
            {
                FULL: RotaryEmbedding(head_dim, args.global_rope_theta),
                SLIDING: RotaryEmbedding(head_dim, args.local_rope_theta),
            }
        )

    def forward(self, src_tokens, return_all_hiddens: bool = False, token_embeddings=None, **_):
        padding_mask = src_tokens.eq(self.padding_idx)
        if token_embeddings is None:
            token_embeddings = self.embed_tokens(src_tokens)
        x = F.dropout(
            self.embedding_norm(token_embeddings),
            p=self.args.embedding_dropout,
            training=self.training,
        )
        half_window = self.args.local_attention // 2
        attention = {
            kind: FullAttention(padding_mask)
            if kind == FULL
            else SlidingWindowAttention(padding_mask, half_window)
            for kind in set(self.layer_types)
        }
        rotary = {
            kind: self.rotary[kind](src_tokens.shape[1], src_tokens.device)
            for kind in set(self.layer_types)
        }
        states = [x.transpose(0, 1)] if return_all_hiddens else []
        for layer in self.layers:
            x = layer(x, rotary[layer.attention_type], attention[layer.attention_type])
            if return_all_hiddens:
                states.append(x.transpose(0, 1))
        x = self.final_norm(x)
        return {
            "encoder_out": [x.transpose(0, 1)],  # T x B x C
            "encoder_padding_mask": [padding_mask],
            "encoder_embedding": [token_embeddings],
            "encoder_states": states,
            "src_tokens": [],
            "src_lengths": [],
        }

    def max_positions(self):
        return self.args.max_positions


class ModernBertHead(nn.Module):
    """transformers' ModernBertPredictionHead: dense, activation, LayerNorm."""

    def __init__(self, args):
        super().__init__()
        dim = args.encoder_embed_dim
        self.dense = nn.Linear(dim, dim, bias=args.classifier_bias)
        self.activation_fn = utils.get_activation_fn(args.head_activation_fn)
        self.layer_norm = layer_norm(args)

    def forward(self, x):
        return self.layer_norm(self.activation_fn(self.dense(x)))


class ModernBertLMHead(ModernBertHead):
    """The MLM head: ModernBertHead, then the decoder (the token embeddings when tied)."""

    def __init__(self, args, output_dim: int, weight: Optional[torch.Tensor]):
        super().__init__(args)
        if weight is None:
            weight = nn.Linear(args.encoder_embed_dim, output_dim, bias=False).weight
        self.weight = weight
        self.bias = nn.Parameter(torch.zeros(output_dim)) if args.decoder_bias else None

    def forward(self, features, masked_tokens=None, **_):
        if masked_tokens is not None:
            features = features[masked_tokens, :]
        return F.linear(super().forward(features), self.weight, self.bias)


class ModernBertClassificationHead(ModernBertHead):
    """A sentence (pooled) or token classification head: ModernBertHead, dropout, classifier
    (named out_proj, as fairseq's heads, whose checkpoint upgrade reads that name)."""

    def __init__(self, args, num_classes: int, pooling: Optional[str]):
        super().__init__(args)
        self.pooling = pooling  # None: a token head
        self.dropout = nn.Dropout(args.pooler_dropout)
        self.out_proj = nn.Linear(args.encoder_embed_dim, num_classes)

    def forward(self, features, padding_mask: Optional[torch.Tensor] = None):
        if self.pooling == "cls":
            features = features[:, 0]
        elif self.pooling == "mean":
            real = (
                torch.ones(features.shape[:2], dtype=torch.bool, device=features.device)
                if padding_mask is None
                else ~padding_mask
            ).unsqueeze(-1)
            features = (features * real).sum(dim=1) / real.sum(dim=1)
        return self.out_proj(self.dropout(super().forward(features)))


class ModernBertEncoder(RobertaEncoder):
    def build_encoder(self, args, dictionary, embed_tokens):
        return ModernBertSentenceEncoder(args, dictionary, embed_tokens)

    def build_lm_head(self, embed_dim, output_dim, activation_fn, weight):
        return ModernBertLMHead(self.args, output_dim, weight)


@register_model("modernbert")
class ModernBertModel(RobertaModel):
    """ModernBERT with RoBERTa's interface (masked LM, classification heads, token heads)."""

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)
        add = parser.add_argument
        add("--layer-types", help=f"comma-separated, one per layer: {FULL} or {SLIDING}")
        add("--local-attention", type=int, help="sliding window: |i - j| <= N // 2 attend")
        add("--global-rope-theta", type=float, help="RoPE theta of full-attention layers")
        add("--local-rope-theta", type=float, help="RoPE theta of sliding-attention layers")
        add("--norm-eps", type=float, help="epsilon of every LayerNorm")
        for name in ("norm", "attention", "mlp", "classifier", "decoder"):
            add(f"--{name}-bias", type=parse_bool, help=f"whether the {name} layers have biases")
        add("--head-activation-fn", help="activation of the MLM / classification head's dense")
        add("--classifier-pooling", choices=("cls", "mean"), help="a sentence head's pooling")
        add("--embedding-dropout", type=float, help="dropout after the embedding norm")
        add("--mlp-dropout", type=float, help="dropout inside the GeGLU MLP")

    @classmethod
    def build_model(cls, args, task):
        model = build_one_separator_model(
            cls, args, task, "ModernBERT", modernbert_architecture, ModernBertEncoder
        )
        init_modernbert_weights(model, args)  # ModernBERT's own, for pretraining from scratch
        return model

    def forward(
        self,
        src_tokens,
        features_only=False,
        return_all_hiddens=False,
        classification_head_name=None,
        **kwargs,
    ):
        if classification_head_name is None:
            return super().forward(src_tokens, features_only, return_all_hiddens, **kwargs)
        x, extra = self.encoder(src_tokens, True, return_all_hiddens, **kwargs)
        head = self.classification_heads[classification_head_name]
        return head(x, src_tokens.eq(self.encoder.sentence_encoder.padding_idx)), extra

    def register_classification_head(self, name, num_classes=None, inner_dim=None, **kwargs):
        if inner_dim not in (None, self.args.encoder_embed_dim):
            raise ValueError(f"ModernBERT's head is {self.args.encoder_embed_dim} wide")
        self.classification_heads[name] = ModernBertClassificationHead(
            self.args, num_classes, self.args.classifier_pooling
        )

    def build_token_classification_head(self, num_classes: int) -> nn.Module:
        """transformers' ModernBertForTokenClassification head (token_classification_head.py)."""
        return ModernBertClassificationHead(self.args, num_classes, pooling=None)


def architecture_defaults(args, **values) -> None:
    """Set each option the command line or config left unset (None or absent)."""
    for name, value in values.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


@register_model_architecture("modernbert", "modernbert")
def modernbert_architecture(args):
    """transformers' ModernBertConfig() defaults: ModernBERT-base's shape."""
    architecture_defaults(
        args,
        encoder_layers=22,
        encoder_embed_dim=768,
        encoder_ffn_embed_dim=1152,
        encoder_attention_heads=12,
        activation_fn="gelu",
        head_activation_fn="gelu",
        max_positions=8192,
    )
    # a global layer every third, as global_attn_every_n_layers=3
    layers = range(args.encoder_layers)
    architecture_defaults(
        args,
        layer_types=",".join(FULL if i % 3 == 0 else SLIDING for i in layers),
        local_attention=128,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
        norm_eps=1e-5,
        norm_bias=False,
        attention_bias=False,
        mlp_bias=False,
        classifier_bias=False,
        decoder_bias=True,
        classifier_pooling="cls",
        embedding_dropout=0.0,
        mlp_dropout=0.0,
        attention_dropout=0.0,
        pooler_dropout=0.0,
        untie_weights_roberta=False,
    )
    base_architecture(args)


@register_model_architecture("modernbert", "modernbert_large")
def modernbert_large_architecture(args):
    """ModernBERT-large (answerdotai/ModernBERT-large; AnswerDotAI/ModernBERT
    yamls/modernbert/modernbert-large-pretrain.yaml): 28 layers, 1024 wide, 16 heads, GeGLU 2624."""
    architecture_defaults(
        args,
        encoder_layers=28,
        encoder_embed_dim=1024,
        encoder_ffn_embed_dim=2624,
        encoder_attention_heads=16,
    )
    modernbert_architecture(args)


@register_model_architecture("modernbert", "modernbert_tiny")
def modernbert_tiny_architecture(args):
    """Test size: 3 layers (full, sliding, sliding: base's global layer every third), 32 wide,
    2 heads, GeGLU 64, a window of 8 tokens (4 either side), so 32-token sequences reach past it."""
    architecture_defaults(
        args,
        encoder_layers=3,
        encoder_embed_dim=32,
        encoder_ffn_embed_dim=64,
        encoder_attention_heads=2,
        local_attention=8,
    )
    modernbert_architecture(args)
