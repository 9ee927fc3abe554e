"""Compare vocabularies on biomedical text: the entity break-out rate (#subword tokens / #words over
the entity mentions of BioBERT-format NER data, BioMegatron's Table 3 measure) and coverage of a
corpus (tokens per word, words kept whole, <unk> rate)."""

HELP = "entity break-out rate and corpus coverage of one or more vocabulary dirs"


def add_arguments(parser):
    parser.add_argument("--vocab", nargs="+", required=True, help="vocabulary dirs to compare")
    parser.add_argument(
        "--ner",
        nargs="*",
        default=[],
        metavar="TASK=DIR",
        help="registry NER task and its dir of train/devel/test.tsv, e.g. "
        "bc5cdr-chem=ner/BC5CDR-Chemical",
    )
    parser.add_argument(
        "--text", nargs="*", default=[], help="text-shard dirs (train.*) or text files"
    )
    parser.add_argument("--max-lines", type=int, help="use at most this many text lines")
    parser.add_argument("--out", help="write the statistics as JSON here")


def ner_entity_words(task: str, data_dir: str):
    """The EntityWords of every split of a registry NER task's BioBERT-format dir."""
    from pathlib import Path

    from bio_roberta.readers.formats import biobert_ner
    from bio_roberta.tasks.registry import get_task
    from preprocess.vocab_stats import entity_words

    splits = biobert_ner.read(get_task(task), Path(data_dir)).values()
    sentences = ((sentence.words, sentence.tags) for split in splits for sentence in split.examples)
    return entity_words(sentences, [path for split in splits for path in split.sources])


def run(args):
    from bio_roberta.errors import UsageError
    from bio_roberta_core.provenance import atomic_write_json
    from preprocess.vocab_stats import vocab_stats

    ner = {}
    for item in args.ner:
        task, sep, data_dir = item.partition("=")
        if not sep:
            raise UsageError(
                f"--ner {item!r}: expected TASK=DIR, e.g. "
                "bc5cdr-chem=../shared/data/ner/BC5CDR-Chemical"
            )
        ner[task] = data_dir
    if not ner and not args.text:
        raise UsageError("give --ner TASK=DIR and/or --text inputs to measure on")
    try:
        ner_words = {task: ner_entity_words(task, data_dir) for task, data_dir in ner.items()}
        stats = vocab_stats(args.vocab, ner_words, args.text, args.max_lines)
    except (KeyError, FileNotFoundError) as error:  # an unknown task (its str() is quoted)
        raise UsageError(str(error).strip("'\"")) from None
    if args.out:
        atomic_write_json(args.out, stats)
    for vocab, result in stats["vocabularies"].items():
        parts = [
            f"{task} break-out {r['entity_breakout_rate']:.3f} ({r['mentions']} mentions)"
            for task, r in result["ner"].items()
        ]
        if "text" in result:
            text = result["text"]
            parts.append(
                f"text {text['tokens_per_word']:.3f} tokens/word, {text['words_kept_whole']:.1%} "
                f"whole, unk {text['unk_rate']:.4%}"
            )
        print(
            f"vocab-stats {vocab} ({result['kind']}, {result['dict_size']} symbols): "
            + "; ".join(parts)
        )
    return 0
