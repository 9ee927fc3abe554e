"""Learn a vocabulary dir (byte-level BPE by default; SentencePiece or fastBPE for ablations) over
text shards, or import an existing RoBERTa vocabulary (encoder.json, vocab.bpe, dict.txt) for
continual pretraining from a RoBERTa checkpoint."""

HELP = "learn a BPE vocabulary over text shards (or import RoBERTa's) into a vocabulary dir"


def add_arguments(parser):
    from preprocess.learn_vocab import LEARNERS

    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="TEXT",
        help="text-shard dirs (their train.* shards are used) or text files",
    )
    parser.add_argument("--out", required=True, help="vocabulary dir to write")
    parser.add_argument(
        "--kind",
        choices=tuple(LEARNERS),
        default="gpt2",
        help="gpt2 = GPT-2/RoBERTa byte-level BPE (fairseq --bpe gpt2)",
    )
    parser.add_argument(
        "--vocab-size", type=int, default=50_000, help="BPE units (gpt2: including the 256 bytes)"
    )
    parser.add_argument(
        "--min-frequency", type=int, default=2, help="gpt2/fastbpe: least pair count to merge"
    )
    parser.add_argument(
        "--max-lines", type=int, default=None, help="learn from the first N non-empty lines only"
    )
    parser.add_argument(
        "--sentencepiece-type",
        choices=("bpe", "unigram"),
        default="bpe",
        help="--kind sentencepiece: the SentencePiece model type",
    )
    parser.add_argument(
        "--character-coverage",
        type=float,
        default=0.9999,
        help="--kind sentencepiece: share of characters the model covers",
    )
    existing = parser.add_argument_group(
        "import an existing RoBERTa vocabulary instead of learning one"
    )
    existing.add_argument("--encoder-json", help="RoBERTa/GPT-2 encoder.json")
    existing.add_argument("--vocab-bpe", help="RoBERTa/GPT-2 vocab.bpe")
    existing.add_argument("--dict", dest="dict_txt", help="the checkpoint's dict.txt")
    existing.add_argument(
        "--checkpoint",
        help="the RoBERTa model.pt of that dict.txt: written to OUT/model.pt with "
        "its vocabulary rows padded as dict.txt is (for +recipe=continue_roberta)",
    )


def run(args):
    from bio_roberta.errors import UsageError
    from preprocess.learn_vocab import learn_vocabulary
    from preprocess.roberta_vocab import import_vocabulary

    imported = [args.encoder_json, args.vocab_bpe, args.dict_txt]
    if any(imported):
        if not all(imported) or args.inputs:
            raise UsageError(
                "importing needs --encoder-json, --vocab-bpe and --dict, and no TEXT inputs"
            )
        manifest = import_vocabulary(*imported, args.out, checkpoint=args.checkpoint)
    elif args.checkpoint:
        raise UsageError(
            "--checkpoint goes with --encoder-json, --vocab-bpe and --dict (importing RoBERTa)"
        )
    elif not args.inputs:
        raise UsageError(
            "give TEXT inputs to learn from, or --encoder-json/--vocab-bpe/--dict to import"
        )
    else:
        manifest = learn_vocabulary(
            args.kind,
            args.inputs,
            args.out,
            vocab_size=args.vocab_size,
            min_frequency=args.min_frequency,
            max_lines=args.max_lines,
            model_type=args.sentencepiece_type,
            character_coverage=args.character_coverage,
        )
    counts = manifest["counts"]
    print(
        f"learn-vocab: {manifest['kind']} vocabulary in {args.out}: {counts['bpe_units']} "
        f"BPE units, {manifest['dict_size']} dict.txt entries "
        f"({counts['padding_entries']} of them padding)"
        + (
            f", from {counts['lines']} lines / {counts['tokens']} tokens"
            if "lines" in counts
            else " (imported)"
        )
    )
    return 0
