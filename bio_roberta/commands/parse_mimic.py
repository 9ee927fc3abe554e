"""Parse MIMIC-III NOTEEVENTS.csv into text shards: one document per note (physician notes by
default), ISERROR=1 rows dropped, de-identification placeholders kept or replaced by type tokens.
See preprocess/mimic.py for the placeholder mapping and preprocess/text_shards.py for the layout."""

HELP = "MIMIC-III NOTEEVENTS.csv -> sentence-per-line text shards"


def add_arguments(parser):
    from bio_roberta.commands._parse_corpus import add_canary_arguments, add_shard_arguments
    from preprocess.mimic import DEFAULT_CATEGORIES, PLACEHOLDER_MODES

    add_shard_arguments(parser)
    parser.add_argument(
        "--category",
        action="append",
        dest="categories",
        metavar="CATEGORY",
        help=f"note CATEGORY to keep, compared stripped and case-insensitively; repeatable "
        f"(default: {', '.join(DEFAULT_CATEGORIES)})",
    )
    parser.add_argument(
        "--all-categories", action="store_true", help="keep notes of every category"
    )
    parser.add_argument(
        "--placeholders",
        choices=PLACEHOLDER_MODES,
        default="keep",
        help="keep [**...**] de-identification placeholders, or replace them by a type token",
    )
    add_canary_arguments(parser)


def run(args):
    from bio_roberta.commands._parse_corpus import canary_options, run_parse_command
    from bio_roberta.errors import UsageError
    from preprocess.mimic import DEFAULT_CATEGORIES, parse_mimic

    if args.all_categories and args.categories:
        raise UsageError("--category and --all-categories exclude each other")
    categories = None if args.all_categories else (args.categories or list(DEFAULT_CATEGORIES))
    return run_parse_command(
        args,
        parse_mimic,
        categories=categories,
        placeholders=args.placeholders,
        canaries=canary_options(args),
    )
