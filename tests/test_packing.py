"""Several fine-tuning runs on one device at once (bio_roberta/commands/_packing.py plans the packs,
bio_roberta/finetuning/packing.py runs them): a packed sweep gives each run the record it gets
alone, bit for bit on the CPU at the same thread count; N from the memory estimate; bad options are
one line; the launchers' configs for packs; a killed packed sweep leaves no run training."""

import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from bio_roberta.cli import main as cli_main
from bio_roberta.commands import _packing as packing
from bio_roberta.commands._device_memory import longest_example, run_bytes, runs_that_fit
from bio_roberta.commands._packing import (
    BASIC_LAUNCHER,
    JOBLIB_LAUNCHER,
    SLURM_LAUNCHER,
    Packing,
    first_pack_job,
    launcher_route,
    plan_packing,
)
from bio_roberta.errors import UsageError
from bio_roberta.finetuning.packing import PackError, claimed_device
from bio_roberta.finetuning.sweep import compose_config, hparams_grid
from bio_roberta.pretraining.batch_plan import parameter_count
from conftest import REPO_ROOT
from test_batch_plan import BASE, GIB, LARGE
from test_sweep import (
    TINY,
    TINY_SETTING,
    bio_roberta,
    build_ner_and_chemprot,
    kill_and_check_every_run_ends,
    records,
    tree_once_a_run_started,
)

BASE_PARAMETERS = parameter_count(12, 768, 3072, 50265, 512)  # 124,696,665: roberta.base
SLURM_SITE = REPO_ROOT / ".slurm-site"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, tiny_roberta_checkpoint):
    return build_ner_and_chemprot(tmp_path_factory.mktemp("finetune-bin"), tiny_roberta_checkpoint)


def test_the_estimate_of_one_fine_tuning_run_by_known_shapes():
    """roberta-base at 512 positions, batch 32, fp32 (the sweep's default): 16 bytes a parameter
    (weights, gradients, Adam's two moments) = 1.858 GiB; activations 32 x 512 tokens x 12 layers
    x 7.5 x (768 + 3072) bytes (batch_plan's bf16 measure) x 2 (fp32) = 10.547 GiB; a 0.6 GiB CUDA
    context: 13.005 GiB, four on an 80 GiB card (80% of it), eight on 141 GiB."""
    fp32 = run_bytes(BASE, BASE_PARAMETERS, 512, 32, fp16=False, gpu=True)
    assert fp32 / GIB == pytest.approx(1.8583 + 10.5469 + 0.6, abs=1e-3)
    assert (runs_that_fit(fp32, 80 * GIB), runs_that_fit(fp32, 141 * GIB)) == (4, 8)
    # fp16: 20 bytes a parameter (batch_plan's mixed precision, fp32 masters), bf16 activations
    fp16 = run_bytes(BASE, BASE_PARAMETERS, 512, 32, fp16=True, gpu=True)
    assert fp16 / GIB == pytest.approx(2.3229 + 5.2734 + 0.6, abs=1e-3)
    assert runs_that_fit(fp16, 80 * GIB) == 7
    # an NER task's longest sentence of 128 tokens: a quarter of the activations
    assert runs_that_fit(run_bytes(BASE, BASE_PARAMETERS, 128, 32, False, True), 80 * GIB) == 12
    large = run_bytes(LARGE, parameter_count(24, 1024, 4096, 50265, 512), 512, 16, False, True)
    assert (large / GIB, runs_that_fit(large, 80 * GIB)) == (pytest.approx(19.9585, abs=1e-3), 3)
    # on the CPU fp16=true trains in fp32, and each process holds its imported libraries
    cpu = run_bytes(BASE, BASE_PARAMETERS, 128, 16, fp16=True, gpu=False)
    assert cpu == run_bytes(BASE, BASE_PARAMETERS, 128, 16, False, True) - 0.2 * GIB
    assert runs_that_fit(10 * fp32, 80 * GIB) == 1  # never fewer than one


def sweep_args(tmp_path, pretrained, data_root, **options) -> Namespace:
    """`bio-roberta sweep`'s arguments as its parser gives them."""
    defaults = dict(runs_per_device=None, devices=None, device_memory_gb=None, arch=None)
    return Namespace(
        pretrained=str(pretrained),
        data_root=str(data_root),
        results=str(tmp_path / "results"),
        overrides=list(TINY),
        **{**defaults, **options},
    )


def test_auto_runs_per_device_from_the_estimate_and_the_device_memory(
    tiny_roberta_checkpoint, data_root, tmp_path, monkeypatch
):
    monkeypatch.setattr(packing, "usable_cores", lambda: 8)
    plan = [(["chemprot", "ncbi-disease"], [1, 2, 3])]
    grid = hparams_grid([*TINY, "hparams.batch_size=8,16"])  # the largest batch sets the run
    job = compose_config(
        [
            "task_name=chemprot",
            f"pretrained={tiny_roberta_checkpoint}",
            f"data_root={data_root}",
            f"results_dir={tmp_path}",
        ]
    )

    def planned(**options):
        args = sweep_args(tmp_path, tiny_roberta_checkpoint, data_root, **options)
        return plan_packing(args, plan, grid, job)

    # tiny runs: each process' libraries (0.4 GiB on the CPU) are most of a run
    state = torch.load(tiny_roberta_checkpoint, weights_only=False)
    parameters = sum(tensor.numel() for tensor in state["model"].values())
    longest = max(longest_example(data_root / task) for task in ("chemprot", "ncbi-disease"))
    assert 3 < longest < 32  # the longest example's tokens, not the model's 32 positions
    shape = {"layers": 2, "width": 64, "ffn": 128, "checkpointing": False}  # roberta_tiny
    per_run = run_bytes(shape, parameters, longest, 16, False, False)
    assert 0.4 * GIB < per_run < 0.41 * GIB
    found = planned(runs_per_device="auto", devices="cpu", device_memory_gb=2.0)
    assert found.runs_per_device == 3 == int(0.8 * 2 * GIB // per_run)
    assert found.why.startswith("auto: 80% of 2.0 GiB (2 GiB given) over about 0.40 GiB")
    assert f"batch 16 x {longest} tokens" in found.why
    assert [len(pack) for pack in found.packs] == [3, 3]
    # more than the CPU's cores: one run per core
    monkeypatch.setattr(packing, "usable_cores", lambda: 2)
    assert (
        planned(runs_per_device="auto", devices="cpu", device_memory_gb=20.0).runs_per_device == 2
    )
    # one run fits on the one default device: one run per job, as without the option
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert planned(runs_per_device="auto", device_memory_gb=0.6) is None
    assert planned(runs_per_device="auto", devices="cpu", device_memory_gb=0.6).packs == [
        [(task, seed)] for task in ("chemprot", "ncbi-disease") for seed in (1, 2, 3)
    ]


@pytest.mark.parametrize(
    "options, message",
    [
        (["--runs-per-device", "0"], "--runs-per-device '0': expected a whole number of at least"),
        (["--runs-per-device", "two"], "--runs-per-device 'two': expected a whole number"),
        (["--devices", "0,0"], "--devices '0,0': a device named twice; expected comma-separated"),
        (["--devices", "cpu,0"], "--devices 'cpu,0': cpu is a device list of its own; expected"),
        (["--devices", ""], "--devices '': not a device: ''; expected comma-separated CUDA"),
        (["--device-memory-gb", "80"], "--device-memory-gb 80: plans --runs-per-device auto"),
    ],
)
def test_a_bad_packing_option_is_one_line(options, message, tmp_path, capsys):
    (tmp_path / "finetune-bin" / "chemprot").mkdir(parents=True)
    status = cli_main(
        ["sweep", "--tasks", "chemprot", "--pretrained", str(tmp_path / "model.pt")]
        + ["--data-root", str(tmp_path / "finetune-bin"), "--results", str(tmp_path / "r")]
        + options
    )
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and line.startswith(f"bio-roberta sweep: error: {message}"), line
    assert not (tmp_path / "r").exists()


def test_local_launchers_run_one_pack_per_device_at_a_time():
    assert launcher_route(BASIC_LAUNCHER, [], ["cpu"], 4) == (
        "basic launcher: one pack at a time",
        [],
    )
    joblib = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    assert launcher_route(BASIC_LAUNCHER, [], ["0", "1"], 4)[1] == joblib
    assert launcher_route(JOBLIB_LAUNCHER, ["hydra.launcher.n_jobs=2"], ["0", "1"], 4)[1] == [
        "hydra.launcher.n_jobs=2"
    ]
    with pytest.raises(UsageError, match=r"hydra.launcher.n_jobs=4: .* n_jobs 2 for 2 device"):
        launcher_route(JOBLIB_LAUNCHER, ["hydra.launcher.n_jobs=4"], ["0", "1"], 4)
    slurm = ["hydra.launcher.nodes=1", "hydra.launcher.tasks_per_node=1"]
    assert launcher_route(SLURM_LAUNCHER, ["hydra.launcher.gres=gpu:1"], None, 4)[1] == [
        *slurm,
        "hydra.launcher.cpus_per_task=4",
    ]
    with pytest.raises(UsageError, match="gpus_per_node=2: a pack job is one process on one GPU"):
        launcher_route(SLURM_LAUNCHER, ["hydra.launcher.gpus_per_node=2"], None, 4)


def test_a_pack_job_composes_with_its_runs_devices_and_joblib(tmp_path):
    """The multirun's overrides, as the first pack job composes them: its runs (a task name that
    looks like a number stays a name), its devices, joblib with one job per device."""
    packs = [[("chemprot", 1), ("1e5", 2)], [("chemprot", 3)]]
    overrides = [
        "pack=" + ",".join(packing.pack_value(pack) for pack in packs),
        "devices=['0','GPU-8f2e']",
        "hydra.sweep.subdir=${hydra.job.num}_pack",
        *launcher_route(BASIC_LAUNCHER, [], ["0", "GPU-8f2e"], 2)[1],
    ]
    args = sweep_args(tmp_path, tmp_path / "model.pt", tmp_path)
    job = first_pack_job(args, Packing(2, "given", ["0", "GPU-8f2e"], packs, "", overrides))
    assert [(run.task_name, run.seed) for run in job.pack] == packs[0]
    assert list(job.devices) == ["0", "GPU-8f2e"] and job.hparams.batch_size == 8
    assert job.hydra.launcher._target_ == JOBLIB_LAUNCHER and job.hydra.launcher.n_jobs == 2
    assert OmegaConf.to_container(job.hydra.sweep)["subdir"] == "${hydra.job.num}_pack"


def test_each_pack_job_claims_a_device_no_other_holds(tmp_path):
    devices = ["0", "1"]
    with claimed_device(devices, tmp_path) as first, claimed_device(devices, tmp_path) as second:
        assert (first, second) == ("0", "1")
        with pytest.raises(PackError, match=r"every device of the sweep \(0, 1\) is held"):
            with claimed_device(devices, tmp_path):
                pass
    with claimed_device(devices, tmp_path) as again:
        assert again == "0"
    with claimed_device(None, tmp_path) as own:  # SLURM: the job's own allocation
        assert own is None


SLURM_CHECK = """
import contextlib, io, json, sys
from bio_roberta.cli import main
found = []
for options in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(options)
    found.append([status, out.getvalue(), err.getvalue()])
print(json.dumps(found))
"""


def test_the_slurm_launcher_gets_one_job_of_one_gpu_per_pack(tmp_path):
    """Composed with hydra-submitit-launcher (setup.py's slurm extra, which `make venv` puts in
    .slurm-site) and printed by --cfg job, nothing submitted: one node, one task, one GPU and a CPU
    per run for each pack job, the user's partition kept; --devices, a job of two GPUs and auto
    without the partition's GPU memory are refused in one line."""
    import yaml

    if not (SLURM_SITE / "hydra_plugins" / "hydra_submitit_launcher").is_dir():
        pytest.fail(
            f"{SLURM_SITE} has no hydra-submitit-launcher: `make venv` installs it there (the "
            "Makefile's PROJECT_STAMP recipe; if .venv is up to date, rm .venv/.project-installed)"
        )
    (tmp_path / "finetune-bin" / "chemprot").mkdir(parents=True)
    (tmp_path / "finetune-bin" / "ncbi-disease").mkdir()
    sweep = ["sweep", "--tasks", "chemprot,ncbi-disease", "--seed-list", "1,2,3"]
    sweep += ["--pretrained", str(tmp_path / "model.pt"), "--data-root"]
    sweep += [str(tmp_path / "finetune-bin"), "--results", str(tmp_path / "r")]
    slurm = ["hydra/launcher=submitit_slurm", "hydra.launcher.partition=gpu"]
    runs = [
        [*sweep, "--runs-per-device", "4", "--cfg", "job", *slurm],
        [*sweep, "--runs-per-device", "4", "--devices", "0", *slurm],
        [*sweep, "--runs-per-device", "4", *slurm, "hydra.launcher.gpus_per_node=2"],
        [*sweep, "--runs-per-device", "auto", *slurm],
    ]
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(SLURM_SITE)!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", SLURM_CHECK, json.dumps(runs)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (status, out, err), *refused = json.loads(done.stdout)
    assert status == 0, err
    printed = yaml.safe_load(out[out.index("packing:") :])["packing"]
    assert printed["packs"] == [
        ["chemprot seed 1", "chemprot seed 2", "chemprot seed 3", "ncbi-disease seed 1"],
        ["ncbi-disease seed 2", "ncbi-disease seed 3"],
    ]
    assert printed["summary"] == (
        "6 (task, seed) runs in 2 packs of up to 4 per device (given); devices: each job's own "
        "GPU (SLURM); submitit_slurm: one SLURM job of one GPU per pack"
    )
    launcher = printed["hydra_launcher"]
    assert launcher["_target_"] == SLURM_LAUNCHER and launcher["partition"] == "gpu"
    assert (launcher["nodes"], launcher["tasks_per_node"], launcher["gpus_per_node"]) == (1, 1, 1)
    assert launcher["cpus_per_task"] == 4
    messages = [
        "--devices: on SLURM each pack job runs on its own allocation's GPU; leave --devices out",
        (
            "hydra.launcher.gpus_per_node=2: a pack job is one process on one GPU, so "
            "gpus_per_node is 1 with --runs-per-device"
        ),
        (
            "--runs-per-device auto on SLURM: give --device-memory-gb GB, the GPU memory of the "
            "partition's nodes (this host does not see the jobs' GPUs), or N"
        ),
    ]
    for (status, out, err), message in zip(refused, messages):
        assert (status, out, err) == (2, "", f"bio-roberta sweep: error: {message}\n")


def weights(record: dict) -> dict:
    return torch.load(record["checkpoint"]["path"], weights_only=False)["model"]


@pytest.mark.slow
def test_a_packed_sweep_gives_each_run_the_record_it_gets_alone(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    """4 runs (NER and classification x 2 seeds) one after another (one run per job, as without
    the options) and packed 3 per device on the CPU, each at one thread: the same test and dev
    scores, updates, predictions files and weights. The checkpoint files themselves differ in
    any two runs, packed or not: fairseq stores its wall-clock meters in them. A re-run, one run
    per job, of the packed runs keeps them all: packing is not in a run's config."""
    env = {**without_parse_dependencies, "OMP_NUM_THREADS": "1"}
    common = ["--tasks", "chemprot,ncbi-disease", "--seed-list", "1,2"]
    common += ["--pretrained", tiny_roberta_checkpoint, "--data-root", data_root, *TINY]
    alone, packed = tmp_path / "alone", tmp_path / "packed"
    run, log = bio_roberta(env, "sweep", "--results", alone, *common)
    assert run.returncode == 0, log[-3000:]
    run, log = bio_roberta(
        env, "sweep", "--results", packed, "--runs-per-device", "3", "--devices", "cpu", *common
    )
    assert run.returncode == 0, log[-3000:]
    assert (
        "bio-roberta sweep: one multirun of packs: 4 (task, seed) runs in 2 packs of up to 3 per "
        "device (given); devices: cpu; basic launcher: one pack at a time"
    ) in run.stderr
    (hydra_log,) = (packed / "hydra").glob("sweep-*.log")
    assert "pack of 3 runs on cpu (OMP_NUM_THREADS=1): chemprot seed 1, chemprot seed 2, " in (
        hydra_log.read_text()
    )
    assert sorted(line.split()[3] for line in run.stderr.splitlines() if ": started, " in line) == [
        f"{i}/4" for i in range(1, 5)
    ]
    one_by_one, together = records(alone), records(packed)
    assert set(one_by_one) == set(together) and len(together) == 4
    for run_key, record in one_by_one.items():
        other = together[run_key]
        assert record["status"] == other["status"] == "ok"
        for key in ("test_score", "valid_score", "num_updates", "test_examples", "config_hash"):
            assert record[key] == other[key], (run_key, key)
        assert record["predictions"]["sha256"] == other["predictions"]["sha256"]
        assert record["checkpoint"]["sha256"] != other["checkpoint"]["sha256"]
        mine, theirs = weights(record), weights(other)
        assert mine.keys() == theirs.keys()
        assert all(torch.equal(mine[name], theirs[name]) for name in mine), run_key
        assert Path(other["log"]).parent == packed.resolve() / run_key[0] / TINY_SETTING / (
            f"seed{run_key[1]}"
        )

    rerun, log = bio_roberta(env, "sweep", "--results", packed, *common)
    assert rerun.returncode == 0, log[-3000:]
    assert "4 run(s), 4 finished before" in log and ": started, " not in log, log[-2000:]
    assert records(packed) == together


@pytest.mark.slow
def test_kill_9_of_a_packed_sweep_ends_every_run(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    """kill -9 of `bio-roberta sweep --runs-per-device 2` once a run trains (the pack job runs in
    the command's own process): each run's process ends with it (the runs' processes:
    end_with_parent of the pack job, end_with_owner of the command), no record turns ok after, and
    the run dirs are free. (joblib's loky workers need two devices to run packs, so GPUs;
    test_sweep.py kills a joblib sweep, and the runs' processes end the same way under any
    launcher.)"""
    from bio_roberta.finetuning.results import grid_settings, run_dir
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.output_dir import output_lock

    results = tmp_path / "results"
    arguments = ["sweep", "--tasks", "chemprot", "--seed-list", "1,2", "--results", results]
    arguments += ["--runs-per-device", "2", "--devices", "cpu"]
    arguments += ["--pretrained", tiny_roberta_checkpoint, "--data-root", data_root, *TINY]
    sweep = subprocess.Popen(
        [str(Path(sys.executable).parent / "bio-roberta"), *map(str, arguments)],
        env=without_parse_dependencies,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tree = tree_once_a_run_started(sweep, results)
    # the two runs' processes (the Hydra app and its pack job run in the command's own process)
    assert len(tree) >= 2, tree
    kill_and_check_every_run_ends(sweep, tree, results)
    (setting,) = grid_settings(get_task("chemprot").hparams, hparams_grid(TINY)).values()
    for seed in (1, 2):
        with output_lock(run_dir(results, "chemprot", seed, None, setting)):
            pass


@pytest.mark.slow
def test_the_packing_benchmark_prints_both_routes_as_json():
    """scripts/benchmark_packing.py at its smallest on the CPU: two runs one per job and packed."""
    chemprot = REPO_ROOT / "sample" / "tasks" / "chemprot"
    done = subprocess.run(
        [sys.executable, REPO_ROOT / "scripts" / "benchmark_packing.py", "--task",
         f"chemprot={chemprot}", "--seeds", "2", "--updates", "2", "--max-epoch", "1",
         "--repeats", "1", "--runs-per-device", "2"],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    for route in ("one_per_job", "packed"):
        (run,) = report[route]["repeats"]
        assert run["runs"] == 2 and run["wall_seconds"] > run["median_run_seconds"] > 0
    assert report["packed"]["repeats"][0]["packing"].startswith(
        "2 (task, seed) runs in 1 packs of up to 2 per device (given); devices: cpu"
    )
    assert report["test_scores_equal"] is True
