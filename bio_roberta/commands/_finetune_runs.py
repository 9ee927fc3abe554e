"""What the finetune and sweep commands share: choosing registry tasks, checking the converted data
before any job starts, holding the run dirs, the Hydra command line of the sweep app
(bio_roberta/finetuning/sweep.py), running it in the command's own process with its runs shown as
they go, and the exit status with the failed runs listed."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, TextIO

from bio_roberta.errors import UsageError


def selected_tasks(names: str) -> list[str]:
    """Task names (the registry's, or declared by --task-file) from comma-separated names, a
    suite, or 'public' (lewis' public tasks)."""
    from bio_roberta.blurb.suites import LEWIS, SUITES, lewis_tasks, public_tasks, suite_tasks
    from bio_roberta.tasks.registry import task_names

    if names in ("all", "public"):
        return list(lewis_tasks() if names == "all" else public_tasks())
    if names in SUITES:
        try:
            return list(suite_tasks(names))
        except KeyError as error:
            raise UsageError(f"--tasks {names}: {error.args[0]}") from None
    tasks = [name.strip() for name in names.split(",") if name.strip()]
    known = task_names()
    unknown = [name for name in tasks if name not in known]
    if unknown or not tasks:
        raise UsageError(
            f"unknown task(s) {unknown}; known: {', '.join(known)}, or a suite: "
            f"{', '.join(SUITES)} ({LEWIS} = all), public, or a task of your own: "
            "--task-file FILE (docs/own_tasks.md)"
        )
    return tasks


@contextlib.contextmanager
def run_dirs_held(
    results: str, plan: list[tuple[list[str], list[int]]], grid: Optional[list[dict]] = None
) -> Iterator[None]:
    """Hold the lock of every run dir the plan's jobs write (results.run_dir of each task x seed x
    setting of the grid) for the whole command, so a second finetune or sweep writing one of them
    is refused at once, naming this one; the jobs write under it, in the command's process or in
    processes that end with it (processes.owning)."""
    from bio_roberta.finetuning.results import grid_settings, run_dir
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.output_dir import output_lock

    with contextlib.ExitStack() as held:
        for tasks, seeds in plan:
            for task in tasks:
                for setting in grid_settings(get_task(task).hparams, grid).values():
                    for seed in seeds:
                        held.enter_context(output_lock(run_dir(results, task, seed, None, setting)))
        yield


def add_console_options(parser) -> None:
    """--quiet, for scripts: the runs are not shown as they go, nor their table."""
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print no progress nor table of the runs, only errors and the failed runs "
        "(bio-roberta -v COMMAND shows the jobs' own output instead of writing it to a file)",
    )


@contextlib.contextmanager
def output_into(log: TextIO) -> Iterator[None]:
    """Everything written to this process' stdout and stderr during the block, by Python or by C
    code, and by every process started in it (a launcher's workers), goes to `log` instead."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    kept = [os.dup(1), os.dup(2)]
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield
    finally:
        for stream in (log, sys.stdout, sys.stderr):
            stream.flush()
        for fd, copy in zip((1, 2), kept):
            os.dup2(copy, fd)
            os.close(copy)


def console(stack: contextlib.ExitStack) -> TextIO:
    """A stream to this process' stderr as it is now, which output_into does not take away."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):  # not a file (tests capture it)
        return sys.stderr
    stream = open(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="backslashreplace")
    return stack.enter_context(stream)


@contextlib.contextmanager
def runs_shown(
    args, command: str, plan: list[tuple[list[str], list[int]]], grid: list[dict]
) -> Iterator[tuple[Callable[[list[str]], int], Callable[[str], None]]]:
    """(run, say): run(hydra_arguments(...)) runs the sweep's Hydra app in this process to its exit
    status, while each run of the plan x grid is shown on stderr as it starts, trains and ends
    (_run_progress.RunsConsole), then the table of them all; say(text) is a line of the command's
    own beside them. The app's own output (Hydra's lines, the jobs' logging, fairseq's while
    loading a model, a launcher's workers) goes to RESULTS/hydra/<command>-<time>.log, unless -v."""
    from bio_roberta.commands._run_progress import RunsConsole
    from bio_roberta.finetuning import sweep
    from bio_roberta.finetuning.results import planned_runs
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.processes import owning

    runs = [run for tasks, seeds in plan for run in planned_runs(args.results, tasks, seeds, grid)]
    with contextlib.ExitStack() as stack:
        shown = RunsConsole(
            f"bio-roberta {command}",
            runs,
            lambda task: get_task(task).metric,
            sys.stderr if args.verbose else console(stack),
            args.quiet,
        )
        output_path = None
        if not args.verbose:
            output_path = (
                Path(args.results) / "hydra" / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}.log"
            )
            output_path.parent.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(open(output_path, "a", encoding="utf-8", buffering=1))
            shown.say(f"Hydra's and its jobs' output: {output_path} (bio-roberta -v shows it)")

        def run(arguments: list[str]) -> int:
            # a launcher's workers end with this command (processes.owning, end_with_owner)
            output = contextlib.nullcontext() if output_path is None else output_into(handle)
            with output, owning():
                status = sweep.run_app(arguments)
            if status and output_path is not None:
                from bio_roberta.finetuning.in_process_train import tail

                print(
                    f"bio-roberta {command}: the Hydra run exited with status {status}: "
                    f"{tail(output_path, lines=1)} (all its output: {output_path})",
                    file=shown.out,
                    flush=True,
                )
            return status

        with shown:
            yield run, shown.say
        shown.print_table()


# --data-root of finetune and sweep
def add_run_arguments(parser) -> None:
    """What every fine-tuning run starts from and writes to (finetune, sweep)."""
    for flag, help in {
        "--pretrained": "fairseq checkpoint to fine-tune from",
        "--data-root": "the dir holding each task's converted data as <task>/, e.g. finetune-bin "
        "when convert-task wrote --out finetune-bin/<task>; not its parent",
        "--results": "results dir (records, logs, checkpoints)",
    }.items():
        parser.add_argument(flag, required=True, help=help)
    parser.add_argument(
        "--arch",
        default=None,
        help="fairseq architecture to fine-tune (default: the pretrained checkpoint's own)",
    )


def check_converted(data_root: str, tasks: list[str]) -> None:
    """Every task has its converted data (manifest.json) at data_root/<task>, or a one-line
    UsageError naming where it looked (and the dir below data_root that has it, if one does);
    a task file's task as its data was converted from it (as_converted), else the reason."""
    from bio_roberta.finetuning.converted_data import converted_manifest
    from bio_roberta.tasks.registry import get_task
    from bio_roberta.tasks.task_file import as_converted

    root = Path(data_root)
    for task in tasks:
        spec = get_task(task)
        fold = spec.run_folds[0]
        manifest = root / task / (f"fold{fold}" if fold is not None else "") / "manifest.json"
        if not manifest.is_file():
            below = sorted(p.parent.parent for p in root.glob(f"*/{task}/manifest.json"))
            hint = (
                f"; --data-root {below[0]} holds it" if below else "; run bio-roberta convert-task"
            )
            raise UsageError(
                f"no converted data for {task}: {manifest} not found (--data-root is the dir "
                f"holding <task>/, as convert-task --out DATA_ROOT/{task} wrote it){hint}"
            )
        as_converted(spec, converted_manifest(root / task, spec), manifest)


def command_overrides(args, tasks: list[str], seeds: list[int]) -> list[str]:
    """The Hydra overrides of the command's options for tasks x seeds."""
    return [
        f"task_name={','.join(tasks)}",
        f"seed={','.join(map(str, seeds))}",
        *model_overrides(args),
    ]


def model_overrides(args) -> list[str]:
    """The Hydra overrides of the command's model, data and results options; without --arch the
    job fine-tunes the pretrained checkpoint's own architecture."""
    return [
        f"pretrained={Path(args.pretrained).resolve()}",
        f"data_root={Path(args.data_root).resolve()}",
        f"results_dir={Path(args.results).resolve()}",
        *([f"arch={args.arch}"] if args.arch else []),
    ]


def hydra_arguments(args, tasks: list[str], seeds: list[int], multirun: bool) -> list[str]:
    """The Hydra command line of the sweep app (bio_roberta/finetuning/sweep.py) for tasks x seeds
    with the command's options and its further overrides."""
    return [
        *(["--multirun"] if multirun else []),
        *command_overrides(args, tasks, seeds),
        *args.overrides,
    ]


def one_job_override(override: str) -> str:
    """A Hydra sweep override (key=a,b) as its first value (key=a), so one job composes it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (parsed,) = OverridesParser.create().parse_overrides([override])
    if not parsed.is_sweep_override():
        return override
    return f"{parsed.get_key_element()}={next(parsed.sweep_string_iterator())}"


def hydra_message(error: Exception) -> str:
    """Hydra's error and its cause (which names the key) on one line."""
    lines = [str(error).strip().splitlines()[0].rstrip(".")]
    if error.__cause__ is not None and str(error.__cause__).strip():
        lines.append(str(error.__cause__).strip().splitlines()[0])
    return ": ".join(lines)


def composed_sweep_job(args, task: str, seed: int):
    """The SweepConfig Hydra composes for the job of task x seed from the command's options and
    overrides (a sweep override at its first value), without running it; an override Hydra
    refuses is a UsageError naming it, before any job starts (a failed multirun writes no log)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bio_roberta.finetuning.sweep import compose_config

    refused = (HydraException, OmegaConfBaseException)

    def compose(overrides: list[str]):
        return compose_config([*command_overrides(args, [task], [seed]), *overrides])

    try:
        overrides = [one_job_override(override) for override in args.overrides]
        return compose(overrides)
    except refused as error:
        for override in args.overrides:
            try:
                compose([one_job_override(override)])
            except refused as alone:
                raise UsageError(
                    f"Hydra override {override!r} does not apply: {hydra_message(alone)}"
                ) from None
        raise UsageError(f"the Hydra overrides do not compose: {hydra_message(error)}") from None


def exit_status(
    hydra_statuses: list[int],
    results: str,
    plan: list[tuple[list[str], list[int]]],
    grid: list[dict],
) -> int:
    """Non-zero when a Hydra run failed or any run of the plan ((tasks, seeds) groups) x grid (its
    hparams settings, bio_roberta.finetuning.sweep.hparams_grid) failed or is missing, after a
    summary on stderr naming each and its log."""
    from bio_roberta.finetuning.results import failed_runs

    failed = [line for tasks, seeds in plan for line in failed_runs(results, tasks, seeds, grid)]
    if failed:
        print(f"bio-roberta: {len(failed)} run(s) failed:", *failed, sep="\n  ", file=sys.stderr)
    return next((status for status in hydra_statuses if status), 1 if failed else 0)
