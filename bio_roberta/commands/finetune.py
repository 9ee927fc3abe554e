"""Fine-tune one task with one seed (every fold for cross-validation tasks) from a pretrained
checkpoint and write its result record(s): a single Hydra run of bio_roberta/configs/finetune/
sweep.yaml, so extra arguments are the same Hydra overrides as for `bio-roberta sweep`. Exit
status 1 when a run failed."""

HELP = "fine-tune one task x seed and write its result record(s)"


def add_arguments(parser):
    parser.add_argument("--task", required=True, help="registry task name")
    parser.add_argument(
        "--seed", type=int, default=None, help="default: the registry's first DEFAULT_SEEDS"
    )
    parser.add_argument("--pretrained", required=True, help="fairseq checkpoint to fine-tune from")
    parser.add_argument("--data-root", required=True, help="dir holding finetune-bin/<task>/")
    parser.add_argument("--results", required=True, help="results dir (records, logs, checkpoints)")
    parser.add_argument(
        "--arch", default="roberta_base", help="architecture of the pretrained checkpoint"
    )
    parser.add_argument("overrides", nargs="*", help="further Hydra overrides (key=value)")


def run(args):
    import subprocess
    import sys
    from pathlib import Path

    from bio_roberta.cli import UsageError
    from bio_roberta.commands.sweep import check_pretrained, exit_status, selected_tasks
    from bio_roberta.tasks.registry import DEFAULT_SEEDS

    (task,) = selected_tasks(args.task)
    check_pretrained(args.pretrained)
    if not (Path(args.data_root) / task).is_dir():
        raise UsageError(
            f"no converted data {Path(args.data_root) / task}; run bio-roberta convert-task first"
        )
    seed = DEFAULT_SEEDS[0] if args.seed is None else args.seed
    command = [
        sys.executable,
        "-m",
        "bio_roberta.sweep",
        f"task_name={task}",
        f"seed={seed}",
        f"pretrained={Path(args.pretrained).resolve()}",
        f"data_root={Path(args.data_root).resolve()}",
        f"results_dir={Path(args.results).resolve()}",
        f"arch={args.arch}",
        *args.overrides,
    ]
    return exit_status(subprocess.run(command).returncode, args.results, [task], [seed])
