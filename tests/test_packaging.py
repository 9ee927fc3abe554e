"""A non-editable install holds every package and the fine-tuning config, and runs a sweep's
config from any directory (the config is package data, read from beside bio_roberta/sweep.py)."""

import os
import shutil
import subprocess
import sys

import yaml

from conftest import REPO_ROOT


def test_an_installed_package_composes_the_sweep_config_outside_the_checkout(tmp_path):
    source = tmp_path / "source"
    left_out = (
        ".git",
        ".venv",
        "tests",
        "sample",
        "demo-out",
        "build",
        "*.egg-info",
        "__pycache__",
    )
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(*left_out))
    site = tmp_path / "site"
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
    for package in ("bio_roberta", "bio_roberta_core", "preprocess", "user_dir"):
        assert (site / package / "__init__.py").is_file(), package
    env = {**os.environ, "PYTHONPATH": str(site)}
    where_from = "import bio_roberta.sweep as module; print(module.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", where_from],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(site))
    job = subprocess.run(
        [
            sys.executable,
            "-m",
            "bio_roberta.sweep",
            "--cfg",
            "job",
            "task_name=chemprot",
            "pretrained=model.pt",
            "data_root=finetune-bin",
            "results_dir=results",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    config = yaml.safe_load(job.stdout)
    assert config["task_name"] == "chemprot" and config["optimization"]["optimizer"] == "adam"
