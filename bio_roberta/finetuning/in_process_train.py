"""fairseq-train in the job's own process (`train`): torch, fairseq and the plugin imported once for
all of a job's runs, each run with fairseq's state fresh, its output in the run's train.log, its
Trainer kept for the predictions (bio_roberta/finetuning/job.py)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
from pathlib import Path
from typing import Iterator, Optional, TextIO

from bio_roberta.errors import FinetuneError
from bio_roberta.finetuning.fairseq_config import fairseq_config
from bio_roberta_core.processes import owner_pid
from bio_roberta_core.provenance import (
    kill_point,
)

# fairseq-train's log lines (fairseq_cli/train.py's logging.basicConfig)
FAIRSEQ_LOG_FORMAT = "%(asctime)s | %(levelname)s | %(name)s | %(message)s"
FAIRSEQ_LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


@contextlib.contextmanager
def output_to(log: TextIO) -> Iterator[None]:
    """This process' stdout, stderr and log records (the root logger's, at $LOGLEVEL or INFO, in
    fairseq-train's format) into `log` for the block only, as the fairseq-train command would
    print them; the job's own console and log get none of it."""
    root = logging.getLogger()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter(FAIRSEQ_LOG_FORMAT, FAIRSEQ_LOG_DATE_FORMAT))
    handlers, level = root.handlers[:], root.level
    root.handlers = [handler]
    root.setLevel(os.environ.get("LOGLEVEL", "INFO").upper())
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield
    finally:
        root.handlers = handlers
        root.setLevel(level)


def fresh_fairseq_state() -> None:
    """Forget what an earlier fairseq training in this process left in fairseq's module state:
    the best validation score of checkpoint_utils.save_checkpoint and should_stop_early (else a
    run's best checkpoint and early stopping compare with another run's scores) and the open
    TensorBoard writers (closed, so a run's event files are complete when it ends)."""
    from fairseq import checkpoint_utils
    from fairseq.logging import progress_bar
    from fairseq_cli import train as fairseq_train

    for function, names in (
        (checkpoint_utils.save_checkpoint, ("best",)),
        (fairseq_train.should_stop_early, ("best", "num_runs")),
    ):
        for name in names:
            function.__dict__.pop(name, None)
    for writer in progress_bar._tensorboard_writers.values():
        writer.close()
    progress_bar._tensorboard_writers.clear()


def store_fairseq_configs() -> None:
    """fairseq's config nodes in Hydra's ConfigStore, as importing fairseq stored them, if they are
    gone: a launcher that runs several jobs in one process (joblib's loky workers) sets Hydra's
    singletons to its own process' state before each job, which has none of them when fairseq
    was first imported by an earlier job."""
    from fairseq.dataclass.initialize import hydra_init
    from fairseq.models import MODEL_DATACLASS_REGISTRY
    from fairseq.registry import REGISTRIES
    from fairseq.tasks import TASK_DATACLASS_REGISTRY
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    if "config.yaml" in store.repo:
        return
    hydra_init()
    registries = {"task": TASK_DATACLASS_REGISTRY, "model": MODEL_DATACLASS_REGISTRY}
    registries.update((name, entry["dataclass_registry"]) for name, entry in REGISTRIES.items())
    for group, registry in registries.items():
        for name, dataclass in registry.items():
            node = dataclass()
            node._name = name
            store.store(name=name, group=group, node=node, provider="fairseq")


@contextlib.contextmanager
def fairseqs_hydra() -> Iterator[None]:
    """Hydra's process-wide state as fairseq-train's own Hydra use needs it, for the block: under
    the version base of the sweep's Hydra app (1.3) the hydra.experimental API fairseq converts
    its options with fails, and that conversion clears the app's global Hydra; both are as they
    were after the block. fairseq's config nodes are stored (store_fairseq_configs)."""
    from hydra import version
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.singleton import Singleton
    from hydra.initialize import get_gh_backup

    store_fairseq_configs()
    held, base = get_gh_backup(), version.getbase()
    version.VersionBase.instance().setbase(version.__compat_version__)
    try:
        yield
    finally:
        version.VersionBase.instance().version_base = base
        if held is None:
            Singleton._instances.pop(GlobalHydra, None)
        else:
            Singleton._instances[GlobalHydra] = held


# torch.optim.Optimizer's methods that torch wraps in torch._compile._disable_dynamo
OPTIMIZER_METHODS_WITHOUT_DYNAMO = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")
DYNAMO_DISABLED = "__dynamo_disable"  # where that wrapper keeps the function it calls


@contextlib.contextmanager
def optimizers_without_dynamo() -> Iterator[None]:
    """torch.optim.Optimizer's dynamo-disabled methods call themselves during the block, in a
    process that has not imported torch._dynamo: their wrapper imports torch._dynamo at its first
    call (with sympy, scipy and sklearn: about as long as importing fairseq) only to mark them not
    to be traced, which nothing does in a process without dynamo; the arithmetic is the same. Where
    torch._dynamo is imported already, or torch's wrapper has another form, nothing changes."""
    import sys

    from torch.optim import Optimizer

    seeded = []
    if "torch._dynamo" not in sys.modules:
        for name in OPTIMIZER_METHODS_WITHOUT_DYNAMO:
            function = getattr(getattr(Optimizer, name, None), "__wrapped__", None)
            if function is not None and not hasattr(function, DYNAMO_DISABLED):
                setattr(function, DYNAMO_DISABLED, function)
                seeded.append(function)
    try:
        yield
    finally:
        for function in seeded:
            if getattr(function, DYNAMO_DISABLED, None) is function:
                delattr(function, DYNAMO_DISABLED)


@contextlib.contextmanager
def trainers_kept(kept: list) -> Iterator[None]:
    """Each fairseq Trainer that fairseq-train's main builds in this process during the block
    appended to `kept` (main keeps its trainer to itself; a run predicts test with its model)."""
    from fairseq_cli import train as fairseq_train

    build = fairseq_train.Trainer

    def keep(*args, **kwargs):
        trainer = build(*args, **kwargs)
        kept.append(trainer)
        return trainer

    fairseq_train.Trainer = keep
    try:
        yield
    finally:
        fairseq_train.Trainer = build


@contextlib.contextmanager
def validation_timed(seconds: list) -> Iterator[None]:
    """The seconds of each validation pass fairseq-train's main makes in this process during the
    block appended to `seconds` (a run's record tells its validation from its updates)."""
    from fairseq_cli import train as fairseq_train

    validate = fairseq_train.validate

    def timed(*args, **kwargs):
        started = time.monotonic()
        try:
            return validate(*args, **kwargs)
        finally:
            seconds.append(time.monotonic() - started)

    fairseq_train.validate = timed
    try:
        yield
    finally:
        fairseq_train.validate = validate


def train(options: list[str], log_path: Path, validation_seconds: Optional[list] = None):
    """fairseq-train with the command line `options`, in this process (torch, fairseq and the
    plugin are imported once for every run of a job, not once more per run), its output written to
    log_path; its fairseq Trainer (None where it trained in processes of its own: several devices),
    or a FinetuneError with the log's tail when it fails. validation_seconds: a list each
    validation pass in this process appends its seconds to."""
    kept: list = []
    with open(log_path, "w") as log, output_to(log), fairseqs_hydra():
        from fairseq import options as fairseq_arguments
        from fairseq.distributed import utils as distributed_utils
        from fairseq_cli import train as fairseq_train

        fresh_fairseq_state()
        try:
            args = fairseq_arguments.parse_args_and_arch(
                fairseq_arguments.get_training_parser(), input_args=options
            )
            kill_point("fine_tune:training-started:command", owner_pid())
            with (
                trainers_kept(kept),
                validation_timed([] if validation_seconds is None else validation_seconds),
                optimizers_without_dynamo(),
            ):
                distributed_utils.call_main(fairseq_config(args), fairseq_train.main)
            failure = None
        except SystemExit as exit:  # fairseq's argparse refusing an option, as the command exits
            failure = None if exit.code in (None, 0) else f"exited with status {exit.code}"
        except Exception as error:  # noqa: BLE001 - the traceback goes to the log, as it would
            traceback.print_exc()
            failure = f"failed with {type(error).__name__}"
        finally:
            fresh_fairseq_state()
    if failure:
        raise FinetuneError(f"fairseq-train {failure}: {tail(log_path)}")
    return kept[0] if len(kept) == 1 else None


def tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log, for the one-line error of a failed record."""
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
