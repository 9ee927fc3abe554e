"""Per-GPU micro-batch and update_freq of a pretraining or distillation launch.

The recipe's batch is its sequences per update = micro-batch x update_freq x processes, which its
config states for one node of CONFIG_GPUS GPUs (dataset.batch_size x optimization.update_freq x 8:
8,192 for the paper's, 4,608 for ModernBERT's, 576 at its 8,192 tokens). On GPUs
the micro-batch is the largest power of two whose training memory (estimated below) fits 80% of the
card, at most 65,536 tokens: on an H100, roberta-base at 512 tokens trained at 341k tokens/s with
32 sequences per micro-batch, 488k with 64, 511k with 128 and 439k with 256 (bf16, our route;
an H200's figures: docs/benchmarks/gpu-h200-2026-12-04.json). On CPU, or when the launch fixes it
(--micro-batch or dataset.batch_size=), it is the configured one.

`bio-roberta pretrain` and `bio-roberta distill` (bio_roberta/pretraining/launch.py) plan from the
composed job config (`fairseq-hydra-train ... --cfg job`); `--dry-run` prints the plan.
"""

import math
from pathlib import Path

from bio_roberta.errors import UsageError

MASK_PROB = 0.15
CONFIG_GPUS = 8  # the configs' batch_size x update_freq is their batch on one 8-GPU node
MEMORY_SHARE = 0.8  # of the card: the allocator's cache, CUDA context, cuDNN workspaces
MAX_TOKENS_PER_MICRO_BATCH = 65_536
# bf16/fp16 weights and gradients, fp32 master weights and gradients, two fp32 Adam moments
BYTES_PER_PARAMETER = 2 + 2 + 4 + 4 + 8
# activations kept for the backward, per token and layer, in units of (width + ffn): 7.2 measured
# for roberta-base in bf16 through the compiled encoder (peak 8.7 / 14.9 / 27.4 / 52.0 GB at 32 /
# 64 / 128 / 256 x 512 tokens on an H100, model states 2.5 GB)
ACTIVATION_BYTES = 7.5
# per masked position and vocabulary entry: bf16 logits, fp32 log-softmax and its gradient;
# distillation adds the teacher's bf16 logits and the three fp32 buffers of its closed-form loss
LOGIT_BYTES = 10
DISTILLATION_LOGIT_BYTES = LOGIT_BYTES + 2 + 3 * 4


def model_shape(model_cfg: dict) -> dict:
    """Layers, width and FFN width of the configured RoBERTa (its architecture's defaults under the
    config's own model.* values)."""
    from user_dir.architectures import architecture_args

    arch = model_cfg["_name"]
    try:
        args = architecture_args(arch, **{k: v for k, v in model_cfg.items() if k != "_name"})
    except ValueError as error:
        raise SystemExit(f"batch_plan: model {error}") from None
    return {
        "layers": args.encoder_layers,
        "width": args.encoder_embed_dim,
        "ffn": args.encoder_ffn_embed_dim,
        "checkpointing": bool(getattr(args, "checkpoint_activations", False)),
    }


def parameter_count(layers: int, width: int, ffn: int, vocab: int, positions: int) -> int:
    """RoBERTa's parameters: embeddings (LM head tied), layers, LM head dense + LayerNorm + bias."""
    layer = 4 * (width * width + width) + 2 * width * ffn + ffn + width + 4 * width
    return (
        vocab * width
        + (positions + 2) * width
        + 2 * width
        + layers * layer
        + width * width
        + 3 * width
        + vocab
    )


def activation_bytes_per_token(shape: dict) -> float:
    """The bf16 activations a token keeps through the encoder for the backward (ACTIVATION_BYTES):
    every layer's; with activation checkpointing each layer's input (2 bytes x width) and one
    layer's activations at a time."""
    layers, width, ffn = shape["layers"], shape["width"], shape["ffn"]
    layer_bytes = ACTIVATION_BYTES * (width + ffn)
    return (layers * 2 * width + layer_bytes) if shape["checkpointing"] else layers * layer_bytes


def training_bytes(
    shape: dict, seq: int, vocab: int, micro_batch: int, teacher: dict | None = None
) -> float:
    """Estimated peak GPU memory of a training step (see the constants above). With activation
    checkpointing a layer keeps only its input (2 bytes x width per token) and one layer's
    activations exist at a time. A distillation teacher adds its bf16 weights and, per token, the
    activations of its widest layer (it keeps none for a backward) and its part of the logit
    buffers."""
    layers, width, ffn = shape["layers"], shape["width"], shape["ffn"]
    per_token = activation_bytes_per_token(shape)
    per_token += MASK_PROB * vocab * (DISTILLATION_LOGIT_BYTES if teacher else LOGIT_BYTES)
    fixed = BYTES_PER_PARAMETER * parameter_count(layers, width, ffn, vocab, seq)
    if teacher:
        fixed += 2 * parameter_count(
            teacher["layers"], teacher["width"], teacher["ffn"], vocab, seq
        )
        per_token += ACTIVATION_BYTES * (teacher["width"] + teacher["ffn"])
    return fixed + micro_batch * seq * per_token


def largest_micro_batch(
    shape: dict,
    seq: int,
    vocab: int,
    gpu_bytes: float,
    per_process: int,
    teacher: dict | None = None,
) -> int:
    """The largest power of two up to PER_PROCESS and MAX_TOKENS_PER_MICRO_BATCH whose training
    fits."""

    def fits(micro_batch):
        return training_bytes(shape, seq, vocab, micro_batch, teacher) <= MEMORY_SHARE * gpu_bytes

    if not fits(1):
        raise UsageError(
            f"even one sequence of {seq} tokens needs about "
            f"{training_bytes(shape, seq, vocab, 1, teacher) / 2**30:.1f} GiB of the GPU's "
            f"{gpu_bytes / 2**30:.0f}; try --checkpoint-activations (CHECKPOINT_ACTIVATIONS=1)"
        )
    micro_batch = 1
    while (
        micro_batch * 2 <= per_process
        and micro_batch * 2 * seq <= MAX_TOKENS_PER_MICRO_BATCH
        and fits(micro_batch * 2)
    ):
        micro_batch *= 2
    return micro_batch


def teacher_shape(task_cfg: dict) -> dict | None:
    """The distillation teacher's shape, from its checkpoint's model config (tensors mapped, not
    read)."""
    if "teacher_path" not in task_cfg:
        return None
    from bio_roberta_core.checkpoints import read_checkpoint

    return checkpoint_shape(read_checkpoint(task_cfg["teacher_path"], mmap=True))


def checkpoint_shape(state: dict) -> dict:
    """The shape (model_shape) of a fairseq checkpoint's model, from its model config."""
    model_cfg = (state.get("cfg") or {}).get("model") or state["args"]
    model_cfg = dict(model_cfg) if isinstance(model_cfg, dict) else vars(model_cfg)
    return model_shape({**model_cfg, "_name": model_cfg.get("_name") or model_cfg["arch"]})


def dictionary_file(data: str) -> Path:
    """The dict.txt of the first data dir of task.data (several joined with ':')."""
    return Path(str(data).split(":")[0]) / "dict.txt"


def dictionary_size(data: str) -> int:
    """Entries of the first data dir's dict.txt, with the specials and the <mask> masked_lm adds."""
    from fairseq.data import Dictionary

    path = dictionary_file(data)
    if not path.is_file():
        raise UsageError(f"{path}: no dict.txt in task.data; binarize the corpus first")
    return len(Dictionary.load(str(path))) + 1


def configured_batch(job: dict) -> int:
    """The sequences per update a composed config states: its batch on one CONFIG_GPUS node."""
    return job["dataset"]["batch_size"] * job["optimization"]["update_freq"][0] * CONFIG_GPUS


def plan(
    job: dict, world: int, effective_batch: int, gpu_bytes: float | None, fixed: bool
) -> tuple:
    """(micro-batch, update_freq, why): see the module doc. effective_batch 0 keeps the configured
    update_freq (the tiny recipe)."""
    configured = job["dataset"]["batch_size"]
    if fixed or not gpu_bytes or job["common"].get("cpu"):
        micro_batch, why = configured, "configured"
    else:
        shape, teacher = model_shape(job["model"]), teacher_shape(job["task"])
        seq, vocab = job["task"]["tokens_per_sample"], dictionary_size(job["task"]["data"])
        per_process = (
            max(1, effective_batch // world) if effective_batch else MAX_TOKENS_PER_MICRO_BATCH
        )
        micro_batch = largest_micro_batch(shape, seq, vocab, gpu_bytes, per_process, teacher)
        why = (
            f"fits {gpu_bytes / 2**30:.0f} GiB: about "
            f"{training_bytes(shape, seq, vocab, micro_batch, teacher) / 2**30:.1f} GiB for "
            f"{micro_batch} x {seq} tokens"
            + (" and the teacher" if teacher else "")
            + (" with activation checkpointing" if shape["checkpointing"] else "")
        )
    if effective_batch == 0:
        return micro_batch, job["optimization"]["update_freq"][0], why
    return micro_batch, math.ceil(effective_batch / (micro_batch * world)), why
