"""A bert_encoder checkpoint (user_dir/models/bert_encoder.py: an imported BERT, ELECTRA
discriminator or Megatron-BERT, pretrained further or fine-tuned) as a transformers BERT-family
model: import_hf.py's mapping read backwards. The head weights are hf_weights.py's RoBERTa ones
under BERT's names (HEAD_NAMES); positions drop the two rows fairseq reserves before the first
token."""

from __future__ import annotations

from typing import Any

from bio_roberta.hf_weights import ENCODER, HF_ACTIVATIONS, MASKED_LM, option
from bio_roberta.import_hf import FAMILIES, POSITION_OFFSET

# fairseq architecture -> (transformers model family prefix, the import family it came from)
BERT_ARCHS = {
    "bert_encoder": ("Bert", "bert"),
    "megatron_bert_encoder": ("MegatronBert", "megatron-bert"),
}
# RobertaFor* weight name prefix (hf_weights.hf_head_state) -> BertFor* / MegatronBertFor*
HEAD_NAMES = {
    "lm_head.dense.": "cls.predictions.transform.dense.",
    "lm_head.layer_norm.": "cls.predictions.transform.LayerNorm.",
    "lm_head.decoder.": "cls.predictions.decoder.",
    "lm_head.bias": "cls.predictions.bias",
    "classifier.dense.": "bert.pooler.dense.",  # BERT's pooler is the sentence head's dense+tanh
    "classifier.out_proj.": "classifier.",
    "classifier.": "classifier.",  # the token head's one linear layer
}
CLASS_SUFFIX = {
    MASKED_LM: "ForMaskedLM",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
}


def bert_arch(model_cfg) -> str | None:
    """The checkpoint's architecture if it is a BERT-family one, else None."""
    arch = option(model_cfg, "arch", option(model_cfg, "_name"))
    return arch if arch in BERT_ARCHS else None


def bert_class_name(arch: str, kind: str) -> str:
    return BERT_ARCHS[arch][0] + CLASS_SUFFIX[kind]


def bert_config(arch: str, state: dict[str, Any], model_cfg, vocab_size: int, layers: int):
    import transformers

    embed = state[ENCODER + "embed_tokens.weight"]
    return getattr(transformers, BERT_ARCHS[arch][0] + "Config")(
        vocab_size=vocab_size,
        hidden_size=embed.shape[1],
        num_hidden_layers=layers,
        num_attention_heads=option(model_cfg, "encoder_attention_heads"),
        intermediate_size=state[ENCODER + "layers.0.fc1.weight"].shape[0],
        hidden_act=HF_ACTIVATIONS[option(model_cfg, "activation_fn", "gelu")],
        max_position_embeddings=state[ENCODER + "embed_positions.weight"].shape[0]
        - POSITION_OFFSET,
        type_vocab_size=state[ENCODER + "segment_embeddings.weight"].shape[0],
        layer_norm_eps=option(model_cfg, "layer_norm_eps"),
        pad_token_id=1,
        hidden_dropout_prob=option(model_cfg, "dropout", 0.1),
        attention_probs_dropout_prob=option(model_cfg, "attention_dropout", 0.1),
        tie_word_embeddings=False,
    )


def bert_state(
    arch: str, state: dict[str, Any], layers: int, head_state: dict[str, Any]
) -> dict[str, Any]:
    """transformers weights of the encoder (under "bert.") and of the RoBERTa-named head_state."""
    family = FAMILIES[BERT_ARCHS[arch][1]]
    hf = {
        "bert.embeddings.word_embeddings.weight": state[ENCODER + "embed_tokens.weight"],
        "bert.embeddings.position_embeddings.weight": state[ENCODER + "embed_positions.weight"][
            POSITION_OFFSET:
        ],
        "bert.embeddings.token_type_embeddings.weight": state[
            ENCODER + "segment_embeddings.weight"
        ],
    }
    norms = {"layernorm_embedding": "embeddings.LayerNorm"}
    if family.final_layer_norm:
        norms["layer_norm"] = family.final_layer_norm
    for fairseq_name, hf_name in norms.items():
        for param in ("weight", "bias"):
            if f"{ENCODER}{fairseq_name}.{param}" in state:
                hf[f"bert.{hf_name}.{param}"] = state[f"{ENCODER}{fairseq_name}.{param}"]
    for i in range(layers):
        for hf_name, fairseq_name in family.layer_names.items():
            for param in ("weight", "bias"):
                hf[f"bert.encoder.layer.{i}.{hf_name}.{param}"] = state[
                    f"{ENCODER}layers.{i}.{fairseq_name}.{param}"
                ]
    for name, value in head_state.items():
        prefix = next(p for p in HEAD_NAMES if name.startswith(p))
        hf[HEAD_NAMES[prefix] + name[len(prefix) :]] = value
    return hf
