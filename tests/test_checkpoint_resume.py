"""fairseq's own resume from checkpoint_last.pt works under torch's weights_only default once the
plugin is imported, and the allowlist admits nothing beyond what fairseq checkpoints hold."""
import pickle
import re
import subprocess
import sys

import pytest
import torch

from conftest import USER_DIR

BIN = sys.executable.rsplit("/", 1)[0]


def train(databin, save_dir, max_update):
    cmd = [f"{BIN}/fairseq-train", databin, "--task", "masked_lm", "--criterion", "masked_lm",
           "--arch", "roberta_tiny", "--cpu", "--batch-size", "8", "--tokens-per-sample", "32",
           "--optimizer", "adam", "--lr", "1e-3", "--max-update", str(max_update),
           "--save-dir", save_dir, "--log-interval", "1", "--no-epoch-checkpoints", "--seed", "3",
           "--user-dir", USER_DIR]
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def test_resume_from_checkpoint_last_continues_at_the_right_update(tiny_databin, tmp_path):
    first = train(tiny_databin, tmp_path, 4)
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = train(tiny_databin, tmp_path, 8)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch 1 @ 4 updates\)", log), log[-3000:]
    updates = [int(n) for n in re.findall(r"num_updates=(\d+)", log)]
    assert updates[0] == 5 and updates[-1] == 8, updates


def test_stock_torch_load_rejects_the_checkpoint_without_the_allowlist(tiny_databin, tmp_path):
    """The failure the plugin fixes is real: a fresh interpreter without it cannot load the file."""
    assert train(tiny_databin, tmp_path, 2).returncode == 0
    probe = subprocess.run(
        [sys.executable, "-c", f"import torch; torch.load('{tmp_path}/checkpoint_last.pt')"],
        capture_output=True, text=True,
    )
    assert probe.returncode != 0 and "weights_only" in probe.stderr


class NotAllowlisted:
    pass


def test_allowlist_still_rejects_other_globals(tmp_path):
    import bio_roberta.checkpoints  # noqa: F401

    path = tmp_path / "evil.pt"
    torch.save({"payload": NotAllowlisted()}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
