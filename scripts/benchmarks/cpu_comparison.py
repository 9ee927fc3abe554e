"""The CPU comparison (benchmark_train.py without --mfu): tokens/s and peak RSS of our route and of
stock fairseq masked_lm, alternating so that load from elsewhere hits both alike, of transformers'
RobertaForMaskedLM, and the distillation step's cost, all at the shape of cpu_shape.py."""

import os
import statistics
import tempfile
from pathlib import Path

from benchmarks.cpu_shape import BATCH, LAYERS, SEQ, VOCAB, WIDTH
from benchmarks.distillation import train_teacher
from benchmarks.measure import child
from benchmarks.synthetic_data import synthetic_databin


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
        # ours and stock fairseq alternate, REPEATS times each and first in turn, so that load from
        # elsewhere hits both alike; the ratio is the median of the ratios within each pair
        pairs = []
        for repeat in range(args.repeats):
            order = ("ours", "fairseq") if repeat % 2 == 0 else ("fairseq", "ours")
            measured = {name: child(name, *common) for name in order}
            pairs.append((measured["ours"], measured["fairseq"]))
        if all("tokens_per_s" in run for pair in pairs for run in pair):
            for index, name in enumerate(("ours", "fairseq")):
                runs = [pair[index] for pair in pairs]
                report[name] = {
                    "tokens_per_s": round(
                        statistics.median(run["tokens_per_s"] for run in runs), 1
                    ),
                    "tokens_per_s_runs": [run["tokens_per_s"] for run in runs],
                    "peak_rss_mb": max(run["peak_rss_mb"] for run in runs),
                }
            report["ours_over_fairseq"] = round(
                statistics.median(
                    ours["tokens_per_s"] / stock["tokens_per_s"] for ours, stock in pairs
                ),
                3,
            )
        else:  # the first pair with a failure, its error in full
            report["ours"], report["fairseq"] = next(
                pair for pair in pairs if not all("tokens_per_s" in run for run in pair)
            )
        report["transformers"] = child("transformers", *common)
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
