"""BERT-family encoders (BERT, ELECTRA's discriminator, Megatron-BERT) as fairseq RoBERTa models.

`bio-roberta import-hf` (bio_roberta/hf/import_hf.py) maps their transformers weights onto this
model. It is fairseq's RoBERTa (same encoder, LM head, classification heads, so fairseq's
sentence_prediction and our fine-tuning tasks take it) plus what fairseq's RoBERTa lacks:

- segment (token-type) embeddings, added to the token embeddings. A token's segment is the number
  of </s> ([SEP]) before it, at most ``type_vocab_size - 1``: ``[CLS] a [SEP] b [SEP]`` gets
  0 0 0 1 1, transformers' BertTokenizer token_type_ids for a pair;
- BERT's pair layout: one separator between the texts. fairseq's sentence_prediction puts its
  ``separator_token`` before the second text (RoBERTa's ``</s> </s>``); built for such a task, the
  model drops that option so the task writes ``[CLS] a [SEP] b [SEP]`` as transformers does;
- LayerNorm eps (BERT's 1e-12, fairseq's is 1e-5) on every layer norm.

BERT's positions count from 0 at the first token whatever the padding; fairseq's learned positions
count from padding_idx + 1 = 2, so the importer puts BERT's position row p at row p + 2: with
right padding (fairseq's) every real token gets BERT's embedding.
"""

import logging

import torch
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta.model import (
    RobertaEncoder,
    RobertaModel,
    base_architecture,
)
from fairseq.models.transformer import TransformerEncoder
from torch import nn

logger = logging.getLogger(__name__)


def segment_ids(src_tokens: torch.Tensor, eos: int, type_vocab_size: int) -> torch.Tensor:
    """Each token's segment: the number of eos tokens before it, at most type_vocab_size - 1."""
    is_eos = src_tokens.eq(eos).long()
    return (is_eos.cumsum(dim=1) - is_eos).clamp(max=type_vocab_size - 1)


class SegmentTransformerEncoder(TransformerEncoder):
    """fairseq's TransformerEncoder with segment embeddings added to the token embeddings."""

    def __init__(self, args, dictionary, embed_tokens):
        super().__init__(args, dictionary, embed_tokens)
        if self.embed_scale != 1.0:
            raise ValueError("segment embeddings need unscaled token embeddings (RoBERTa's)")
        self.eos = dictionary.eos()
        self.type_vocab_size = args.type_vocab_size
        self.segment_embeddings = nn.Embedding(args.type_vocab_size, embed_tokens.embedding_dim)

    def forward_embedding(self, src_tokens, token_embedding=None):
        if token_embedding is None:
            token_embedding = self.embed_tokens(src_tokens)
        segments = segment_ids(src_tokens, self.eos, self.type_vocab_size)
        return super().forward_embedding(
            src_tokens, token_embedding + self.segment_embeddings(segments)
        )


class BertEncoder(RobertaEncoder):
    """RobertaEncoder whose sentence encoder has segment embeddings."""

    def build_encoder(self, args, dictionary, embed_tokens):
        from fairseq.modules.transformer_sentence_encoder import init_bert_params

        encoder = SegmentTransformerEncoder(args, dictionary, embed_tokens)
        encoder.apply(init_bert_params)
        return encoder


@register_model("bert_encoder")
class BertEncoderModel(RobertaModel):
    """fairseq's RoBERTa with segment embeddings, BERT's pair layout and a LayerNorm eps."""

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)
        parser.add_argument(
            "--type-vocab-size",
            type=int,
            metavar="N",
            help="segment (token-type) embeddings; a token's segment is the number of </s> "
            "before it, at most N - 1",
        )
        parser.add_argument(
            "--layer-norm-eps",
            type=float,
            metavar="EPS",
            help="epsilon of every LayerNorm (BERT's 1e-12; fairseq's own is 1e-5)",
        )

    @classmethod
    def build_model(cls, args, task):
        model = build_one_separator_model(
            cls, args, task, "a BERT-family model", bert_encoder_architecture, BertEncoder
        )
        for module in model.modules():
            if isinstance(module, nn.LayerNorm) or type(module).__name__ == "FusedLayerNorm":
                module.eps = args.layer_norm_eps
        return model


def build_one_separator_model(cls, args, task, family: str, architecture, encoder_class):
    """build_model of an encoder whose pairs are [CLS] a [SEP] b [SEP]: the task's
    separator_token (fairseq's sentence_prediction puts RoBERTa's </s></s> between a and b) is
    unset, the architecture's defaults filled in, max_positions the task's where unset."""
    from omegaconf import OmegaConf

    task_cfg = getattr(task, "cfg", None)
    if getattr(task_cfg, "separator_token", None) is not None:
        logger.info(
            "%s separates a pair with one [SEP]: separator_token %s unset",
            family,
            task_cfg.separator_token,
        )
        with _unlocked(task_cfg):
            task_cfg.separator_token = None
    if OmegaConf.is_config(args):
        OmegaConf.set_struct(args, False)
    architecture(args)
    if not getattr(args, "max_positions", None):
        args.max_positions = getattr(args, "tokens_per_sample", None) or task.max_positions()
    model = cls(args, encoder_class(args, task.source_dictionary))
    if OmegaConf.is_config(args):
        OmegaConf.set_struct(args, True)
    return model


def _unlocked(cfg):
    """A context in which a (possibly struct) task config may be changed."""
    import contextlib

    from omegaconf import OmegaConf, open_dict

    return open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.nullcontext()


@register_model_architecture("bert_encoder", "bert_encoder")
def bert_encoder_architecture(args):
    """BERT-base: post-LayerNorm, embedding LayerNorm, 2 segments, eps 1e-12."""
    args.type_vocab_size = getattr(args, "type_vocab_size", None) or 2
    args.layer_norm_eps = getattr(args, "layer_norm_eps", None) or 1e-12
    base_architecture(args)


@register_model_architecture("bert_encoder", "megatron_bert_encoder")
def megatron_bert_encoder_architecture(args):
    """Megatron-BERT: pre-LayerNorm layers, no embedding LayerNorm, a final LayerNorm."""
    args.layernorm_embedding = getattr(args, "layernorm_embedding", False)
    args.encoder_normalize_before = getattr(args, "encoder_normalize_before", True)
    bert_encoder_architecture(args)
