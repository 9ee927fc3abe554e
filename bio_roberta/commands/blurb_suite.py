"""BLURB's whole suite in one command: given a BLURB data root (LinkBERT's release,
<root>/tokcls/<name>_hf and <root>/seqcls/<name>_hf, or one folder per registry task), convert
every dataset found into <work>/finetune-bin, sweep them with BLURB's seeds into <work>/results,
and write <work>/report (Table 6's layout, the BLURB score) and <work>/leaderboard.json (per-dataset
results as BLURB's leaderboard lists them). Re-running resumes: converted datasets and finished
runs are kept. Missing datasets are named and make the score partial. A dataset whose split is not
BLURB's, or could not be checked, is left out of the score unless --score-any-split (then the
report and leaderboard.json say the score is not comparable with Table 6, naming each such
dataset). --tune runs BLURB's grid of learning rates and batch sizes (each setting in its own
run dirs) and scores per dataset the setting with the best dev score (untuned: the registry's
setting alone); --tune-epochs adds BLURB's epochs axis (each run otherwise keeps the best-dev
checkpoint of one fixed-length schedule, which the report's protocol line says).
--runs-per-device and --devices pack the sweep's runs onto devices as `bio-roberta sweep` does.
Extra arguments are Hydra overrides for the sweep (one of a grid's keys replaces that axis). The
sweep shows each run as it goes and ends with their table (--quiet: not).
"""

HELP = "convert, sweep and report BLURB's 13 datasets from one data root (resumable)"


def add_arguments(parser):
    from bio_roberta.commands._blurb_options import add_score_any_split
    from bio_roberta.commands._finetune_runs import add_console_options
    from bio_roberta.commands._packing import add_packing_arguments

    parser.add_argument(
        "--data", required=True, help="BLURB data root: LinkBERT's release, or <root>/<task>/"
    )
    parser.add_argument("--vocab", required=True, help="the model's vocabulary dir")
    parser.add_argument("--pretrained", required=True, help="fairseq checkpoint to fine-tune from")
    parser.add_argument(
        "--work", required=True, help="dir for finetune-bin/, results/, report/, leaderboard.json"
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="run the first N of each dataset's BLURB seeds"
    )
    parser.add_argument(
        "--max-positions",
        type=int,
        default=None,
        help="model positions incl. <s> and </s>, at most the pretrained model's (default: each "
        "task's, 512; GAD 128)",
    )
    parser.add_argument("--arch", default=None, help="fairseq architecture to fine-tune")
    add_score_any_split(parser)
    parser.add_argument(
        "--tune",
        action="store_true",
        help="BLURB's protocol: run its grid (lr x batch size) and score, per dataset, the "
        "setting with the best dev score aggregated over seeds",
    )
    parser.add_argument(
        "--tune-epochs",
        type=tune_epochs,
        default=None,
        metavar="E,E,...",
        help="with --tune, epochs as a further axis of the grid (BLURB tunes them over 2-60, Gu "
        "et al. §6.2); without it each run keeps the best-dev checkpoint of its one schedule",
    )
    add_packing_arguments(parser)
    add_console_options(parser)
    parser.add_argument("overrides", nargs="*", help="further Hydra overrides (key=value)")


def tune_epochs(text: str) -> tuple[int, ...]:
    """--tune-epochs: comma-separated epoch counts within BLURB's range (BLURB_EPOCHS)."""
    import argparse

    from bio_roberta.tasks.spec import BLURB_EPOCHS

    low, high = BLURB_EPOCHS
    try:
        epochs = tuple(int(value) for value in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers") from None
    if not epochs or any(not low <= e <= high for e in epochs) or len(set(epochs)) < len(epochs):
        raise argparse.ArgumentTypeError(
            f"{text!r}: distinct epoch counts within BLURB's {low}-{high} (Gu et al. §6.2)"
        )
    return epochs


def run(args):
    from bio_roberta.blurb_run.run import run_suite
    from bio_roberta.commands._packing import devices_option, runs_per_device_option
    from bio_roberta.errors import UsageError
    from bio_roberta_core.output_dir import output_lock

    if args.tune_epochs and not args.tune:
        raise UsageError("--tune-epochs adds an axis to BLURB's grid: give --tune with it")
    runs_per_device_option(args.runs_per_device)  # refused before any conversion
    devices_option(args.devices)
    with output_lock(args.work):  # one suite per work dir, from conversion to report
        return run_suite(args)
