"""Distillation at test size on the tiny data-bin: seeded teachers, the distillation task on
them, a narrow student built as fairseq-train builds it, a fixed batch, and the criterion run on
it with both models' layer outputs (tests/test_distill_layers.py)."""

import copy
from types import SimpleNamespace

import torch

import user_dir  # noqa: F401  (registers the distillation task and criterion)

# isort: split
from fairseq.checkpoint_utils import load_checkpoint_to_cpu

from bio_roberta_core.checkpoints import read_checkpoint
from user_dir.criterions.distillation import DistillationLoss, DistillationLossConfig
from user_dir.tasks.corpora_masked_lm import CorporaMaskedLMConfig, CorporaMaskedLMTask
from user_dir.tasks.distillation import DistillationConfig, DistillationTask


def seeded_checkpoint(databin, source, dest, seed: int, layers: int | None = None):
    """The checkpoint `source` (its model config) with fresh weights drawn under `seed` alone, and
    `layers` layers if given: a teacher whose every weight the seed fixes, however the fixture
    that trained `source` ran."""
    state = read_checkpoint(source)
    model_cfg = state["cfg"]["model"]
    if layers is not None:
        model_cfg.encoder_layers = layers
    torch.manual_seed(seed)
    task = CorporaMaskedLMTask.setup_task(CorporaMaskedLMConfig(data=str(databin)))
    state["model"] = task.build_model(model_cfg).state_dict()
    torch.save(state, dest)
    return dest


def distill_task(databin, teacher, implementation="fairseq", **options):
    return DistillationTask.setup_task(
        DistillationConfig(
            data=str(databin),
            teacher_path=str(teacher),
            teacher_dict=str(databin / "dict.txt"),
            tokens_per_sample=32,
            seed=5,
            encoder_implementation=implementation,
            **options,
        )
    )


def narrow_student(task, width=32, layers=2):
    """A roberta_tiny student of `width` and `layers`, built as fairseq-train builds it."""
    model_cfg = copy.deepcopy(load_checkpoint_to_cpu(task.cfg.teacher_path)["cfg"].model)
    model_cfg.encoder_embed_dim, model_cfg.encoder_ffn_embed_dim = width, 2 * width
    model_cfg.encoder_layers = layers
    return task.build_model(model_cfg), model_cfg


def fixed_batch(task):
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    return dataset.collater([dataset[i] for i in range(6)])


def criterion_run(databin, teacher, **options):
    """The criterion with options (α_cos 0) on the fixed batch with a seeded 2-layer, 32-wide
    student of teacher: the task, student, criterion, its loss, sample size and log, and the
    batch's tokens with each model's layer outputs on them (extra["inner_states"])."""
    task = distill_task(databin, teacher)
    torch.manual_seed(0)
    student = narrow_student(task)[0].eval()
    criterion = DistillationLoss(DistillationLossConfig(alpha_cos=0.0, **options), task)
    batch = fixed_batch(task)
    loss, sample_size, log = criterion(student, batch)
    tokens = batch["net_input"]["src_tokens"]
    with torch.no_grad():
        _, student_extra = student(tokens, return_all_hiddens=True)
        _, teacher_extra = task.teacher(tokens, return_all_hiddens=True)
    return SimpleNamespace(
        task=task, student=student, criterion=criterion, loss=loss, sample_size=sample_size,
        log=log, tokens=tokens, student_extra=student_extra, teacher_extra=teacher_extra,
    )  # fmt: skip
