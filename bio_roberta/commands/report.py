"""Median report of a fine-tuning sweep for a suite: Lewis et al.'s (per task the median test
score over seeds with its min-max spread beside the paper's Table 2, the summary rows and the
failed runs: report.md + report.csv), BLURB's (per dataset beside Table 6's PubMedBERT and
BioBERT, and the BLURB score: report.md + blurb.csv) or both; scores.png of every seed. Several
results dirs: their models side by side, each beside its own paper column."""

HELP = "median-over-seeds report (markdown, CSV, PNG) of a sweep's result records"


def add_arguments(parser):
    from bio_roberta.blurb.suites import LEWIS, SUITES
    from bio_roberta.commands._blurb_options import add_score_any_split
    from bio_roberta.commands._task_files import add_task_file_argument

    parser.add_argument(
        "results",
        nargs="+",
        metavar="RESULTS",
        help="results dir written by `bio-roberta sweep`, or NAME=DIR naming its model; several: "
        "the models side by side, in this order, each beside its paper column (docs/finetune.md)",
    )
    parser.add_argument(
        "--out", required=True, help="output dir for report.md, report.csv/blurb.csv, scores.png"
    )
    parser.add_argument(
        "--suite",
        choices=SUITES,
        default=LEWIS,
        help="lewis: Lewis et al.'s Table 2 layout; blurb: BLURB's Table 6 and BLURB score; both",
    )
    parser.add_argument(
        "--expected-seeds",
        type=int,
        default=None,
        help="the first N of each task's seeds were asked (default: all of them); "
        "medians over fewer are marked",
    )
    add_score_any_split(parser)
    add_task_file_argument(parser)


def run(args):
    from bio_roberta.blurb.suites import LEWIS
    from bio_roberta.commands._task_files import declare_task_files
    from bio_roberta.errors import UsageError
    from bio_roberta.report import write_report

    if args.expected_seeds is not None and args.expected_seeds < 1:
        raise UsageError("--expected-seeds must be at least 1")
    if args.score_any_split and args.suite == LEWIS:
        raise UsageError(
            "--score-any-split scores BLURB's datasets: give --suite blurb or --suite both"
        )
    declare_task_files(args)
    paths = write_report(
        args.results, args.out, args.expected_seeds, args.suite, args.score_any_split
    )
    for path in paths.values():
        print(path)
    return 0
