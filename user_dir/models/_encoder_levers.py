"""Where the fused encoder's speed options run, checked before a run starts: each one asked for
where it cannot run is a one-line error naming the option and what to change, never a silent
fall-back to the plain route (a benchmark would then measure what it did not ask for)."""

import torch

from bio_roberta_core.errors import BioRobertaError


class EncoderOptionError(BioRobertaError):
    """A speed option of the encoder (CUDA graphs, FP8) asked for where it cannot run."""


def check_levers(implementation: str, problems: list, *, cuda_graphs: bool, float8: bool, cpu):
    """Refuse CUDA graphs and FP8 where they cannot run: CUDA graphs replay the compiled layers on
    a CUDA device; FP8 runs in the fused layers, on the CPU or a GPU with FP8 tensor cores (compute
    capability 8.9: Ada, Hopper and later). ``problems``: what of the encoder's configuration the
    fused forward lacks (fused_roberta_encoder.unsupported); ``cpu``: the run is on the CPU."""
    on_gpu = not cpu and torch.cuda.is_available()
    if cuda_graphs and implementation != "compiled":
        raise EncoderOptionError(
            "task.encoder_cuda_graphs replays the compiled layers: it needs "
            f"task.encoder_implementation=compiled (or auto on a GPU), not {implementation}"
        )
    if cuda_graphs and not on_gpu:
        raise EncoderOptionError(
            "task.encoder_cuda_graphs needs a CUDA device (CUDA graphs): drop it on the CPU"
        )
    if float8 and implementation == "fairseq":
        raise EncoderOptionError(
            "task.float8_training runs the fused encoder's projections in FP8: it needs "
            "task.encoder_implementation fused, compiled or unpadded, not fairseq"
        )
    if float8 and on_gpu and torch.cuda.get_device_capability() < (8, 9):
        raise EncoderOptionError(
            f"task.float8_training needs FP8 tensor cores (compute capability 8.9 or later); "
            f"{torch.cuda.get_device_name()} has {torch.cuda.get_device_capability()}: drop it"
        )
    if problems and (cuda_graphs or float8):
        raise EncoderOptionError(
            "task.encoder_cuda_graphs and task.float8_training need the fused encoder, which "
            f"has no {', '.join(problems)}: drop them or that setting"
        )
