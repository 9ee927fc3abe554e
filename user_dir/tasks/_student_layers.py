"""A student built from its teacher (Sanh et al. 2019 §3, "Student initialization"): the teacher's
architecture with a subset of its layers, those layers' weights, and the teacher's embeddings,
final norm and LM head, all copied; only possible where the widths agree, which this construction
guarantees.

`every_other` keeps ⌈N/2⌉ of N layers spread evenly from the first to the last, layer
round(i·(N−1)/(k−1)) for i = 0..k−1: for a 12-layer teacher [0, 2, 4, 7, 9, 11], the layers
DistilBERT's released student was built from (transformers' examples/research_projects/
distillation/scripts/extract_distilbert.py), for 4 layers [0, 3]. A list names the teacher's
layers (counted from 0) itself, e.g. 0,4,7,11 for a 4-layer student of a 12-layer teacher.
"""

from __future__ import annotations

import argparse
import re
from contextlib import nullcontext

import torch
from fairseq.models.transformer import TransformerEncoder
from omegaconf import DictConfig, open_dict

EVERY_OTHER = "every_other"
# the run's own memory options, which do not change what the model computes
RUN_OPTIONS = ("checkpoint_activations", "offload_activations")
LAYER_KEY = re.compile(r"^(encoder\.sentence_encoder\.layers\.)(\d+)(\..*)$")


def chosen_layers(spec: str, teacher_depth: int) -> list[int]:
    """The teacher's layers (counted from 0) that task.student_layers names; ValueError naming
    the option otherwise."""
    if spec == EVERY_OTHER:
        kept = -(-teacher_depth // 2)
        if kept == 1:
            return [0]
        return [round(i * (teacher_depth - 1) / (kept - 1)) for i in range(kept)]
    items = [item.strip() for item in spec.split(",")]
    if not all(item.isdigit() for item in items):
        raise ValueError(
            f"task.student_layers={spec!r}: give {EVERY_OTHER} or the teacher's layers to keep, "
            "counted from 0 and comma-separated, e.g. 0,4,7,11"
        )
    layers = [int(item) for item in items]
    if layers != sorted(set(layers)) or layers[-1] >= teacher_depth:
        raise ValueError(
            f"task.student_layers={spec!r}: the layers must rise, each once, and be among the "
            f"teacher's {teacher_depth} (0 to {teacher_depth - 1})"
        )
    return layers


def check_teacher(teacher, path: str) -> None:
    """Only fairseq's transformer layers (RoBERTa, the BERT family) are taken apart here."""
    if not isinstance(teacher.encoder.sentence_encoder, TransformerEncoder):
        raise ValueError(
            f"task.student_layers: the teacher {path} is a {type(teacher.encoder).__name__}; a "
            "student is built from the layers of a RoBERTa or BERT-family teacher only: start "
            "this one from its own checkpoint (checkpoint.finetune_from_model) instead"
        )


def settings(config):
    """A model config's settings as a mapping, written through: a checkpoint of fairseq-train's
    command line holds an argparse Namespace, a Hydra run a DictConfig."""
    return vars(config) if isinstance(config, argparse.Namespace) else config


def student_config(run_config, teacher_config, layers: int) -> list[str]:
    """Make the run's model config (in place, so that its checkpoints record the student built)
    the teacher's with `layers` layers, keeping the run's memory options; the names of the run's
    settings that the teacher's replaced with another value."""
    replaced = []
    values = settings(run_config)
    with open_dict(run_config) if isinstance(run_config, DictConfig) else nullcontext():
        for key, value in settings(teacher_config).items():
            if key in RUN_OPTIONS or key == "encoder_layers":
                continue
            if key in values and values[key] != value:
                replaced.append(key)
            values[key] = value
        values["encoder_layers"] = layers
    return replaced


def student_state(teacher_state: dict, layers: list[int]) -> dict:
    """The teacher's state dict with layer layers[i] as layer i and the other layers left out."""
    position = {teacher_layer: i for i, teacher_layer in enumerate(layers)}
    state = {}
    for key, value in teacher_state.items():
        match = LAYER_KEY.match(key)
        if match is None:
            state[key] = value
        elif int(match.group(2)) in position:
            state[f"{match.group(1)}{position[int(match.group(2))]}{match.group(3)}"] = value
    return state


def copy_teacher_layers(student: torch.nn.Module, teacher: torch.nn.Module, layers: list[int]):
    """Load the student with the teacher's embeddings, the chosen layers and the LM head (every
    parameter and buffer of the student, strictly)."""
    state = student_state(teacher.state_dict(), layers)
    torch.nn.Module.load_state_dict(student, state, strict=True)
