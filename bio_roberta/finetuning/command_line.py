"""The fairseq-train command line of one fine-tuning run, and the config that decides its outcome.

fairseq's fine-tuning route (--restore-file with the optimizer, dataloader, meters and lr
scheduler reset), with the fairseq task and criterion of the task's kind
(bio_roberta.tasks.kinds), the hyperparameters of its registry entry (bio_roberta.tasks.registry),
the optimizer of the sweep config (`optimization`), validation on the task's metric, the best
checkpoint kept. The runner (bio_roberta.finetuning.job) starts it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Optional

from bio_roberta.errors import FinetuneError
from bio_roberta.finetuning.pretrained_model import PretrainedModel
from bio_roberta.finetuning.sweep_config import HparamsOverrides, SweepConfig
from bio_roberta.tasks.spec import Hyperparameters, TaskSpec
from bio_roberta_core.provenance import file_record, json_hash


def hyperparameters(spec: TaskSpec, overrides: HparamsOverrides) -> Hyperparameters:
    """The registry's hyperparameters with the non-null overrides of the sweep config applied."""
    chosen = {
        key: value for key, value in dataclasses.asdict(overrides).items() if value is not None
    }
    return dataclasses.replace(spec.hparams, **chosen)


def train_examples(data_dir: Path) -> int:
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    prefix = data_dir / "input0" / "train"
    if not Path(f"{prefix}.idx").exists():
        raise FinetuneError(
            f"{prefix}.idx not found: convert the task first (bio-roberta convert-task)"
        )
    return len(MMapIndexedDataset(str(prefix)))


def task_options(spec: TaskSpec, max_positions: int) -> list[str]:
    """fairseq task + criterion options of the task's kind (bio_roberta/tasks/kinds.py)."""
    kind = spec.task_kind
    return [
        "--task",
        kind.fairseq_task,
        "--criterion",
        kind.criterion,
        "--max-positions",
        str(max_positions),
        *kind.fairseq_options(spec),
    ]


def command_line_options(options: dict[str, Any]) -> list[str]:
    """{"adam_eps": 1e-06, ...} as fairseq-train options: --adam-eps 1e-06 ..."""
    return [
        item
        for key, value in options.items()
        for item in (f"--{key.replace('_', '-')}", str(value))
    ]


def fairseq_options(
    cfg: SweepConfig,
    spec: TaskSpec,
    hp: Hyperparameters,
    data_dir: Path,
    save_dir: Path,
    fixed_updates: Optional[int],
    pretrained: PretrainedModel,
) -> list[str]:
    """The fairseq-train command line of one run (without the executable)."""
    import torch

    import user_dir

    # The lr schedule spans max_epoch (or the max_update cap); an evaluation fold keeps that
    # schedule and stops after the model-selection fold's best number of updates.
    total_updates = math.ceil(train_examples(data_dir) / hp.batch_size) * hp.max_epoch
    if cfg.max_update:
        total_updates = min(total_updates, cfg.max_update)
    stop_after = min(total_updates, fixed_updates) if fixed_updates else total_updates
    options = [
        str(data_dir),
        "--user-dir",
        str(Path(user_dir.__file__).parent),
        *pretrained.architecture,
        *task_options(spec, pretrained.max_positions),
        "--restore-file",
        str(cfg.pretrained),
        "--reset-optimizer",
        "--reset-dataloader",
        "--reset-meters",
        "--reset-lr-scheduler",
        *command_line_options(cfg.optimization),
        "--weight-decay",
        str(hp.weight_decay),
        "--lr",
        str(hp.lr),
        "--total-num-update",
        str(total_updates),
        "--warmup-updates",
        str(int(hp.warmup_ratio * total_updates)),
        "--dropout",
        str(hp.dropout),
        "--attention-dropout",
        str(hp.dropout),
        "--batch-size",
        str(hp.batch_size),
        "--required-batch-size-multiple",
        "1",
        "--max-epoch",
        str(hp.max_epoch),
        "--max-update",
        str(stop_after),
        "--validate-interval-updates",
        str(hp.validate_interval_updates),
        "--best-checkpoint-metric",
        spec.metric,
        "--maximize-best-checkpoint-metric",
        "--save-dir",
        str(save_dir),
        "--no-epoch-checkpoints",
        "--no-save-optimizer-state",
        "--seed",
        str(cfg.seed),
        "--num-workers",
        str(cfg.num_workers),
        "--log-format",
        "simple",
        "--log-interval",
        str(cfg.log_interval),
        "--tensorboard-logdir",  # beside the checkpoints, as the pretraining configs log
        str(save_dir.parent / "tensorboard"),
    ]
    if fixed_updates is None:
        # checkpoint_best is saved at every validation, not only at epoch ends
        options += [
            "--save-interval-updates",
            str(hp.validate_interval_updates),
            "--keep-interval-updates",
            "1",
            "--no-last-checkpoints",
        ]
        if hp.patience is not None:
            options += ["--patience", str(hp.patience)]
    options += ["--encoder-implementation", cfg.encoder_implementation]
    use_cpu = cfg.cpu
    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    if use_cpu:
        options.append("--cpu")
    elif cfg.fp16:
        options.append("--fp16")
    return options + [str(option) for option in cfg.extra_args or []]


def data_record(data_dir: Path) -> dict[str, Any]:
    manifest = data_dir / "manifest.json"
    if not manifest.exists():
        raise FinetuneError(
            f"{manifest} not found: is {data_dir} a converted finetune-bin/<task> directory?"
        )
    recorded = json.loads(manifest.read_text())
    return {
        "dir": str(data_dir.resolve()),
        "manifest": file_record(manifest),
        "manifest_hash": json_hash(recorded),
        # the route of inputs longer than the positions (bio_roberta/tasks/truncation.py); None:
        # converted before routes were recorded, its kind's default
        "long_inputs": recorded.get("long_inputs"),
    }


def run_config(
    cfg: SweepConfig,
    spec: TaskSpec,
    hp: Hyperparameters,
    fold: Optional[int],
    role: str,
    fixed_updates: Optional[int],
    pretrained: PretrainedModel,
    data: dict[str, Any],
) -> dict[str, Any]:
    """Everything that decides a run's outcome; its hash decides whether a finished run is
    reused."""
    return {
        "task": spec.name,
        "seed": cfg.seed,
        "fold": fold,
        "role": role,
        "arch": cfg.arch,
        "metric": spec.metric,
        "hparams": dataclasses.asdict(hp),
        "optimization": dict(cfg.optimization),
        "fixed_updates": fixed_updates,
        "max_update": cfg.max_update,
        "max_positions": pretrained.max_positions,
        "fp16": bool(cfg.fp16),
        "encoder_implementation": cfg.encoder_implementation,
        "extra_args": list(cfg.extra_args or []),
        "pretrained_sha256": pretrained.record["sha256"],
        "data_manifest_hash": data["manifest_hash"],
    }
