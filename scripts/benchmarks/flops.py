"""Model FLOPs per token of a masked-LM training step, and the GPUs' dense bf16 peaks: together
they give model-FLOPs utilisation = tokens/s x FLOPs per token / peak, one count for every route."""

MASK_PROB = 0.15
# dense bf16 tensor-core peaks from NVIDIA's data sheets, TFLOP/s; the first match in the device
# name wins
PEAK_BF16_TFLOPS = (
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.4),
    ("H200", 989.4),
    ("H800", 989.4),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("A10G", 70.0),
)


def training_flops_per_token(
    layers: int, width: int, ffn: int, seq: int, vocab: int, mask_prob: float
) -> float:
    """Model FLOPs of one masked-LM training step per input token: the matrix products of the
    forward pass (per layer 2·4·d² for the attention projections, 2·2·d·ffn for the FFN, 4·seq·d for
    attention scores and values; the LM head, 2·(d² + d·vocab), on the masked positions only, as
    fairseq's masked_lm computes it), times 3 for forward + backward. Equals torch's FlopCounterMode
    on fairseq's RoBERTa (tests/test_benchmark_train.py)."""
    encoder = layers * (8 * width * width + 4 * width * ffn + 4 * seq * width)
    lm_head = mask_prob * (2 * width * width + 2 * width * vocab)
    return 3 * (encoder + lm_head)


def peak_bf16_tflops(device_name: str) -> float:
    for marker, tflops in PEAK_BF16_TFLOPS:
        if marker in device_name:
            return tflops
    raise SystemExit(
        f"benchmark_train.py: no dense bf16 peak known for {device_name!r}; "
        "give it with --peak-tflops"
    )
