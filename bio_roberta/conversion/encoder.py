"""Encode a task's source examples with the model's vocabulary: rows of token and label ids
for bio_roberta/conversion/finetune_bin.py to binarise, and for `bio-roberta predict`.

Words keep their identity through BPE: a word is encoded with a leading space except at the start
of its sentence (as RoBERTa encodes running text), its first subword carries the word's tag and
the others carry <pad>. A sentence longer than the model's positions is cut at word boundaries
into consecutive examples sharing one id, so every word still gets exactly one prediction; a
continuation keeps its words' in-sentence encoding (its first word keeps the leading space).

With --long-inputs windows (bio_roberta/tasks/truncation.py), a sentence or text longer than the
positions becomes overlapping windows --window-stride tokens apart instead, each an example of
its own (training uses every window); {split}.windows maps each example back to its document
(the index of the source example in the split) and the first word (tagging) or token
(classification) and the number of them it holds, so predictions are merged back to documents
before scoring: a word from the window where it has the most context, a text's class from its
windows' pooled logits. A pair keeps its first text (the question) whole in every window and
windows its second.

{split}.conll holds one "word<TAB>tag" line per word. A word holding whitespace (LinkBERT's JSON
tokens may: a space, U+2028, or, in a file edited since, a tab or newline) is written there with
each run of it as '_', so a line stays a word and its tag and the predictions file keeps one line
per word; the model still reads the word itself. The manifest counts them
(words_with_whitespace_written_with_underscore).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence

from bio_roberta.readers.source_files import TaggedSentence, TaskData, TextExample
from bio_roberta.tasks.kinds import SCHEME_TAGS, SCORES_PER_LINE, label_symbols
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta.tasks.truncation import WINDOWS, LongInputs, window_spans
from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.tagging import check_scheme, convert_tags
from bio_roberta_core.vocab_files import IMPORTED_KINDS
from bio_roberta_core.windows import POOLINGS
from preprocess.vocab_dir import VocabularyDir

# Python's \s on str: every character str.isspace() holds (tab, newline, U+2028, U+00A0...).
WHITESPACE_RUN = re.compile(r"\s+")
# Special tokens around an example of 1 or 2 texts: <s> s1 </s>, or <s> s1 </s> </s> s2 </s>
# (fairseq sentence_prediction prepends the separator </s> to input1).
SPECIALS_OF_INPUTS = {1: 2, 2: 4}


class ConversionError(BioRobertaError):
    """An example that cannot be converted (names the example and what to do)."""


@dataclass
class EncodedSplit:
    """The rows of one split, ready to binarise, plus what happened on the way."""

    input0: list[list[int]] = field(default_factory=list)
    input1: list[list[int]] = field(default_factory=list)
    labels: list[list[int]] = field(default_factory=list)
    scores: list[str] = field(default_factory=list)  # SCORES_PER_LINE: each example's, as read
    ids: list[str] = field(default_factory=list)
    conll: list[str] = field(default_factory=list)
    # each example's (document: its source example's index, first word or token, how many)
    windows: list[tuple[int, int, int]] = field(default_factory=list)
    documents: int = 0  # source examples encoded
    counts: Counter = field(default_factory=Counter)


class TaskEncoder:
    """BPE + dictionaries of one conversion: source examples -> rows of token / label ids."""

    def __init__(
        self,
        spec: TaskSpec,
        vocab: VocabularyDir,
        scheme: str,
        max_positions: int,
        long_inputs: Optional[LongInputs] = None,
    ):
        from fairseq.data import Dictionary

        from preprocess.bpe import load_dictionary, open_bpe

        self.spec = spec
        self.scheme = check_scheme(scheme)
        self.bpe = open_bpe(vocab)
        self.dictionary = load_dictionary(vocab)
        self.label_symbols = label_symbols(spec, scheme)
        self.label_dictionary = Dictionary()
        for symbol in self.label_symbols:
            self.label_dictionary.add_symbol(symbol, n=0)
        # Source label -> label symbol (symbols write spaces as '_'); NER tags go through the
        # scheme.
        self.symbol_of = (
            {} if spec.is_sequence_labelling else dict(zip(spec.labels, self.label_symbols))
        )
        specials = SPECIALS_OF_INPUTS[spec.task_kind.inputs]
        if spec.task_kind.inputs == 2 and vocab.kind in IMPORTED_KINDS:
            specials -= 1  # BERT's and ModernBERT's [CLS] a [SEP] b [SEP]: one separator
        if max_positions <= specials:
            raise ConversionError(f"max positions {max_positions} leaves no room for tokens")
        self.max_tokens = max_positions - specials
        self.long_inputs = checked_long_inputs(
            spec, long_inputs or LongInputs(spec.task_kind.long_inputs), self.max_tokens
        )

    def token_ids(self, text: str, counts: Counter) -> list[int]:
        ids = [self.dictionary.index(piece) for piece in self.bpe.encode(text).split()]
        counts["encoded_tokens"] += len(ids)
        counts["unknown_tokens"] += sum(1 for i in ids if i == self.dictionary.unk())
        return ids

    def label_id(self, symbol: str) -> int:
        index = self.label_dictionary.index(symbol)
        if index == self.label_dictionary.unk():
            raise ConversionError(
                f"label symbol {symbol!r} is not in {self.spec.name}'s label dictionary"
            )
        return index

    def add_sentence(self, sentence: TaggedSentence, out: EncodedSplit) -> None:
        tags = sentence.tags
        if self.spec.task_kind.label_encoding == SCHEME_TAGS:
            tags = convert_tags(tags, self.scheme)
        words = []
        for position, word in enumerate(sentence.words):
            pieces = self.token_ids(word if position == 0 else " " + word, out.counts)
            if not pieces:
                raise ConversionError(
                    f"{sentence.id}: word {position + 1} ({word!r}) encodes to no BPE token"
                )
            if len(pieces) > self.max_tokens:
                out.counts["words_truncated"] += 1
                pieces = pieces[: self.max_tokens]
            words.append(pieces)
        stride = self.long_inputs.stride or self.max_tokens  # PIECES: windows that abut
        spans = window_spans([len(pieces) for pieces in words], self.max_tokens, stride)
        for start, end in spans:
            self._add_piece(sentence, words, tags, start, end, out)
            out.windows.append((out.documents, start, end - start))
        out.documents += 1
        out.counts["sentences"] += 1
        out.counts["words"] += len(words)
        if len(spans) > 1:
            out.counts["sentences_split"] += 1
            out.counts["sentence_pieces"] += len(spans)

    def _add_piece(self, sentence, words, tags, start, end, out: EncodedSplit) -> None:
        tokens, labels = [], []
        pad = self.label_dictionary.pad()
        for pieces, tag in zip(words[start:end], tags[start:end]):
            tokens += pieces
            labels += [self.label_id(tag)] + [pad] * (len(pieces) - 1)
        out.input0.append(tokens + [self.dictionary.eos()])
        out.labels.append(labels + [self.label_dictionary.eos()])
        out.ids.append(sentence.id)
        out.conll.append(
            "".join(
                f"{conll_word(w, out.counts)}\t{t}\n"
                for w, t in zip(sentence.words[start:end], sentence.tags[start:end])
            )
        )
        out.counts["examples"] += 1
        out.counts["tokens"] += len(tokens)

    def add_text(self, example: TextExample, out: EncodedSplit) -> None:
        first = self.token_ids(example.text, out.counts)
        second = (
            self.token_ids(example.text_pair, out.counts) if example.text_pair is not None else []
        )
        if len(first) + len(second) <= self.max_tokens:
            self._add_row(example, first, second, self._whole(first, second, out), out)
        elif self.long_inputs.route == WINDOWS:
            self._add_windows(example, first, second, out)
        else:
            tokens = len(first) + len(second)
            try:
                first, second = self.spec.task_kind.truncate(
                    first, second, self.max_tokens, example.id
                )
            except ValueError as error:  # a rule's "cannot fit" (names the example)
                raise ConversionError(str(error)) from None
            out.counts["truncated"] += 1
            out.counts["tokens_cut"] += tokens - len(first) - len(second)
            self._add_row(example, first, second, self._whole(first, second, out), out)
        out.documents += 1

    def _whole(self, first, second, out: EncodedSplit) -> tuple[int, int, int]:
        """The window of an example in one row: all of its windowed text."""
        return (out.documents, 0, len(second if self.spec.task_kind.inputs == 2 else first))

    def _add_windows(self, example: TextExample, first, second, out: EncodedSplit) -> None:
        """Windows over the text, or over a pair's second text with the first whole in each; a
        pair whose first text leaves less room than the stride steps by the room left."""
        pair = self.spec.task_kind.inputs == 2
        windowed = second if pair else first
        width = self.max_tokens - (len(first) if pair else 0)
        if width < 1:
            raise ConversionError(
                f"{example.id}: the first text alone has {len(first)} tokens, the budget is "
                f"{self.max_tokens}: no room for a window of the second; convert with more "
                "--max-positions"
            )
        stride = min(self.long_inputs.stride, width)
        if stride < self.long_inputs.stride:
            out.counts["window_stride_shortened"] += 1
        spans = window_spans([1] * len(windowed), width, stride)
        for start, end in spans:
            texts = (first, windowed[start:end]) if pair else (windowed[start:end], second)
            self._add_row(example, *texts, (out.documents, start, end - start), out)
        out.counts["windowed"] += 1
        out.counts["windows"] += len(spans)

    def _add_row(self, example: TextExample, first, second, window, out: EncodedSplit) -> None:
        out.input0.append(first + [self.dictionary.eos()])
        if self.spec.task_kind.inputs == 2:
            out.input1.append(second + [self.dictionary.eos()])
        if self.spec.task_kind.label_encoding == SCORES_PER_LINE:
            (score,) = example.labels
            out.scores.append(score)
        else:
            out.labels.append(
                [self.label_id(self.symbol_of[label]) for label in example.labels]
                + [self.label_dictionary.eos()]
            )
        out.ids.append(example.id if example.group is None else f"{example.id}\t{example.group}")
        out.windows.append(window)
        out.counts["examples"] += 1
        out.counts["tokens"] += len(first) + len(second)

    def encode_split(self, examples: Sequence) -> EncodedSplit:
        out = EncodedSplit()
        for example in examples:
            if isinstance(example, TaggedSentence):
                self.add_sentence(example, out)
            else:
                self.add_text(example, out)
        return out


def checked_long_inputs(spec: TaskSpec, asked: LongInputs, max_tokens: int) -> LongInputs:
    """The route asked for a task, with its stride (default: half the window, max_tokens) and
    pooling (classification: default mean) filled in; an option the route or kind has no use for
    is an error."""
    kind = spec.task_kind
    routes = (kind.long_inputs, WINDOWS)
    if asked.route not in routes:
        raise ConversionError(
            f"{spec.name}: --long-inputs {asked.route}: a {spec.kind} task takes "
            f"{' or '.join(routes)}"
        )
    if asked.route != WINDOWS:
        if asked.stride is not None or asked.pooling is not None:
            raise ConversionError(
                f"{spec.name}: --window-stride and --window-pooling need --long-inputs windows"
            )
        return asked
    stride = max_tokens // 2 if asked.stride is None else asked.stride
    if not 1 <= stride <= max_tokens:
        raise ConversionError(
            f"{spec.name}: --window-stride {stride} must be between 1 and the window's "
            f"{max_tokens} tokens (the positions less the special tokens)"
        )
    if kind.tags_words:
        if asked.pooling is not None:
            raise ConversionError(
                f"{spec.name}: --window-pooling is for classification; a word is tagged from "
                "the window where it has the most context"
            )
        return LongInputs(WINDOWS, stride)
    pooling = asked.pooling or POOLINGS[0]
    if pooling not in POOLINGS:
        raise ConversionError(f"--window-pooling {pooling}: one of {', '.join(POOLINGS)}")
    return LongInputs(WINDOWS, stride, pooling)


def conll_word(word: str, counts: Counter) -> str:
    """A word as a .conll line holds it: each run of whitespace inside it as '_' (counted)."""
    written = WHITESPACE_RUN.sub("_", word)
    if written != word:
        counts["words_with_whitespace_written_with_underscore"] += 1
    return written


def encode_split(encoder: TaskEncoder, data: TaskData, split: str) -> EncodedSplit:
    """One split encoded; an example that cannot be (too long for the positions, a word without a
    BPE token) is named with the files it was read from, before its id."""
    try:
        return encoder.encode_split(data.splits[split].examples)
    except ConversionError as error:
        files = ", ".join(map(str, data.splits[split].sources)) or f"the {split} split"
        raise ConversionError(f"{files}: {error}") from None
