"""Stage 3 sweeps: tasks x seeds as a Hydra multirun, one job per (task, seed).

The same sweep runs sequentially (Hydra's basic launcher), as parallel local processes
(hydra/launcher=joblib) or on SLURM (hydra/launcher=submitit_slurm, extra `slurm`); each job is
bio_roberta.finetune.run_task_seed, which trains its runs as fairseq-train subprocesses and
writes one result record per run. Config: bio_roberta/configs/finetune/sweep.yaml, package data, so
an installed package runs sweeps from any directory; every value, including the tiny overrides of
tests and demos (hparams.max_epoch=1, max_update=4, ...), is a Hydra override.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from bio_roberta.finetune import run_task_seed
from bio_roberta.results import OK
from bio_roberta.sweep_config import SweepConfig
from bio_roberta_core.processes import end_with_owner

logger = logging.getLogger(__name__)
# An absolute path: Hydra then reads the config from the files beside this module wherever the
# package is installed (a relative one is looked up as a module from the working directory).
CONFIG_DIR = str(Path(__file__).resolve().parent / "configs" / "finetune")
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


def compose_config(overrides: list[str]) -> SweepConfig:
    """The config one job of the sweep gets (for running a job in-process)."""
    with (
        hydra_version_base_kept(),
        hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base=HYDRA_VERSION_BASE),
    ):
        return OmegaConf.to_object(hydra.compose(CONFIG_NAME, overrides))


def run_job(cfg: DictConfig) -> int:
    """One Hydra job: every run of cfg.task_name with cfg.seed; returns the number of failed
    runs. Whichever launcher runs it (in the Hydra process, a joblib/loky worker, a submitit
    job), the job ends with the command that started the sweep (processes.end_with_owner)."""
    end_with_owner()
    records = run_task_seed(OmegaConf.to_object(cfg))
    failed = [r for r in records if r["status"] != OK]
    for record in failed:
        logger.error(
            "failed: %s seed %s fold %s: %s (log %s)",
            record["task"],
            record["seed"],
            record["fold"],
            record["error"],
            record["log"],
        )
    logger.info(
        "%s seed %s: %d runs, %d failed", cfg.task_name, cfg.seed, len(records), len(failed)
    )
    return len(failed)


def main() -> None:
    """The sweep's Hydra app (`python -m bio_roberta.sweep`). Decorated when it runs, not at
    import: hydra.main sets Hydra's process-wide version base as it decorates."""
    hydra.main(config_path=CONFIG_DIR, config_name=CONFIG_NAME, version_base=HYDRA_VERSION_BASE)(
        run_job
    )()


if __name__ == "__main__":
    main()
