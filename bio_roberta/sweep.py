"""Stage 3 sweeps: tasks x seeds as a Hydra multirun, one job per (task, seed).

The same sweep runs sequentially (Hydra's basic launcher), as parallel local processes
(hydra/launcher=joblib) or on SLURM (hydra/launcher=submitit_slurm, extra `slurm`); each job is
bio_roberta.finetune.run_task_seed, which trains its runs as fairseq-train subprocesses and
writes one result record per run. Config: configs/finetune/sweep.yaml; every value, including the
tiny overrides of tests and demos (hparams.max_epoch=1, max_update=4, ...), is a Hydra override.
"""
from __future__ import annotations

import logging

import hydra
from omegaconf import DictConfig, OmegaConf

from bio_roberta.finetune import OK, run_task_seed

logger = logging.getLogger(__name__)
CONFIG_PATH = "../configs/finetune"
CONFIG_NAME = "sweep"


@hydra.main(config_path=CONFIG_PATH, config_name=CONFIG_NAME, version_base="1.3")
def main(cfg: DictConfig) -> int:
    """One Hydra job: every run of cfg.task_name with cfg.seed; returns the number of failed runs."""
    records = run_task_seed(OmegaConf.to_container(cfg, resolve=True))
    failed = [r for r in records if r["status"] != OK]
    for record in failed:
        logger.error("failed: %s seed %s fold %s: %s (log %s)", record["task"], record["seed"], record["fold"],
                     record["error"], record["log"])
    logger.info("%s seed %s: %d runs, %d failed", cfg.task_name, cfg.seed, len(records), len(failed))
    return len(failed)


if __name__ == "__main__":
    main()
