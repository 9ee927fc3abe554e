"""Fine-tune tasks x seeds from a pretrained checkpoint as Hydra multiruns (bio_roberta/configs/
finetune/sweep.yaml) and write one result record per run; finished runs are skipped on re-run,
failed runs are recorded as failed, listed on stderr and make the exit status 1. Each task runs
its own seeds (TaskSpec.seeds, ten for BIOSSES, PubMedQA and BioASQ): tasks with the same seed
list share one multirun over task x seed, so no job runs a seed outside its task's list. Extra
arguments are Hydra overrides, e.g. hparams.max_epoch=1 hydra/launcher=joblib
hydra.launcher.n_jobs=2, or hydra/launcher=submitit_slurm (extra `slurm`)."""

HELP = "fine-tune tasks x seeds (Hydra multirun) and write result records"


def add_arguments(parser):
    parser.add_argument(
        "--tasks",
        required=True,
        help="comma-separated registry task names, or a suite: 'lewis' (Lewis et al.'s 18; "
        "'all' is the same), 'public' (lewis' public tasks), 'blurb' or 'both'",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="the first N of each task's seeds (default: all of them, TaskSpec.seeds)",
    )
    parser.add_argument(
        "--seed-list", default=None, help="comma-separated seeds for every task, instead of --seeds"
    )
    parser.add_argument("--pretrained", required=True, help="fairseq checkpoint to fine-tune from")
    parser.add_argument("--data-root", required=True, help="dir holding finetune-bin/<task>/")
    parser.add_argument("--results", required=True, help="results dir (records, logs, checkpoints)")
    parser.add_argument(
        "--arch",
        default=None,
        help="fairseq architecture to fine-tune (default: the pretrained checkpoint's own)",
    )
    parser.add_argument("overrides", nargs="*", help="further Hydra overrides (key=value)")


def selected_tasks(names: str) -> list[str]:
    from bio_roberta.cli import UsageError
    from bio_roberta.suites import LEWIS, SUITES, lewis_tasks, suite_tasks
    from bio_roberta.tasks.registry import TASKS

    if names in ("all", "public"):
        return [name for name in lewis_tasks() if names == "all" or TASKS[name].public]
    if names in SUITES:
        try:
            return list(suite_tasks(names))
        except KeyError as error:
            raise UsageError(f"--tasks {names}: {error.args[0]}") from None
    tasks = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in tasks if name not in TASKS]
    if unknown or not tasks:
        raise UsageError(
            f"unknown task(s) {unknown}; known: {', '.join(TASKS)}, or a suite: "
            f"{', '.join(SUITES)} ({LEWIS} = all), public"
        )
    return tasks


def seed_plan(args, tasks: list[str]) -> list[tuple[list[str], list[int]]]:
    """(tasks, seeds) groups, one multirun each: tasks sharing a seed list, in first-seen order.

    --seed-list gives every task the same seeds; else each task runs the first --seeds of its
    TaskSpec.seeds (all of them by default)."""
    from bio_roberta.cli import UsageError
    from bio_roberta.tasks.registry import TASKS

    if args.seed_list:
        try:
            seeds = [int(seed) for seed in args.seed_list.split(",")]
        except ValueError:
            raise UsageError(
                f"--seed-list {args.seed_list!r}: expected comma-separated integers"
            ) from None
        return [(list(tasks), seeds)]
    if args.seeds is not None:
        too_few = [
            f"{t} has {len(TASKS[t].seeds)}" for t in tasks if len(TASKS[t].seeds) < args.seeds
        ]
        if args.seeds < 1 or too_few:
            raise UsageError(
                f"--seeds {args.seeds}: must be at least 1 and at most each task's seed count "
                f"({'; '.join(too_few) or 'none above'}); or give --seed-list"
            )
    groups: dict[tuple[int, ...], list[str]] = {}
    for task in tasks:
        groups.setdefault(TASKS[task].seeds[: args.seeds], []).append(task)
    return [(names, list(seeds)) for seeds, names in groups.items()]


def check_pretrained(path: str) -> None:
    """The checkpoint to fine-tune from loads (cheaply: mmap) and its weights are finite, or a
    one-line UsageError."""
    from bio_roberta.cli import UsageError
    from bio_roberta_core.checkpoints import CheckpointError, check_finite_weights, read_checkpoint

    try:
        check_finite_weights(path, read_checkpoint(path, mmap=True).get("model") or {})
    except CheckpointError as error:
        raise UsageError(f"--pretrained {error}") from None


def exit_status(
    hydra_statuses: list[int], results: str, plan: list[tuple[list[str], list[int]]]
) -> int:
    """Non-zero when a multirun failed or any run of the plan failed or is missing, after a summary
    on stderr naming each and its log."""
    import sys

    from bio_roberta.finetune import failed_runs

    failed = [line for tasks, seeds in plan for line in failed_runs(results, tasks, seeds)]
    if failed:
        print(f"bio-roberta: {len(failed)} run(s) failed:", *failed, sep="\n  ", file=sys.stderr)
    return next((status for status in hydra_statuses if status), 1 if failed else 0)


def run(args):
    import subprocess
    import sys
    from pathlib import Path

    from bio_roberta.cli import UsageError
    from bio_roberta_core.processes import end_with_parent

    tasks = selected_tasks(args.tasks)
    plan = seed_plan(args, tasks)
    check_pretrained(args.pretrained)
    missing = [task for task in tasks if not (Path(args.data_root) / task).is_dir()]
    if missing:
        raise UsageError(
            f"no converted data for {missing} under {args.data_root}; run "
            "bio-roberta convert-task first"
        )
    statuses = []
    for number, (group, seeds) in enumerate(plan, 1):
        print(
            f"bio-roberta sweep: multirun {number}/{len(plan)}: {', '.join(group)} x seeds "
            f"{','.join(map(str, seeds))} ({len(group) * len(seeds)} jobs)",
            file=sys.stderr,
            flush=True,
        )
        command = [
            sys.executable,
            "-m",
            "bio_roberta.sweep",
            "--multirun",
            f"task_name={','.join(group)}",
            f"seed={','.join(map(str, seeds))}",
            f"pretrained={Path(args.pretrained).resolve()}",
            f"data_root={Path(args.data_root).resolve()}",
            f"results_dir={Path(args.results).resolve()}",
            *([f"arch={args.arch}"] if args.arch else []),
            *args.overrides,
        ]
        # killed, the sweep takes its Hydra job and that job's fairseq-train with it
        statuses.append(subprocess.run(command, preexec_fn=end_with_parent).returncode)
    return exit_status(statuses, args.results, plan)
