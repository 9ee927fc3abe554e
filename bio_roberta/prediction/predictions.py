"""Predictions of a fine-tuned checkpoint, and their scores (the numbers a result record holds).

``predict`` loads a checkpoint trained by the fine-tuning plugin (user_dir), runs it over one split
of its finetune-bin/<task> directory, writes the prediction file of the task's kind
(bio_roberta/tasks/prediction_files.py) and returns the task's score computed from that file,
so the file alone reproduces the number. Beside it, the same predictions keyed by the release's
example ids (test.predictions.json, the form of bio_roberta/blurb/predictions_file.py), which
`bio-roberta rescore` scores against the release files.

A split converted with --long-inputs windows is predicted window by window and scored over whole
documents: the prediction file of a word-tagging kind merges its windows (each word from the
window where it has the most context), and a classification's windows' logits are pooled here,
by the manifest's pooling (mean or max), before its label or score is decided.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta.blurb.predictions_file import dataset_name, write_predictions_file
from bio_roberta.tasks.converted_task import task_spec_of
from bio_roberta.tasks.kinds import label_symbols
from bio_roberta.tasks.prediction_files import (
    PredictionFile,
    PredictionFileError,
    document_rows,
    read_windows,
)
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta.tasks.truncation import LongInputs
from bio_roberta_core.provenance import file_record
from bio_roberta_core.windows import pool_logits


@dataclass(frozen=True)
class PredictionResult:
    task: str
    split: str
    metric: str
    score: float  # fraction in [0, 1], as bio_roberta_core.metrics returns it
    examples: int
    predictions: dict  # file_record of the prediction file
    predictions_by_id: dict  # file_record of the same predictions keyed by example id

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def load_finetuned(checkpoint: Path, data_dir: Path):
    """(model in eval mode, on the GPU if there is one; fairseq task) of a fine-tuning checkpoint,
    reading data from data_dir."""
    import torch
    from fairseq import checkpoint_utils

    import user_dir  # registers the plugin's tasks and the checkpoint allowlist

    overrides = {"data": str(data_dir), "user_dir": str(Path(user_dir.__file__).parent)}
    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides=overrides
    )
    model = models[0].eval()
    return (model.cuda() if torch.cuda.is_available() else model), task


def trained_model(trainer, checkpoint: Path, updates: int):
    """(model in eval mode, fairseq task) of a checkpoint from the fairseq Trainer that wrote it
    after `updates` updates, as load_finetuned gives them, without building either again: the model
    as trained when the checkpoint holds its last state, else with the checkpoint's weights loaded
    into it. None where load_finetuned's model could differ: weights not fp32 (load_finetuned's
    are), or not on the device it chooses."""
    import torch
    from fairseq import checkpoint_utils

    model = trainer.get_model()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if any(p.dtype != torch.float32 or p.device.type != device.type for p in model.parameters()):
        return None
    if updates != trainer.get_num_updates():
        state = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint))
        model.set_num_updates(updates)
        model.load_state_dict(state["model"], strict=True, model_cfg=state["cfg"].model)
    return model.eval(), trainer.task


def _dataset(task, split: str):
    """The task's dataset of `split`, loaded once."""
    if split not in task.datasets:
        task.load_dataset(split)
    return task.dataset(split)


def _per_example(model, task, split: str, batch_size: int, rows) -> dict[int, object]:
    """example index -> its value of rows(sample) (one per example of each batch, in order), the
    model on the device its parameters are on, without gradients."""
    import torch
    from fairseq.utils import move_to_cuda

    on_gpu = next(model.parameters()).is_cuda
    iterator = task.get_batch_iterator(
        dataset=_dataset(task, split),
        max_sentences=batch_size,
        max_positions=task.max_positions(),
        ignore_invalid_inputs=False,
    )
    values = {}
    with torch.no_grad():
        for sample in iterator.next_epoch_itr(shuffle=False):
            sample = move_to_cuda(sample) if on_gpu else sample
            values.update(zip(sample["id"].tolist(), rows(sample)))
    return values


def model_outputs(
    model, task, prediction_file: PredictionFile, split: str, batch_size: int = 32
) -> dict[int, tuple]:
    """example index -> (gold, predicted) in label symbols, as the task kind's prediction file
    has them."""
    return _per_example(
        model, task, split, batch_size, lambda sample: prediction_file.rows(model, task, sample)
    )


def pooled_outputs(
    model, task, prediction_file, split: str, windows: list, pooling: str, batch_size: int = 32
) -> dict[int, tuple]:
    """document index -> (gold, predicted) of a classification split converted with windows: the
    head's logits of each window, pooled over a document's windows, then decided."""

    def logits_and_targets(sample):
        logits = prediction_file.head_logits(model, task, sample).float().cpu()
        return zip(logits, sample["target"].cpu())

    windows_out = _per_example(model, task, split, batch_size, logits_and_targets)
    outputs = {}
    for document, indices in enumerate(document_rows(windows)):
        pooled = pool_logits([windows_out[index][0] for index in indices], pooling)
        target = windows_out[indices[0]][1]
        (outputs[document],) = prediction_file.decide(task, pooled[None], target[None])
    return outputs


def long_inputs_of(data_dir: Path, spec: TaskSpec) -> LongInputs:
    """The route of long inputs finetune-bin/<task>/manifest.json records (its kind's default for
    a manifest written before routes were recorded)."""
    manifest = json.loads((Path(data_dir) / "manifest.json").read_text())
    return LongInputs.from_dict(manifest.get("long_inputs"), spec.task_kind.long_inputs)


def score_prediction_file(path: Path, spec: TaskSpec) -> float:
    """The task's score from a prediction file alone."""
    return spec.score(*spec.task_kind.predictions.read(Path(path)))


def predict(
    checkpoint: Path,
    data_dir: Path,
    output: Path,
    split: str = "test",
    spec: Optional[TaskSpec] = None,
    batch_size: int = 32,
    loaded: Optional[tuple] = None,
) -> PredictionResult:
    """Write ``output`` from ``checkpoint`` on ``split`` of ``data_dir`` and score it; write the
    predictions keyed by example id beside it (``output`` with the suffix .json). ``loaded``: the
    checkpoint's (model, task) where they are at hand (trained_model), else load_finetuned's."""
    data_dir, output = Path(data_dir), Path(output)
    spec = spec or task_spec_of(data_dir)
    prediction_file = spec.task_kind.predictions
    model, task = loaded or load_finetuned(Path(checkpoint), data_dir)
    long_inputs = long_inputs_of(data_dir, spec)
    if long_inputs.pooling is not None:
        windows = read_windows(data_dir, split, len(_dataset(task, split)))
        if windows is None:
            raise PredictionFileError(
                f"{data_dir}: its manifest records windows but {split}.windows is missing; "
                "convert the task again"
            )
        outputs = pooled_outputs(
            model, task, prediction_file, split, windows, long_inputs.pooling, batch_size
        )
    else:
        outputs = model_outputs(model, task, prediction_file, split, batch_size)
    examples = prediction_file.write(data_dir, split, outputs, output)
    by_id = output.with_suffix(".json")
    write_predictions_file(
        by_id,
        dataset_name(spec),
        str(checkpoint),
        prediction_file.by_id(
            data_dir, split, outputs, dict(zip(label_symbols(spec), spec.labels))
        ),
    )
    return PredictionResult(
        task=spec.name,
        split=split,
        metric=spec.metric,
        score=score_prediction_file(output, spec),
        examples=examples,
        predictions=file_record(output),
        predictions_by_id=file_record(by_id),
    )
