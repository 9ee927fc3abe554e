"""PubMed/MEDLINE baseline and update files (.xml or .xml.gz, <PubmedArticleSet>) -> text shards.

A document is one citation: its ArticleTitle, then each AbstractText section in order (a
structured abstract's sections become separate paragraphs; their labels are not kept), id = PMID.
Citations without abstract text are skipped (counted as `no_abstract`) but still count as the
latest version of their PMID. Update files revise citations (a later record of a PMID replaces
the earlier one) and delete them (<DeleteCitation>); see preprocess/text_shards.py for the
resolution across files, which are processed in file-name order. PubmedBookArticle records are
counted as `book_record` and skipped.

Files are streamed with lxml.etree.iterparse and every record is cleared once read, so memory
does not grow with the size or number of files. Gzip is detected from the file's magic bytes,
not its name. A truncated gzip stream or malformed XML (including invalid UTF-8) ends that file
with a problem naming the compressed byte or the line and column; every complete record before
it is kept (GzipStream) and the other files are processed.
"""

from __future__ import annotations

import os
import zlib
from typing import Any, Iterator, Sequence

from lxml import etree

from preprocess.gzip_stream import open_maybe_gzip
from preprocess.input_log import InputLog
from preprocess.parse_stage import build_text_shards
from preprocess.text_shards import Deletion, Document, Record, ShardOptions, expand_inputs

SOURCE = "pubmed"
INPUT_PATTERNS = ("*.xml", "*.xml.gz")


def _text(element) -> str:
    """The element's text with whitespace collapsed; most have no inline markup, so no itertext."""
    if element is None:
        return ""
    text = element.text if len(element) == 0 else "".join(element.itertext())
    return " ".join(text.split()) if text else ""


def _citation_document(article, record_number: int, log: InputLog) -> Document | None:
    citation = article.find("MedlineCitation")
    pmid = citation.find("PMID") if citation is not None else None
    if pmid is None or not (pmid.text or "").strip():
        log.skip("no_pmid")
        log.problem(
            f"record {record_number}", "PubmedArticle without MedlineCitation/PMID: skipped"
        )
        return None
    version_text = pmid.get("Version", "1")
    version = int(version_text) if version_text.isdigit() else 1
    sections = [
        text for text in map(_text, citation.iterfind("Article/Abstract/AbstractText")) if text
    ]
    if not sections:
        return Document(pmid.text.strip(), (), version, skip_reason="no_abstract")
    title = _text(citation.find("Article/ArticleTitle"))
    return Document(pmid.text.strip(), tuple([title] + sections if title else sections), version)


def iter_pubmed_records(path: str | os.PathLike, log: InputLog | None = None) -> Iterator[Record]:
    """Documents and deletions of one PubMed XML file, in file order."""
    log = log if log is not None else InputLog(str(path))
    raw, stream = open_maybe_gzip(path)
    record_number = 0
    with raw:
        try:
            events = etree.iterparse(
                stream,
                events=("end",),
                tag=("PubmedArticle", "PubmedBookArticle", "DeleteCitation"),
                resolve_entities=False,
                no_network=True,
                huge_tree=True,
            )
            for _, element in events:
                record_number += 1
                if element.tag == "PubmedArticle":
                    document = _citation_document(element, record_number, log)
                    if document is not None:
                        yield document
                elif element.tag == "DeleteCitation":
                    for pmid in element.iterfind("PMID"):
                        if (pmid.text or "").strip():
                            yield Deletion(pmid.text.strip())
                else:
                    log.skip("book_record")
                element.clear(keep_tail=True)
                while element.getprevious() is not None:
                    del element.getparent()[0]
        except etree.XMLSyntaxError as error:
            line, column = error.position
            log.problem(
                f"line {line}, column {column} (after record {record_number})",
                f"malformed XML: {error.msg}",
                fatal=True,
            )
        except (EOFError, zlib.error) as error:
            log.problem(
                f"compressed byte {raw.tell()} (after record {record_number})",
                f"corrupt gzip stream: {error}",
                fatal=True,
            )


def parse_pubmed(
    inputs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    options: ShardOptions = ShardOptions(),
    overwrite: bool = False,
) -> dict[str, Any]:
    """PubMed files (or directories of them) -> text shards in `out_dir`; returns the manifest."""
    return build_text_shards(
        SOURCE,
        iter_pubmed_records,
        expand_inputs(inputs, INPUT_PATTERNS),
        out_dir,
        options,
        overwrite=overwrite,
    )
