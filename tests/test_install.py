"""The install route for an environment with its own torch (scripts/install.sh, `make install`),
and commands meeting a missing fairseq or transformers: one line saying how to install it, exit 2,
no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import REPO_ROOT

HIDE_MODULES = '''
import sys

class HideModules:
    """As if {names} were not installed: their import fails the way a missing module's does."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
'''


def environment_without(tmp_path: Path, *names: str) -> dict:
    """os.environ for a subprocess in which `names` cannot be imported (a sitecustomize)."""
    hide = tmp_path / "hide"
    hide.mkdir()
    sitecustomize = HIDE_MODULES.format(names=names) + "sys.meta_path.insert(0, HideModules())\n"
    (hide / "sitecustomize.py").write_text(sitecustomize)
    path = os.pathsep.join(filter(None, [str(hide), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.parametrize(
    "command",
    [
        ["user-dir"],
        ["learn-vocab", "corpus.txt", "--out", "vocab", "--vocab-size", "300"],
        ["pretrain", "data-bin", "ckpt", "--recipe", "tiny", "--gpus", "0"],
    ],
    ids=["user-dir", "learn-vocab", "pretrain"],
)
def test_a_command_without_fairseq_says_how_to_install_it(tmp_path, command):
    (tmp_path / "corpus.txt").write_text("the patient was given aspirin\n" * 50)
    run = subprocess.run(
        [sys.executable, "-m", "bio_roberta", *command],
        cwd=tmp_path,
        env=environment_without(tmp_path, "fairseq"),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2, run.stderr[-3000:]
    expected = (
        f"bio-roberta {command[0]}: error: needs the Python package 'fairseq', which is not "
        "installed here; install it without replacing your torch: scripts/install.sh "
        "(README: Install)"
    )
    assert run.stderr.splitlines() == [expected]


def test_a_command_without_transformers_says_how_to_install_it(monkeypatch, capsys):
    import importlib

    from bio_roberta.cli import main
    from bio_roberta.commands import export_hf

    namespace = {}
    exec(HIDE_MODULES.format(names=("transformers",)), namespace)
    monkeypatch.setattr(sys, "meta_path", [namespace["HideModules"](), *sys.meta_path])
    for name in [name for name in sys.modules if name.partition(".")[0] == "transformers"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(export_hf, "run", lambda args: importlib.import_module("transformers"))
    assert main(["export-hf", "model.pt", "out", "--vocab", "vocab"]) == 2
    assert capsys.readouterr().err.endswith(
        "needs the Python package 'transformers', which is not installed here; install the hf "
        "extra: scripts/install.sh --extras hf (README: Install)\n"
    )


@pytest.mark.slow
def test_install_route_keeps_the_environments_torch(tmp_path):
    """A fresh venv holding only the CPU torch (the on-disk wheel, as a cluster's environment holds
    its CUDA one) gets fairseq, bio-roberta and the hf extra from scripts/install.sh, and its
    torch is the same afterwards. fairseq's build comes from pip's wheel cache after the first
    set-up, so this costs the installs, not a compilation."""
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "torch==2.13.0"], check=True, capture_output=True)

    def torch_files():
        site = next((env_dir / "lib").glob("python3*/site-packages"))
        return {
            str(path.relative_to(site)): path.stat().st_mtime_ns
            for path in (site / "torch").rglob("*.py")
        }

    before = torch_files()
    install = subprocess.run(
        ["make", "-s", "install", f"PYTHON={python}", "EXTRAS=hf"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    log = install.stdout + install.stderr
    assert install.returncode == 0, log[-4000:]
    assert "(torch 2.13.0+cpu kept)" in log and "fairseq-fixed declares torchaudio" in log
    assert "ERROR" not in log, log[-4000:]
    assert torch_files() == before  # not reinstalled, not replaced
    check = subprocess.run(
        [str(env_dir / "bin" / "bio-roberta"), "user-dir"], capture_output=True, text=True
    )
    assert check.returncode == 0 and Path(check.stdout.strip(), "__init__.py").is_file(), check
    versions = subprocess.run(
        [str(python), "-c", "import torch, transformers; print(torch.__version__)"],
        capture_output=True,
        text=True,
    )
    assert versions.returncode == 0 and versions.stdout.startswith("2.13.0"), versions.stderr
