"""Median report of a fine-tuning sweep: per task the median test score over seeds with its
min-max spread beside the paper's Table 2, the summary rows (Seq. Lab., Classif., PubMed,
Clinical, All) and the failed runs, as report.md + report.csv, and scores.png of every seed."""

HELP = "median-over-seeds report (markdown, CSV, PNG) of a sweep's result records"


def add_arguments(parser):
    from bio_roberta.tasks.registry import DEFAULT_SEEDS

    parser.add_argument("results", help="results dir written by `bio-roberta sweep`")
    parser.add_argument(
        "--out", required=True, help="output dir for report.md, report.csv, scores.png"
    )
    parser.add_argument(
        "--expected-seeds",
        type=int,
        default=len(DEFAULT_SEEDS),
        help="seeds asked per task; medians over fewer are marked",
    )


def run(args):
    from bio_roberta.cli import UsageError
    from bio_roberta.report import ReportError, write_report

    if args.expected_seeds < 1:
        raise UsageError("--expected-seeds must be at least 1")
    try:
        paths = write_report(args.results, args.out, args.expected_seeds)
    except ReportError as error:
        raise UsageError(str(error)) from None
    for path in paths.values():
        print(path)
    return 0
