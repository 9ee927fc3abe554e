"""Stage 3 sweeps: tasks x seeds (x a grid of hparams settings) as a Hydra multirun, one job per
(task, seed, setting), or per pack of such runs sharing one device.

The same sweep runs sequentially (Hydra's basic launcher), as parallel local processes
(hydra/launcher=joblib) or on SLURM (hydra/launcher=submitit_slurm, extra `slurm`); each job is
bio_roberta.finetuning.job.run_task_seed, which trains and predicts its runs in its own process and
writes one result record per run, or a pack of runs sharing one device, each run in a process of
its own (bio_roberta.finetuning.packing). `bio-roberta finetune` and `sweep` run this Hydra app in
their own process (run_app): with the basic launcher a run costs one process and one import of
torch, fairseq and the plugin, with the others the command is the launcher. Config:
bio_roberta/configs/finetune/sweep.yaml, package data, so an installed package runs sweeps from any
directory; every value, including the tiny overrides of tests and demos (hparams.max_epoch=1,
max_update=4, ...), is a Hydra override. A grid (hparams.lr=1e-5,3e-5) runs each setting into its
own run dirs (bio_roberta.finetuning.results.run_dir).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import hydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from bio_roberta.finetuning.job import run_and_report
from bio_roberta.finetuning.sweep_config import SweepConfig
from bio_roberta_core.processes import end_with_owner

logger = logging.getLogger(__name__)
# An absolute path: Hydra then reads the config from the files beside this module wherever the
# package is installed (a relative one is looked up as a module from the working directory).
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs" / "finetune")
CONFIG_NAME = "sweep"


HYDRA_VERSION_BASE = "1.3"


@contextlib.contextmanager
def hydra_version_base_kept():
    """Hydra's process-wide version base as it was before the block: Hydra sets it for good, and
    under 1.2 or later fairseq's own Hydra use in the same process (hydra.experimental, e.g.
    convert_namespace_to_omegaconf when a checkpoint holds argparse args) fails."""
    from hydra import version

    previous = version.VersionBase.instance().getbase()
    try:
        yield
    finally:
        version.VersionBase.instance().version_base = previous


def composed_config(overrides: list[str], return_hydra_config: bool = False):
    """The sweep's config (a DictConfig; with its `hydra` node if asked) for one job's
    overrides."""
    with (
        hydra_version_base_kept(),
        hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base=HYDRA_VERSION_BASE),
    ):
        return hydra.compose(CONFIG_NAME, overrides, return_hydra_config=return_hydra_config)


def compose_config(overrides: list[str]) -> SweepConfig:
    """The config one job of the sweep gets (for running a job in-process)."""
    return OmegaConf.to_object(composed_config(overrides))


HPARAMS = "hparams."


@contextlib.contextmanager
def hydra_errors_as_usage(overrides: Sequence[str]):
    """A Hydra error in a command's overrides as a one-line UsageError naming them."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bio_roberta.errors import UsageError

    try:
        yield
    except (HydraException, OmegaConfBaseException) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UsageError(f"Hydra overrides {' '.join(overrides)}: {first_line}") from None


def hparams_grid(overrides: Sequence[str]) -> list[dict[str, Any]]:
    """The hparams settings a sweep with these Hydra overrides runs, each as HparamsOverrides'
    fields (None: the registry's value): one without a sweep override, the product of the values
    of hparams.KEY=A,B,... otherwise; a one-line UsageError for overrides Hydra refuses."""
    with hydra_errors_as_usage(overrides):
        axes = [
            [
                f"{override.key_or_group}={value}"
                for value in (
                    override.sweep_string_iterator()
                    if override.is_sweep_override()
                    else [override.get_value_element_as_str()]
                )
            ]
            for override in OverridesParser.create().parse_overrides(list(overrides))
            if override.key_or_group.startswith(HPARAMS)
        ]
        with (
            hydra_version_base_kept(),
            hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base=HYDRA_VERSION_BASE),
        ):
            return [
                OmegaConf.to_container(hydra.compose(CONFIG_NAME, list(setting)).hparams)
                for setting in itertools.product(*axes)
            ]


def grid_overrides(grid: Mapping[str, Sequence[Any]], overrides: Sequence[str]) -> list[str]:
    """The Hydra sweep overrides (hparams.lr=1e-05,3e-05) of a grid's axes, but of those that
    overrides already set: a user's value replaces that axis (tiny demos and tests)."""
    with hydra_errors_as_usage(overrides):
        given = {o.key_or_group for o in OverridesParser.create().parse_overrides(list(overrides))}
    return [
        f"{HPARAMS}{key}={','.join(map(repr, values))}"
        for key, values in grid.items()
        if f"{HPARAMS}{key}" not in given
    ]


def run_job(cfg: DictConfig) -> int:
    """One Hydra job: every run of cfg.task_name with cfg.seed, or of each run of cfg.pack at once
    (bio_roberta.finetuning.packing); returns the number of failed runs. Whichever launcher runs
    it (in the Hydra process, a joblib/loky worker, a submitit job), the job ends with the command
    that started the sweep (processes.end_with_owner)."""
    end_with_owner()
    if cfg.pack:
        from bio_roberta.finetuning.packing import run_pack

        return run_pack(cfg)
    return run_and_report(cfg)


@contextlib.contextmanager
def logging_kept() -> Iterator[None]:
    """The root logger's handlers and level as they were before the block: a Hydra app configures
    logging for the process (its own lines, then each job's), which a command running the app in
    its own process keeps only for the app's run."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers, root.level = handlers, level


def run_app(arguments: Sequence[str]) -> int:
    """The sweep's Hydra app on a Hydra command line ([--multirun] OVERRIDES) in this process, and
    its exit status: 0, or non-zero where Hydra reported an error (on stderr, as it does). Hydra's
    process-wide version base and the root logger are as they were after it."""
    from hydra import version
    from hydra._internal.utils import _run_hydra, get_args_parser

    parser = get_args_parser()
    with hydra_version_base_kept(), logging_kept():
        version.setbase(HYDRA_VERSION_BASE)
        try:
            _run_hydra(
                args=parser.parse_args(list(arguments)),
                args_parser=parser,
                task_function=run_job,
                config_path=CONFIG_DIR,
                config_name=CONFIG_NAME,
            )
        except SystemExit as exit:  # Hydra's error, reported (or its --help): the command's status
            return exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    return 0


def main() -> None:
    """The sweep's Hydra app as a command: `python -m bio_roberta.finetuning.sweep [--multirun]
    OVERRIDES`."""
    sys.exit(run_app(sys.argv[1:]))


if __name__ == "__main__":
    main()
