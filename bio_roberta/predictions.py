"""Prediction files of a fine-tuned checkpoint, and their scores (the numbers a result record holds).

``predict`` loads a checkpoint trained by the fine-tuning plugin (user_dir), runs it over one split
of its finetune-bin/<task> directory, writes the prediction file and returns the task's score
computed from that file, so the file alone reproduces the number:

  NER             CoNLL columns ``word<TAB>gold<TAB>predicted``, a blank line after each sentence
                  (conlleval reads it with ``-d '\\t'``); gold is the source BIO tag, predicted is
                  the model's tag converted to BIO; scored with entity F1.
  classification  a header ``id<TAB>group<TAB>gold<TAB>predicted`` and one row per example, in
                  the order of <split>.ids; multi-label cells hold comma-separated label symbols
                  (possibly none); group is the abstract for HOC and the example id otherwise.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta_core import metrics
from bio_roberta_core.provenance import atomic_write_text, file_record
from bio_roberta_core.tagging import BIO, convert_tags
from bio_roberta.tasks.registry import MULTILABEL, TaskSpec, get_task

CLASSIFICATION_COLUMNS = ("id", "group", "gold", "predicted")
MULTILABEL_SEPARATOR = ","


class PredictionFileError(ValueError):
    """A prediction or gold file that does not have the documented layout (names file and line)."""


@dataclass(frozen=True)
class PredictionResult:
    task: str
    split: str
    metric: str
    score: float            # fraction in [0, 1], as bio_roberta_core.metrics returns it
    examples: int
    predictions: dict       # file_record of the prediction file

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def task_spec_of(data_dir: Path) -> TaskSpec:
    """The registry entry named by finetune-bin/<task>/manifest.json."""
    manifest = Path(data_dir) / "manifest.json"
    try:
        return get_task(json.loads(manifest.read_text())["task"])
    except FileNotFoundError:
        raise FileNotFoundError(f"{manifest} not found: is {data_dir} a finetune-bin/<task> directory?") from None
    except (KeyError, json.JSONDecodeError) as error:
        raise PredictionFileError(f"{manifest}: no task name ({error})") from None


def load_finetuned(checkpoint: Path, data_dir: Path):
    """(model in eval mode, on the GPU if there is one; fairseq task) of a fine-tuning checkpoint,
    reading data from data_dir."""
    import torch
    import user_dir  # registers the plugin's tasks and the checkpoint allowlist
    from fairseq import checkpoint_utils

    overrides = {"data": str(data_dir), "user_dir": str(Path(user_dir.__file__).parent)}
    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)], arg_overrides=overrides)
    model = models[0].eval()
    return (model.cuda() if torch.cuda.is_available() else model), task


def _batches(task, split: str, batch_size: int):
    task.load_dataset(split)
    dataset = task.dataset(split)
    iterator = task.get_batch_iterator(
        dataset=dataset, max_sentences=batch_size, max_positions=task.max_positions(),
        ignore_invalid_inputs=False,
    )
    return iterator.next_epoch_itr(shuffle=False)


def _label_names(dictionary, class_ids) -> list[str]:
    return [dictionary[i + dictionary.nspecial] for i in class_ids]


def model_outputs(model, task, split: str, batch_size: int = 32) -> dict[int, tuple]:
    """example index -> (gold, predicted) in label symbols, per the task kind.

    sequence_labeling: tag lists of the tagged positions (word starts); multilabel_classification:
    label-symbol sets; sentence_prediction: one label symbol each.
    """
    import torch
    from fairseq.utils import move_to_cuda

    from user_dir.criterions.sequence_labeling import word_tags
    from user_dir.models.token_classification_head import token_classification_logits
    from user_dir.tasks.multilabel_classification import MultilabelClassificationTask
    from user_dir.tasks.sequence_labeling import SequenceLabelingTask

    on_gpu = next(model.parameters()).is_cuda
    outputs = {}
    with torch.no_grad():
        for sample in _batches(task, split, batch_size):
            sample = move_to_cuda(sample) if on_gpu else sample
            net_input, target = sample["net_input"], sample["target"]
            if isinstance(task, SequenceLabelingTask):
                logits = token_classification_logits(model, task.cfg.classification_head_name, net_input["src_tokens"])
                rows = zip(word_tags(target, target, task.tags), word_tags(logits.argmax(-1), target, task.tags))
            else:
                logits, _ = model(**net_input, features_only=True,
                                  classification_head_name=task.cfg.classification_head_name)
                if isinstance(task, MultilabelClassificationTask):
                    names = task.label_names
                    rows = (({names[i] for i in g.nonzero().flatten().tolist()},
                             {names[i] for i in p.nonzero().flatten().tolist()})
                            for g, p in zip(target, logits > 0))
                else:
                    rows = zip(_label_names(task.label_dictionary, target.view(-1).tolist()),
                               _label_names(task.label_dictionary, logits.argmax(-1).tolist()))
            outputs.update(zip(sample["id"].tolist(), rows))
    return outputs


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
                raise PredictionFileError(f"{path}:{number}: expected {columns} tab-separated columns, got {len(fields)}")
            block.append(fields)
    return blocks + ([block] if block else [])


def write_ner_predictions(data_dir: Path, split: str, outputs: dict, output: Path) -> int:
    """Join each sentence's pieces, convert predicted tags to BIO, write CoNLL; returns sentences."""
    from user_dir.tasks._finetune_bin import read_ids

    ids = read_ids(str(data_dir), split, len(outputs))
    conll = Path(data_dir) / f"{split}.conll"
    blocks = read_conll(conll, 2)
    if len(blocks) != len(ids):
        raise PredictionFileError(f"{conll} has {len(blocks)} examples but {split}.ids has {len(ids)}")
    sentences: list[tuple[str, list, list]] = []  # (id, word rows, predicted tags in the model's scheme)
    for index, ((example_id, _group), block) in enumerate(zip(ids, blocks)):
        predicted = outputs[index][1]
        if len(predicted) != len(block):
            raise PredictionFileError(
                f"{conll}: example {index} ({example_id}) has {len(block)} words but label/{split} "
                f"tags {len(predicted)} of its subwords"
            )
        if sentences and sentences[-1][0] == example_id:
            sentences[-1][1].extend(block)
            sentences[-1][2].extend(predicted)
        else:
            sentences.append((example_id, list(block), list(predicted)))
    lines = []
    for _id, rows, predicted in sentences:
        lines += [f"{word}\t{gold}\t{tag}\n" for (word, gold), tag in zip(rows, convert_tags(predicted, BIO))]
        lines.append("\n")
    atomic_write_text(output, "".join(lines))
    return len(sentences)


def write_classification_predictions(data_dir: Path, split: str, outputs: dict, output: Path) -> int:
    from user_dir.tasks._finetune_bin import read_ids

    ids = read_ids(str(data_dir), split, len(outputs))

    def cell(value):
        return MULTILABEL_SEPARATOR.join(sorted(value)) if isinstance(value, set) else value

    lines = ["\t".join(CLASSIFICATION_COLUMNS) + "\n"]
    for index, (example_id, group) in enumerate(ids):
        gold, predicted = outputs[index]
        lines.append(f"{example_id}\t{group}\t{cell(gold)}\t{cell(predicted)}\n")
    atomic_write_text(output, "".join(lines))
    return len(ids)


def score_prediction_file(path: Path, spec: TaskSpec) -> float:
    """The task's score from a prediction file alone."""
    path = Path(path)
    if spec.is_sequence_labelling:
        blocks = read_conll(path, 3)
        return metrics.score(spec, [[r[1] for r in b] for b in blocks], [[r[2] for r in b] for b in blocks])
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if tuple(header or ()) != CLASSIFICATION_COLUMNS:
            raise PredictionFileError(f"{path}:1: expected the header {'<TAB>'.join(CLASSIFICATION_COLUMNS)}")
        rows = list(reader)
    for number, row in enumerate(rows, 2):
        if len(row) != len(CLASSIFICATION_COLUMNS):
            raise PredictionFileError(f"{path}:{number}: expected {len(CLASSIFICATION_COLUMNS)} columns, got {len(row)}")
    if spec.kind == MULTILABEL:
        groups = [row[1] for row in rows]

        def sets(column):
            return [set(filter(None, row[column].split(MULTILABEL_SEPARATOR))) for row in rows]

        return metrics.score(spec, metrics.group_label_sets(groups, sets(2)), metrics.group_label_sets(groups, sets(3)))
    return metrics.score(spec, [row[2] for row in rows], [row[3] for row in rows])


def predict(
    checkpoint: Path, data_dir: Path, output: Path, split: str = "test",
    spec: Optional[TaskSpec] = None, batch_size: int = 32,
) -> PredictionResult:
    """Write ``output`` from ``checkpoint`` on ``split`` of ``data_dir`` and score it."""
    data_dir, output = Path(data_dir), Path(output)
    spec = spec or task_spec_of(data_dir)
    model, task = load_finetuned(Path(checkpoint), data_dir)
    outputs = model_outputs(model, task, split, batch_size)
    write = write_ner_predictions if spec.is_sequence_labelling else write_classification_predictions
    examples = write(data_dir, split, outputs, output)
    return PredictionResult(
        task=spec.name, split=split, metric=spec.metric, score=score_prediction_file(output, spec),
        examples=examples, predictions=file_record(output),
    )
