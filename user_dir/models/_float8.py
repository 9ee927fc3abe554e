"""FP8 GEMMs for the fused encoder's projections, through torchao's float8 training.

torchao's public route (convert_to_float8_training) swaps nn.Linear modules for its Float8Linear;
the fused encoder calls no module: it concatenates the Q, K and V weights into one GEMM and calls
F.linear on parameters (fused_roberta_encoder.encoder_layer). So this takes torchao's own
Float8Linear apart once, for its configuration (dynamic tensorwise scaling: inputs and weights
e4m3, gradients e5m2) and the autograd function its forward calls, and gives encoder_layer a
``linear(x, weight, bias)`` doing what Float8Linear.forward does. Parameters, their dtype and
checkpoints stay as they are: only the GEMMs of the twelve layers' four projections run in FP8 (the
LM head's vocabulary projection stays in bf16, as torchao's recipes leave the output layer).

torch runs these GEMMs (torch._scaled_mm) on Hopper GPUs and on the CPU, so the CPU tests run the
same code. Without torchao (the project does not depend on it) asking for it is a one-line error.
"""

import functools

from bio_roberta_core.errors import BioRobertaError

# torchao 0.17 is the first release built for torch >= 2.11 (GPU.md's machines)
TORCHAO = "torchao>=0.17"


class Float8Error(BioRobertaError):
    """float8_training asked for where torchao is missing."""


@functools.cache
def float8_linear():
    """``linear(x, weight, bias)`` with torchao's float8 GEMM (see module doc)."""
    try:
        import torch
        from torchao.float8 import Float8LinearConfig
        from torchao.float8.float8_linear import Float8Linear, matmul_with_hp_or_float8_args
    except ImportError as error:
        raise Float8Error(
            f"task.float8_training needs torchao ({error}): pip install '{TORCHAO}' beside "
            "this torch, or drop float8_training"
        ) from None
    template = Float8Linear.from_float(torch.nn.Linear(16, 16, device="meta"), Float8LinearConfig())
    mm_config, config = template.linear_mm_config, template.config

    def linear(x, weight, bias):
        out = matmul_with_hp_or_float8_args.apply(x, weight.t(), mm_config, config)
        return out + bias.to(out.dtype)

    return linear
