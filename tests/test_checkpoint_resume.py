"""fairseq's own resume from checkpoint_last.pt works under torch's weights_only default once the
plugin is imported, and the allowlist admits nothing beyond what fairseq checkpoints hold."""
import pickle
import random
import re
import subprocess
import sys

import pytest
import torch

from conftest import USER_DIR

BIN = sys.executable.rsplit("/", 1)[0]
WORDS = ("the patient was given aspirin for chest pain and showed improvement in renal function "
         "after treatment with insulin").split()


@pytest.fixture(scope="module")
def word_databin(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    rng = random.Random(0)
    for split, n in (("train", 200), ("valid", 24)):
        lines = (" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) for _ in range(n))
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [f"{BIN}/fairseq-preprocess", "--only-source", "--trainpref", root / "train.txt",
         "--validpref", root / "valid.txt", "--destdir", root / "bin", "--workers", "1"],
        check=True, capture_output=True,
    )
    return root


def train(databin, save_dir, max_update, user_dir=True):
    cmd = [f"{BIN}/fairseq-train", databin / "bin", "--task", "masked_lm", "--criterion", "masked_lm",
           "--arch", "roberta_tiny", "--cpu", "--batch-size", "8", "--tokens-per-sample", "32",
           "--optimizer", "adam", "--lr", "1e-3", "--max-update", str(max_update),
           "--save-dir", save_dir, "--log-interval", "1", "--no-epoch-checkpoints", "--seed", "3"]
    if user_dir:
        cmd += ["--user-dir", USER_DIR]
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def test_resume_from_checkpoint_last_continues_at_the_right_update(word_databin, tmp_path):
    first = train(word_databin, tmp_path, 4)
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = train(word_databin, tmp_path, 8)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch 1 @ 4 updates\)", log), log[-3000:]
    updates = [int(n) for n in re.findall(r"num_updates=(\d+)", log)]
    assert updates[0] == 5 and updates[-1] == 8, updates


def test_stock_torch_load_rejects_the_checkpoint_without_the_allowlist(word_databin, tmp_path):
    """The failure the plugin fixes is real: a fresh interpreter without it cannot load the file."""
    assert train(word_databin, tmp_path, 2).returncode == 0
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
