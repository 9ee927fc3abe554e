"""The CPU comparison (benchmark_train.py without --mfu): tokens/s and peak RSS of our route, of
stock fairseq masked_lm and of transformers' RobertaForMaskedLM, taking turns so that load from
elsewhere hits them alike, and the distillation step's cost, all at the shape of cpu_shape.py."""

import os
import statistics
import tempfile
from pathlib import Path

from benchmarks.cpu_shape import BATCH, LAYERS, SEQ, VOCAB, WIDTH
from benchmarks.distillation import train_teacher
from benchmarks.measure import child
from benchmarks.synthetic_data import synthetic_databin

# our route, stock fairseq masked_lm and transformers' RobertaForMaskedLM (benchmark_train.py
# --measure names), each timed with its masking: fairseq's wps counts the loading of its batches,
# transformers_route times its collator's
ROUTES = ("ours", "fairseq", "transformers")


def compare_on_cpu(args) -> dict:
    """The report of the default mode, on benchmark_train.py's options (steps, threads,
    repeats)."""
    with tempfile.TemporaryDirectory() as root:
        databin = synthetic_databin(Path(root))
        common = [
            "--databin",
            str(databin),
            "--steps",
            str(args.steps),
            "--threads",
            str(args.threads),
        ]
        report = {
            "shape": {
                "layers": LAYERS,
                "width": WIDTH,
                "vocab": VOCAB,
                "batch": BATCH,
                "seq": SEQ,
                "threads": args.threads,
                "steps": args.steps,
                "repeats": args.repeats,
                "cores": os.cpu_count(),
            },
            "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()],
        }
        # the three routes take turns, REPEATS times each and each first in turn, so that load
        # from elsewhere hits them alike; a ratio is the median of the ratios within each turn
        turns = []
        for repeat in range(args.repeats):
            order = ROUTES[repeat % len(ROUTES) :] + ROUTES[: repeat % len(ROUTES)]
            turns.append({name: child(name, *common) for name in order})
        failed = [turn for turn in turns if not all("tokens_per_s" in run for run in turn.values())]
        if failed:  # the first turn with a failure, its error in full
            report.update(failed[0])
        else:
            report.update(route_summaries(turns))
        # teacher: a wider, deeper RoBERTa on the same dictionary
        teacher = train_teacher(
            databin,
            Path(root) / "teacher",
            [
                "--arch",
                "roberta",
                "--encoder-layers",
                "6",
                "--encoder-embed-dim",
                "384",
                "--encoder-ffn-embed-dim",
                "1536",
                "--encoder-attention-heads",
                "6",
            ],
        )
        report["distillation"] = child("distillation", *common, "--teacher", str(teacher))
        return report


def route_summaries(turns: list[dict]) -> dict:
    """Each route's median tokens/s, every run's and its peak RSS (transformers: its masking
    seconds per update), and ours over each peer: the median of the ratios within each turn."""
    report = {}
    for name in ROUTES:
        runs = [turn[name] for turn in turns]
        report[name] = {
            "tokens_per_s": round(statistics.median(run["tokens_per_s"] for run in runs), 1),
            "tokens_per_s_runs": [run["tokens_per_s"] for run in runs],
            "peak_rss_mb": max(run["peak_rss_mb"] for run in runs),
            "load_average_1_5_15min_runs": [run["load_average_1_5_15min"] for run in runs],
        }
        if "masking_seconds_per_update" in runs[0]:
            report[name]["masking_seconds_per_update"] = round(
                statistics.median(run["masking_seconds_per_update"] for run in runs), 5
            )
    for peer in ROUTES[1:]:
        report[f"ours_over_{peer}"] = round(
            statistics.median(
                turn["ours"]["tokens_per_s"] / turn[peer]["tokens_per_s"] for turn in turns
            ),
            3,
        )
    return report
