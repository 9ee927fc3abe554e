"""Data-parallel training that really synchronises, on CPU (gloo) as on GPUs (NCCL).

Stock fairseq 0.12 has three gaps, all in fairseq/distributed/utils.py's call_main path:
  * under torchrun it only joins the process group when distributed_world_size > 1, and the
    default is the number of local GPUs (1 on CPU or on one-GPU nodes), so every process trains
    its own copy of the model;
  * with WORLD_SIZE set it divides the rank by torch.cuda.device_count() (ZeroDivisionError on
    CPU) and `--cpu --distributed-world-size N` spawns min(#GPUs, N) = 0 workers;
  * the backend stays NCCL and the pytorch_ddp wrapper passes device_ids, neither works on CPU.
Importing the plugin wraps call_main so that torchrun's environment (WORLD_SIZE, RANK,
LOCAL_RANK, MASTER_ADDR/PORT) is adopted whatever the configured world size, each process uses
the GPU of its LOCAL_RANK, and CPU runs use gloo, fairseq's own legacy_ddp gradient all-reduce
and spawn their own workers. It also lets bf16 train on GPUs (precision.py), and ends a run whose
checkpoint (restore file, teacher) cannot be loaded with one line naming it rather than a traceback
(checkpointing.py). The training loop itself is fairseq's, unchanged.

fairseq-train imports the plugin (--user-dir) while parsing its arguments, before call_main.
fairseq-hydra-train imports it only inside call_main, so for multi-process CPU runs or torchrun
with the Hydra route start it through user_dir/distributed_launch.py:
    torchrun --nproc_per_node 2 -m user_dir.distributed_launch fairseq-hydra-train --config-dir ...
"""

import logging
import os
import socket
import sys

import torch
from fairseq.distributed import utils as distributed_utils
from omegaconf import open_dict

from bio_roberta_core.errors import BioRobertaError
from user_dir.precision import configure_precision

logger = logging.getLogger(__name__)

TORCHRUN_ENV = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def configure_distributed(cfg) -> bool:
    """Fill cfg.distributed_training from torchrun's environment and for CPU; True when this
    process must spawn the workers itself (CPU, world size > 1, no launcher)."""
    dist = cfg.distributed_training
    on_cpu = cfg.common.cpu or not torch.cuda.is_available()
    launched = all(key in os.environ for key in TORCHRUN_ENV) and int(os.environ["WORLD_SIZE"]) > 1
    with open_dict(cfg):
        if launched and dist.distributed_init_method is None:
            dist.distributed_init_method = "env://"
            dist.distributed_world_size = int(os.environ["WORLD_SIZE"])
            dist.distributed_rank = int(os.environ["RANK"])
            dist.device_id = int(os.environ["LOCAL_RANK"])
            dist.distributed_no_spawn = True
        if not on_cpu or dist.distributed_world_size == 1:
            return False
        dist.distributed_backend = "gloo"
        if dist.ddp_backend in ("c10d", "pytorch_ddp"):
            logger.info("CPU data parallel: ddp_backend %s -> legacy_ddp", dist.ddp_backend)
            dist.ddp_backend = "legacy_ddp"
        if dist.distributed_init_method is not None:
            return False
        port = dist.distributed_port if dist.distributed_port > 0 else free_port()
        dist.distributed_init_method = f"tcp://localhost:{port}"
        return True


def call_main(cfg, main, **kwargs):
    try:
        launch(cfg, main, **kwargs)
    except BioRobertaError as error:  # e.g. a checkpoint it cannot load: one line, no traceback
        sys.exit(f"error: {error}")


def launch(cfg, main, **kwargs):
    configure_precision(cfg)
    if configure_distributed(cfg):
        start_rank = cfg.distributed_training.distributed_rank
        with open_dict(cfg):
            cfg.distributed_training.distributed_rank = (
                None  # distributed_main assigns start_rank + i
            )
        torch.multiprocessing.spawn(
            fn=distributed_utils.distributed_main,
            args=(main, cfg, {**kwargs, "start_rank": start_rank}),
            nprocs=cfg.distributed_training.distributed_world_size,
            join=True,
        )
    else:
        fairseq_call_main(cfg, main, **kwargs)


def install() -> None:
    """Route fairseq's call_main through ours (once; user_dir/__init__.py calls this)."""
    global fairseq_call_main
    if not getattr(distributed_utils.call_main, "bio_roberta", False):
        fairseq_call_main = distributed_utils.call_main
        call_main.bio_roberta = True
        distributed_utils.call_main = call_main
