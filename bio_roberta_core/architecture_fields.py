"""The model options of a checkpoint that fine-tuning passes on to fairseq-train
(bio_roberta/finetuning/command_line.py), so that the model it builds fits the checkpoint's weights:
fairseq builds a fine-tuned model from the command line, not from the checkpoint it restores."""

# The shape of every RoBERTa-style checkpoint (a distilled or resized one included)
SHAPE_FIELDS = (
    "encoder_layers",
    "encoder_embed_dim",
    "encoder_ffn_embed_dim",
    "encoder_attention_heads",
)
# fairseq's flags (store_true options), passed where set: an untied MLM decoder (an import of a
# model whose file has its own; built tied, the model would load it into the token embeddings)
FLAG_FIELDS = ("untie_weights_roberta",)
# What else a ModernBERT (user_dir/models/modernbert.py) is built from: its attention pattern,
# RoPE thetas, norms, biases, head and dropouts
MODERNBERT_FIELDS = (
    "layer_types",
    "local_attention",
    "global_rope_theta",
    "local_rope_theta",
    "norm_eps",
    "norm_bias",
    "attention_bias",
    "mlp_bias",
    "classifier_bias",
    "decoder_bias",
    "activation_fn",
    "head_activation_fn",
    "classifier_pooling",
    "embedding_dropout",
    "mlp_dropout",
)
