"""How a sweep packs its runs, several fine-tuning runs on one device at once: `bio-roberta
sweep --runs-per-device N|auto [--devices 0,1]`.

A BLURB-sized run (a few thousand examples, batch 16-32) keeps a large GPU mostly idle; a tuned
BLURB protocol is ~780 of them. So the sweep packs its runs: the Hydra job's unit becomes a pack
of up to N (task, seed) runs of one hparams setting (a grid still multiplies the jobs), formed
task by task in the sweep's order, so a pack mostly holds seeds of one task, which take about the
same time (a pack lasts as long as its longest run).

The pack jobs themselves, and each run's own process, are bio_roberta.finetuning.packing's.

Devices. Local launchers (basic, joblib): the pack job claims (flock) one of `devices` no other
pack of the sweep holds, under RESULTS/hydra/devices/; the command runs one pack per device at a
time (joblib, n_jobs = the number of devices; the basic launcher for one device). SLURM
(submitit_slurm): each pack job is a SLURM job of one GPU, and its runs share that allocation.

N. Given, or `auto`: the device's memory (the smallest free memory of the local GPUs, the host's
available memory on CPU, or --device-memory-gb) over the estimated peak of the sweep's largest run
(`run_bytes`: the model's parameters with gradients and Adam state, and the activations of a batch
of the task's batch size at its longest training example, from bio_roberta.pretraining.batch_plan's
pretraining estimate, plus each process' own fixed cost).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from bio_roberta.commands._device_memory import (
    GIB,
    available_host_bytes,
    checked_gpus,
    default_devices,
    longest_example,
    run_bytes,
    runs_that_fit,
)
from bio_roberta.commands._finetune_runs import model_overrides, one_job_override
from bio_roberta.errors import UsageError
from bio_roberta.finetuning.packing import CPU
from bio_roberta.pretraining.batch_plan import (
    MEMORY_SHARE,
    checkpoint_shape,
    model_shape,
)
from preprocess.text_shards import usable_cores

AUTO = "auto"
# Hydra launchers (hydra.launcher._target_) a packed sweep runs under
BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
JOBLIB_LAUNCHER = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
SLURM_LAUNCHER = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
# a device as CUDA_VISIBLE_DEVICES names it: an index, or a GPU / MIG UUID
DEVICE_ID = re.compile(r"^(\d+|(GPU|MIG)-[0-9A-Za-z/-]+)$")


def add_packing_arguments(parser) -> None:
    """--runs-per-device, --devices and --device-memory-gb (sweep, blurb-suite)."""
    parser.add_argument(
        "--runs-per-device",
        metavar="N|auto",
        default=None,
        help="fine-tune N runs at once on each device, each in a process of its own; 'auto': as "
        "many as the estimated memory of the sweep's largest run fits (default: one run per job, "
        "in the job's process; docs/cost.md, 'Several runs per device')",
    )
    parser.add_argument(
        "--devices",
        metavar="LIST",
        default=None,
        help="the devices packs run on: comma-separated CUDA ids (0,1) or 'cpu' (default: "
        "$CUDA_VISIBLE_DEVICES, else every GPU torch sees, else cpu; on SLURM each pack job's "
        "own GPU)",
    )
    parser.add_argument(
        "--device-memory-gb",
        metavar="GB",
        type=float,
        default=None,
        help="plan --runs-per-device auto for devices of this memory (default: the devices' free "
        "memory; needed on SLURM, whose GPUs this host does not see)",
    )


def runs_per_device_option(text: Optional[str]) -> Optional[int | str]:
    """--runs-per-device as given: None (not given), a count of at least 1, or AUTO."""
    if text is None or text == AUTO:
        return text
    if not re.fullmatch(r"\d+", text.strip()) or int(text) < 1:
        raise UsageError(
            f"--runs-per-device {text!r}: expected a whole number of at least 1, or auto"
        )
    return int(text)


def devices_option(text: Optional[str]) -> Optional[list[str]]:
    """--devices as given: None (not given), ['cpu'], or distinct CUDA device ids."""
    if text is None:
        return None
    devices = [device.strip() for device in text.split(",")]
    if devices == [CPU]:
        return devices
    bad = [device for device in devices if not DEVICE_ID.match(device)]
    if bad or len(set(devices)) != len(devices):
        why = f"not a device: {', '.join(map(repr, bad))}" if bad else "a device named twice"
        if CPU in devices:
            why = "cpu is a device list of its own"
        raise UsageError(
            f"--devices {text!r}: {why}; expected comma-separated CUDA device ids as "
            "CUDA_VISIBLE_DEVICES names them (0,1 or GPU-<uuid>), or cpu"
        )
    return devices


@dataclasses.dataclass(frozen=True)
class Packing:
    """How a sweep packs its runs: N and why, the devices (None: each job's own, SLURM), the
    packs of (task, seed) runs, and the Hydra overrides of its multirun besides the command's
    model options and the user's overrides."""

    runs_per_device: int
    why: str
    devices: Optional[list[str]]
    packs: list[list[tuple[str, int]]]
    launcher: str
    overrides: list[str]

    def summary(self) -> str:
        """One line: runs, packs, N and why, devices, launcher."""
        runs = sum(map(len, self.packs))
        where = "each job's own GPU (SLURM)" if self.devices is None else ",".join(self.devices)
        return (
            f"{runs} (task, seed) runs in {len(self.packs)} packs of up to "
            f"{self.runs_per_device} per device ({self.why}); devices: {where}; {self.launcher}"
        )

    def as_yaml(self, launcher_config: dict) -> str:
        """The packs and the launcher config their jobs get, for --cfg job."""
        from omegaconf import OmegaConf

        return "# the packs (each a Hydra job per hparams setting) and their launcher\n" + (
            OmegaConf.to_yaml(
                {
                    "packing": {
                        "summary": self.summary(),
                        "packs": [[f"{task} seed {seed}" for task, seed in p] for p in self.packs],
                        "hydra_launcher": launcher_config,
                    }
                }
            )
        )


def plan_packing(
    args, plan: list[tuple[list[str], list[int]]], grid: list[dict], job
) -> Optional[Packing]:
    """The packing of a sweep (plan: its (tasks, seeds) groups, grid: its hparams settings, job:
    the composed SweepConfig of its first job), or None for one run per job as without the
    options: --runs-per-device 1 (or auto finding 1 on one default device) without --devices."""
    asked = runs_per_device_option(args.runs_per_device)
    given = devices_option(args.devices)
    if args.device_memory_gb is not None and (asked != AUTO or args.device_memory_gb <= 0):
        raise UsageError(
            f"--device-memory-gb {args.device_memory_gb:g}: plans --runs-per-device auto, "
            "with a memory above 0"
        )
    if given is None and asked in (None, 1):
        return None
    user = [one_job_override(override) for override in args.overrides]
    target = composed(user).hydra.launcher._target_
    if target not in (BASIC_LAUNCHER, JOBLIB_LAUNCHER, SLURM_LAUNCHER):
        raise UsageError(
            f"--runs-per-device runs packs under Hydra's basic, joblib or submitit_slurm "
            f"launcher, not {target}"
        )
    if target == SLURM_LAUNCHER and given is not None:
        raise UsageError(
            "--devices: on SLURM each pack job runs on its own allocation's GPU; leave --devices "
            "out"
        )
    devices = None if target == SLURM_LAUNCHER else given or default_devices()
    free = checked_gpus(devices) if devices and devices != [CPU] else None
    runs = [(task, seed) for tasks, seeds in plan for task in tasks for seed in seeds]
    if asked == AUTO:
        runs_per_device, why = auto_runs_per_device(args, plan, grid, job, devices, free)
        if runs_per_device > len(runs):
            runs_per_device, why = len(runs), f"{why}; the sweep has {len(runs)} runs"
        if runs_per_device == 1 and given is None and (devices is None or len(devices) == 1):
            return None
    else:
        runs_per_device = asked or 1
        why = "given" if asked else "one run per device: --devices without --runs-per-device"
    packs = [
        runs[start : start + runs_per_device] for start in range(0, len(runs), runs_per_device)
    ]
    launcher, launcher_overrides = launcher_route(target, args.overrides, devices, runs_per_device)
    overrides = [
        "pack=" + ",".join(pack_value(pack) for pack in packs),
        *([f"devices=[{','.join(repr(device) for device in devices)}]"] if devices else []),
        "hydra.sweep.subdir=${hydra.job.num}_pack",
        *launcher_overrides,
    ]
    return Packing(runs_per_device, why, devices, packs, launcher, overrides)


def pack_value(pack: list[tuple[str, int]]) -> str:
    """A pack as the value of the `pack` override: [{task_name:'a',seed:1},...] (names quoted, so
    one that looks like a number stays a name)."""
    return "[" + ",".join(f"{{task_name:'{task}',seed:{seed}}}" for task, seed in pack) + "]"


def composed(overrides: list[str]):
    """The sweep's config with its `hydra` node for these (one job's) overrides; a one-line
    UsageError for overrides Hydra refuses."""
    from bio_roberta.finetuning.sweep import composed_config, hydra_errors_as_usage

    with hydra_errors_as_usage(overrides):
        return composed_config(overrides, return_hydra_config=True)


def first_pack_job(args, packing: Packing):
    """The config (with `hydra`, its launcher) the first pack job of the sweep gets."""
    return composed([one_job_override(override) for override in pack_arguments(args, packing)[1:]])


def pack_arguments(args, packing: Packing) -> list[str]:
    """The Hydra command line of the sweep's multirun of packs (bio_roberta.finetuning.sweep's
    app, which the command runs in its own process)."""
    return ["--multirun", *model_overrides(args), *packing.overrides, *args.overrides]


def launcher_route(
    target: str, overrides: list[str], devices: Optional[list[str]], runs_per_device: int
) -> tuple[str, list[str]]:
    """(the launcher in words, its overrides) running one pack per device at a time: joblib with
    n_jobs = devices (chosen for the basic launcher when there are several devices); on SLURM a
    job of one node, one task and one GPU per pack, and a CPU per run unless cpus_per_task is
    given. A user's launcher value that breaks this is a UsageError."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = {
        override.key_or_group: override.value()
        for override in OverridesParser.create().parse_overrides(list(overrides))
    }
    if target == SLURM_LAUNCHER:
        route, launcher = [], "hydra.launcher."
        for key, value in (("nodes", 1), ("tasks_per_node", 1), ("gpus_per_node", 1)):
            if given.get(launcher + key, value) != value:
                raise UsageError(
                    f"{launcher}{key}={given[launcher + key]}: a pack job is one process on one "
                    f"GPU, so {key} is {value} with --runs-per-device"
                )
            # a GPU asked for otherwise (gres=gpu:1, gpus_per_task=1) is not asked for twice
            if key != "gpus_per_node" or not {f"{launcher}gres", f"{launcher}gpus_per_task"} & set(
                given
            ):
                route.append(f"{launcher}{key}={value}")
        if not {f"{launcher}cpus_per_task", f"{launcher}cpus_per_gpu"} & set(given):
            route.append(f"{launcher}cpus_per_task={runs_per_device}")
        return "submitit_slurm: one SLURM job of one GPU per pack", route
    count = len(devices)
    if target == BASIC_LAUNCHER and count == 1:
        return "basic launcher: one pack at a time", []
    jobs = given.get("hydra.launcher.n_jobs")
    if target == JOBLIB_LAUNCHER and jobs is not None and jobs != count:
        raise UsageError(
            f"hydra.launcher.n_jobs={jobs}: with --runs-per-device joblib runs one pack per "
            f"device at a time, n_jobs {count} for {count} device(s); leave n_jobs out"
        )
    route = [] if target == JOBLIB_LAUNCHER else ["hydra/launcher=joblib"]
    return f"joblib: one pack per device at a time (n_jobs={count})", [
        *route,
        f"hydra.launcher.n_jobs={count}",
    ]


def auto_runs_per_device(
    args,
    plan: list[tuple[list[str], list[int]]],
    grid: list[dict],
    job,
    devices: Optional[list[str]],
    free: Optional[list[int]],
) -> tuple[int, str]:
    """(N, why) for --runs-per-device auto: the device's memory (free: each GPU's free bytes)
    over the largest run's estimate (run_bytes) of the sweep's tasks x hparams settings; on the
    CPU at most one run per core."""
    import torch

    from bio_roberta.finetuning.command_line import hyperparameters
    from bio_roberta.finetuning.converted_data import task_data_dir
    from bio_roberta.finetuning.sweep_config import HparamsOverrides
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.checkpoints import model_option, read_checkpoint

    gpu = devices != [CPU]
    if args.device_memory_gb is not None:
        device_bytes, of = args.device_memory_gb * GIB, f"{args.device_memory_gb:g} GiB given"
    elif devices is None:
        raise UsageError(
            "--runs-per-device auto on SLURM: give --device-memory-gb GB, the GPU memory of the "
            "partition's nodes (this host does not see the jobs' GPUs), or N"
        )
    elif not gpu:
        device_bytes, of = available_host_bytes(), "the host's available memory"
    else:
        device_bytes = min(free)
        of = "the least free memory of the GPUs"
    state = read_checkpoint(args.pretrained, mmap=True)
    shape = model_shape({"_name": args.arch}) if args.arch else checkpoint_shape(state)
    parameters = sum(t.numel() for t in state["model"].values() if isinstance(t, torch.Tensor))
    positions = model_option(state)("max_positions")
    largest, name = 0.0, None
    for tasks, _ in plan:
        for task in tasks:
            spec = get_task(task)
            data = [task_data_dir(args.data_root, spec, fold) for fold in spec.run_folds]
            longest = min(positions, max(map(longest_example, data)))
            for setting in grid:
                batch = hyperparameters(spec, HparamsOverrides(**setting)).batch_size
                estimate = run_bytes(shape, parameters, longest, batch, job.fp16, gpu)
                if estimate > largest:
                    largest, name = estimate, f"{task}, batch {batch} x {longest} tokens"
    fit = runs_that_fit(largest, device_bytes)
    why = (
        f"auto: {MEMORY_SHARE:.0%} of {device_bytes / GIB:.1f} GiB ({of}) over about "
        f"{largest / GIB:.2f} GiB for the largest run ({name})"
    )
    if not gpu and fit > usable_cores():
        fit, why = usable_cores(), f"{why}; at most one run per CPU core ({usable_cores()})"
    return fit, why
