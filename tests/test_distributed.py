"""Data-parallel training really synchronises on CPU: two gloo processes under torchrun end with
identical parameters and follow the loss curve of one process that sees the same global batch."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import REPO_ROOT, USER_DIR
from tiny_training import ON_CPU, masked_lm_flags
from user_dir.distributed import free_port

BIN = Path(sys.executable).parent
# fairseq-train, except that every rank also writes its parameters when fairseq saves a checkpoint
# (fairseq itself saves on rank 0 only).
EVERY_RANK_SAVES = """
import os, sys, torch
import user_dir
from fairseq import checkpoint_utils
from fairseq_cli import train

save = checkpoint_utils.save_checkpoint
def save_on_every_rank(cfg, trainer, epoch_itr, val_loss):
    rank = int(os.environ.get("RANK", 0))
    torch.save(trainer.get_model().state_dict(), os.path.join(cfg.save_dir, f"params.rank{rank}.pt"))
    return save(cfg, trainer, epoch_itr, val_loss)
checkpoint_utils.save_checkpoint = save_on_every_rank
train.cli_main()
"""  # noqa: E501  (a script's text, kept as it is)


def train_args(save_dir) -> list:
    """The flags after the data dir: 6 masked-LM updates of 4 sequences a process, dropout off."""
    flags = ["--dropout", "0", "--attention-dropout", "0", "--seed", "3", "--disable-validation"]
    logging = ["--log-interval", "1", "--log-format", "simple"]
    return [*ON_CPU, *masked_lm_flags(save_dir, 6, *flags, *logging, batch_size=4)]


def losses(log: str) -> list:
    return [float(x) for x in re.findall(r"train_inner\W.*? loss=([\d.]+)", log)]


def run(cmd, env_extra=None):
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env_extra or {})}
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout + done.stderr


@pytest.mark.slow
def test_two_gloo_ranks_stay_identical_and_match_one_process(tiny_databin, tmp_path):
    driver = tmp_path / "train_every_rank_saves.py"
    driver.write_text(EVERY_RANK_SAVES)
    two = tmp_path / "two"
    log = run(
        [
            BIN / "torchrun",
            "--nproc_per_node",
            "2",
            "--master_port",
            free_port(),
            driver,
            tiny_databin,
            *train_args(two),
        ]
    )
    assert "training on 2 devices" in log and "distributed init (rank 1)" in log, log[-3000:]
    rank0, rank1 = (torch.load(two / f"params.rank{r}.pt") for r in (0, 1))
    assert rank0.keys() == rank1.keys()
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0), (
        "ranks diverged: gradients were not all-reduced"
    )

    # one process, same global batch: rank 0's and rank 1's batches accumulated in one update
    one = tmp_path / "one"
    single = run(
        [
            sys.executable,
            driver,
            tiny_databin,
            *train_args(one),
            "--update-freq",
            "2",
        ]
    )
    two_curve, one_curve = losses(log), losses(single)
    assert len(two_curve) == len(one_curve) == 6
    assert two_curve == pytest.approx(one_curve, abs=2e-3)
    alone = torch.load(one / "params.rank0.pt")
    assert all(torch.allclose(alone[k], rank0[k], atol=1e-5) for k in alone)


@pytest.mark.slow
def test_cpu_world_size_two_spawns_its_own_workers(tiny_databin, tmp_path):
    """`fairseq-train --cpu --distributed-world-size 2` (no torchrun) starts two synchronised
    workers."""
    log = run(
        [
            BIN / "fairseq-train",
            tiny_databin,
            *train_args(tmp_path),
            "--distributed-world-size",
            "2",
        ]
    )
    assert "distributed init (rank 1)" in log and "training on 2 devices" in log, log[-3000:]
    assert re.search(r"bsz=8, num_updates=6", log), log[-2000:]


def test_torchrun_on_gpus_keeps_nccl_and_gives_each_process_its_local_gpu(monkeypatch):
    """The GPU branch of our launch, with CUDA stubbed: no GPU here, so this checks the
    configuration fairseq receives (NCCL, DDP, one process per GPU of LOCAL_RANK, no spawning), not
    NCCL itself. Rank 11 of 16 with LOCAL_RANK 3 takes GPU 3; fairseq alone would take rank % #GPUs
    = 5 of 6."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.distributed import utils as distributed_utils

    from user_dir import distributed

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 6)
    for key, value in {
        "MASTER_ADDR": "node0",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "16",
        "RANK": "11",
        "LOCAL_RANK": "3",
    }.items():
        monkeypatch.setenv(key, value)
    args = options.parse_args_and_arch(
        options.get_training_parser(),
        ["data", "--user-dir", str(USER_DIR), "--task", "masked_lm", "--arch", "roberta_tiny"],
    )
    cfg = convert_namespace_to_omegaconf(args)
    started = []
    monkeypatch.setattr(
        distributed_utils, "distributed_main", lambda i, main, cfg, kwargs: started.append(i)
    )
    distributed.call_main(cfg, main=None)

    dist = cfg.distributed_training
    assert started == [3], (
        "one process per GPU, on the GPU of its LOCAL_RANK, started by torchrun not by fairseq"
    )
    assert (dist.distributed_backend, dist.ddp_backend) == ("nccl", "pytorch_ddp")
    assert (dist.distributed_init_method, dist.distributed_world_size, dist.distributed_rank) == (
        "env://",
        16,
        11,
    )
    assert dist.distributed_no_spawn


def test_the_launcher_module_runs_once_without_a_runtime_warning():
    """`python -m user_dir.distributed_launch`: the plugin package does not import the module that
    -m then runs as __main__ (runpy warns when it does, and the module would exist twice)."""
    command = [sys.executable, "-W", "error::RuntimeWarning", "-m", "user_dir.distributed_launch"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
    assert run.returncode == 1 and "usage: python -m user_dir.distributed_launch" in run.stderr
    assert "RuntimeWarning" not in run.stderr
