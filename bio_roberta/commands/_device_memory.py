"""The memory a packed sweep plans with (bio_roberta/commands/_packing.py): the devices at hand and
their free memory (the GPUs', or the host's available memory), and the estimated peak of one run
(run_bytes), from batch_plan's pretraining estimate plus each process' own fixed cost."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from bio_roberta.errors import UsageError
from bio_roberta.finetuning.packing import CPU
from bio_roberta.pretraining.batch_plan import (
    BYTES_PER_PARAMETER,
    MEMORY_SHARE,
    activation_bytes_per_token,
)

GIB = 2**30
# fp32 training (the sweep's default, and any run on the CPU): weights, gradients, Adam's two
# moments, 4 bytes each; batch_plan.BYTES_PER_PARAMETER is mixed precision's (fp16=true)
FP32_BYTES_PER_PARAMETER = 4 + 4 + 8
# batch_plan's activations are measured in bf16; fp32 keeps the same values at 4 bytes
FP32_ACTIVATION_FACTOR = 2
# What each run's process holds besides its model and batch. CUDA context and the kernels loaded:
# a process holding only its context, 518-612 MiB on an H200 (torch 2.11+cu130, nvidia-smi,
# docs/benchmarks/gpu-h200-packing-2026-12-04.json). CPU: the process with torch, fairseq and the
# plugin imported, measured 366 MiB max RSS (torch 2.13 CPU).
CUDA_PROCESS_BYTES = 0.6 * GIB
CPU_PROCESS_BYTES = 0.4 * GIB


def default_devices() -> list[str]:
    """$CUDA_VISIBLE_DEVICES's devices (none: cpu), else every GPU torch sees, else cpu."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [device.strip() for device in visible.split(",") if device.strip()] or [CPU]
    count = len(gpu_memory(None))
    return [str(index) for index in range(count)] or [CPU]


GPU_QUERY = (
    "import json, torch\n"
    "print(json.dumps([torch.cuda.mem_get_info(i) for i in range(torch.cuda.device_count())]))"
)


def gpu_memory(devices: Optional[list[str]]) -> list[tuple[int, int]]:
    """(free, total) bytes of each device (None: every GPU torch sees), asked of torch in a
    process of its own: this command holds no CUDA context on the devices its runs use."""
    environment = dict(os.environ)
    if devices is not None:
        environment["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    done = subprocess.run(
        [sys.executable, "-c", GPU_QUERY], capture_output=True, text=True, env=environment
    )
    if done.returncode != 0:
        raise UsageError(
            "could not ask torch for the GPUs' memory: "
            f"{(done.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    return [tuple(memory) for memory in json.loads(done.stdout)]


def checked_gpus(devices: list[str]) -> list[int]:
    """The free bytes of each device, every one a GPU torch sees (else its runs would train on
    the CPU unasked)."""
    memory = gpu_memory(devices)
    if len(memory) != len(devices):
        raise UsageError(
            f"--devices {','.join(devices)}: torch sees {len(memory)} of these {len(devices)} "
            f"GPU(s) (CUDA_VISIBLE_DEVICES={','.join(devices)}); name GPUs this host has, or cpu"
        )
    return [free for free, _ in memory]


def available_host_bytes() -> int:
    """The host memory available to new processes (/proc/meminfo MemAvailable)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------- N from the memory estimate


def run_bytes(
    shape: dict, parameters: int, positions: int, batch_size: int, fp16: bool, gpu: bool
) -> float:
    """Estimated peak memory of one fine-tuning run's process: its parameters with gradients and
    Adam's moments (mixed precision: batch_plan.BYTES_PER_PARAMETER, with fp32 masters), the
    activations a batch of batch_size x positions tokens keeps for the backward
    (batch_plan.activation_bytes_per_token, twice that in fp32), and the process' own fixed cost
    (a CUDA context on a GPU, the imported libraries on the CPU). A task head's parameters and
    logits are small beside the encoder's and not counted; an upper bound in that the longest
    example sets every batch's length."""
    mixed = fp16 and gpu  # fp16=true trains in fp32 on the CPU
    per_parameter = BYTES_PER_PARAMETER if mixed else FP32_BYTES_PER_PARAMETER
    per_token = activation_bytes_per_token(shape) * (1 if mixed else FP32_ACTIVATION_FACTOR)
    process = CUDA_PROCESS_BYTES if gpu else CPU_PROCESS_BYTES
    return per_parameter * parameters + batch_size * positions * per_token + process


def runs_that_fit(per_run: float, device_bytes: float) -> int:
    """How many runs of per_run bytes fit MEMORY_SHARE of a device (at least 1)."""
    return max(1, math.floor(MEMORY_SHARE * device_bytes / per_run))


def longest_example(data_dir: Path) -> int:
    """Tokens of the longest training example of a converted task (input0, plus input1 for
    pairs), <s> and the pair separator included."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    lengths = None
    for part in ("input0", "input1"):
        path = data_dir / part / "train.idx"
        if path.is_file():
            index = MMapIndexedDataset.Index(str(path))  # held while its sizes are copied: its
            sizes = index.sizes.astype("int64")  # end unmaps them
            lengths = sizes if lengths is None else lengths + sizes + 1
    if lengths is None:
        raise UsageError(f"{data_dir / 'input0' / 'train.idx'} not found: convert the task first")
    return int(lengths.max()) + 1
