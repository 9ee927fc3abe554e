"""Tiny fairseq runs on the CPU, stated once for every test that trains: a corpus of TINY_WORDS,
its data-bin, and fairseq-train of roberta_tiny (fairseq's tests/test_binaries.py
train_masked_lm(data_dir, arch, extra_flags) is the model). A test passes only the flags its claim
is about."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, USER_DIR

BIN = Path(sys.executable).parent

# Words of the tiny corpora; fine-tuning tests use them as stand-ins for BPE tokens.
TINY_WORDS = (
    "the patient was given aspirin for chest pain and showed improvement in renal function "
    "after treatment with insulin while the tumour cells expressed the gene and protein "
    "levels of glucose rose in mice with diabetes"
).split()
# The plugin on the CPU, data loaded in the training process: every tiny run's setting.
ON_CPU = ["--user-dir", USER_DIR, "--cpu", "--num-workers", "0"]
# The tiny model and its optimiser (batch size, task and criterion are each run's own).
TINY_ROBERTA = ["--arch", "roberta_tiny", "--optimizer", "adam", "--lr", "1e-3"]
# The distilled student: roberta_tiny at half its width.
NARROW_STUDENT = ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64"]


def restore_flags(checkpoint: Path) -> list:
    """Start from checkpoint's weights only (optimizer, data position and meters reset): fairseq's
    fine-tuning route."""
    return [
        "--restore-file",
        checkpoint,
        "--reset-optimizer",
        "--reset-dataloader",
        "--reset-meters",
    ]


def write_tiny_corpus(root: Path, seed: int = 0, lines: dict | None = None) -> Path:
    """Whitespace-tokenised sentences in train.txt / valid.txt under root; returns root."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (lines or {"train": 300, "valid": 32}).items():
        text = (
            " ".join(rng.choice(TINY_WORDS) for _ in range(rng.randint(5, 30))) for _ in range(n)
        )
        (root / f"{split}.txt").write_text("\n".join(text) + "\n")
    return root


def fairseq_preprocess(text_dir: Path, destdir: Path, srcdict: Path | None = None) -> Path:
    """Binarise text_dir/{train,valid}.txt with fairseq-preprocess into destdir (a masked_lm
    data-bin)."""
    cmd = [
        BIN / "fairseq-preprocess",
        "--only-source",
        "--trainpref",
        text_dir / "train.txt",
        "--validpref",
        text_dir / "valid.txt",
        "--destdir",
        destdir,
        "--workers",
        "1",
        "--dataset-impl",
        "mmap",
    ]
    if srcdict is not None:
        cmd += ["--srcdict", srcdict]
    subprocess.run([str(c) for c in cmd], check=True, capture_output=True)
    return destdir


def fairseq_train(
    data_dir: Path, *flags, env: dict | None = None, check: bool = True, preexec_fn=None
):
    """Stock fairseq-train on data_dir with the plugin on the CPU (ON_CPU) and flags.

    Returns the log (stdout and stderr), the test failing on a non-zero exit; with check=False,
    the CompletedProcess whatever its exit. env: variables added to this process's environment;
    preexec_fn: run in the child before fairseq-train (e.g. a limit on file sizes).
    """
    run = subprocess.run(
        [str(c) for c in [BIN / "fairseq-train", data_dir, *ON_CPU, *flags]],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec_fn,
    )
    if not check:
        return run
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stdout + run.stderr


def masked_lm_flags(
    save_dir: Path,
    max_update: int,
    *extra_flags,
    task: str = "masked_lm",
    criterion: str = "masked_lm",
    tokens_per_sample: int = 32,
    batch_size: int = 8,
) -> list:
    """fairseq-train's flags for max_update masked-LM updates of roberta_tiny (TINY_ROBERTA) on
    sequences of tokens_per_sample, the checkpoints in save_dir written at the end only, then
    extra_flags."""
    return [
        "--task",
        task,
        "--criterion",
        criterion,
        *TINY_ROBERTA,
        "--batch-size",
        str(batch_size),
        "--tokens-per-sample",
        str(tokens_per_sample),
        "--max-update",
        str(max_update),
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        *extra_flags,
    ]


def train_masked_lm(
    data_dir: Path,
    save_dir: Path,
    max_update: int,
    *extra_flags,
    env: dict | None = None,
    check: bool = True,
    preexec_fn=None,
    **options,
):
    """fairseq_train with masked_lm_flags (options: its task, criterion, tokens_per_sample,
    batch_size)."""
    flags = masked_lm_flags(save_dir, max_update, *extra_flags, **options)
    return fairseq_train(data_dir, *flags, env=env, check=check, preexec_fn=preexec_fn)


def pretrain_tiny_roberta(
    databin: Path, save_dir: Path, max_update: int, tokens_per_sample: int = 32
) -> Path:
    """checkpoint_last.pt of roberta_tiny trained max_update masked-LM updates on databin (its
    dict.txt and train split) with stock fairseq-train on the CPU."""
    train_masked_lm(
        databin,
        save_dir,
        max_update,
        "--seed",
        "1",
        "--disable-validation",
        tokens_per_sample=tokens_per_sample,
    )
    return save_dir / "checkpoint_last.pt"


def hydra_pretrain(recipes: str, data: Path, save_dir: Path, *overrides, env=None):
    """fairseq-hydra-train of configs/pretrain with the recipes, as `bio-roberta pretrain` starts
    it; the CompletedProcess whatever its exit."""
    command = [
        sys.executable,
        "-m",
        "user_dir.distributed_launch",
        "fairseq-hydra-train",
        "--config-dir",
        REPO_ROOT / "configs/pretrain",
        "--config-name",
        "base",
        f"+recipe=[{recipes}]",
        f"task.data={data}",
        f"common.user_dir={USER_DIR}",
        f"checkpoint.save_dir={save_dir}",
        "dataset.disable_validation=true",
        *overrides,
    ]
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
    )
