"""Download the PubMed baseline/update files or the PMC open-access bulk packages into a directory:
resumes interrupted files (HTTP Range), verifies each (NCBI's NAME.md5, or the gzip stream where no
checksum is published), re-fetches a corrupt file and reports the files that still fail."""

HELP = "download PubMed baseline / PMC OA bulk packages with resume and verification"


def add_arguments(parser):
    from preprocess.download import SOURCES

    parser.add_argument(
        "source",
        choices=sorted(SOURCES),
        help="; ".join(f"{name}: {spec.expected}" for name, spec in sorted(SOURCES.items())),
    )
    parser.add_argument("--out", required=True, help="directory for the files and manifest.json")
    parser.add_argument(
        "--base-url", help="another listing to fetch from (a mirror) instead of NCBI's"
    )
    parser.add_argument("--match", help="only file names matching this regular expression")
    parser.add_argument("--limit", type=int, help="at most this many files (the first by name)")
    parser.add_argument("--retries", type=int, default=3, help="attempts per file")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds without data before retrying"
    )


def run(args):
    import urllib.error

    from bio_roberta.errors import UsageError
    from preprocess.download import DownloadError, download_source

    try:
        manifest = download_source(
            args.source,
            args.out,
            base_url=args.base_url,
            match=args.match,
            limit=args.limit,
            retries=args.retries,
            timeout=args.timeout,
        )
    except (DownloadError, urllib.error.URLError) as error:
        raise UsageError(f"cannot list {args.source}: {error}") from None
    counts = manifest["counts"]
    by_status = ", ".join(f"{status} {n}" for status, n in sorted(counts["by_status"].items()))
    print(
        f"download {args.source}: {counts['ok']} of {counts['listed']} files ok ({by_status}), "
        f"{counts['bytes']} bytes, {counts['failed']} failed -> {args.out}/manifest.json"
    )
    for failure in manifest["failures"]:
        print(f"  FAILED {failure['name']}: {failure['error']}")
    return 1 if counts["failed"] else 0
