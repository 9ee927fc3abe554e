"""Encode text shards with a vocabulary dir and write fairseq mmap train/valid .bin/.idx, dict.txt
and manifest.json in one streaming multi-process pass (same result as multiprocessing_bpe_encoder +
fairseq-preprocess). One output dir per corpus (PM = PubMed + PMC text dirs, M3 = MIMIC-III);
fairseq reads several with ':' (one dir per epoch, round robin). The data-bin is built beside --out
and replaces it whole; text dirs whose parse did not finish are refused."""

HELP = "encode + binarize text shards into a fairseq data-bin dir"


def add_arguments(parser):
    parser.add_argument(
        "text_dirs",
        nargs="+",
        metavar="TEXT_DIR",
        help="text shards (train.*, valid.*) from parse-*; several dirs "
        "(PubMed, PMC) make one corpus",
    )
    parser.add_argument("--vocab", required=True, help="vocabulary dir from learn-vocab")
    parser.add_argument(
        "--out",
        required=True,
        help="data-bin dir to write: built beside it, then put in its place whole",
    )
    from preprocess.text_shards import usable_cores

    parser.add_argument("--workers", type=int, default=usable_cores(), help="worker processes")
    parser.add_argument(
        "--chunk-mb", type=int, default=64, help="largest byte range one worker encodes at once"
    )
    parser.add_argument(
        "--splits", nargs="+", default=["train", "valid"], help="shard name prefixes to binarize"
    )


def run(args):
    from preprocess.binarize import binarize

    manifest = binarize(
        args.text_dirs,
        args.vocab,
        args.out,
        workers=args.workers,
        chunk_bytes=args.chunk_mb << 20,
        splits=args.splits,
    )
    summary = ", ".join(
        f"{split}: {rec['sequences']} sequences / {rec['tokens']} tokens "
        f"({rec['unk_tokens']} <unk>)"
        for split, rec in manifest["splits"].items()
    )
    print(f"binarize: {args.out}: {summary}")
    return 0
