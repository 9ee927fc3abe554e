"""A non-editable install holds every package and its configs, and runs from any directory: a
sweep's config (package data, read from beside bio_roberta/finetuning/sweep.py) composes, and
`bio-roberta pretrain` / `distill` --dry-run compose their configs from the installed package
(beside bio_roberta/pretraining/launch.py), not from a checkout."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The package installed with pip, not editable, from a copy of the checkout (its links kept,
    as pip finds them in a checkout) into a dir of its own."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    left_out = (
        ".git",
        ".venv",
        ".wandb-site",
        ".slurm-site",
        "tests",
        "sample",
        "demo-out",
        "build",
        "*.egg-info",
        "__pycache__",
    )
    shutil.copytree(REPO_ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*left_out))
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return site.resolve()


def installed(site: Path, command: list, cwd: Path) -> subprocess.CompletedProcess:
    """COMMAND run in cwd with only the installed packages on PYTHONPATH (and no launch
    variables: GPUS, CONFIG_DIR, ...)."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(cwd)),
        "PYTHONPATH": str(site),
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_an_installed_package_composes_the_sweep_config_outside_the_checkout(site, tmp_path):
    for package in ("bio_roberta", "bio_roberta_core", "preprocess", "user_dir"):
        assert (site / package / "__init__.py").is_file(), package
    where_from = "import bio_roberta.finetuning.sweep as module; print(module.__file__)"
    where = installed(site, [sys.executable, "-c", where_from], tmp_path)
    assert where.returncode == 0, where.stderr[-3000:]
    assert where.stdout.startswith(str(site))
    job = installed(
        site,
        [
            sys.executable,
            "-m",
            "bio_roberta.finetuning.sweep",
            "--cfg",
            "job",
            "task_name=chemprot",
            "pretrained=model.pt",
            "data_root=finetune-bin",
            "results_dir=results",
        ],
        tmp_path,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    config = yaml.safe_load(job.stdout)
    assert config["task_name"] == "chemprot" and config["optimization"]["optimizer"] == "fused_adam"


@pytest.mark.parametrize(
    "command, positionals",
    [("pretrain", ["data-bin", "ckpt"]), ("distill", ["data-bin", "ckpt", "teacher.pt", "s.pt"])],
)
def test_an_installed_package_launches_with_its_own_configs_outside_the_checkout(
    site, tmp_path, command, positionals
):
    """On CPU with the base recipe the launch composes the config (fairseq-hydra-train --cfg job)
    to read its batch back: distill's composes pretrain's through its pretrain/ group."""
    done = installed(
        site,
        [site / "bin" / "bio-roberta", command, *positionals, "--gpus", "0", "--dry-run"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan_line, command_line = done.stdout.splitlines()
    assert plan_line == (
        "world size 1 x batch 32 x update_freq 256 = 8192 sequences per update (micro-batch: "
        "configured)"
    )
    launched = shlex.split(command_line)
    config_dir = launched[launched.index("--config-dir") + 1]
    assert config_dir == str(site / "bio_roberta" / "configs" / command)
    assert f"common.user_dir={site / 'user_dir'}" in launched
