"""A run stopped mid-epoch and restarted from checkpoint_last.pt ends with exactly the parameters
of an uninterrupted run with the same seed (data order, masking, dropout and optimizer state)."""

import pytest
import torch

import user_dir  # noqa: F401  (checkpoint allowlist)
from tiny_training import train_masked_lm


def train(databin, save_dir, max_update):
    train_masked_lm(
        databin,
        save_dir,
        max_update,
        "--adam-betas",
        "(0.9,0.98)",
        "--lr-scheduler",
        "warmup_ratio_linear_decay",
        "--total-num-update",
        "10",
        "--seed",
        "4",
        "--disable-validation",
        task="corpora_masked_lm",
    )


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
