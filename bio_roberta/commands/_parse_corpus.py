"""What the parse-pubmed, parse-pmc, parse-mimic and parse-text commands share: their options, and
running a corpus parser with its one-line summary and the problems it met on stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

from preprocess.text_shards import MANIFEST, ShardOptions


def summary_line(manifest: dict[str, Any]) -> str:
    """The one-line account printed at the end of a parse command."""
    counts = manifest["counts"]
    written = counts["documents_written"]
    skipped = counts["documents_skipped"]
    reasons = ", ".join(f"{reason} {n}" for reason, n in skipped.items()) or "none"
    other = "".join(f", {name} {n}" for name, n in counts.get("other", {}).items())
    return (
        f"{manifest['source']}: {counts['inputs']} inputs ({counts['inputs_failed']} failed), "
        f"documents read {counts['documents_read']}, written {sum(written.values())} "
        f"(train {written['train']}, valid {written['valid']}), skipped {sum(skipped.values())} "
        f"({reasons}), sentences {sum(counts['sentences'].values())}, problems "
        f"{counts['problems']}, shards {len(manifest['shards'])}{other}"
    )


def problems_report(
    manifest: dict[str, Any], out_dir: str | os.PathLike, max_listed: int = 20
) -> str:
    """The problems of a run, for stderr: file and position of each (the first `max_listed`)."""
    problems, counts = manifest["problems"], manifest["counts"]
    lines = [
        (
            f"{len(problems)} problem{'s' * (len(problems) != 1)} in {counts['inputs']} inputs "
            f"({counts['inputs_failed']} not read to their end), all listed in "
            f"{Path(out_dir) / MANIFEST}:"
        )
    ]
    lines += [f"  {p['file']}: {p['position']}: {p['reason']}" for p in problems[:max_listed]]
    if len(problems) > max_listed:
        lines.append(f"  ... and {len(problems) - max_listed} more")
    return "\n".join(lines)


def add_shard_arguments(parser) -> None:
    """The command-line options common to every corpus parser."""
    from bio_roberta.commands._arguments import add_field_options

    defaults = ShardOptions()
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="input files or directories")
    parser.add_argument(
        "--out", required=True, help="output directory for the text shards and manifest.json"
    )
    add_field_options(
        parser,
        defaults,
        {
            "--shard-size-mb": "close a shard before it exceeds this size",
            "--valid-fraction": "fraction of documents (by hash of their id) in the valid split",
        },
    )
    parser.add_argument("--no-dedup", action="store_true", help="keep exact-duplicate documents")
    add_field_options(parser, defaults, {"--workers": "processes parsing inputs in parallel"})
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="exit 0 even when some inputs or records could not be read (a large crawl with a few "
        "bad files); they are listed on stderr and in manifest.json either way, and without "
        "this option the command exits 1",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into an --out dir that holds text shards of another source or other options, "
        "or other files (refused otherwise)",
    )


def add_canary_arguments(parser) -> None:
    """--canaries and its options (parse-mimic, parse-text): secrets for `bio-roberta audit`."""
    from preprocess.canaries import CANARY_FILE, DEFAULT_REPEATS

    parser.add_argument(
        "--canaries",
        type=int,
        metavar="N",
        help="insert N synthetic secret records (canaries) into the training documents, for "
        f"`bio-roberta audit` to measure memorisation; their secrets go to {CANARY_FILE} beside "
        "manifest.json, never into a shard",
    )
    parser.add_argument(
        "--canary-repeats",
        default=",".join(map(str, DEFAULT_REPEATS)),
        metavar="R1,R2,...",
        help="how many training documents each canary is inserted into, canary i getting the "
        "i-th count (cycling)",
    )
    parser.add_argument(
        "--canary-seed", type=int, default=0, help="the seed the canaries and their places follow"
    )


def canary_options(args):
    """The CanaryOptions of --canaries (None without it)."""
    from preprocess.canaries import CanaryOptions, parse_repeats

    if args.canaries is None:
        return None
    return CanaryOptions(args.canaries, parse_repeats(args.canary_repeats), args.canary_seed)


def run_parse_command(args, parse: Callable[..., dict[str, Any]], **parse_options) -> int:
    """Run a corpus parser from parsed command-line arguments and print its one-line summary; any
    problem is listed on stderr and makes the exit status 1, unless --allow-partial."""
    from bio_roberta.errors import UsageError

    try:
        options = ShardOptions(
            shard_size_mb=args.shard_size_mb,
            valid_fraction=args.valid_fraction,
            dedup=not args.no_dedup,
            workers=args.workers,
        )
        manifest = parse(args.inputs, args.out, options, overwrite=args.overwrite, **parse_options)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(str(error)) from error
    if not manifest["inputs"]:
        raise UsageError(f"no input files found in {' '.join(args.inputs)}")
    print(summary_line(manifest))
    if not manifest["problems"]:
        return 0
    prefix = f"bio-roberta {args.command}: {'warning' if args.allow_partial else 'error'}: "
    print(prefix + problems_report(manifest, args.out), file=sys.stderr)
    if args.allow_partial:
        return 0
    print(
        "The shards hold what could be read. Fix or replace those inputs and re-run (parsed "
        "inputs are reused), or re-run with --allow-partial to accept them.",
        file=sys.stderr,
    )
    return 1
