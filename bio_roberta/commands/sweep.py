"""Fine-tune tasks x seeds from a pretrained checkpoint as Hydra multiruns
(bio_roberta/configs/finetune/sweep.yaml; Hydra's basic launcher runs the jobs in this process,
another launcher from it) and write one result record per run; finished runs are skipped on
re-run, failed runs are recorded as failed, listed on stderr and make the exit status
1. Each task runs its own seeds (five; ten for BIOSSES, PubMedQA and BioASQ): tasks with the same
seed list share one multirun over task x seed, so no job runs a seed outside its task's list. A
grid of hparams (hparams.lr=1e-5,3e-5) multiplies the jobs; each setting has its own run dirs.
Extra arguments are Hydra overrides, e.g. hparams.max_epoch=1 hydra/launcher=joblib
hydra.launcher.n_jobs=2, or hydra/launcher=submitit_slurm (extra `slurm`); each is composed
before any job starts (one that does not apply is one line naming it), and `--cfg job` prints the
composed job configs instead of running them. Shown on stderr: each run as it starts (run i/N),
its updates with an ETA, its dev and test score and log as it ends (failed: its error and log),
then a table of every run (--quiet: none of it); the Hydra runs' own output goes to
RESULTS/hydra/sweep-<time>.log (bio-roberta -v sweep: to the console)."""

from bio_roberta.commands._finetune_runs import (
    add_console_options,
    add_run_arguments,
    check_converted,
    composed_sweep_job,
    exit_status,
    hydra_arguments,
    run_dirs_held,
    runs_shown,
    selected_tasks,
)
from bio_roberta.commands._packing import add_packing_arguments
from bio_roberta.commands._task_files import add_task_file_argument, declare_task_files
from bio_roberta.errors import UsageError

HELP = "fine-tune tasks x seeds (Hydra multirun) and write result records"


def add_arguments(parser):
    parser.add_argument(
        "--tasks",
        required=True,
        help="comma-separated registry task names, or a suite: 'lewis' (Lewis et al.'s 18; "
        "'all' is the same), 'public' (lewis' public tasks), 'blurb' or 'both'; names of "
        "--task-file tasks too",
    )
    add_task_file_argument(parser)
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="run the first N of each task's seeds (default: all of them)",
    )
    parser.add_argument(
        "--seed-list", default=None, help="comma-separated seeds for every task, instead of --seeds"
    )
    add_run_arguments(parser)
    parser.add_argument(
        "--cfg",
        choices=["job"],
        default=None,
        help="print each task's job config as Hydra composes it, with the task's hyperparameters "
        "resolved from the registry, and run nothing",
    )
    add_packing_arguments(parser)
    add_console_options(parser)
    parser.add_argument("overrides", nargs="*", help="further Hydra overrides (key=value)")


def seed_plan(args, tasks: list[str]) -> list[tuple[list[str], list[int]]]:
    """(tasks, seeds) groups, one multirun each: tasks sharing a seed list, in first-seen order.

    --seed-list gives every task the same seeds; else each task runs the first --seeds of its
    TaskSpec.seeds (all of them by default)."""
    from bio_roberta.tasks.registry import get_task

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
            f"{t} has {len(get_task(t).seeds)}"
            for t in tasks
            if len(get_task(t).seeds) < args.seeds
        ]
        if args.seeds < 1 or too_few:
            raise UsageError(
                f"--seeds {args.seeds}: must be at least 1 and at most each task's seed count "
                f"({'; '.join(too_few) or 'none above'}); or give --seed-list"
            )
    groups: dict[tuple[int, ...], list[str]] = {}
    for task in tasks:
        groups.setdefault(get_task(task).seeds[: args.seeds], []).append(task)
    return [(names, list(seeds)) for seeds, names in groups.items()]


def job_config_yaml(job, seeds: list[int]) -> str:
    """A job's config as YAML, as Hydra's --cfg job prints it, plus the hyperparameters its runs
    train with (the registry's, with the non-null hparams overrides applied)."""
    import dataclasses

    from omegaconf import OmegaConf

    from bio_roberta.finetuning.command_line import hyperparameters
    from bio_roberta.tasks.registry import get_task

    resolved = dataclasses.asdict(hyperparameters(get_task(job.task_name), job.hparams))
    return (
        f"# {job.task_name}: seeds {','.join(map(str, seeds))} (below: the first seed, and "
        "the first value of a sweep override)\n"
        + OmegaConf.to_yaml(OmegaConf.structured(job))
        + "# the hyperparameters the runs train with (registry, then hparams)\n"
        + OmegaConf.to_yaml({"resolved_hparams": resolved})
    )


def run(args):
    from omegaconf import OmegaConf

    from bio_roberta.commands._packing import first_pack_job, pack_arguments, plan_packing
    from bio_roberta.finetuning.pretrained_model import check_pretrained
    from bio_roberta.finetuning.sweep import hparams_grid
    from bio_roberta_core.output_dir import output_lock

    declare_task_files(args)
    tasks = selected_tasks(args.tasks)
    plan = seed_plan(args, tasks)
    jobs = [
        (composed_sweep_job(args, task, seeds[0]), seeds) for group, seeds in plan for task in group
    ]
    grid = hparams_grid(args.overrides)  # each setting of a grid: its own run dirs
    # None: one run per job, in the job's process
    packing = plan_packing(args, plan, grid, jobs[0][0])
    pack_job = packing and first_pack_job(args, packing)  # refused now if it does not compose
    if args.cfg:
        print(*(job_config_yaml(job, seeds) for job, seeds in jobs), sep="\n", end="")
        if packing:
            print(packing.as_yaml(OmegaConf.to_container(pack_job.hydra.launcher)), end="")
        return 0
    check_converted(args.data_root, tasks)
    check_pretrained(args.pretrained, args.data_root, tasks, args.arch)
    statuses = []
    # one sweep per results dir, and no other command writing one of its run dirs
    with (
        output_lock(args.results),
        run_dirs_held(args.results, plan, grid),
        runs_shown(args, "sweep", plan, grid) as (run_hydra, say),
    ):
        if packing:
            say(
                f"one multirun of packs: {packing.summary()}"
                + (f" x {len(grid)} hparams settings" if len(grid) > 1 else "")
            )
            statuses.append(run_hydra(pack_arguments(args, packing)))
        else:
            for number, (group, seeds) in enumerate(plan, 1):
                say(
                    f"multirun {number}/{len(plan)}: {', '.join(group)} x "
                    f"seeds {','.join(map(str, seeds))}"
                    + (f" x {len(grid)} hparams settings" if len(grid) > 1 else "")
                    + f" ({len(group) * len(seeds) * len(grid)} jobs)"
                )
                statuses.append(run_hydra(hydra_arguments(args, group, seeds, multirun=True)))
    return exit_status(statuses, args.results, plan, grid)
