"""One fine-tuning job: a task and a seed (and, for GAD/EU-ADR, every fold) -> result records.

A run is fairseq-train from a pretrained checkpoint by fairseq's fine-tuning route (--restore-file
with the optimizer, dataloader, meters and lr scheduler reset), with the fairseq task and criterion
of the task's kind (bio_roberta.tasks.kinds), the hyperparameters of its registry entry
(bio_roberta.tasks.registry), the optimizer of the sweep config (`optimization`), validation on the
task's metric, the best checkpoint kept; then predictions on test (bio_roberta.predictions),
scored. Each run writes

    RESULTS/<task>/seed<seed>/[fold<k>/]result.json   (bio_roberta.results)

next to its train.log, predictions and checkpoint. A run whose record says "ok" for the same
config hash is skipped; a run that fails is recorded as failed with its error and log; while
fairseq-train runs the record says "started", which a killed run keeps. fairseq-train ends with
the job (bio_roberta_core.processes). For tests: BIO_ROBERTA_KILL_AT=
fine_tune:training-started:parent SIGKILLs the job's parent (`bio-roberta sweep`) once
fairseq-train runs.

Cross-validation tasks (TaskSpec.folds): the model-selection fold (fold 1) is trained with
validation and early stopping like any task; the number of updates of its best validation step
is the early-stopping setting for the evaluation folds (2-10), which train exactly that many
updates (same schedule otherwise) and are scored with their last checkpoint. The seed's score is
the median of its evaluation folds' test scores (bio_roberta.report); fold 1's test score is
recorded but enters no median.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from bio_roberta.results import (
    EVALUATION,
    FAILED,
    MODEL_SELECTION,
    OK,
    RESULT_FILE,
    SINGLE,
    STARTED,
    ResultRecord,
    run_dir,
)
from bio_roberta.tasks.registry import Hyperparameters, TaskSpec, get_task
from bio_roberta_core.processes import end_with_parent
from bio_roberta_core.provenance import (
    atomic_write_json,
    environment_record,
    file_record,
    json_hash,
    kill_point,
    sha256_file,
)

logger = logging.getLogger(__name__)

# fairseq logs validation metrics x100; results hold fractions like bio_roberta_core.metrics.
FAIRSEQ_METRIC_SCALE = 100.0


class FinetuneError(RuntimeError):
    """A run cannot start or finish; the message names the file or setting to fix."""


def task_data_dir(data_root: str | os.PathLike, spec: TaskSpec, fold: Optional[int]) -> Path:
    """finetune-bin/<task>[/fold<k>] (layout: user_dir/tasks/sequence_labeling.py)."""
    path = Path(data_root) / spec.name
    return path / f"fold{fold}" if fold is not None else path


def hyperparameters(spec: TaskSpec, overrides: dict[str, Any]) -> Hyperparameters:
    """The registry's hyperparameters with the non-null overrides of the sweep config applied."""
    chosen = {key: value for key, value in (overrides or {}).items() if value is not None}
    unknown = set(chosen) - {f.name for f in dataclasses.fields(Hyperparameters)}
    if unknown:
        raise FinetuneError(
            f"unknown hparams override(s) {sorted(unknown)}; known: "
            f"{[f.name for f in dataclasses.fields(Hyperparameters)]}"
        )
    return dataclasses.replace(spec.hparams, **chosen)


def train_examples(data_dir: Path) -> int:
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    prefix = data_dir / "input0" / "train"
    if not Path(f"{prefix}.idx").exists():
        raise FinetuneError(
            f"{prefix}.idx not found: convert the task first (bio-roberta convert-task)"
        )
    return len(MMapIndexedDataset(str(prefix)))


# The model-shape fields of a RoBERTa checkpoint's config, as fairseq-train options.
ARCHITECTURE_FIELDS = (
    "encoder_layers",
    "encoder_embed_dim",
    "encoder_ffn_embed_dim",
    "encoder_attention_heads",
)


@dataclasses.dataclass(frozen=True)
class PretrainedModel:
    """What the runs take from the pretrained checkpoint: its file record (result records'
    "pretrained"), the --arch options to fine-tune it and its positions, which its position
    embeddings fix."""

    record: dict[str, Any]
    architecture: list[str]
    max_positions: int

    @classmethod
    def read(cls, cfg: dict[str, Any]) -> "PretrainedModel":
        """The sweep's `arch` if set, else the checkpoint's own architecture (its name and its
        layer/width/head overrides), so a distilled or resized model needs no flags to match its
        weights."""
        from bio_roberta_core.checkpoints import read_checkpoint

        path = Path(cfg["pretrained"])
        if not path.is_file():
            raise FinetuneError(f"pretrained checkpoint {path} does not exist")
        state = read_checkpoint(path, mmap=True)
        model = (state.get("cfg") or {}).get("model") or state.get("args")
        field = model.get if isinstance(model, dict) else lambda name: getattr(model, name, None)
        if not field("max_positions"):
            raise FinetuneError(
                f"{path} records no model max_positions; is it a fairseq RoBERTa checkpoint?"
            )
        if cfg.get("arch"):
            architecture = ["--arch", cfg["arch"]]
        elif field("_name") or field("arch"):
            architecture = ["--arch", field("_name") or field("arch")]
            for name in ARCHITECTURE_FIELDS:
                if field(name) is not None:
                    architecture += [f"--{name.replace('_', '-')}", str(field(name))]
        else:
            raise FinetuneError(f"{path} records no architecture; set arch=<name> in the sweep")
        record = {
            "path": str(path.resolve()),
            "sha256": sha256_file(path),
            "size": path.stat().st_size,
        }
        return cls(record, architecture, int(field("max_positions")))


def check_converted_positions(
    cfg: dict[str, Any], spec: TaskSpec, data_dir: Path, pretrained: PretrainedModel
) -> None:
    """Stop before training a model on examples longer than its positions (convert-task's
    --max-positions)."""
    converted = json.loads((data_dir / "manifest.json").read_text()).get("max_positions")
    positions = pretrained.max_positions
    if converted and converted > positions:
        raise FinetuneError(
            f"{data_dir} was converted for {converted} positions but {cfg['pretrained']} "
            f"has {positions}: re-run `bio-roberta convert-task {spec.name} "
            f"--max-positions {positions} --out "
            f"{task_data_dir(cfg['data_root'], spec, None)}` with its --data and --vocab"
        )


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
    cfg: dict[str, Any],
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
    if cfg.get("max_update"):
        total_updates = min(total_updates, cfg["max_update"])
    stop_after = min(total_updates, fixed_updates) if fixed_updates else total_updates
    options = [
        str(data_dir),
        "--user-dir",
        str(Path(user_dir.__file__).parent),
        *pretrained.architecture,
        *task_options(spec, pretrained.max_positions),
        "--restore-file",
        str(cfg["pretrained"]),
        "--reset-optimizer",
        "--reset-dataloader",
        "--reset-meters",
        "--reset-lr-scheduler",
        *command_line_options(cfg["optimization"]),
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
        str(cfg["seed"]),
        "--num-workers",
        str(cfg.get("num_workers", 1)),
        "--log-format",
        "simple",
        "--log-interval",
        str(cfg.get("log_interval", 50)),
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
    use_cpu = cfg.get("cpu")
    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    if use_cpu:
        options.append("--cpu")
    elif cfg.get("fp16"):
        options.append("--fp16")
    return options + [str(option) for option in cfg.get("extra_args") or []]


def checkpoint_state(path: Path) -> tuple[int, Optional[float]]:
    """num_updates and the validation metric value stored in a fairseq checkpoint."""
    from bio_roberta_core.checkpoints import read_checkpoint

    state = read_checkpoint(path, mmap=True)
    extra = state.get("extra_state") or {}
    value = extra.get("val_loss")
    valid_score = None if value is None else float(value) / FAIRSEQ_METRIC_SCALE
    return state["optimizer_history"][-1]["num_updates"], valid_score


def data_record(data_dir: Path) -> dict[str, Any]:
    manifest = data_dir / "manifest.json"
    if not manifest.exists():
        raise FinetuneError(
            f"{manifest} not found: is {data_dir} a converted finetune-bin/<task> directory?"
        )
    return {
        "dir": str(data_dir.resolve()),
        "manifest": file_record(manifest),
        "manifest_hash": json_hash(json.loads(manifest.read_text())),
    }


def run_config(
    cfg: dict[str, Any],
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
        "seed": cfg["seed"],
        "fold": fold,
        "role": role,
        "arch": cfg["arch"],
        "metric": spec.metric,
        "hparams": dataclasses.asdict(hp),
        "optimization": dict(cfg["optimization"]),
        "fixed_updates": fixed_updates,
        "max_update": cfg.get("max_update"),
        "max_positions": pretrained.max_positions,
        "fp16": bool(cfg.get("fp16")),
        "extra_args": list(cfg.get("extra_args") or []),
        "pretrained_sha256": pretrained.record["sha256"],
        "data_manifest_hash": data["manifest_hash"],
    }


def finished_record(path: Path, config_hash: str) -> Optional[dict[str, Any]]:
    """The record at path if it is a successful run of the same config."""
    try:
        record = json.loads((path / RESULT_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if record.get("status") == OK and record.get("config_hash") == config_hash:
        return record
    return None


def fine_tune(
    cfg: dict[str, Any],
    spec: TaskSpec,
    fold: Optional[int],
    role: str,
    fixed_updates: Optional[int],
    pretrained: PretrainedModel,
) -> dict[str, Any]:
    """Train, predict and score one run (or reuse its finished record); always returns a record."""
    from bio_roberta.predictions import predict

    out = run_dir(cfg["results_dir"], spec.name, cfg["seed"], fold)
    log_path = out / "train.log"
    record = run_record(cfg, spec, fold, role, pretrained, str(log_path))
    record.timings = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    started = time.monotonic()
    try:
        hp = hyperparameters(spec, cfg.get("hparams") or {})
        data_dir = task_data_dir(cfg["data_root"], spec, fold)
        record.data = data_record(data_dir)
        record.config = run_config(
            cfg, spec, hp, fold, role, fixed_updates, pretrained, record.data
        )
        record.config_hash = json_hash(record.config)
        reused = finished_record(out, record.config_hash)
        if reused is not None:
            logger.info(
                "%s seed %s fold %s: finished before, skipped", spec.name, cfg["seed"], fold
            )
            return reused
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        check_converted_positions(cfg, spec, data_dir, pretrained)
        options = fairseq_options(
            cfg, spec, hp, data_dir, out / "checkpoints", fixed_updates, pretrained
        )
        record.config["fairseq_args"] = options
        # what a killed sweep leaves: a run the report lists as unfinished, not one left out
        started_record = dataclasses.replace(record, status=STARTED, **environment_record())
        atomic_write_json(out / RESULT_FILE, started_record.to_json())
        with open(log_path, "w") as log:
            train = subprocess.Popen(
                [sys.executable, "-m", "fairseq_cli.train", *options],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=end_with_parent,
            )
            kill_point("fine_tune:training-started:parent", os.getppid())
            train.wait()
        record.timings["train_seconds"] = round(time.monotonic() - started, 3)
        if train.returncode != 0:
            raise FinetuneError(
                f"fairseq-train exited with status {train.returncode}: {tail(log_path)}"
            )
        selected = "checkpoint_last.pt" if fixed_updates else "checkpoint_best.pt"
        checkpoint = out / "checkpoints" / selected
        if not checkpoint.exists():
            raise FinetuneError(f"fairseq-train wrote no {checkpoint} (log: {log_path})")
        for interval_checkpoint in (out / "checkpoints").glob("checkpoint_*_*.pt"):
            interval_checkpoint.unlink()
        record.num_updates, record.valid_score = checkpoint_state(checkpoint)
        record.checkpoint = file_record(checkpoint)
        record.checkpoint_selection = (
            f"last after {fixed_updates} updates" if fixed_updates else "best on valid"
        )
        predict_started = time.monotonic()
        suffix = spec.task_kind.predictions.suffix
        result = predict(
            checkpoint, data_dir, out / f"test.predictions.{suffix}", split="test", spec=spec
        )
        record.timings["predict_seconds"] = round(time.monotonic() - predict_started, 3)
        record.test_score = result.score
        record.test_examples = result.examples
        record.predictions = result.predictions
        record.status = OK
    except Exception as error:  # noqa: BLE001 - every failure becomes a failed record, never a lost run
        record.error = f"{type(error).__name__}: {error}"
        record.traceback = traceback.format_exc()
        logger.error("%s seed %s fold %s failed: %s", spec.name, cfg["seed"], fold, record.error)
    record.timings["seconds"] = round(time.monotonic() - started, 3)
    record.timings["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return write_record(out, record)


def tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log, for the one-line error of a failed record."""
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def run_task_seed(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run of one (task, seed): one run, or the model-selection fold then the evaluation
    folds."""
    spec = get_task(cfg["task_name"])
    pretrained = PretrainedModel.read(cfg)
    if not spec.folds:
        return [fine_tune(cfg, spec, None, SINGLE, None, pretrained)]
    selection = fine_tune(cfg, spec, spec.model_selection_fold, MODEL_SELECTION, None, pretrained)
    records = [selection]
    for fold in spec.evaluation_folds:
        if selection["status"] == OK:
            records.append(
                fine_tune(cfg, spec, fold, EVALUATION, selection["num_updates"], pretrained)
            )
        else:
            records.append(failed_without_selection(cfg, spec, fold, selection, pretrained))
    return records


def failed_without_selection(
    cfg, spec: TaskSpec, fold: int, selection: dict, pretrained: PretrainedModel
) -> dict[str, Any]:
    """The record of an evaluation fold that cannot run because its model-selection fold failed."""
    out = run_dir(cfg["results_dir"], spec.name, cfg["seed"], fold)
    record = run_record(cfg, spec, fold, EVALUATION, pretrained, selection["log"])
    record.error = f"model-selection fold {spec.model_selection_fold} failed: {selection['error']}"
    return write_record(out, record)


def run_record(
    cfg: dict[str, Any],
    spec: TaskSpec,
    fold: Optional[int],
    role: str,
    pretrained: PretrainedModel,
    log: str,
) -> ResultRecord:
    """A run's record before it has a result: failed until it says otherwise."""
    return ResultRecord(
        task=spec.name,
        seed=cfg["seed"],
        fold=fold,
        role=role,
        metric=spec.metric,
        status=FAILED,
        log=log,
        pretrained=pretrained.record,
    )


def write_record(out: Path, record: ResultRecord) -> dict[str, Any]:
    """Write a finished (or failed) run's record with its environment; the record as written."""
    written = dataclasses.replace(record, **environment_record()).to_json()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / RESULT_FILE, written)
    return written
