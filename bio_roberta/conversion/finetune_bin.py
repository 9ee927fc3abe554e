"""Convert a task's source files into finetune-bin/<task> with the model's vocabulary.

The layout is the finetune-bin contract of docs/artifacts.md: input0/ (input1/ for the kinds of
sentence pairs) with the model's dict.txt, label/ with bio_roberta.tasks.kinds.label_symbols (or,
for scores, label/{split}.label with one number a line, as fairseq's sentence_prediction reads
with --regression-target), {split}.ids, {split}.conll for the kinds that tag words, and
manifest.json. A pair too long for the positions is cut by its kind's rule (TaskKind.truncate).
Everything is binarised with fairseq's own Dictionary and mmap indexed-dataset builder, as
fairseq-preprocess does (an eos after every line).

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

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from bio_roberta.blurb.suite import BLURB, check_blurb_split, identical_splits
from bio_roberta.readers import read_task
from bio_roberta.readers.source_files import SPLITS, TaggedSentence, TaskData, TextExample
from bio_roberta.tasks.kinds import SCHEME_TAGS, SCORES_PER_LINE, label_symbols
from bio_roberta.tasks.registry import TaskSpec
from bio_roberta.tasks.truncation import WINDOWS, LongInputs, window_spans
from bio_roberta_core.checkpoints import check_max_positions, model_positions
from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import (
    atomic_write_json,
    atomic_write_text,
    environment_record,
    file_record,
    sha256_file,
)
from bio_roberta_core.tagging import BIO, check_scheme, convert_tags
from bio_roberta_core.vocab_files import IMPORTED_KINDS
from bio_roberta_core.windows import POOLINGS
from preprocess.vocab_dir import VocabularyDir, read_vocab_dir, write_padded_dict

logger = logging.getLogger(__name__)

# What a finetune-bin/<task> dir holds: convert-task replaces such a dir whole.
# Python's \s on str: every character str.isspace() holds (tab, newline, U+2028, U+00A0...).
WHITESPACE_RUN = re.compile(r"\s+")
FINETUNE_BIN_FILE = re.compile(
    r"^(manifest\.json|input[01]|label|\w+\.(ids|conll|windows)|fold\d+)$"
)

# Special tokens around an example of 1 or 2 texts: <s> s1 </s>, or <s> s1 </s> </s> s2 </s>
# (fairseq sentence_prediction prepends the separator </s> to input1).
SPECIALS_OF_INPUTS = {1: 2, 2: 4}
# The most of a split's tokens that may be <unk>. A model's own vocabulary leaves next to none of
# its domain's text unknown (byte-level BPE: none by construction; WordPiece: characters it never
# saw), so more means the text is encoded with a vocabulary not made for it, e.g. an import whose
# tokenizer had no files (every word <unk>). 5% leaves room for odd characters in a few examples
# and still stops such a conversion; --max-unknown-rate 1 converts anyway.
MAX_UNKNOWN_RATE = 0.05


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


def write_indexed(rows: list[list[int]], prefix: Path, vocab_size: int) -> None:
    """{prefix}.bin/.idx with fairseq's mmap builder (what fairseq-preprocess writes)."""
    import torch
    from fairseq.data import indexed_dataset

    prefix.parent.mkdir(parents=True, exist_ok=True)
    builder = indexed_dataset.make_builder(str(prefix) + ".bin", impl="mmap", vocab_size=vocab_size)
    for row in rows:
        builder.add_item(torch.IntTensor(row))
    builder.finalize(str(prefix) + ".idx")


def vocab_record(vocab: VocabularyDir) -> dict:
    dict_record = file_record(vocab.dict_path)
    return {
        "path": str(vocab.path.resolve()),
        "kind": vocab.kind,
        "sha256": dict_record["sha256"],
        "files": [dict_record] + [file_record(p) for p in vocab.bpe_files.values()],
    }


def encode_split(encoder: TaskEncoder, data: TaskData, split: str) -> EncodedSplit:
    """One split encoded; an example that cannot be (too long for the positions, a word without a
    BPE token) is named with the files it was read from, before its id."""
    try:
        return encoder.encode_split(data.splits[split].examples)
    except ConversionError as error:
        files = ", ".join(map(str, data.splits[split].sources)) or f"the {split} split"
        raise ConversionError(f"{files}: {error}") from None


def unknown_token_rates(
    data: TaskData, encoded: dict[str, EncodedSplit], vocab: dict, max_rate: float
) -> dict[str, float]:
    """Each split's share of <unk> tokens; a split over max_rate stops the conversion."""
    rates = {}
    for split, rows in encoded.items():
        unknown, tokens = rows.counts["unknown_tokens"], rows.counts["encoded_tokens"]
        rates[split] = unknown / tokens if tokens else 0.0
        if rates[split] > max_rate:
            files = ", ".join(map(str, data.splits[split].sources)) or f"the {split} split"
            raise ConversionError(
                f"{data.spec.name}: {files}: {unknown:,} of {tokens:,} tokens "
                f"({rates[split]:.1%}) are <unk> with the vocabulary {vocab['path']}, more than "
                f"--max-unknown-rate {max_rate:g}: is it this model's (an import-hf whose "
                "tokenizer files were missing)? If it is, pass --max-unknown-rate 1"
            )
    return rates


def write_finetune_bin(
    data: TaskData, encoder: TaskEncoder, out_dir: Path, vocab: dict, options: dict
) -> dict:
    """Binarise one TaskData (a task, or one fold) into out_dir and write its manifest last."""
    spec = data.spec
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").unlink(missing_ok=True)
    encoded = {split: encode_split(encoder, data, split) for split in SPLITS}
    rates = unknown_token_rates(data, encoded, vocab, options["max_unknown_rate"])
    inputs = [f"input{i}" for i in range(spec.task_kind.inputs)]
    for name in inputs:
        (out_dir / name).mkdir(parents=True, exist_ok=True)
        write_padded_dict(
            Path(vocab["path"]) / "dict.txt", out_dir / name / "dict.txt"
        )  # as binarize's
    for split, rows in encoded.items():
        for name, input_rows in zip(inputs, (rows.input0, rows.input1)):
            write_indexed(input_rows, out_dir / name / split, len(encoder.dictionary))
        if spec.task_kind.label_encoding == SCORES_PER_LINE:
            atomic_write_text(
                out_dir / "label" / f"{split}.label", "".join(f"{s}\n" for s in rows.scores)
            )
        else:
            write_indexed(rows.labels, out_dir / "label" / split, len(encoder.label_dictionary))
        atomic_write_text(out_dir / f"{split}.ids", "".join(f"{i}\n" for i in rows.ids))
        if encoder.long_inputs.route == WINDOWS:
            atomic_write_text(
                out_dir / f"{split}.windows",
                "".join("\t".join(map(str, window)) + "\n" for window in rows.windows),
            )
        if spec.is_sequence_labelling:
            atomic_write_text(
                out_dir / f"{split}.conll", "\n".join(rows.conll) + ("\n" if rows.conll else "")
            )
    # dict.txt counts are training counts, as fairseq-preprocess writes them.
    label_counts = Counter(i for row in encoded["train"].labels for i in row)
    for index in range(encoder.label_dictionary.nspecial, len(encoder.label_dictionary)):
        encoder.label_dictionary.count[index] = label_counts[index]
    if encoder.label_symbols:
        encoder.label_dictionary.save(str(out_dir / "label" / "dict.txt"))
    sources = sorted({path for split in data.splits.values() for path in split.sources})
    manifest = {
        "task": spec.name,
        "kind": spec.kind,
        "fold": data.fold,
        "tagging_scheme": (
            encoder.scheme if spec.task_kind.label_encoding == SCHEME_TAGS else None
        ),
        "labels": list(encoder.label_symbols),
        "counts": {split: rows.counts["examples"] for split, rows in encoded.items()},
        "split_details": {
            split: {
                "read": data.splits[split].summary(),
                "converted": dict(sorted(encoded[split].counts.items())),
                "unknown_token_rate": rates[split],
            }
            for split in SPLITS
        },
        "max_positions": options["max_positions"],
        "long_inputs": encoder.long_inputs.as_dict(),
        "example_ids": {split: ids_record(out_dir, split, encoded[split]) for split in SPLITS},
        **blurb_split_check(data),
        **({"task_declaration": spec.declaration.record(spec.labels)} if spec.declaration else {}),
        "vocab": vocab,
        "inputs": [file_record(path) for path in sources],
        "options": options,
        **environment_record(),
    }
    atomic_write_json(out_dir / "manifest.json", manifest)
    for split in SPLITS:
        logger.info("%s -> %s: %s", split, out_dir, dict(encoded[split].counts))
    return manifest


def ids_record(out_dir: Path, split: str, rows: EncodedSplit) -> dict:
    """What {split}.ids holds: the release's example ids (a sentence split for the positions
    repeats its id on each piece), so predictions can be keyed by them."""
    ids = [line.split("\t")[0] for line in rows.ids]
    return {
        "file": f"{split}.ids",
        "sha256": sha256_file(out_dir / f"{split}.ids"),
        "lines": len(ids),
        "distinct_ids": len(set(ids)),
    }


def blurb_split_check(data: TaskData) -> dict:
    """The splits that hold the same examples (a copied file: warned), and for a BLURB dataset
    {"blurb_split_check": None when the data read is BLURB's split, else the one-line reason,
    "blurb_split_checked_by": how} (bio_roberta/blurb/suite.py check_blurb_split)."""
    copies = identical_splits(data)
    for first, second in copies:
        logger.warning(
            "%s: the %s and %s splits hold the same examples (%s, %s): check the files",
            data.spec.name,
            first,
            second,
            data.splits[first].derivation,
            data.splits[second].derivation,
        )
    record = {"identical_splits": [list(pair) for pair in copies]}
    dataset = BLURB.get(data.spec.name)
    if dataset is None:
        return record
    check = check_blurb_split(dataset, data)
    return {
        **record,
        "blurb_split_check": check.reason,
        "blurb_split_checked_by": check.checked_by,
    }


def check_splits_not_empty(data: TaskData) -> None:
    """A split without examples cannot train, select checkpoints or score: stop before writing."""
    for name, split in data.splits.items():
        if split.examples:
            continue
        where = f"{data.spec.name}{f' fold {data.fold}' if data.fold else ''}"
        sources = ", ".join(map(str, split.sources[:2])) + (
            f" and {len(split.sources) - 2} more" if len(split.sources) > 2 else ""
        )
        raise ConversionError(
            f"{where}: the {name} split has no examples (from {sources or 'no files'}: "
            f"{split.derivation}); a task needs train, valid and test examples: "
            f"check those files"
        )


def convert_task(
    spec: TaskSpec,
    data_dir: str | Path,
    vocab_dir: str | Path,
    out_dir: str | Path,
    scheme: str = BIO,
    max_positions: Optional[int] = None,
    max_unknown_rate: float = MAX_UNKNOWN_RATE,
    long_inputs: Optional[LongInputs] = None,
    pretrained: Optional[str | Path] = None,
) -> list[dict]:
    """Convert every fold (or the one split set) of a task; returns the manifests written.

    All folds are read before anything is written, and the output is built beside out_dir and
    swapped in whole (bio_roberta_core.output_dir), so a missing or malformed fold or a killed run
    leaves the previous output as it was. long_inputs: the route of a text longer than the
    positions (None: the kind's, bio_roberta/tasks/truncation.py). The positions: max_positions,
    at most the model's (pretrained, the checkpoint the data is for, or an imported vocabulary's
    own); by default the registry's, or the model's where it has fewer.
    """
    data_dir, vocab_dir, out_dir = Path(data_dir), Path(vocab_dir), Path(out_dir)
    if scheme != BIO and spec.task_kind.label_encoding != SCHEME_TAGS:
        raise ConversionError(
            f"{spec.name} has no tags in a tagging scheme; --scheme applies to NER only"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise ConversionError(
            f"{out_dir}: exists and is not a directory; pass a directory for --out"
        )
    folds = range(1, spec.folds + 1) if spec.folds else [None]
    datasets = [read_task(spec, data_dir, fold) for fold in folds]
    for data in datasets:
        check_splits_not_empty(data)
    vocabulary = read_vocab_dir(vocab_dir)
    model = pretrained or vocabulary.checkpoint  # an imported model's: up to its own positions
    if max_positions and model:
        check_max_positions(max_positions, model)
    elif model:
        max_positions = min(spec.max_positions, model_positions(model))
    max_positions = max_positions or spec.max_positions
    vocab = vocab_record(vocabulary)
    options = {
        "data_dir": str(data_dir.resolve()),
        "scheme": scheme,
        "max_positions": max_positions,
        "pretrained": file_record(pretrained) if pretrained else None,
        "max_unknown_rate": max_unknown_rate,
        "long_inputs": long_inputs.as_dict() if long_inputs else None,
    }
    manifests = []
    with new_output_dir(out_dir, FINETUNE_BIN_FILE) as build:
        for data in datasets:
            encoder = TaskEncoder(data.spec, vocabulary, scheme, max_positions, long_inputs)
            target = build.path / f"fold{data.fold}" if data.fold else build.path
            manifests.append(write_finetune_bin(data, encoder, target, vocab, options))
    return manifests
