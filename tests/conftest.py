"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import subprocess
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


def run_ok(command: list, **options) -> subprocess.CompletedProcess:
    """`command` run to its end, its output captured as text, after checking that it succeeded."""
    done = subprocess.run(command, capture_output=True, text=True, **options)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def error_line(run: subprocess.CompletedProcess, returncode: int) -> str:
    """The last stderr line of a run that ended with `returncode` and no traceback: its error."""
    assert run.returncode == returncode and "Traceback" not in run.stderr, run.stderr[-3000:]
    return run.stderr.strip().splitlines()[-1]


@pytest.fixture
def shared_data():
    return shared_data_path


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


@pytest.fixture(scope="session")
def tiny_databin(tmp_path_factory) -> Path:
    """A masked_lm data-bin dir (train/valid .bin/.idx + dict.txt) of a few hundred short lines."""
    from tiny_training import fairseq_preprocess, write_tiny_corpus

    root = tmp_path_factory.mktemp("tiny_databin")
    return fairseq_preprocess(write_tiny_corpus(root / "text"), root / "bin")


@pytest.fixture(scope="session")
def tiny_roberta_checkpoint(tiny_databin, tmp_path_factory) -> Path:
    """checkpoint_last.pt of roberta_tiny trained 6 updates on tiny_databin; its dir also holds
    dict.txt."""
    import shutil

    from tiny_training import pretrain_tiny_roberta

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


@pytest.fixture(scope="session")
def audit_models(tmp_path_factory):
    """The memorisation audit's two tiny models (tests/audit_models.py): `target` trained past
    convergence on synthetic notes with canaries, `other` on other synthetic notes."""
    from audit_models import build_audit_models

    return build_audit_models(tmp_path_factory.mktemp("audit_models"))
