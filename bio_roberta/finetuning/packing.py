"""The pack jobs of a sweep that packs several fine-tuning runs on one device (`bio-roberta sweep
--runs-per-device N|auto`, planned by bio_roberta/commands/_packing.py), and each run's own process.

A pack job (`run_pack`, the hook in bio_roberta.finetuning.sweep.run_job) claims one device and
starts each of its runs in a process of its own at once: `python -m bio_roberta.finetuning.packing
RUN_CONFIG`, a fresh interpreter (fairseq keeps per-process module state, so one process per
concurrent run; and nothing is forked from a process that may hold CUDA state), pinned to the device
by CUDA_VISIBLE_DEVICES, with its share of the CPU cores as OMP_NUM_THREADS unless that is set. The
run's process is the job of one run it would have been (job.run_and_report on the same config but
its task and seed): the same fairseq command line, seed, run dir, record and config hash, so a
packed run's result is the one it gets alone (tests/test_packing.py: bit-identical on CPU at the
same thread count), a finished run is kept on re-run whichever way it ran, and the progress lines
and locks of the command, which watch run dirs, are unchanged. Each run's process ends with the pack
job (processes.end_with_parent) and with the command (processes.end_with_owner), so a killed sweep
leaves no run training.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.processes import end_with_owner, end_with_parent
from preprocess.text_shards import usable_cores

logger = logging.getLogger(__name__)

CPU = "cpu"


class PackError(BioRobertaError):
    """A pack job cannot run its runs (no device free for it)."""


def run_pack(cfg) -> int:
    """A pack job (cfg: its Hydra config, cfg.pack its runs): every run in a process of its own,
    all at once, on one device; the number of failed runs (a run's process that ended without its
    exit status, killed, counts one)."""
    runs = [(run.task_name, run.seed) for run in cfg.pack]
    devices = list(cfg.devices) if cfg.devices is not None else None
    with claimed_device(devices, Path(cfg.results_dir)) as device:
        environment = run_environment(device, len(runs), len(devices or [device]))
        logger.info(
            "pack of %d runs on %s (OMP_NUM_THREADS=%s): %s",
            len(runs),
            device or "this job's devices",
            environment["OMP_NUM_THREADS"],
            ", ".join(f"{task} seed {seed}" for task, seed in runs),
        )
        started = []
        try:
            for task, seed in runs:
                command = [
                    sys.executable,
                    "-m",
                    __name__,
                    json.dumps(run_config(cfg, task, seed, device)),
                ]
                process = subprocess.Popen(command, env=environment, preexec_fn=end_with_parent)
                started.append((task, seed, process))
            failed = 0
            for task, seed, process in started:
                status = process.wait()
                if status < 0:
                    logger.error(
                        "%s seed %s: its process was killed by signal %d (out of memory?); its "
                        "record says where it stopped",
                        task,
                        seed,
                        -status,
                    )
                failed += status if status >= 0 else 1
        except BaseException:
            for _, _, process in started:
                process.kill()
            raise
    logger.info("pack of %d runs: %d failed", len(runs), failed)
    return failed


def run_config(cfg, task: str, seed: int, device: Optional[str]) -> dict[str, Any]:
    """The config of one run of a pack: the pack job's, with the run's task and seed, as the job of
    that run alone would have it; on a claimed device, `cpu` says which (not part of a run's
    config hash: a GPU run whose GPU is missing fails rather than training on the CPU)."""
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(cfg, resolve=True)
    config.update(task_name=task, seed=seed, pack=[], devices=None)
    if device is not None:
        config["cpu"] = device == CPU
    return config


def run_environment(device: Optional[str], runs: int, devices: int) -> dict[str, str]:
    """The environment of a pack's runs: pinned to the device (none visible for the CPU; None:
    the job's own), and OMP_NUM_THREADS, unless set, the cores of this job's share of the host
    (all of them over the devices packing at once) over its runs."""
    environment = dict(os.environ)
    if device is not None:
        environment["CUDA_VISIBLE_DEVICES"] = "" if device == CPU else device
    threads = max(1, usable_cores() // (runs * devices))
    environment.setdefault("OMP_NUM_THREADS", str(threads))
    return environment


@contextlib.contextmanager
def claimed_device(devices: Optional[list[str]], results_dir: Path) -> Iterator[Optional[str]]:
    """One of `devices` that no other pack job of the sweep holds, held (flock under
    RESULTS/hydra/devices, released when the job ends or dies) for the block; None: the job's
    own devices (SLURM)."""
    if devices is None:
        yield None
        return
    claims = results_dir / "hydra" / "devices"
    claims.mkdir(parents=True, exist_ok=True)
    for device in devices:
        handle = open(claims / f"{device.replace('/', '_')}.lock", "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        try:
            yield device
        finally:
            handle.close()
        return
    raise PackError(
        f"every device of the sweep ({', '.join(devices)}) is held by another of its pack jobs: "
        f"more packs run at once than there are devices ({claims})"
    )


def main(argv: Optional[list[str]] = None) -> int:
    """One run of a pack, in its own process: the job of that run alone (job.run_and_report) on
    the config (JSON) its pack job gives, ending with the command as a job does; exit status: its
    failed runs."""
    from omegaconf import OmegaConf

    from bio_roberta.finetuning.job import run_and_report
    from bio_roberta.finetuning.sweep_config import SweepConfig

    logging.basicConfig(
        level=logging.INFO,
        format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s",
        stream=sys.stderr,
    )
    (config,) = sys.argv[1:] if argv is None else argv
    cfg = OmegaConf.merge(OmegaConf.structured(SweepConfig), json.loads(config))
    end_with_owner()
    return min(run_and_report(cfg), 125)


if __name__ == "__main__":
    status = main()
    # the run's records and logs are written: skip the interpreter's teardown of torch and fairseq
    # (7.4 s measured on the 2-core CPU at load 7, per run), as a run's process ends
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
