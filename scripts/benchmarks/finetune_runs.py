"""scripts/benchmark_finetune.py's measures of a run and their summaries: a command's wall and
CPU seconds, fairseq's update-loop pace from its log, each route's medians and ours over another
route's."""

import re
import resource
import statistics
import subprocess
import time
from pathlib import Path

# fairseq's train_inner line: its update count and updates/s over the interval it closes
TRAIN_INNER = re.compile(r"\| train_inner \| .* ups=([\d.]+), .* num_updates=(\d+),")


def loop_seconds_per_update(log: Path, log_interval: int) -> tuple[float, int]:
    """(seconds per update, updates) after the first log interval, from fairseq's train_inner
    lines (updates/s over each interval; its progress bar prints them only within an epoch of
    more than --log-interval updates)."""
    intervals = [
        (float(ups), int(updates))
        for ups, updates in TRAIN_INNER.findall(log.read_text())
        if int(updates) > log_interval
    ]
    if not intervals:
        raise SystemExit(
            f"{log}: no train_inner line after update {log_interval}: an epoch needs more than "
            "--log-interval updates (a smaller --batch-size or --log-interval)"
        )
    seconds = sum(log_interval / ups for ups, _ in intervals)
    return seconds / (len(intervals) * log_interval), len(intervals) * log_interval


def timed(command: list, env: dict, what: str) -> dict:
    """Run a command to its end: its wall seconds and the CPU seconds (user + system) of it and
    every process it waited for, which a loaded machine inflates far less than the wall."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed: {done.stderr[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall": wall, "cpu": cpu}


def summary(runs: list[dict], batch_size: int, updates: int) -> dict:
    """Medians of a route's runs: wall, CPU, loop examples/s, fixed seconds, their evaluation
    passes' seconds and the rest; and the runs."""
    fixed = [run["wall"] - updates * run["per_update"] for run in runs]
    return {
        "wall_seconds": round(statistics.median(run["wall"] for run in runs), 3),
        "cpu_seconds": round(statistics.median(run["cpu"] for run in runs), 3),
        "loop_examples_per_second": round(
            statistics.median(batch_size / run["per_update"] for run in runs), 1
        ),
        "fixed_seconds": round(statistics.median(fixed), 3),
        "evaluation_seconds": round(statistics.median(run["evaluation"] for run in runs), 3),
        "fixed_less_evaluation_seconds": round(
            statistics.median(seconds - run["evaluation"] for run, seconds in zip(runs, fixed)), 3
        ),
        "runs": [
            {
                "wall": round(run["wall"], 3),
                "cpu": round(run["cpu"], 3),
                "loop_seconds_per_update": round(run["per_update"], 4),
                "fixed": round(seconds, 3),
                "evaluation": round(run["evaluation"], 3),
                "load": run["load"],
                "test_score": run["score"],
            }
            for run, seconds in zip(runs, fixed)
        ],  # fmt: skip
    }


def ratios(ours: dict, other: dict) -> dict:
    """Ours over another route: wall, CPU, loop examples/s, fixed seconds and those less the
    evaluation passes."""
    return {
        "wall": round(ours["wall_seconds"] / other["wall_seconds"], 3),
        "cpu": round(ours["cpu_seconds"] / other["cpu_seconds"], 3),
        "loop_examples_per_second": round(
            ours["loop_examples_per_second"] / other["loop_examples_per_second"], 3
        ),
        "fixed": round(ours["fixed_seconds"] / other["fixed_seconds"], 3),
        "fixed_less_evaluation": round(
            ours["fixed_less_evaluation_seconds"] / other["fixed_less_evaluation_seconds"], 3
        ),
    }
