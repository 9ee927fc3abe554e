"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "sample"
# Real public data lives beside the checkout, never in it; tests that need it skip without it.
SHARED_DATA = Path(os.environ.get("BIO_ROBERTA_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
USER_DIR = REPO_ROOT / "user_dir"


def shared_data_path(*parts: str) -> Path:
    """A path under ../shared/data, skipping the calling test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


@pytest.fixture
def shared_data():
    return shared_data_path


# Tiny pretraining data and model shared by the pretrain, distill, fine-tuning and export tests.
TINY_WORDS = (
    "the patient was given aspirin for chest pain and showed improvement in renal function "
    "after treatment with insulin while the tumour cells expressed the gene and protein "
    "levels of glucose rose in mice with diabetes"
).split()


def write_tiny_corpus(root: Path, seed: int = 0, lines: dict | None = None) -> Path:
    """Whitespace-tokenised sentences in train.txt / valid.txt under root; returns root."""
    import random

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (lines or {"train": 300, "valid": 32}).items():
        text = (
            " ".join(rng.choice(TINY_WORDS) for _ in range(rng.randint(5, 30))) for _ in range(n)
        )
        (root / f"{split}.txt").write_text("\n".join(text) + "\n")
    return root


def write_text_manifest(text_dir: Path) -> Path:
    """A manifest.json like parse-*'s for a text dir a test wrote itself, which `binarize` then
    takes as a finished one (it refuses dirs without one: their parse did not finish)."""
    import json

    shards = [
        {"name": p.name, "split": p.name.split(".")[0], "bytes": p.stat().st_size}
        for p in sorted(text_dir.iterdir())
        if p.suffix == ".txt"
    ]
    manifest = {"kind": "text_shards", "source": "test", "shards": shards}
    (text_dir / "manifest.json").write_text(json.dumps(manifest))
    return text_dir


def fairseq_preprocess(text_dir: Path, destdir: Path, srcdict: Path | None = None) -> Path:
    """Binarise text_dir/{train,valid}.txt with fairseq-preprocess into destdir (a masked_lm
    data-bin)."""
    import subprocess
    import sys

    bindir = Path(sys.executable).parent
    cmd = [
        bindir / "fairseq-preprocess",
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


@pytest.fixture(scope="session")
def tiny_databin(tmp_path_factory) -> Path:
    """A masked_lm data-bin dir (train/valid .bin/.idx + dict.txt) of a few hundred short lines."""
    root = tmp_path_factory.mktemp("tiny_databin")
    return fairseq_preprocess(write_tiny_corpus(root / "text"), root / "bin")


def pretrain_tiny_roberta(
    databin: Path, save_dir: Path, max_update: int, tokens_per_sample: int = 32
) -> Path:
    """checkpoint_last.pt of roberta_tiny trained max_update masked-LM updates on databin (its
    dict.txt and train split) with stock fairseq-train on the CPU."""
    import subprocess
    import sys

    cmd = [
        Path(sys.executable).parent / "fairseq-train",
        databin,
        "--user-dir",
        USER_DIR,
        "--task",
        "masked_lm",
        "--criterion",
        "masked_lm",
        "--arch",
        "roberta_tiny",
        "--cpu",
        "--batch-size",
        "8",
        "--tokens-per-sample",
        str(tokens_per_sample),
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--max-update",
        str(max_update),
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--seed",
        "1",
        "--num-workers",
        "0",
        "--disable-validation",
    ]
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return save_dir / "checkpoint_last.pt"


@pytest.fixture(scope="session")
def tiny_roberta_checkpoint(tiny_databin, tmp_path_factory) -> Path:
    """checkpoint_last.pt of roberta_tiny trained 6 updates on tiny_databin; its dir also holds
    dict.txt."""
    import shutil

    save_dir = tmp_path_factory.mktemp("tiny_roberta")
    checkpoint = pretrain_tiny_roberta(tiny_databin, save_dir, max_update=6)
    shutil.copy(tiny_databin / "dict.txt", save_dir / "dict.txt")
    return checkpoint


@pytest.fixture(scope="session")
def without_parse_dependencies(tmp_path_factory) -> dict:
    """An environment for subprocesses in which the parse stage's blingfire and pubmed_parser cannot
    be imported, as on a training machine set up without them."""
    root = tmp_path_factory.mktemp("no_parse_dependencies")
    for name in ("blingfire", "pubmed_parser"):
        (root / f"{name}.py").write_text(
            f"raise ImportError('{name} is not installed here (tests/conftest.py)')\n"
        )
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
