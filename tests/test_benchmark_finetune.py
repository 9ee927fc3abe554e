"""scripts/benchmark_finetune.py: without accelerate it says, before any work, that transformers'
Trainer needs it; with accelerate, at its smallest on the sample, it prints both routes' walls,
loop examples/s, evaluation seconds and test scores as JSON, and the Trainer's configuration:
length-grouped batches, gradients clipped at our run's max-norm; our batches are grouped alike."""

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, SAMPLE_DIR

BENCHMARK = REPO_ROOT / "scripts" / "benchmark_finetune.py"


@pytest.mark.skipif(importlib.util.find_spec("accelerate") is not None, reason="has accelerate")
def test_without_accelerate_the_benchmark_says_the_trainer_needs_it():
    done = subprocess.run([sys.executable, BENCHMARK], capture_output=True, text=True)
    assert done.returncode == 2 and not done.stdout
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "error: transformers' Trainer needs the accelerate package, which this environment "
            "lacks: pip install 'bio-roberta[benchmark]' (or accelerate) to run the transformers "
            "route"
        )
    )


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("accelerate") is None, reason="needs accelerate")
def test_the_benchmark_prints_both_routes_walls_and_loop_speed():
    task = f"ncbi-disease={SAMPLE_DIR / 'tasks' / 'ncbi-disease'}"
    done = subprocess.run(
        [sys.executable, BENCHMARK, "--task", task, "--updates", "6", "--log-interval", "2",
         "--batch-size", "4", "--repeats", "1", "--clip-norm", "1.0"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)["ncbi-disease"]
    # the peer as a careful user runs it: length-grouped batches, gradients clipped as ours
    # (compare() checked our run's record against it)
    assert report["trainer_configuration"]["train_sampling_strategy"] == "group_by_length"
    assert report["trainer_configuration"]["max_grad_norm"] == 1.0
    assert "--group-by-length" in report["our_extra_args"]  # and ours as the Trainer's
    for route in ("ours", "transformers"):
        (run,) = report[route]["runs"]
        assert run["wall"] > run["fixed"] > run["evaluation"] > 0
        assert report[route]["loop_examples_per_second"] > 0
        assert 0 <= run["test_score"] <= 1  # the registry's entity F1 on both routes
