"""Re-score per-example test predictions against the release files: every predictions file of
PREDICTIONS (the JSON form of docs/task_dirs.md, one per dataset, keyed by the release's
example ids, as runs write them: the submission dir blurb-suite writes, or any dir of them) is
scored with the task's metric, the release read from --data as blurb-suite reads it
(<root>/<kind>/<name>_hf or <root>/<task>). Prints the record and writes it (--out, default
PREDICTIONS/rescore.json). An id not in the release's test split is an error naming the file
and line; test examples without a prediction are an error too unless --allow-missing, which scores
the others and counts them."""

HELP = "re-score a directory of per-example test predictions against the release files"


def add_arguments(parser):
    parser.add_argument("predictions", metavar="PREDICTIONS", help="dir of predictions files")
    parser.add_argument(
        "--data",
        required=True,
        help="data root of the release: <root>/<kind>/<name>_hf, <root>/<task>",
    )
    parser.add_argument(
        "--out", default=None, help="record file (default PREDICTIONS/rescore.json)"
    )
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="score the test examples predicted when some have no prediction (counted)",
    )


def run(args):
    import json

    from bio_roberta.blurb_run.rescore import rescore

    record = rescore(args.predictions, args.data, args.allow_missing, args.out)
    print(json.dumps(record["datasets"], indent=2))
    return 0
