"""benchmark_preprocess.py's input: the real PubMed baseline citations replicated into gzipped
XML files, each copy's PMIDs shifted and its text varied (TextVariation), sized by its text."""

from __future__ import annotations

import gzip
import math
import random
from pathlib import Path

XML_HEADER = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD '
    b'PubMedArticle, 1st January 2019//EN" '
    b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_190101.dtd">\n<PubmedArticleSet>\n'
)
XML_FOOTER = b"</PubmedArticleSet>\n"
TEXT_PATHS = (
    "MedlineCitation/Article/ArticleTitle",
    "MedlineCitation/Article/Abstract/AbstractText",
)


def citation_text_bytes(article) -> int:
    """UTF-8 bytes of a citation's title + abstract as the parsers collapse them; 0 without
    abstract."""
    title, *sections = (
        [" ".join("".join(node.itertext()).split()) for node in article.iterfind(path)]
        for path in TEXT_PATHS
    )
    sections = [section for section in sections[0] if section]
    return len(" ".join(title + sections).encode("utf-8")) if sections else 0


class TextVariation:
    """Shuffles and splices the words of text segments (see the module doc), seeded per copy."""

    def __init__(self, lexicon: list[str], splice_rate: float):
        self.lexicon, self.splice_rate = lexicon, splice_rate
        self.rng = random.Random(0)

    def _word(self, word: str) -> str:
        if len(word) < 6 or not word.isalpha() or self.rng.random() >= self.splice_rate:
            return word
        other = self.rng.choice(self.lexicon)
        return (
            word[: self.rng.randint(3, len(word) - 2)]
            + other[self.rng.randint(2, len(other) - 3) :]
        )

    def segment(self, text: str | None) -> str | None:
        words = (text or "").split()
        if len(words) < 3:
            return text
        interior = words[1:-1]
        self.rng.shuffle(interior)
        varied = " ".join(map(self._word, [words[0], *interior, words[-1]]))
        return (" " if text[0].isspace() else "") + varied + (" " if text[-1].isspace() else "")

    def citation(self, article, copy: int) -> None:
        self.rng.seed(copy * 10**9 + int(article.findtext("MedlineCitation/PMID")))
        for path in TEXT_PATHS:
            for element in article.iterfind(path):
                for node in element.iter():
                    node.text = self.segment(node.text)
                    if node is not element:
                        node.tail = self.segment(node.tail)


def synthesise_input(
    source: Path, out: Path, text_mb: float, files: int, splice_rate: float
) -> dict:
    """Replicated, PMID-shifted and text-varied real PubMed citations, `files` equal files (see
    module doc)."""
    from copy import deepcopy

    from lxml import etree

    originals = sorted(source.glob("*.xml.gz"))
    articles, seen = [], set()
    for path in originals:
        for article in etree.fromstring(gzip.decompress(path.read_bytes())).iterfind(
            "PubmedArticle"
        ):
            pmid = int(article.findtext("MedlineCitation/PMID"))
            if pmid not in seen:
                seen.add(pmid)
                articles.append(article)
    lexicon = sorted(
        {
            word
            for article in articles
            for path in TEXT_PATHS
            for element in article.iterfind(path)
            for word in "".join(element.itertext()).split()
            if len(word) >= 6 and word.isalpha()
        }
    )
    copies = math.ceil(text_mb * 2**20 / sum(map(citation_text_bytes, articles)))
    per_file = math.ceil(copies * len(articles) / files)
    variation = TextVariation(lexicon, splice_rate)
    out.mkdir(parents=True, exist_ok=True)
    text_bytes = xml_bytes = with_abstract = 0
    words: set[str] = set()
    handle = None
    for number in range(copies * len(articles)):
        copy, article = divmod(number, len(articles))
        if number % per_file == 0:
            if handle is not None:
                handle.write(XML_FOOTER)
                handle.close()
            name = f"pubmed90n{number // per_file + 1:04d}.xml.gz"
            handle = gzip.GzipFile(out / name, "wb", compresslevel=6, mtime=0)
            handle.write(XML_HEADER)
            xml_bytes += len(XML_HEADER) + len(XML_FOOTER)
        citation = deepcopy(articles[article])
        pmid = citation.find("MedlineCitation/PMID")
        pmid.text = str(int(pmid.text) + copy * 10**8)
        if copy:
            variation.citation(citation, copy)
        size = citation_text_bytes(citation)
        if size:
            with_abstract += 1
            text_bytes += size
            words.update(
                word
                for path in TEXT_PATHS
                for element in citation.iterfind(path)
                for word in "".join(element.itertext()).split()
            )
        citation.tail = "\n"
        data = etree.tostring(citation, encoding="utf-8")
        handle.write(data)
        xml_bytes += len(data)
    handle.write(XML_FOOTER)
    handle.close()
    return {
        "source": f"{source}/*.xml.gz",
        "source_files": len(originals),
        "source_citations": len(articles),
        "copies": copies,
        "files": files,
        "citations": copies * len(articles),
        "citations_per_file": per_file,
        "citations_with_abstract": with_abstract,
        "text_mb": round(text_bytes / 2**20, 2),
        "xml_mb": round(xml_bytes / 2**20, 1),
        "distinct_words": len(words),
        "splice_rate": splice_rate,
    }
