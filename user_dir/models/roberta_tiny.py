"""A small RoBERTa architecture for CPU tests and the demo; the same model class as roberta_base."""

from fairseq.models import register_model_architecture
from fairseq.models.roberta.model import base_architecture


@register_model_architecture("roberta", "roberta_tiny")
def roberta_tiny_architecture(args):
    args.encoder_layers = getattr(args, "encoder_layers", 2)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 64)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 128)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 2)
    base_architecture(args)
