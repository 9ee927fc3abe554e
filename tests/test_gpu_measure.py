"""scripts/gpu_measure.py, the one script a lent GPU runs for issue 45, runs every part at CPU
size (--tiny): the LM-head comparison, the routes each repeated (median, spread, every run,
commit, device, torch, load), the profile tables before and after the levers, the levers' loss
curves, the distillation step; the results in one JSON named by device and date."""

import json
import sys

import pytest

from conftest import REPO_ROOT, run_ok

SCRIPT = REPO_ROOT / "scripts" / "gpu_measure.py"


@pytest.mark.slow
def test_every_part_runs_at_cpu_size_into_one_json_named_by_device(tmp_path):
    done = run_ok(
        [
            sys.executable,
            SCRIPT,
            "--tiny",
            "--out",
            tmp_path,
            "--repeats",
            "2",
            "--steps",
            "8",
            "--profile-updates",
            "2",
        ],
        timeout=800,
    )
    path = tmp_path / done.stdout.strip().splitlines()[-1].rsplit("/", 1)[-1]
    report = json.loads(path.read_text())
    assert path.name == f"gpu-measure-cpu-{report['date']}.json"
    assert report["device"] == "cpu" and report["torch"] and report["commit"]
    assert len(report["load_average_at_start_1_5_15min"]) == 3
    parts = report["parts"]

    head = parts["head"]
    assert head["rows"] > 2 * head["chunk_rows"]  # several chunks
    for chunked in ("chunked", "chunked_compiled"):
        assert head[chunked]["loss_relative_difference"] < 1e-5
        assert head[chunked]["input_grad_max_difference_over_largest"] < 1e-5

    runs = parts["benchmark"]["runs"]
    for route in ("ours_bf16", "ours_bf16_levers", "transformers_bf16"):
        run = runs[f"{route}@4x2"]
        assert run["runs"] == 2 and len(run["tokens_per_s_runs"]) == 2
        assert min(run["tokens_per_s_runs"]) <= run["tokens_per_s"] <= max(run["tokens_per_s_runs"])
        spread = (max(run["tokens_per_s_runs"]) - min(run["tokens_per_s_runs"])) / run[
            "tokens_per_s"
        ]
        assert run["spread"] == pytest.approx(spread, abs=1e-4)
        assert len(run["load_average_1_5_15min_runs"]) == 2
    assert runs["fairseq_fp16@4x2"] == {"skipped": "fairseq's fp16 optimizer needs CUDA"}
    # the levers change the arithmetic, not the updates: the same loss curve, to bf16's rounding
    tracking = parts["benchmark"]["loss_tracking"]["ours_bf16_levers_against_ours_bf16@4x2"]
    assert tracking["updates"] == 8 and tracking["max_relative_difference"] < 0.01

    for route in ("ours_bf16", "ours_bf16_levers"):
        table = (tmp_path / f"profile-{route}-cpu.md").read_text()
        assert "| wall (ProfilerStep spans) |" in table and "| phase: backward |" in table
        rows = {row["what"]: row for row in parts["profile"][route]["summary"]["rows"]}
        assert rows["device busy"]["share_of_wall"] + rows["device idle: host gaps"][
            "share_of_wall"
        ] == pytest.approx(1, abs=1e-3)

    levers = parts["levers"]["runs"]
    assert levers["ours_bf16_levers_cuda_graphs@4x2"] == {"skipped": "CUDA graphs need CUDA"}
    try:
        import torchao  # noqa: F401

        fp8 = parts["levers"]["loss_tracking"]["ours_bf16_levers_fp8_against_ours_bf16_levers@4x2"]
        assert fp8["max_relative_difference"] < 0.02
    except ImportError:
        assert "torchao" in levers["ours_bf16_levers_fp8@4x2"]["skipped"]

    assert parts["distillation"]["distill_over_student_plus_teacher"] > 0
