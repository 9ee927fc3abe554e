"""`bio-roberta pretrain` and `bio-roberta distill`, the front doors of pretraining and
distillation (bio_roberta/pretraining/launch.py): --dry-run prints the plan and the exact command
line for a GPU world given by options or by the launch scripts' environment variables (no GPU
needed), the CPU tiny recipe starts without composing the config, bad input stops with one line, and
the tiny recipe trains, on two gloo ranks under torchrun."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.cli import main
from bio_roberta.pretraining import launch
from conftest import REPO_ROOT, USER_DIR
from user_dir.distributed import free_port

BIN = Path(sys.executable).parent
# what the launch reads from the environment: left out unless a test sets it
LAUNCH_VARIABLES = (
    "GPUS",
    "PROCS",
    "NNODES",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "MICRO_BATCH",
    "CHECKPOINT_ACTIVATIONS",
    "EFFECTIVE_BATCH",
    "CONFIG_DIR",
)


def launched(*command, **variables) -> subprocess.CompletedProcess:
    """COMMAND run with bio-roberta's bin/ on PATH and only the launch variables given."""
    env = {key: value for key, value in os.environ.items() if key not in LAUNCH_VARIABLES}
    env |= {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "OMP_NUM_THREADS": "1", **variables}
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, cwd=REPO_ROOT, env=env
    )


def dry_run(*command, **variables) -> tuple[str, list[str]]:
    """The plan line and the command line a --dry-run prints."""
    done = launched(*command, "--dry-run", **variables)
    assert done.returncode == 0, done.stderr[-3000:]
    plan_line, command_line = done.stdout.splitlines()
    return plan_line, shlex.split(command_line)


def hydra_train(config_dir: str, *arguments: str) -> list[str]:
    """fairseq-hydra-train with the plugin, as the launch starts it in each process."""
    return [
        "-m",
        "user_dir.distributed_launch",
        "fairseq-hydra-train",
        "--config-dir",
        str(launch.CONFIGS / config_dir),
        "--config-name",
        "base",
        *arguments,
    ]


@pytest.fixture
def no_launch_variables(monkeypatch):
    for name in LAUNCH_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_pretrain_dry_run_plans_eight_gpus_and_prints_the_torchrun_command(tiny_databin, tmp_path):
    save = tmp_path / "ckpt"
    plan_line, command = dry_run(
        sys.executable, "-m", "bio_roberta", "pretrain", tiny_databin, save, "--gpus", "8",
        "--gpu-memory-gb", "80", "optimization.max_update=1000",
    )  # fmt: skip
    assert plan_line.startswith(
        "world size 8 x batch 128 x update_freq 8 = 8192 sequences per update (micro-batch: "
        "fits 80 GiB: about "
    )
    assert command == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        *("--nnodes", "1", "--node_rank", "0", "--nproc_per_node", "8"),
        *("--master_addr", "localhost", "--master_port", "29500"),
        *hydra_train(
            "pretrain",
            f"task.data={tiny_databin}",
            f"checkpoint.save_dir={save}",
            f"common.user_dir={USER_DIR}",
            "dataset.batch_size=128",
            "optimization.update_freq=[8]",
            "optimization.max_update=1000",
        ),
    ]


def test_the_script_s_environment_variables_set_the_world_and_the_batch(tiny_databin, tmp_path):
    """scripts/pretrain.sh with its positional recipe and the variables a SLURM job sets: two
    nodes of 8 GPUs, micro-batch fixed at 32 with activation checkpointing, 4,096 sequences."""
    plan_line, command = dry_run(
        "bash", REPO_ROOT / "scripts" / "pretrain.sh", tiny_databin, tmp_path, "large",
        "--gpu-memory-gb", "80",
        GPUS="8", NNODES="2", NODE_RANK="1", MASTER_ADDR="host0", MASTER_PORT="29600",
        MICRO_BATCH="32", CHECKPOINT_ACTIVATIONS="1", EFFECTIVE_BATCH="4096",
    )  # fmt: skip
    assert plan_line == (
        "world size 16 x batch 32 x update_freq 8 = 4096 sequences per update (micro-batch: "
        "configured)"
    )
    assert command[3:13] == [
        *("--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "8"),
        *("--master_addr", "host0", "--master_port", "29600"),
    ]
    assert "+recipe=large" in command
    assert command[-4:] == [
        "dataset.batch_size=32",
        "optimization.update_freq=[8]",
        "dataset.batch_size=32",
        "+model.checkpoint_activations=true",
    ]


def test_distill_dry_run_plans_for_the_teacher_too(tiny_databin, tiny_roberta_checkpoint, tmp_path):
    plan_line, command = dry_run(
        sys.executable, "-m", "bio_roberta", "distill", tiny_databin, tmp_path,
        tiny_roberta_checkpoint, tiny_roberta_checkpoint, "--recipe", "align", "--gpus", "1",
        "--gpu-memory-gb", "80",
    )  # fmt: skip
    assert "and the teacher" in plan_line and plan_line.startswith("world size 1 x batch 128 x")
    assert command == [
        sys.executable,
        *hydra_train(
            "distill",
            "+recipe=align",
            f"task.data={tiny_databin}",
            f"checkpoint.save_dir={tmp_path}",
            f"common.user_dir={USER_DIR}",
            "dataset.batch_size=128",
            "optimization.update_freq=[64]",
            f"task.teacher_path={tiny_roberta_checkpoint}",
            f"checkpoint.finetune_from_model={tiny_roberta_checkpoint}",
        ),
    ]


def test_a_dry_run_needs_no_data_bin(tmp_path):
    """Only fitting the micro-batch to the GPU reads the data (dict.txt: the vocabulary's size);
    a dry run without a data-bin keeps the configured micro-batch and says why."""
    data = tmp_path / "not-binarized-yet"
    plan_line, command = dry_run(
        sys.executable, "-m", "bio_roberta", "pretrain", data, tmp_path / "ckpt", "--gpus", "8",
        "--gpu-memory-gb", "80",
    )  # fmt: skip
    assert plan_line == (
        "world size 8 x batch 32 x update_freq 32 = 8192 sequences per update (micro-batch: "
        f"configured, not fitted to the GPU: no {data / 'dict.txt'} to size the vocabulary (a dry "
        "run without a data-bin; the run fits it))"
    )
    assert f"task.data={data}" in command and "dataset.batch_size=32" in command


@pytest.mark.parametrize("recipe", launch.TINY_RECIPES)
def test_the_cpu_tiny_recipe_starts_without_composing_the_config(
    tiny_databin, tmp_path, monkeypatch, capsys, no_launch_variables, recipe
):
    """Composing only to read the tiny recipe's own batch back would cost two starts of
    fairseq: no subprocess runs before the launch."""

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"composed the config: {args}")

    monkeypatch.setattr(launch.subprocess, "run", no_subprocess)
    argv = [tiny_databin, tmp_path, "--recipe", recipe, "--gpus", "0", "--procs", "2"]
    assert main(["pretrain", *map(str, argv), "--dry-run"]) == 0
    plan_line, command_line = capsys.readouterr().out.splitlines()
    assert plan_line == "world size 2 x the recipe's own batch and update_freq (CPU)"
    command = shlex.split(command_line)
    assert command[command.index("--nproc_per_node") + 1] == "2"
    assert f"+recipe={recipe}" in command and not any("batch_size" in part for part in command)


def test_a_modernbert_recipe_is_planned_for_its_own_batch(tiny_databin, tmp_path):
    """The effective batch is the recipe's (batch_size x update_freq x 8 in its config): 4,608
    sequences of 1,024 tokens for ModernBERT-base, not the paper's 8,192."""
    plan_line, command = dry_run(
        sys.executable, "-m", "bio_roberta", "pretrain", tiny_databin, tmp_path / "ckpt",
        "--recipe", "modernbert", "--gpus", "8", "--gpu-memory-gb", "80",
    )  # fmt: skip
    assert plan_line.startswith(
        "world size 8 x batch 64 x update_freq 9 = 4608 sequences per update (micro-batch: fits "
        "80 GiB: about "
    )
    assert plan_line.endswith(" GiB for 64 x 1024 tokens)")
    assert "+recipe=modernbert" in command and "optimization.update_freq=[9]" in command


def test_a_save_dir_is_held_by_its_run(tiny_databin, tmp_path):
    """Two pretraining runs into one save dir overwrote each other's checkpoints. The command
    takes the save dir's lock and keeps it across the exec into its run (output_dir.
    hold_until_exit), so a second run is refused at once, naming the first."""
    from bio_roberta_core.output_dir import output_lock

    save = (tmp_path / "save").resolve()
    with output_lock(save):  # as a running pretrain holds it
        run = launched(BIN / "bio-roberta", "pretrain", tiny_databin, save, "--recipe", "tiny")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(
        f"bio-roberta pretrain: error: {save}: another run is writing it: pid {os.getpid()} on "
    ), line


@pytest.mark.parametrize(
    "student, override",
    [("student.pt", "criterion.alpha_cos=1.0"), ("-", "task.student_layers=every_other")],
)
def test_the_distill_script_passes_teacher_student_and_recipe(
    tiny_databin, tmp_path, student, override
):
    """TEACHER, STUDENT and the recipe, then overrides; STUDENT may be left out (the script:
    "-") when the recipe's or an override's task.student_layers builds the student, and
    `bio-roberta distill` without it gives the same command (an override right after TEACHER
    stays an override)."""
    plan_line, command = dry_run(
        "bash", REPO_ROOT / "scripts" / "distill.sh", tiny_databin, tmp_path, "teacher.pt",
        student, "tiny", override, GPUS="0",
    )  # fmt: skip
    assert plan_line == "world size 1 x the recipe's own batch and update_freq (CPU)"
    given = [] if student == "-" else [student]
    assert command == [
        sys.executable,
        *hydra_train(
            "distill",
            "+recipe=tiny",
            f"task.data={tiny_databin}",
            f"checkpoint.save_dir={tmp_path}",
            f"common.user_dir={USER_DIR}",
            "task.teacher_path=teacher.pt",
            *(f"checkpoint.finetune_from_model={path}" for path in given),
            override,
        ),
    ]
    _, direct = dry_run(
        sys.executable, "-m", "bio_roberta", "distill", tiny_databin, tmp_path, "teacher.pt",
        *given, override, "--recipe", "tiny", GPUS="0",
    )  # fmt: skip
    assert direct == command


def test_an_unknown_recipe_or_config_dir_is_one_line(tmp_path, capsys, no_launch_variables):
    assert main(["pretrain", "data", "ckpt", "--recipe", "huge", "--gpus", "0"]) == 2
    assert capsys.readouterr().err == (
        f"bio-roberta pretrain: error: no recipe 'huge' in {launch.CONFIGS}/pretrain/recipe; "
        "choose one of base, continue_modernbert, continue_roberta, large, modernbert, "
        "modernbert_long, modernbert_tiny, speed, tiny, train_longer\n"
    )
    assert main(["distill", "d", "s", "t", "u", "--config-dir", str(tmp_path), "--gpus", "0"]) == 2
    assert capsys.readouterr().err.startswith(f"bio-roberta distill: error: {tmp_path}: no base")


def test_a_config_that_does_not_compose_or_data_without_a_dictionary_stop_with_exit_2(
    tiny_databin, tmp_path
):
    pretrain = [sys.executable, "-m", "bio_roberta", "pretrain", "--gpus", "1"]
    misspelt = launched(*pretrain, tiny_databin, tmp_path, "optimization.max_updates=2")
    assert misspelt.returncode == 2
    assert "Could not override 'optimization.max_updates'" in misspelt.stderr  # Hydra's message
    assert misspelt.stderr.endswith(
        f"bio-roberta pretrain: error: the config in {launch.CONFIGS}/pretrain does not "
        "compose with these overrides (Hydra's message above)\n"
    )
    no_dictionary = launched(*pretrain, "--gpu-memory-gb", "80", tmp_path, tmp_path / "ckpt")
    assert no_dictionary.returncode == 2
    assert no_dictionary.stderr.splitlines()[-1] == (
        f"bio-roberta pretrain: error: {tmp_path}/dict.txt: no dict.txt in task.data; binarize "
        "the corpus first"
    )


@pytest.mark.slow
def test_the_tiny_recipe_trains_on_two_gloo_ranks(tiny_databin, tmp_path):
    done = launched(
        sys.executable, "-m", "bio_roberta", "pretrain", tiny_databin, tmp_path, "--recipe",
        "tiny", "--gpus", "0", "--procs", "2", "--master-port", free_port(),
        "optimization.max_update=2", "common.log_format=simple", "common.log_interval=1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    assert "world size 2 x the recipe's own batch and update_freq (CPU)" in log
    assert "training on 2 devices" in log
    assert re.findall(r"num_updates=(\d+)", log)[:2] == ["1", "2"]
    assert "bsz=16" in log  # the tiny recipe's 8 sequences on each of the two ranks
    assert (tmp_path / "checkpoint_last.pt").is_file()


def test_config_dir_prints_the_installed_configs_from_any_directory(tmp_path):
    """fairseq-hydra-train --config-dir needs the configs' path, which outside a checkout only
    the package knows: `bio-roberta config-dir [STAGE]` prints it, wherever it is run."""
    printed = {}
    for stage in ("", "pretrain", "distill", "finetune"):
        done = subprocess.run(
            [str(BIN / "bio-roberta"), "config-dir", *([stage] if stage else [])],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        printed[stage] = Path(done.stdout.strip())
    assert printed[""] == launch.CONFIGS and printed["pretrain"] == launch.CONFIGS / "pretrain"
    assert (printed["pretrain"] / "base.yaml").is_file()
    assert (printed["distill"] / "base.yaml").is_file()
    assert (printed["finetune"] / "sweep.yaml").is_file()
