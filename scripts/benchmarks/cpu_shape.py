"""The CPU comparison's shape, the same for every route: RoBERTa, LAYERS x WIDTH, VOCAB entries,
BATCH x SEQ tokens (15% masked 80/10/10)."""

LAYERS, WIDTH, HEADS, VOCAB, BATCH, SEQ = 4, 256, 4, 47000, 32, 128
MODEL_ARGS = [
    "--arch",
    "roberta",
    "--encoder-layers",
    str(LAYERS),
    "--encoder-embed-dim",
    str(WIDTH),
    "--encoder-ffn-embed-dim",
    str(4 * WIDTH),
    "--encoder-attention-heads",
    str(HEADS),
]
