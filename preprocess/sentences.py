"""Sentence splitting for the text shards: blingfire, chosen by measurement.

Measured on the real PubMed abstracts in ../shared/data/corpus/pubmed (424 AbstractText
sections, 299,014 characters; one core, Python 3.11):

splitter          speed       sentences   proxies of wrong splits on the real abstracts
blingfire 0.1.8   18.0 MB/s   1,932       0 breaks after an abbreviation / before lowercase
syntok 1.4.4      1.35 MB/s   1,959       1 ("Orius sp. (Hemiptera..." split)
pysbd 0.3.4       0.21 MB/s   1,977       28 ("An. || coluzzii", "Geocoris sp. ||", "l-Carnitine"
                                          after a lowercase start...)

blingfire and syntok disagree on 32 of the 424 sections. Read by hand, both make mistakes:
blingfire does not split before a sentence that starts with a digit ("were included. 28.06% of
patients..."), syntok keeps two sentences together elsewhere and splits inside parentheses
("...respectively; | P<0.05)."). On hand-written biomedical cases (e.g., i.v., Fig. 2, et al.,
p < 0.05, vs., E. coli, i.e., No. 3, q.d., approx.) blingfire and syntok split none of the
abbreviations; blingfire misses two real boundaries ("mmol/L. Dr. Jones", "45.2 yrs. Patients"),
pysbd splits "Figs. | 3". With quality on par with syntok, blingfire is 13x faster (the corpus is
~90 GB of text) and is already a dependency, so it is the splitter; pysbd and syntok are not
dependencies.

Sentences never cross paragraph boundaries (title, abstract section, body paragraph, note block):
callers split each paragraph separately. Whitespace (including Unicode line separators) is
collapsed first, so a sentence is always exactly one non-empty line; a sentence longer than
MAX_LINE_CHARACTERS becomes several lines (bounded_lines), counted by the parse.
"""

from __future__ import annotations

import ctypes
import re
from typing import Iterator

import blingfire

SPLITTER = "blingfire"
# The longest line a shard holds. fairseq's masked LM (sample_break_mode complete,
# tokens_per_sample 512) drops a line longer than a sample with only an "invalid sizes" warning,
# and a note or document without a sentence boundary is one line (36M tokens once in MIMIC-III).
# Even at 2 characters per BPE token (numbers, lab tables) 1000 characters fit in 512 tokens.
MAX_LINE_CHARACTERS = 1000


# Texts longer than this are collapsed and split into sentences a chunk at a time
# (whitespace_chunks).
CHUNK_CHARACTERS = 1 << 20
WHITESPACE = re.compile(r"\s")  # on str: what str.isspace() holds, as str.split() splits on


def whitespace_chunks(text: str, chunk: int = CHUNK_CHARACTERS) -> Iterator[str]:
    """`text` in consecutive slices of about `chunk` characters, each but the last ending where a
    whitespace starts, so no word is cut. A paragraph of tens of MB happens (a data dump): whole,
    str.split() holds a list of every word (about 10x the text) and blingfire about 30x."""
    start = 0
    while start < len(text):
        boundary = WHITESPACE.search(text, start + chunk)
        end = boundary.start() if boundary else len(text)
        yield text[start:end]
        start = end


def normalize_whitespace(text: str, chunk: int = CHUNK_CHARACTERS) -> str:
    """Collapse every run of whitespace (newlines, tabs, U+2028...) to one space and strip."""
    if len(text) <= chunk:
        return " ".join(text.split())
    return " ".join(
        filter(None, (" ".join(part.split()) for part in whitespace_chunks(text, chunk)))
    )


class _Blingfire:
    """blingfire's TextToSentences with one output buffer reused across calls (per process; not
    for threads).

    blingfire.text_to_sentences allocates (and zero-fills) a fresh 2x-input buffer per call, a
    third of its time on abstract-sized paragraphs; the C call and so the sentences are the same.
    Paragraphs are split one by one: blingfire joined on a separator lets context cross it.
    """

    def __init__(self):
        self.output = ctypes.create_string_buffer(1 << 16)

    def __call__(self, text: str) -> str:
        data = text.encode("utf-8")
        if 2 * len(data) + 1 > len(self.output):
            self.output = ctypes.create_string_buffer(2 * len(data) + 1)
        length = blingfire.blingfire.TextToSentences(data, len(data), self.output, len(self.output))
        if length <= 0 or length > len(
            self.output
        ):  # an error: blingfire.text_to_sentences gives ''
            return ""
        return ctypes.string_at(self.output, length - 1).decode(
            "utf-8"
        )  # length counts the final NUL


_text_to_sentences = _Blingfire()


def split_sentences(paragraph: str, chunk: int = CHUNK_CHARACTERS) -> list[str]:
    """The sentences of one paragraph, each a non-empty single line. A paragraph over `chunk`
    characters is split a chunk at a time (whitespace_chunks): a sentence running across a chunk's
    end is cut there, at most one extra break per chunk."""
    text = normalize_whitespace(paragraph, chunk)
    return [
        sentence
        for part in whitespace_chunks(text, chunk)
        for sentence in (s.strip() for s in _text_to_sentences(part).split("\n"))
        if sentence
    ]


def bounded_lines(sentence: str, limit: int = MAX_LINE_CHARACTERS) -> list[str]:
    """The sentence as lines of at most `limit` characters, each cut at the last space before the
    limit (mid-word only in a word longer than the limit).

    It walks offsets into the sentence rather than slicing off its rest at each cut: a paragraph of
    tens of MB without a sentence end is one such sentence, and re-copying its rest per line made
    the parse quadratic in its size."""
    lines = []
    start, end = 0, len(sentence)
    while end - start > limit:
        cut = sentence.rfind(" ", start + 1, start + limit + 1)
        cut = cut if cut > start else start + limit
        lines.append(sentence[start:cut].rstrip())
        start = cut
        while start < end and sentence[start].isspace():
            start += 1
    return lines + [sentence[start:]] if start < end else lines
