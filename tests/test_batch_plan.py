"""bio_roberta/pretraining/batch_plan.py: the per-GPU micro-batch of a launch fits the card by a
memory estimate that reproduces the peak memory measured on an H100 (our bf16 route, roberta-base,
512 tokens, the 50,304-entry padded dictionary), and the effective batch stays 8,192 sequences."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bio_roberta.errors import UsageError
from bio_roberta.pretraining.batch_plan import (
    largest_micro_batch,
    parameter_count,
    plan,
    training_bytes,
)
from conftest import REPO_ROOT, USER_DIR, run_ok

GIB = 2**30
BASE = {"layers": 12, "width": 768, "ffn": 3072, "checkpointing": False}
LARGE = {"layers": 24, "width": 1024, "ffn": 4096, "checkpointing": False}
# peak GPU memory (GiB) of `benchmark_train.py --mfu --routes ours_bf16`, H100, 2026-11-23 (the same
# at 32, 64 and 128 on an H200 at 5451b1d: docs/benchmarks/gpu-h200-2026-12-04.json)
MEASURED_PEAK_GIB = {32: 8.67, 64: 14.9, 128: 27.36, 256: 52.03}


def test_parameter_counts_are_roberta_s():
    assert parameter_count(12, 768, 3072, 50265, 512) == 124_696_665  # fairseq's roberta.base
    assert parameter_count(24, 1024, 4096, 50265, 512) == 355_411_033  # roberta.large


@pytest.mark.parametrize("micro_batch", sorted(MEASURED_PEAK_GIB))
def test_estimate_reproduces_the_measured_peak_memory(micro_batch):
    estimate = training_bytes(BASE, 512, 50304, micro_batch) / GIB
    assert 0.99 <= estimate / MEASURED_PEAK_GIB[micro_batch] <= 1.08


def test_largest_micro_batch_by_card_model_and_checkpointing():
    def choices(shape, **kwargs):
        return [
            largest_micro_batch(shape, 512, 50304, gib * GIB, 1024, **kwargs)
            for gib in (16, 24, 40, 80)
        ]

    assert choices(BASE) == [32, 64, 128, 128]  # 128 x 512 tokens at most: the fastest measured
    assert choices(LARGE) == [8, 16, 32, 64]
    assert choices({**LARGE, "checkpointing": True}) == [64, 128, 128, 128]
    assert choices(BASE, teacher=LARGE) == [32, 32, 64, 128]  # distillation holds the teacher too
    assert (
        largest_micro_batch(BASE, 512, 50304, 80 * GIB, 16) == 16
    )  # never more than a process's share
    with pytest.raises(UsageError, match="--checkpoint-activations"):
        largest_micro_batch(LARGE, 512, 50304, 4 * GIB, 1024)


def composed_job(data, *overrides, stage: str = "pretrain") -> dict:
    """The job config as `bio-roberta pretrain` (or `distill`: stage) composes it."""
    done = run_ok(
        [
            sys.executable,
            "-m",
            "user_dir.distributed_launch",
            "fairseq-hydra-train",
            "--config-dir",
            str(REPO_ROOT / "configs" / stage),
            "--config-name",
            "base",
            f"task.data={data}",
            f"common.user_dir={USER_DIR}",
            *overrides,
            "--cfg",
            "job",
        ],
        cwd=REPO_ROOT,
    )
    return OmegaConf.to_container(OmegaConf.create(done.stdout))


def planned(job: dict, world: int, gpu_gib: float, fixed: bool = False) -> tuple:
    """(micro-batch, update_freq, why) for `world` GPUs of gpu_gib (0: CPU), 8,192 sequences."""
    return plan(job, world, 8192, gpu_gib * GIB, fixed)


def test_the_launch_plans_from_the_composed_config(tiny_databin, tiny_roberta_checkpoint):
    job = composed_job(tiny_databin)
    assert planned(job, 8, 80)[:2] == (128, 8)  # 8 GPUs x 128 x 8 = 8,192
    assert planned(job, 8, 16)[:2] == (64, 16)  # a dictionary of a few dozen entries
    assert planned(job, 8, 80, fixed=True)[:2] == (32, 32)  # configured
    assert planned(job, 3, 0) == (32, 86, "configured")  # CPU: rounds up
    checkpointed = composed_job(tiny_databin, "+recipe=large", "+model.checkpoint_activations=true")
    *first, why = planned(checkpointed, 1, 24)
    assert first == [128, 64] and "with activation checkpointing" in why
    distill_job = composed_job(
        tiny_databin,
        f"task.teacher_path={tiny_roberta_checkpoint}",
        f"checkpoint.finetune_from_model={tiny_roberta_checkpoint}",
        stage="distill",
    )
    assert "and the teacher" in planned(distill_job, 1, 80)[2]


@pytest.mark.slow
def test_the_launch_script_trains_with_the_planned_update_freq(tiny_databin, tmp_path):
    """scripts/pretrain.sh (`bio-roberta pretrain`) on CPU: the base recipe (shrunk by
    overrides) with EFFECTIVE_BATCH=32 and batch 8 trains with update_freq 4; the tiny recipe
    keeps its own batch and update_freq, with nothing to plan."""

    def pretrain(recipe: str, *overrides: str) -> subprocess.CompletedProcess:
        return run_ok(
            [
                "bash",
                str(REPO_ROOT / "scripts" / "pretrain.sh"),
                str(tiny_databin),
                str(tmp_path / recipe),
                recipe,
                "optimization.max_update=2",
                "common.log_format=simple",
                "common.log_interval=1",
                *overrides,
            ],
            env={
                **os.environ,
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                "GPUS": "0",
                "EFFECTIVE_BATCH": "32",
            },
        )

    base = pretrain(
        "base",
        "common.fp16=false",
        "common.cpu=true",
        "model._name=roberta_tiny",
        "model.max_positions=32",
        "task.tokens_per_sample=32",
        "dataset.batch_size=8",
        "dataset.num_workers=0",
        "checkpoint.save_interval_updates=0",
        "dataset.validate_interval_updates=0",
    )
    assert "world size 1 x batch 8 x update_freq 4 = 32 sequences per update" in base.stderr
    assert "'update_freq': [4]" in base.stdout + base.stderr
    assert (tmp_path / "base" / "checkpoint_last.pt").is_file()
    tiny = pretrain("tiny")
    assert "world size 1 x the recipe's own batch and update_freq (CPU)" in tiny.stderr
    assert "'update_freq': [1]" in tiny.stdout + tiny.stderr
