"""fairseq-train in this process, ours (--user-dir: corpora_masked_lm, masked_lm_positions, our lr
schedule) or stock fairseq masked_lm; tokens/s = the median of fairseq's per-update wps, and the
per-update losses (a lever's loss curve against the plain route's, same seed and data)."""

import re
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.cpu_shape import BATCH, MODEL_ARGS, SEQ
from benchmarks.memory import peak_memory, track_peak_gpu_memory

USER_DIR = Path(__file__).resolve().parents[2] / "user_dir"


def fairseq_args(
    databin,
    save_dir,
    steps,
    ours,
    model_args=MODEL_ARGS,
    batch=BATCH,
    seq=SEQ,
    device_args=("--cpu",),
    extra=(),
):
    """fairseq-train's arguments; EXTRA last, so that it overrides what comes before."""
    task = (
        [
            "--user-dir",
            str(USER_DIR),
            "--task",
            "corpora_masked_lm",
            "--lr-scheduler",
            "warmup_ratio_linear_decay",
        ]
        if ours
        else ["--task", "masked_lm"]
    )
    return [
        str(databin),
        *task,
        "--criterion",
        "masked_lm_positions" if ours else "masked_lm",
        *model_args,
        "--num-workers",
        "0",
        *device_args,
        "--batch-size",
        str(batch),
        "--tokens-per-sample",
        str(seq),
        "--sample-break-mode",
        "none",
        "--optimizer",
        "adam",
        "--adam-betas",
        "(0.9,0.98)",
        "--adam-eps",
        "1e-6",
        "--weight-decay",
        "0.01",
        "--lr",
        "6e-4",
        "--max-update",
        str(steps),
        "--save-dir",
        str(save_dir),
        "--no-save",
        "--disable-validation",
        "--log-interval",
        "1",
        "--log-format",
        "simple",
        "--seed",
        "1",
        *extra,
    ]


def fairseq_tokens_per_s(args, skip=2) -> tuple[float, list]:
    """fairseq-train ARGS in this process: the median of its per-update wps after the first SKIP
    updates, and the loss of every update."""
    import io
    import logging

    from fairseq_cli import train

    stream = io.StringIO()
    logging.getLogger().addHandler(logging.StreamHandler(stream))
    sys.argv = ["fairseq-train", *args]
    train.cli_main()
    updates = re.findall(r"\bloss=([\d.]+).*?wps=([\d.]+)", stream.getvalue())
    losses = [float(loss) for loss, _ in updates]
    return statistics.median([float(wps) for _, wps in updates][skip:]), losses


def measure_fairseq(databin, steps, ours, skip=2, cpu=True, **options):
    """fairseq-train in this process (fairseq_args, OPTIONS its keyword options): tokens/s after
    SKIP updates, the losses and the peak memory."""
    with tempfile.TemporaryDirectory() as save_dir:
        tokens_per_s, losses = fairseq_tokens_per_s(
            fairseq_args(databin, save_dir, steps, ours, **options), skip
        )
    return {"tokens_per_s": round(tokens_per_s, 1), "losses": losses, **peak_memory(cpu)}


def profile_updates(directory: str, first: int = 6, count: int = 3) -> None:
    """Profile fairseq updates FIRST+1 .. FIRST+COUNT (CPU and GPU) into kernel tables and a
    summary of where the time goes (profile_summary.py: summary.json, summary.md) in DIRECTORY:
    fairseq labels its phases (forward, backward, clip-grads, optimizer), so the tables say where an
    update's time goes beside the model itself."""
    import json

    import torch
    from fairseq.trainer import Trainer
    from torch.profiler import ProfilerActivity, profile, schedule

    from benchmarks.profile_summary import TRAIN_STEP, markdown, time_shares

    def write_tables(prof):
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for sort in ("self_cuda_time_total", "cpu_time_total"):
            table = prof.key_averages().table(sort_by=sort, row_limit=40, max_name_column_width=80)
            (out / f"{sort}.txt").write_text(table)
        try:
            summary = time_shares(prof.events())
        except Exception as error:  # the kernel tables above still hold the profile
            (out / "summary.json").write_text(json.dumps({"error": repr(error)}))
            return
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        title = f"updates {first + 2}-{first + 1 + count}"
        (out / "summary.md").write_text(markdown(summary, title))

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    profiler = profile(
        activities=activities,
        on_trace_ready=write_tables,
        schedule=schedule(wait=first, warmup=1, active=count, repeat=1),
    )
    train_step = Trainer.train_step

    def profiled_train_step(self, samples, raise_oom=False):
        with torch.profiler.record_function(TRAIN_STEP):
            output = train_step(self, samples, raise_oom)
        profiler.step()
        return output

    Trainer.train_step = profiled_train_step
    profiler.start()


def measure_fairseq_at_scale(databin, arch, seq, steps, batch, update_freq, cpu, spec):
    """fairseq-train on the --mfu shape along the route SPEC (routes.ROUTES). Tokens/s over updates
    6.. ."""
    # on a GPU, loader workers mask the next batches while the GPU computes (fairseq_args sets 0)
    device_args = [
        f"--{spec['precision']}",
        "--update-freq",
        str(update_freq),
        *(["--cpu"] if cpu else ["--num-workers", "4"]),
    ]
    if spec["ours"]:
        device_args += ["--encoder-implementation", spec["encoder"]]
    elif (
        spec["precision"] == "bf16"
    ):  # stock masked_lm; only our plugin lets --bf16 train off a TPU
        device_args += ["--user-dir", str(USER_DIR)]
    peak_gb = None if cpu else track_peak_gpu_memory()
    result = measure_fairseq(
        databin,
        steps,
        spec["ours"],
        skip=5,
        cpu=cpu,
        model_args=["--arch", arch],
        batch=batch,
        seq=seq,
        device_args=device_args,
        extra=spec.get("flags", ()),
    )
    if peak_gb:
        result["peak_gpu_memory_gb"] = peak_gb()
    return result
