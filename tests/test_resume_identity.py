"""A run stopped mid-epoch and restarted from checkpoint_last.pt ends with exactly the parameters
of an uninterrupted run with the same seed (data order, masking, dropout and optimizer state)."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import user_dir  # noqa: F401  (checkpoint allowlist)
from conftest import USER_DIR

BIN = Path(sys.executable).parent


def train(databin, save_dir, max_update):
    cmd = [
        BIN / "fairseq-train",
        databin,
        "--user-dir",
        USER_DIR,
        "--task",
        "corpora_masked_lm",
        "--criterion",
        "masked_lm",
        "--arch",
        "roberta_tiny",
        "--cpu",
        "--num-workers",
        "0",
        "--batch-size",
        "8",
        "--tokens-per-sample",
        "32",
        "--optimizer",
        "adam",
        "--adam-betas",
        "(0.9,0.98)",
        "--lr",
        "1e-3",
        "--lr-scheduler",
        "warmup_ratio_linear_decay",
        "--total-num-update",
        "10",
        "--max-update",
        str(max_update),
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--seed",
        "4",
        "--disable-validation",
    ]
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_parameters(tiny_databin, tmp_path):
    train(tiny_databin, tmp_path / "straight", 10)
    train(tiny_databin, tmp_path / "interrupted", 4)  # stops mid-epoch: ~37 batches per epoch
    train(tiny_databin, tmp_path / "interrupted", 10)
    straight, resumed = (
        torch.load(tmp_path / run / "checkpoint_last.pt") for run in ("straight", "interrupted")
    )
    assert (
        resumed["optimizer_history"][-1]["num_updates"]
        == straight["optimizer_history"][-1]["num_updates"]
        == 10
    )
    assert resumed["model"].keys() == straight["model"].keys()
    different = [
        k for k in straight["model"] if not torch.equal(straight["model"][k], resumed["model"][k])
    ]
    assert not different, different
