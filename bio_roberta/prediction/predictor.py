"""A fine-tuned model on new text: ``load(path).predict(texts)`` (and `bio-roberta predict`).

``load`` takes a fine-tuning run dir (RESULTS/<task>/seed<seed>[/fold<k>],
bio_roberta/finetuning/results.py), a checkpoint file of one, or an export-hf dir; an export is
resolved to the checkpoint its manifest.json names (that file must still exist), so every route runs
our fairseq model with the plugin's heads. Text becomes token ids through convert-task's own
TaskEncoder (bio_roberta/conversion/encoder.py) with the vocabulary and positions of the
model's finetune-bin manifest, so a text is encoded, cut and split exactly as the training examples
were:

  NER         the text is split into words (WORD: runs of letters/digits, each other non-space
              character alone, the tokenisation of the BLURB NER releases), each word tagged at its
              first subword (tags in BIO, as the run's prediction file writes them); a text too
              long for the positions is split at word boundaries into pieces, or overlapping
              windows if the model's data was converted with --long-inputs windows, as
              convert-task splits a sentence ("pieces" in the record: their number), each word
              tagged from the window where it has the most context. An entity is
              {"text", "start", "end", "type", "score"} with text == input[start:end]; its score
              is the mean of its words' tag probabilities.
  EBM-PICO    words as for NER, each with a sigmoid per element (participants, interventions,
              outcomes): its tag is the set of elements >= 0.5 ("I-PAR+I-INT", as the run's
              prediction file writes it), and each run of consecutive words in an element is an
              entity of type PAR, INT or OUT, offsets and score as for NER (the mean of its
              words' sigmoids for that element); a word in two elements is in two entities.
  single label  "label" and "probabilities" (softmax over the task's labels, summing to 1).
  multi-label   "labels" (sigmoid >= 0.5) and "probabilities" (each label's sigmoid).
  regression    "score".
  A text (pair) too long is cut by its kind's rule (TaskKind.truncate): "truncated": true; or,
  converted with --long-inputs windows, run as windows whose logits are pooled (the manifest's
  mean or max): "windows": their number.

The inputs of `bio-roberta predict` (text, JSON lines or a task dir) are read by
bio_roberta/prediction/input_files.py. Inputs are sorted by length and padded per batch; the model
runs under torch.inference_mode, on the GPU when there is one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from bio_roberta.prediction.finetuned_files import PredictError, checkpoint_and_data

# A word of a raw text: a run of letters/digits, or one other non-space character.
WORD = re.compile(r"\w+|[^\w\s]")

# An input: a text, or a pair {"text": ..., "text_pair": ...} for the kinds of two inputs.
Input = Union[str, dict]


@dataclass(frozen=True)
class ModelInput:
    """One row the model runs: its token ids (specials included) and where it came from."""

    index: int  # the input it belongs to
    tokens: list[int]
    word_starts: list[int]  # NER: the position of each word's first subword
    words: range  # the input's words (NER) or windowed text's tokens this row holds


def split_words(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the words of a raw text."""
    return [match.span() for match in WORD.finditer(text)]


class Predictor:
    """A fine-tuned model of a registry task with convert-task's encoder of its vocabulary."""

    def __init__(self, checkpoint: Path, data_dir: Path, vocab_dir: Optional[Path] = None):
        from bio_roberta.conversion.encoder import TaskEncoder
        from bio_roberta.prediction.predictions import load_finetuned
        from bio_roberta.tasks.converted_task import task_spec_of
        from bio_roberta.tasks.kinds import ELEMENT_SETS, MULTILABEL, REGRESSION
        from bio_roberta.tasks.truncation import LongInputs
        from bio_roberta_core.tagging import BIO
        from preprocess.vocab_dir import read_vocab_dir

        manifest = json.loads((data_dir / "manifest.json").read_text())
        self.spec = task_spec_of(data_dir)
        self.is_multi_element = self.spec.task_kind.label_encoding == ELEMENT_SETS
        self.checkpoint, self.data_dir = checkpoint, data_dir
        scheme = manifest.get("tagging_scheme") or BIO
        self.long_inputs = LongInputs.from_dict(
            manifest.get("long_inputs"), self.spec.task_kind.long_inputs
        )
        self.encoder = TaskEncoder(
            self.spec,
            read_vocab_dir(vocab_dir or manifest["vocab"]["path"]),
            scheme,
            manifest["max_positions"],
            self.long_inputs,
        )
        self.model, self.task = load_finetuned(checkpoint, data_dir)
        self.head = self.task.cfg.classification_head_name
        self.is_regression = self.spec.kind == REGRESSION
        self.is_multilabel = self.spec.kind == MULTILABEL
        # class id -> the tag (NER, in the model's scheme) or the registry's label, in the order
        # of the model's own label dictionary
        self.labels = self.class_labels(scheme)

    def class_labels(self, scheme: str) -> list[str]:
        from bio_roberta.tasks.kinds import label_symbols
        from bio_roberta_core.tagging import PICO_ELEMENTS

        if self.is_regression:
            return []
        if self.is_multi_element:
            return list(PICO_ELEMENTS)  # the head's outputs, one per element
        dictionary = self.task.label_dictionary
        symbols = dictionary.symbols[dictionary.nspecial :]
        if self.spec.is_sequence_labelling:
            return list(symbols)
        # fairseq's sentence_prediction appends <mask> to every dictionary it loads: the classes
        # are the first num_classes symbols
        label_of = dict(zip(label_symbols(self.spec, scheme), self.spec.labels))
        return [label_of[symbol] for symbol in symbols[: len(self.spec.labels)]]

    @property
    def device(self):
        return next(self.model.parameters()).device

    # --- encoding -------------------------------------------------------------------------
    def model_inputs(self, index: int, name: str, item: Input) -> tuple[list[ModelInput], dict]:
        """The rows of one input and what its record says about the encoding."""
        from bio_roberta.conversion.encoder import ConversionError, EncodedSplit
        from bio_roberta.readers.source_files import TaggedSentence, TextExample

        out = EncodedSplit()
        bos = self.encoder.dictionary.bos()
        try:
            if self.spec.is_sequence_labelling:
                text, spans = self.words(name, item)
                words = tuple(text[start:end] for start, end in spans)
                # convert-task's sentence split; the placeholder tags only mark word starts
                self.encoder.add_sentence(TaggedSentence(name, words, ("O",) * len(words)), out)
            else:
                text, text_pair = self.texts(name, item)
                self.encoder.add_text(
                    TextExample(name, text, self.placeholder_label(), text_pair), out
                )
        except ConversionError as error:
            raise PredictError(str(error)) from None
        if not self.spec.is_sequence_labelling:
            # as the fine-tuning task builds them: fairseq's sentence_prediction prepends its
            # init token to the text and its separator (if set) to the pair's second text, <s> a
            # </s> </s> b </s> for RoBERTa; our plugin's tasks prepend <s>
            init = getattr(self.task.cfg, "init_token", None)
            separator = getattr(self.task.cfg, "separator_token", None)
            rows = []
            for row, (_document, first, count) in enumerate(out.windows):
                tokens = [bos if init is None else init] + out.input0[row]
                if out.input1:
                    tokens += ([] if separator is None else [separator]) + out.input1[row]
                rows.append(ModelInput(index, tokens, [], range(first, first + count)))
            record = {"truncated": bool(out.counts["truncated"])}
            if out.counts["windowed"]:
                record["windows"] = len(rows)
            return rows, record
        rows = []
        pad = self.encoder.label_dictionary.pad()
        for tokens, labels, (_document, first, count) in zip(out.input0, out.labels, out.windows):
            starts = [i + 1 for i, label in enumerate(labels[:-1]) if label != pad]
            rows.append(ModelInput(index, [bos] + tokens, starts, range(first, first + count)))
        return rows, {"words": len(spans), "pieces": len(rows), "_spans": spans, "_text": text}

    def words(self, name: str, item: Input) -> tuple[str, list[tuple[int, int]]]:
        """(text, its words' character offsets) of an NER input: a text split by WORD, or the
        words of a task file ({"words": [...]}) joined by single spaces."""
        if isinstance(item, dict) and "words" in item:
            words = item["words"]
            if not all(isinstance(word, str) and word and not word.isspace() for word in words):
                raise PredictError(f'{name}: "words" must be a list of non-blank strings')
            spans, start = [], 0
            for word in words:
                spans.append((start, start + len(word)))
                start += len(word) + 1
            return " ".join(words), spans
        text, _ = self.texts(name, item)
        return text, split_words(text)

    def texts(self, name: str, item: Input) -> tuple[str, Optional[str]]:
        pair = self.spec.task_kind.inputs == 2
        if isinstance(item, str):
            if pair:
                raise PredictError(
                    f'{name}: {self.spec.name} takes pairs: give {{"text": ..., "text_pair": ...}}'
                )
            return item, None
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise PredictError(f'{name}: expected a text or {{"text": ...}}')
        text_pair = item.get("text_pair")
        if pair != isinstance(text_pair, str):
            need = "needs" if pair else "takes no"
            raise PredictError(f'{name}: {self.spec.name} {need} a "text_pair" text')
        return item["text"], text_pair

    def placeholder_label(self) -> tuple[str, ...]:
        """A gold label for convert-task's encoder, which needs one; never read back."""
        return ("0",) if self.is_regression else () if self.is_multilabel else self.spec.labels[:1]

    # --- running --------------------------------------------------------------------------
    def logits(self, rows: Sequence[ModelInput]):
        import torch

        pad = self.encoder.dictionary.pad()
        width = max(len(row.tokens) for row in rows)
        tokens = torch.full((len(rows), width), pad, dtype=torch.long)
        for i, row in enumerate(rows):
            tokens[i, : len(row.tokens)] = torch.tensor(row.tokens)
        tokens = tokens.to(self.device)
        if self.spec.is_sequence_labelling:
            from user_dir.models.token_classification_head import token_classification_logits

            return token_classification_logits(self.model, self.head, tokens).float()
        logits, _ = self.model(tokens, features_only=True, classification_head_name=self.head)
        return logits.float()

    def predict(
        self,
        inputs: Iterable[Input],
        batch_size: int = 32,
        names: Optional[Sequence[str]] = None,
    ) -> list[dict]:
        """One record per input, in the order given; names: what errors call each input
        (default "input <n>")."""
        import torch

        if batch_size < 1:
            raise PredictError(f"batch size {batch_size}: must be at least 1")
        rows, records = [], []
        for index, item in enumerate(inputs):
            name = names[index] if names is not None else f"input {index + 1}"
            item_rows, record = self.model_inputs(index, name, item)
            rows += item_rows
            records.append(record)
        outputs: dict[int, list] = {i: [] for i in range(len(records))}
        rows.sort(key=lambda row: len(row.tokens))
        with torch.inference_mode():
            for start in range(0, len(rows), batch_size):
                batch = rows[start : start + batch_size]
                for row, logits in zip(batch, self.logits(batch).cpu()):
                    outputs[row.index].append((row, logits))
        return [self.decode(record, outputs[i]) for i, record in enumerate(records)]

    def decode(self, record: dict, outputs: list) -> dict:
        if self.spec.is_sequence_labelling:
            return self.entities(record, outputs)
        if len(outputs) > 1:  # windows
            from bio_roberta_core.windows import pool_logits

            logits = pool_logits([logits for _row, logits in outputs], self.long_inputs.pooling)
        else:
            ((_row, logits),) = outputs
        if self.is_regression:
            return {"score": float(logits[0]), **record}
        if self.is_multilabel:
            probabilities = logits.sigmoid().tolist()
            return {
                "labels": [label for label, p in zip(self.labels, probabilities) if p >= 0.5],
                "probabilities": dict(zip(self.labels, probabilities)),
                **record,
            }
        probabilities = logits.softmax(-1).tolist()
        best = max(range(len(probabilities)), key=probabilities.__getitem__)
        return {
            "label": self.labels[best],
            "probabilities": dict(zip(self.labels, probabilities)),
            **record,
        }

    def entities(self, record: dict, outputs: list) -> dict:
        from bio_roberta_core.tagging import tag_spans
        from bio_roberta_core.windows import merge_word_windows

        outputs = sorted(outputs, key=lambda output: output[0].words.start)
        windows = [(row.words.start, len(row.words)) for row, _logits in outputs]
        if self.is_multi_element:
            probabilities = merge_word_windows(
                windows,
                [logits[row.word_starts].sigmoid().tolist() for row, logits in outputs],
                record["words"],
            )
            tags, entities = element_entities(
                probabilities, record.pop("_spans"), record.pop("_text")
            )
            return {"entities": entities, "tags": tags, **record}
        best = []  # each window's (best tag, its probability) per word
        for row, logits in outputs:
            probabilities, indices = logits[row.word_starts].softmax(-1).max(-1)
            best.append(list(zip(indices.tolist(), probabilities.tolist())))
        merged = merge_word_windows(windows, best, record["words"])
        tags = [self.labels[label] for label, _probability in merged]
        scores = [probability for _label, probability in merged]
        # in BIO, as the run's prediction file writes them (conlleval: an I- after O begins one)
        tags = self.spec.task_kind.predictions.written_tags(tags)
        spans = record.pop("_spans")
        text_of = record.pop("_text")
        entities = []
        for entity_type, first, last in tag_spans(tags):
            start, end = spans[first][0], spans[last][1]
            entities.append(
                {
                    "text": text_of[start:end],
                    "start": start,
                    "end": end,
                    "type": entity_type or self.spec.entity_type or "",
                    "score": sum(scores[first : last + 1]) / (last - first + 1),
                }
            )
        return {"entities": entities, "tags": tags, **record}


def element_entities(
    probabilities: Sequence[Sequence[float]], spans: Sequence[tuple[int, int]], text: str
) -> tuple[list[str], list[dict]]:
    """EBM-PICO's decoding of one text: each word's sigmoid per element (PICO_ELEMENTS' order) ->
    its tag (the elements >= 0.5, as the run's prediction file writes them: O, I-PAR,
    I-PAR+I-INT, ...) and, per element, each run of consecutive words in it as an entity
    {"text", "start", "end", "type" (PAR, INT, OUT), "score": the mean of its words' sigmoids},
    in order of start, then element; the elements overlap where a word carries several."""
    from bio_roberta_core.tagging import OUTSIDE, PICO_ELEMENTS, pico_tag, tag_spans

    chosen = [[p >= 0.5 for p in word] for word in probabilities]
    tags = [pico_tag(e for e, kept in zip(PICO_ELEMENTS, word) if kept) for word in chosen]
    found = []  # (start, element number, entity)
    for k, element in enumerate(PICO_ELEMENTS):
        in_element = [element if word[k] else OUTSIDE for word in chosen]
        for element_type, first, last in tag_spans(in_element):
            start, end = spans[first][0], spans[last][1]
            score = sum(word[k] for word in probabilities[first : last + 1]) / (last - first + 1)
            entity = {"text": text[start:end], "start": start, "end": end, "type": element_type}
            found.append((start, k, {**entity, "score": score}))
    return tags, [entity for _, _, entity in sorted(found, key=lambda item: item[:2])]


def load(
    path: Union[str, Path], task_file: Optional[Union[str, Path, Sequence]] = None
) -> Predictor:
    """A Predictor of a fine-tuning run dir, its checkpoint file, or an export-hf dir, each
    checked against the record that names it (bio_roberta/prediction/finetuned_files.py). A task of
    your own is read from the declaration its converted data records; task_file (one or several):
    declare those task files first, as --task-file does."""
    if task_file is not None:
        from bio_roberta.tasks.task_file import declare_task_files

        declare_task_files([task_file] if isinstance(task_file, (str, Path)) else task_file)
    model = checkpoint_and_data(Path(path))
    return Predictor(model.checkpoint, model.data_dir, model.vocab_dir)
