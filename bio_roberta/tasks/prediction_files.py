"""The prediction file of each task kind (bio_roberta/tasks/kinds.py; the classification tables
in bio_roberta/tasks/classification_tables.py): how a fine-tuned model's outputs become (gold,
predicted) rows, how they are written, and how the file is read back in the shape the task's
metric scores, so the file alone reproduces the score:

  TAGGED_WORDS   CoNLL columns ``word<TAB>gold<TAB>predicted``, a blank line after each sentence
                 (conlleval reads it with ``-d '\\t'``); gold is the source BIO tag, predicted is
                 the model's tag converted to BIO; read as sentences of tags.
  SINGLE_LABELS  a header ``id<TAB>group<TAB>gold<TAB>predicted`` and one row per example, in the
                 order of <split>.ids; group is the example id unless the score groups examples;
                 read as one label per example.
  LABEL_SETS     the same columns, each cell the comma-separated label symbols (possibly none);
                 read as the union of each group's label sets (HOC: an abstract's sentences).
  SCORES         the same columns, each cell a number (gold score, predicted score; BIOSSES);
                 read as one float per example.
  ELEMENT_SET_WORDS  CoNLL columns as TAGGED_WORDS, each tag a set of elements (``I-PAR+I-INT``,
                 bio_roberta_core.tagging.pico_tag; O when none), written as predicted (no scheme:
                 the model decides each element separately, sigmoid >= 0.5); read as sentences.

Rows come from the fine-tuning plugin's tasks (user_dir); like the finetune-bin files, everything
is in label symbols. A split converted with --long-inputs windows (its {split}.windows, written by
convert-task) holds several examples per document: every file here is of whole documents, a
word's tag taken from the window where it has the most context, a class from the windows' pooled
logits (the merge rule of bio_roberta_core/windows.py; the pooling in predictions.py).

Each kind also says what a run's test predictions are keyed by the release's own example ids
(``by_id``: the values of a submission file, bio_roberta/blurb/predictions_file.py), how such a
value is checked against a release example (``check_value``) and how the release's examples and
those values become what the task's metric scores (``scored``), so ``bio-roberta rescore`` scores a
submission with the same metric code as the run:

  TAGGED_WORDS, ELEMENT_SET_WORDS  the sentence's predicted tag of each word, by token index
                 (a list as long as the release sentence), as the CoNLL file writes it
  SINGLE_LABELS  the label (the registry's name, e.g. ``CPR:3``, ``yes``)
  LABEL_SETS     the labels, sorted (possibly none); scored per group (HOC: abstract)
  SCORES         the score, as the TSV writes it (9 significant digits)
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any, Iterable, Optional

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.provenance import atomic_write_text
from bio_roberta_core.tagging import BIO, convert_tags, entity_types, pico_tags, scheme_tags
from bio_roberta_core.windows import document_rows, merge_word_windows, read_windows


class PredictionFileError(BioRobertaError):
    """A prediction or gold file that does not have the documented layout (names file and line)."""


class PredictionFile(abc.ABC):
    """One prediction file format; ``outputs`` maps example index -> (gold, predicted)."""

    suffix: str

    @abc.abstractmethod
    def rows(self, model, task, sample) -> Iterable[tuple[Any, Any]]:
        """(gold, predicted) of each example of a batch, in the order of sample["id"]."""

    @abc.abstractmethod
    def write(self, data_dir: Path, split: str, outputs: dict, output: Path) -> int:
        """Write the predictions of `split` to `output`; returns the number of examples written."""

    @abc.abstractmethod
    def read(self, path: Path) -> tuple[Any, Any]:
        """(gold, predicted) of a prediction file, as the task's metric takes them."""

    @abc.abstractmethod
    def by_id(self, data_dir: Path, split: str, outputs: dict, label_of: dict) -> dict[str, Any]:
        """The predictions of `split` keyed by the release's example id, as a submission file
        holds them (JSON values); label_of: the registry's label of each label symbol."""

    @abc.abstractmethod
    def check_value(self, spec, example, value) -> Optional[str]:
        """What is wrong with `value` as the prediction of release `example`; None: nothing."""

    @abc.abstractmethod
    def scored(self, examples: list, values: list) -> tuple[Any, Any]:
        """(gold, predicted) of release examples and their checked predicted values, as the
        task's metric takes them."""


def read_conll(path: Path, columns: int) -> list[list[list[str]]]:
    """Blocks of rows of ``columns`` tab-separated fields; blank lines end blocks."""
    blocks, block = [], []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line:
                if block:
                    blocks.append(block)
                block = []
                continue
            fields = line.split("\t")
            if len(fields) != columns:
                raise PredictionFileError(
                    f"{path}:{number}: expected {columns} tab-separated columns, got {len(fields)}"
                )
            block.append(fields)
    return blocks + ([block] if block else [])


def document_ids(data_dir: Path, split: str, documents: int) -> list[tuple[str, str]]:
    """(example id, group id) of each of a split's `documents` documents: each example's
    (read_ids), or each document's first window's where the split has windows."""
    from user_dir.tasks._finetune_bin import read_ids

    windows = read_windows(data_dir, split)
    if windows is None:
        return read_ids(str(data_dir), split, documents)
    ids = read_ids(str(data_dir), split, len(windows))
    firsts = [ids[indices[0]] for indices in document_rows(windows)]
    if len(firsts) != documents:
        raise PredictionFileError(
            f"{Path(data_dir) / f'{split}.windows'} holds {len(firsts)} documents, the "
            f"predictions {documents}"
        )
    return firsts


class TaggedWords(PredictionFile):
    """A tag per word (sequence_labeling): CoNLL, predicted tags in BIO."""

    suffix = "conll"

    def rows(self, model, task, sample):
        from user_dir.criterions.sequence_labeling import word_tags
        from user_dir.models.token_classification_head import token_classification_logits

        target = sample["target"]
        logits = token_classification_logits(  # word_tags reads the tagged positions
            model, task.cfg.classification_head_name, sample["net_input"]["src_tokens"], target >= 0
        )
        predicted = logits.argmax(-1)
        return zip(word_tags(target, target, task.tags), word_tags(predicted, target, task.tags))

    def write(self, data_dir, split, outputs, output):
        """Join each sentence's pieces, convert predicted tags to BIO, write CoNLL; returns the
        number of sentences."""
        sentences = self.sentences(data_dir, split, outputs)
        lines = []
        for _id, rows, predicted in sentences:
            tags = self.written_tags(predicted)
            lines += [f"{word}\t{gold}\t{tag}\n" for (word, gold), tag in zip(rows, tags)]
            lines.append("\n")
        atomic_write_text(output, "".join(lines))
        return len(sentences)

    def sentences(self, data_dir, split, outputs) -> list[tuple[str, list, list]]:
        """(sentence id, its (word, gold) rows, its predicted tags) of each sentence of `split`,
        the pieces of a sentence too long for the positions joined back, or its windows merged
        (each word from the window where it has the most context)."""
        from user_dir.tasks._finetune_bin import read_ids

        ids = read_ids(str(data_dir), split, len(outputs))
        conll = Path(data_dir) / f"{split}.conll"
        blocks = read_conll(conll, 2)
        if len(blocks) != len(ids):
            raise PredictionFileError(
                f"{conll} has {len(blocks)} examples but {split}.ids has {len(ids)}"
            )
        for index, ((example_id, _group), block) in enumerate(zip(ids, blocks)):
            if len(outputs[index][1]) != len(block):
                raise PredictionFileError(
                    f"{conll}: example {index} ({example_id}) has {len(block)} words but "
                    f"label/{split} tags {len(outputs[index][1])} of its subwords"
                )
        windows = read_windows(data_dir, split, len(ids))
        if windows is not None:
            return [
                merged_windows(ids, blocks, outputs, windows, indices)
                for indices in document_rows(windows)
            ]
        sentences: list[tuple[str, list, list]] = []  # (id, word rows, predicted tags)
        for index, ((example_id, _group), block) in enumerate(zip(ids, blocks)):
            predicted = outputs[index][1]
            if sentences and sentences[-1][0] == example_id:
                sentences[-1][1].extend(block)
                sentences[-1][2].extend(predicted)
            else:
                sentences.append((example_id, list(block), list(predicted)))
        return sentences

    def written_tags(self, predicted: list[str]) -> list[str]:
        """A sentence's predicted tags as the file holds them: in BIO, whatever the model's
        scheme."""
        return convert_tags(predicted, BIO)

    def read(self, path):
        blocks = read_conll(path, 3)
        return (
            [[row[1] for row in block] for block in blocks],
            [[row[2] for row in block] for block in blocks],
        )

    def by_id(self, data_dir, split, outputs, label_of):
        sentences = self.sentences(data_dir, split, outputs)
        return unique_ids(
            data_dir, split, ((i, self.written_tags(tags)) for i, _rows, tags in sentences)
        )

    def check_value(self, spec, example, value):
        if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
            return "expected a list of tags, one per token"
        if len(value) != len(example.words):
            return f"{len(value)} tags for the release's {len(example.words)} tokens"
        allowed = self.allowed_tags(spec)
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            return f"tags {unknown} are not {spec.name}'s ({', '.join(allowed)})"
        return None

    def allowed_tags(self, spec) -> tuple[str, ...]:
        """The tags a prediction may hold: BIO over the task's entity types."""
        return scheme_tags(entity_types(spec.labels), BIO)

    def scored(self, examples, values):
        return [list(example.tags) for example in examples], [list(v) for v in values]


def merged_windows(ids, blocks, outputs, windows, indices) -> tuple[str, list, list]:
    """(id, (word, gold) rows, predicted tags) of one document from its windows (example
    indices), each word from the window the merge rule picks (bio_roberta_core.windows)."""
    spans = [windows[index][1:] for index in indices]
    try:
        merged = merge_word_windows(
            spans, [list(zip(blocks[index], outputs[index][1])) for index in indices]
        )
    except ValueError as error:
        raise PredictionFileError(
            f"document {windows[indices[0]][0]} ({ids[indices[0]][0]}): {error}"
        ) from None
    return ids[indices[0]][0], [row for row, _ in merged], [tag for _, tag in merged]


class ElementSetWords(TaggedWords):
    """A set of elements per word (multi_element_tagging): CoNLL, tags as predicted."""

    def rows(self, model, task, sample):
        from user_dir.criterions.multi_element_tagging import word_element_tags
        from user_dir.models.token_classification_head import token_classification_logits

        target = sample["target"]
        logits = token_classification_logits(
            model, task.cfg.classification_head_name, sample["net_input"]["src_tokens"]
        )
        return zip(word_element_tags(target > 0, target), word_element_tags(logits > 0, target))

    def written_tags(self, predicted):
        return list(predicted)

    def allowed_tags(self, spec):
        return pico_tags()


def unique_ids(data_dir: Path, split: str, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """{example id: value} of (id, value) pairs; an id twice is an error: the release's ids must
    name its examples."""
    by_id: dict[str, Any] = {}
    for example_id, value in pairs:
        if example_id in by_id:
            raise PredictionFileError(
                f"{Path(data_dir) / f'{split}.ids'}: example id {example_id!r} names two "
                "examples; predictions keyed by id need the release's ids to be unique"
            )
        by_id[example_id] = value
    return by_id


TAGGED_WORDS, ELEMENT_SET_WORDS = TaggedWords(), ElementSetWords()
