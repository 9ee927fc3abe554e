"""Fine-tune one task with one seed (every fold for cross-validation tasks) from a pretrained
checkpoint and write its result record(s): a single Hydra run of
bio_roberta/configs/finetune/sweep.yaml in this process, so extra arguments are the same Hydra
overrides as for `bio-roberta sweep`. Shown on stderr: each run as it starts, its updates with an
ETA, its dev and test score and log as it ends, then a table of the runs (--quiet: none of it); the
Hydra run's own output goes to RESULTS/hydra/finetune-<time>.log (bio-roberta -v finetune: to the
console). Exit status 1 when a run failed."""

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
from bio_roberta.commands._task_files import add_task_file_argument, declare_task_files
from bio_roberta.errors import UsageError

HELP = "fine-tune one task x seed and write its result record(s)"


def add_arguments(parser):
    parser.add_argument(
        "--task", required=True, help="registry task name, or the name of a --task-file's task"
    )
    add_task_file_argument(parser)
    parser.add_argument(
        "--seed", type=int, default=None, help="default: the first of the task's seeds"
    )
    add_run_arguments(parser)
    add_console_options(parser)
    parser.add_argument("overrides", nargs="*", help="further Hydra overrides (key=value)")


def run(args):
    from bio_roberta.finetuning.pretrained_model import check_pretrained
    from bio_roberta.finetuning.sweep import hparams_grid
    from bio_roberta.tasks.registry import get_task

    declare_task_files(args)
    tasks = selected_tasks(args.task)
    if len(tasks) != 1:
        raise UsageError(f"--task {args.task}: one task; `bio-roberta sweep --tasks` runs several")
    seeds = [get_task(tasks[0]).seeds[0] if args.seed is None else args.seed]
    composed_sweep_job(args, tasks[0], seeds[0])  # an override that does not apply: one line, now
    check_converted(args.data_root, tasks)
    grid = hparams_grid(args.overrides)
    check_pretrained(args.pretrained, args.data_root, tasks, args.arch)
    plan = [(tasks, seeds)]
    with (
        run_dirs_held(args.results, plan, grid),  # the run dirs are this command's
        runs_shown(args, "finetune", plan, grid) as (run_hydra, _),
    ):
        status = run_hydra(hydra_arguments(args, tasks, seeds, multirun=False))
    return exit_status([status], args.results, plan, grid)
