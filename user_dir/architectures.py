"""The shape of a registered fairseq architecture, read from fairseq's own table
(ARCH_CONFIG_REGISTRY), so that no caller restates an architecture's layers or widths: the launch
plan (bio_roberta/pretraining/batch_plan.py) and the benchmarks (scripts/benchmarks/) take it from
here."""

from __future__ import annotations

import argparse


def architecture_args(arch: str, /, **options) -> argparse.Namespace:
    """The arguments fairseq's registered architecture `arch` sets, its defaults under `options`
    (e.g. a config's model.* values). ValueError when no architecture of that name is registered
    (importing user_dir registers ours, e.g. roberta_tiny)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    if arch not in ARCH_CONFIG_REGISTRY:
        raise ValueError(f"{arch!r} is no registered fairseq architecture")
    args = argparse.Namespace(**options)
    ARCH_CONFIG_REGISTRY[arch](args)
    return args


def architecture_shape(arch: str, **options) -> dict:
    """Layers, width, attention heads and FFN width of a registered RoBERTa-style architecture."""
    args = architecture_args(arch, **options)
    return {
        "layers": args.encoder_layers,
        "width": args.encoder_embed_dim,
        "heads": args.encoder_attention_heads,
        "ffn": args.encoder_ffn_embed_dim,
    }
