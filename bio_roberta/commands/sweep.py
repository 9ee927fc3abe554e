"""Fine-tune tasks x seeds from a pretrained checkpoint as a Hydra multirun (bio_roberta/configs/
finetune/sweep.yaml) and write one result record per run; finished runs are skipped on re-run,
failed runs are recorded as failed, listed on stderr and make the exit status 1. Extra arguments
are Hydra overrides, e.g. hparams.max_epoch=1 hydra/launcher=joblib hydra.launcher.n_jobs=2, or
hydra/launcher=submitit_slurm (extra `slurm`)."""

HELP = "fine-tune tasks x seeds (Hydra multirun) and write result records"


def add_arguments(parser):
    parser.add_argument(
        "--tasks", required=True, help="comma-separated registry task names, 'public' or 'all'"
    )
    parser.add_argument(
        "--seeds", type=int, default=5, help="how many of the registry's DEFAULT_SEEDS"
    )
    parser.add_argument(
        "--seed-list", default=None, help="comma-separated seeds instead of --seeds"
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
    from bio_roberta.tasks.registry import TASKS

    if names in ("all", "public"):
        return [name for name, spec in TASKS.items() if names == "all" or spec.public]
    tasks = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in tasks if name not in TASKS]
    if unknown or not tasks:
        raise UsageError(f"unknown task(s) {unknown}; known: {', '.join(TASKS)}")
    return tasks


def selected_seeds(args) -> list[int]:
    from bio_roberta.cli import UsageError
    from bio_roberta.tasks.registry import DEFAULT_SEEDS

    if args.seed_list:
        try:
            return [int(seed) for seed in args.seed_list.split(",")]
        except ValueError:
            raise UsageError(
                f"--seed-list {args.seed_list!r}: expected comma-separated integers"
            ) from None
    if not 1 <= args.seeds <= len(DEFAULT_SEEDS):
        raise UsageError(f"--seeds must be 1..{len(DEFAULT_SEEDS)} (or give --seed-list)")
    return list(DEFAULT_SEEDS[: args.seeds])


def check_pretrained(path: str) -> None:
    """The checkpoint to fine-tune from loads (cheaply: mmap), or a one-line UsageError."""
    from bio_roberta.cli import UsageError
    from bio_roberta_core.checkpoints import CheckpointError, read_checkpoint

    try:
        read_checkpoint(path, mmap=True)
    except CheckpointError as error:
        raise UsageError(f"--pretrained {error}") from None


def exit_status(hydra_status: int, results: str, tasks: list[str], seeds: list[int]) -> int:
    """Non-zero when any run of tasks x seeds failed, after a summary on stderr naming each and its
    log."""
    import sys

    from bio_roberta.finetune import failed_runs

    failed = failed_runs(results, tasks, seeds)
    if failed:
        print(f"bio-roberta: {len(failed)} run(s) failed:", *failed, sep="\n  ", file=sys.stderr)
    return hydra_status or (1 if failed else 0)


def run(args):
    import subprocess
    import sys
    from pathlib import Path

    from bio_roberta.cli import UsageError

    tasks, seeds = selected_tasks(args.tasks), selected_seeds(args)
    check_pretrained(args.pretrained)
    missing = [task for task in tasks if not (Path(args.data_root) / task).is_dir()]
    if missing:
        raise UsageError(
            f"no converted data for {missing} under {args.data_root}; run "
            "bio-roberta convert-task first"
        )
    command = [
        sys.executable,
        "-m",
        "bio_roberta.sweep",
        "--multirun",
        f"task_name={','.join(tasks)}",
        f"seed={','.join(map(str, seeds))}",
        f"pretrained={Path(args.pretrained).resolve()}",
        f"data_root={Path(args.data_root).resolve()}",
        f"results_dir={Path(args.results).resolve()}",
        *([f"arch={args.arch}"] if args.arch else []),
        *args.overrides,
    ]
    return exit_status(subprocess.run(command).returncode, args.results, tasks, seeds)
