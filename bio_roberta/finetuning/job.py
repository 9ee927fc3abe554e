"""One fine-tuning job: a task and a seed (and, for GAD/EU-ADR, every fold) -> result records.

A run is fairseq-train from a pretrained checkpoint (its command line:
bio_roberta.finetuning.command_line), then predictions on test with the checkpoint it selected
(bio_roberta.prediction.predictions), scored; both in the job's own process (`train`), which imports
torch, fairseq and the plugin once for all its runs. Each run writes

    RESULTS/<task>/[<setting>/]seed<seed>/[fold<k>/]result.json   (bio_roberta.finetuning.results)

next to its train.log, predictions and checkpoint (<setting>: the hyperparameters overridden away
from the registry's, so each setting of a grid has its own dir). A run whose record says "ok" for
the same config hash is skipped; a run that fails is recorded as failed with its error and log;
while fairseq-train runs the record says "started", which a killed run keeps. For tests:
BIO_ROBERTA_KILL_AT=fine_tune:training-started:command SIGKILLs the command that owns the job
(`bio-roberta sweep`: the job's own process under Hydra's basic launcher, the launcher's under
joblib) as fairseq-train starts.

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
import shutil
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from bio_roberta.errors import FinetuneError
from bio_roberta.finetuning.command_line import (
    data_record,
    fairseq_options,
    hyperparameters,
    run_config,
)
from bio_roberta.finetuning.converted_data import task_data_dir
from bio_roberta.finetuning.in_process_train import train
from bio_roberta.finetuning.pretrained_model import PretrainedModel, check_converted_positions
from bio_roberta.finetuning.results import (
    EVALUATION,
    FAILED,
    MODEL_SELECTION,
    OK,
    RESULT_FILE,
    SINGLE,
    STARTED,
    ResultRecord,
    run_dir,
    run_name,
    run_setting,
    setting_name,
)
from bio_roberta.finetuning.sweep_config import SweepConfig
from bio_roberta.tasks.registry import get_task
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.provenance import (
    atomic_write_json,
    environment_record,
    file_record,
    json_hash,
)

logger = logging.getLogger(__name__)

# fairseq logs validation metrics x100; results hold fractions like bio_roberta_core.metrics.
FAIRSEQ_METRIC_SCALE = 100.0


def checkpoint_state(path: Path) -> tuple[int, Optional[float]]:
    """num_updates and the validation metric value stored in a fairseq checkpoint."""
    from bio_roberta_core.checkpoints import read_checkpoint

    state = read_checkpoint(path, mmap=True)
    extra = state.get("extra_state") or {}
    value = extra.get("val_loss")
    valid_score = None if value is None else float(value) / FAIRSEQ_METRIC_SCALE
    return state["optimizer_history"][-1]["num_updates"], valid_score


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
    cfg: SweepConfig,
    spec: TaskSpec,
    fold: Optional[int],
    role: str,
    fixed_updates: Optional[int],
    pretrained: PretrainedModel,
) -> dict[str, Any]:
    """Train, predict and score one run (or reuse its finished record); always returns a record."""
    from bio_roberta.prediction.predictions import predict, trained_model

    out = run_dir(cfg.results_dir, spec.name, cfg.seed, fold, setting_of(cfg, spec))
    log_path = out / "train.log"
    record = run_record(cfg, spec, fold, role, pretrained, str(log_path))
    record.timings = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    started = time.monotonic()
    try:
        hp = hyperparameters(spec, cfg.hparams)
        data_dir = task_data_dir(cfg.data_root, spec, fold)
        record.data = data_record(data_dir)
        record.config = run_config(
            cfg, spec, hp, fold, role, fixed_updates, pretrained, record.data
        )
        record.config_hash = json_hash(record.config)
        reused = finished_record(out, record.config_hash)
        if reused is not None:
            logger.info("%s seed %s fold %s: finished before, skipped", spec.name, cfg.seed, fold)
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
        validation_seconds: list[float] = []
        trainer = train(options, log_path, validation_seconds)
        record.timings["train_seconds"] = round(time.monotonic() - started, 3)
        if trainer is not None:  # its validation ran in this process: timed
            record.timings["valid_seconds"] = round(sum(validation_seconds), 3)
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
        # the model and task the run trained, where they give what the checkpoint file would
        loaded = trainer and trained_model(trainer, checkpoint, record.num_updates)
        del trainer
        result = predict(
            checkpoint,
            data_dir,
            out / f"test.predictions.{suffix}",
            split="test",
            spec=spec,
            loaded=loaded,
        )
        record.timings["predict_seconds"] = round(time.monotonic() - predict_started, 3)
        record.test_score = result.score
        record.test_examples = result.examples
        record.predictions = result.predictions
        record.predictions_by_id = result.predictions_by_id
        record.status = OK
    except Exception as error:  # noqa: BLE001 - every failure becomes a failed record, never a lost run
        record.error = f"{type(error).__name__}: {error}"
        record.traceback = traceback.format_exc()
        logger.error("%s seed %s fold %s failed: %s", spec.name, cfg.seed, fold, record.error)
    record.timings["seconds"] = round(time.monotonic() - started, 3)
    record.timings["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return write_record(out, record)


def run_and_report(cfg) -> int:
    """A job of one (task, seed) (cfg: its SweepConfig as Hydra gives it): every run, the failed
    ones logged with their error and log; returns the number that failed. The unpacked sweep's job
    (bio_roberta.finetuning.sweep.run_job) and a packed run's own process
    (bio_roberta.finetuning.packing) both run this."""
    from omegaconf import OmegaConf

    from bio_roberta.tasks.task_file import declare_inherited_task_files

    declare_inherited_task_files()  # the tasks of the sweep's --task-file, by name
    records = run_task_seed(OmegaConf.to_object(cfg))
    failed = [r for r in records if r["status"] != OK]
    for record in failed:
        logger.error(
            "failed: %s: %s (log %s)",
            run_name(
                record["task"], setting_name(record.get("setting")), record["seed"], record["fold"]
            ),
            record["error"],
            record["log"],
        )
    logger.info(
        "%s seed %s: %d runs, %d failed", cfg.task_name, cfg.seed, len(records), len(failed)
    )
    return len(failed)


def run_task_seed(cfg: SweepConfig) -> list[dict[str, Any]]:
    """Every run of one (task, seed): one run, or the model-selection fold then the evaluation
    folds."""
    spec = get_task(cfg.task_name)
    if spec.declaration is not None:  # a task file's: its labels as converted ("infer")
        from bio_roberta.tasks.converted_task import task_spec_of

        spec = task_spec_of(task_data_dir(cfg.data_root, spec, None))
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
    cfg: SweepConfig, spec: TaskSpec, fold: int, selection: dict, pretrained: PretrainedModel
) -> dict[str, Any]:
    """The record of an evaluation fold that cannot run because its model-selection fold failed."""
    out = run_dir(cfg.results_dir, spec.name, cfg.seed, fold, setting_of(cfg, spec))
    record = run_record(cfg, spec, fold, EVALUATION, pretrained, selection["log"])
    record.error = f"model-selection fold {spec.model_selection_fold} failed: {selection['error']}"
    return write_record(out, record)


def setting_of(cfg: SweepConfig, spec: TaskSpec) -> dict[str, Any]:
    """The run's setting: the sweep's hparams that differ from the task's registry ones."""
    return run_setting(spec.hparams, dataclasses.asdict(cfg.hparams))


def run_record(
    cfg: SweepConfig,
    spec: TaskSpec,
    fold: Optional[int],
    role: str,
    pretrained: PretrainedModel,
    log: str,
) -> ResultRecord:
    """A run's record before it has a result: failed until it says otherwise."""
    return ResultRecord(
        task=spec.name,
        seed=cfg.seed,
        fold=fold,
        role=role,
        metric=spec.metric,
        status=FAILED,
        log=log,
        setting=setting_of(cfg, spec),
        pretrained=pretrained.record,
    )


def write_record(out: Path, record: ResultRecord) -> dict[str, Any]:
    """Write a finished (or failed) run's record with its environment; the record as written."""
    written = dataclasses.replace(record, **environment_record()).to_json()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / RESULT_FILE, written)
    return written
