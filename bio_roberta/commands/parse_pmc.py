"""Parse PubMed Central open-access articles (.nxml files, .tar.gz packages) into text shards:
title + abstract + body paragraphs per article, extracted with pubmed_parser. Articles that fail
are reported and skipped. See preprocess/text_shards.py for the output layout."""
HELP = "PMC open-access .nxml / .tar.gz -> sentence-per-line text shards"


def add_arguments(parser):
    from preprocess.text_shards import add_shard_arguments

    add_shard_arguments(parser)


def run(args):
    from preprocess.pmc import parse_pmc
    from preprocess.text_shards import run_parse_command

    return run_parse_command(args, parse_pmc)
