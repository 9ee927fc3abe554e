"""The transformers model families import-hf and export-hf know, each a module (family.py says
what one provides): by config.json's model_type (import) and by fairseq architecture (export).
A new family is its module and its line in KNOWN."""

from __future__ import annotations

from bio_roberta.hf.bert import BERT, ELECTRA, MEGATRON_BERT
from bio_roberta.hf.family import Family
from bio_roberta.hf.modernbert import MODERNBERT
from bio_roberta.hf.roberta import ROBERTA
from bio_roberta_core.fairseq_keys import option

KNOWN = (ROBERTA, BERT, ELECTRA, MEGATRON_BERT, MODERNBERT)
# config.json's model_type -> the family import-hf reads it as
FAMILIES: dict[str, Family] = {family.model_type: family for family in KNOWN}
# fairseq architecture -> the family export-hf writes it as: the first of KNOWN with that
# architecture (ELECTRA's discriminator imports as a bert_encoder, which exports as BERT)
EXPORTED_AS: dict[str, Family] = {family.arch: family for family in reversed(KNOWN)}


def exported_family(model_cfg) -> Family:
    """The family export-hf writes a checkpoint of these model options as: its architecture's, or
    that of the fairseq model the architecture is a size of (modernbert_tiny and modernbert_large
    are modernbert's sizes); an architecture no family names is a fairseq RoBERTa's (roberta_base,
    roberta_tiny, a distilled student)."""
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    import user_dir  # noqa: F401  (registers the plugin's architectures)

    arch = option(model_cfg, "arch", option(model_cfg, "_name"))
    model = ARCH_MODEL_NAME_REGISTRY.get(arch)
    return EXPORTED_AS.get(arch) or EXPORTED_AS.get(model) or ROBERTA
