"""Parse PubMed/MEDLINE baseline and update XML (.xml or .xml.gz) into text shards: title +
abstract per citation, later versions and <DeleteCitation> applied in file-name order.
Re-running reuses finished inputs; see preprocess/text_shards.py for the output layout."""

HELP = "PubMed baseline/update XML -> sentence-per-line text shards"


def add_arguments(parser):
    from bio_roberta.commands._parse_corpus import add_shard_arguments

    add_shard_arguments(parser)


def run(args):
    from bio_roberta.commands._parse_corpus import run_parse_command
    from preprocess.pubmed import parse_pubmed

    return run_parse_command(args, parse_pubmed)
