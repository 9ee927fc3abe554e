"""Parse PubMed Central open-access articles (.nxml files, .tar.gz packages) into text shards:
title + abstract + body paragraphs per article, extracted with pubmed_parser. Articles that fail
are reported and skipped. See preprocess/text_shards.py for the output layout."""

HELP = "PMC open-access .nxml / .tar.gz -> sentence-per-line text shards"


def add_arguments(parser):
    from bio_roberta.commands._parse_corpus import add_shard_arguments
    from preprocess.pmc import DEFAULT_MAX_ARTICLE_MB

    add_shard_arguments(parser)
    parser.add_argument(
        "--max-article-mb",
        type=float,
        default=DEFAULT_MAX_ARTICLE_MB,
        help="skip (and report) an article larger than this; articles are parsed in memory",
    )


def run(args):
    from bio_roberta.commands._parse_corpus import run_parse_command
    from preprocess.pmc import parse_pmc

    return run_parse_command(args, parse_pmc, max_article_mb=args.max_article_mb)
