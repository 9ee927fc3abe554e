"""How well a vocabulary fits biomedical text: entity break-out rate and corpus coverage.

Entity break-out rate (BioMegatron, Table 3): subword tokens / words over the entity mentions of
NER data; lower means entity names stay whole (BC5-chem: BERT-cased 3.01, PubMedBERT 1.65,
Bio-50k 1.48). Coverage over text: tokens per word, the fraction of words kept as one token, and
the <unk> rate after fairseq's dict.txt. Words are whitespace-separated; each is encoded with the
vocabulary's fairseq BPE as it appears after a space inside a sentence, so every kind is measured
the same way.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from bio_roberta_core.provenance import environment_record, file_record
from bio_roberta_core.tagging import tag_spans
from preprocess.bpe import load_dictionary, open_bpe
from preprocess.text_shards import iter_lines, text_files
from preprocess.vocab_dir import VocabularyDir, read_vocab_dir


class WordEncoder:
    """Subword tokens of one word under a vocabulary, cached per distinct word."""

    def __init__(self, vocab: VocabularyDir):
        self.kind = vocab.kind
        self.bpe = open_bpe(vocab)
        self.dictionary = load_dictionary(vocab)
        self.cache: dict[str, tuple[int, int]] = {}

    def pieces(self, word: str) -> tuple[int, int]:
        """(subword tokens, of which <unk> after dict.txt) for `word`."""
        cached = self.cache.get(word)
        if cached is None:
            # byte-level BPE keeps the leading space in the token, as mid-sentence ("Ġaspirin")
            encoded = self.bpe.encode(" " + word if self.kind == "gpt2" else word).split()
            unknown = sum(
                1 for unit in encoded if self.dictionary.index(unit) == self.dictionary.unk()
            )
            cached = self.cache[word] = (len(encoded), unknown)
        return cached


def word_statistics(encoder: WordEncoder, word_counts: Counter) -> dict[str, Any]:
    words = tokens = whole = unknown = 0
    for word, count in word_counts.items():
        pieces, unk = encoder.pieces(word)
        words += count
        tokens += pieces * count
        whole += count if pieces == 1 else 0
        unknown += unk * count
    return {
        "words": words,
        "distinct_words": len(word_counts),
        "tokens": tokens,
        "tokens_per_word": tokens / words if words else None,
        "words_kept_whole": whole / words if words else None,
        "unk_rate": unknown / tokens if tokens else None,
    }


@dataclass
class EntityWords:
    """The words of an NER data set: those inside entity mentions and all of them, with counts."""

    entity_words: Counter
    all_words: Counter
    sentences: int
    mentions: int
    inputs: list[dict[str, Any]]  # file records of the files they came from


def entity_words(
    sentences: Iterable[tuple[Sequence[str], Sequence[str]]], sources: Iterable[str | os.PathLike]
) -> EntityWords:
    """The EntityWords of (words, tags) sentences in any tagging scheme, read from `sources`."""
    found = EntityWords(Counter(), Counter(), 0, 0, [file_record(path) for path in sources])
    for words, tags in sentences:
        found.sentences += 1
        found.all_words.update(words)
        for _, first, last in tag_spans(tags):
            found.mentions += 1
            found.entity_words.update(words[first : last + 1])
    return found


def vocab_stats(
    vocab_dirs: Iterable[str | os.PathLike],
    ner: dict[str, EntityWords] | None = None,
    texts: Iterable[str | os.PathLike] = (),
    max_lines: int | None = None,
) -> dict[str, Any]:
    """Statistics of each vocabulary over NER data ({name: its EntityWords}) and text files."""
    ner = ner or {}
    text_paths = text_files(texts) if texts else []
    text_words: Counter = Counter()
    for line in iter_lines(text_paths, max_lines):
        text_words.update(line.split())
    results = {}
    for vocab_dir in vocab_dirs:
        encoder = WordEncoder(read_vocab_dir(vocab_dir))
        result: dict[str, Any] = {
            "kind": encoder.kind,
            "dict_size": len(encoder.dictionary),
            "ner": {},
        }
        for task, words in ner.items():
            entities = word_statistics(encoder, words.entity_words)
            result["ner"][task] = {
                "entity_breakout_rate": entities["tokens_per_word"],
                "mentions": words.mentions,
                "sentences": words.sentences,
                "entity_words": entities,
                "all_words": word_statistics(encoder, words.all_words),
            }
        if text_paths:
            result["text"] = word_statistics(encoder, text_words)
        results[str(vocab_dir)] = result
    return {
        "vocabularies": results,
        "inputs": {
            "ner": {task: words.inputs for task, words in ner.items()},
            "text": [file_record(p) for p in text_paths],
        },
        "options": {"max_lines": max_lines},
        **environment_record(),
    }
