"""--mfu: the paper's model at scale on a GPU (roberta-base, 512-token sequences, RoBERTa's
50,265-entry vocabulary, 256 sequences per update): every route of routes.ROUTES at each per-GPU
micro-batch asked for (update_freq = 256 / micro-batch), each as tokens/s, model-FLOPs utilisation
(one FLOPs count for all, flops.py) and peak GPU memory; optionally a distillation step. Each route
runs --repeats times, each run a process of its own, the routes taking turns (a drift of the
machine hits all alike): tokens/s is the median, spread (max - min) / median. What it
measured on an H100 (bf16, our route) is quoted where it is used: tokens/s per micro-batch in
bio_roberta/pretraining/batch_plan.py, peak memory in tests/test_batch_plan.py."""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.distillation import train_teacher
from benchmarks.fairseq_route import USER_DIR
from benchmarks.flops import MASK_PROB, peak_bf16_tflops, training_flops_per_token
from benchmarks.measure import child
from benchmarks.provenance import provenance
from benchmarks.routes import ROUTES, cannot_run_here
from benchmarks.synthetic_data import PAD_VOCAB_TO, synthetic_databin


def checked_routes_and_micro_batches(args) -> tuple[list, list]:
    """The --routes and --micro-batches asked for, once they are known to run here; else a
    one-line exit saying what to change."""
    import torch

    if not args.cpu and not torch.cuda.is_available():
        raise SystemExit(
            "benchmark_train.py --mfu: no CUDA device here (add --cpu "
            "--peak-tflops N to run it on the CPU)"
        )
    if args.cpu and not args.peak_tflops:
        raise SystemExit(
            "benchmark_train.py --mfu --cpu: give the CPU's bf16 peak with --peak-tflops"
        )
    routes = [route for route in args.routes.split(",") if route]
    unknown = sorted(set(routes) - set(ROUTES))
    if unknown:
        raise SystemExit(
            f"benchmark_train.py: unknown route(s) {', '.join(unknown)}; "
            f"routes: {', '.join(ROUTES)}"
        )
    micro_batches = [int(b) for b in args.micro_batches.split(",")]
    if any(args.sequences_per_update % b for b in micro_batches):
        raise SystemExit(
            "benchmark_train.py: each micro-batch must divide --sequences-per-update "
            f"{args.sequences_per_update}"
        )
    return routes, micro_batches


def measure_at_scale(args) -> dict:
    """--mfu: each route at each micro-batch, 256 sequences per update (see the module doc);
    model-FLOPs utilisation of each by the same FLOPs count, against the device's dense bf16
    peak."""
    from user_dir.architectures import architecture_shape

    routes, micro_batches = checked_routes_and_micro_batches(args)
    report = provenance(args.cpu)
    peak = args.peak_tflops or peak_bf16_tflops(report["device"])
    shape = architecture_shape(args.arch)
    flops_per_token = training_flops_per_token(
        shape["layers"], shape["width"], shape["ffn"], args.seq, args.vocab, MASK_PROB
    )
    report |= {
        "peak_tflops": peak,
        "arch": args.arch,
        **shape,
        "seq": args.seq,
        "vocab": args.vocab,
        "sequences_per_update": args.sequences_per_update,
        "steps": args.steps,
        "repeats": args.repeats,
        "model_flops_per_token": flops_per_token,
        "target_mfu": 0.45,
        "runs": {},
    }
    # our pipeline pads the dictionary to a multiple of 64 (binarize, learn-vocab, the RoBERTa
    # import): the same tokens, fairseq-preprocess's dictionary for the stock routes; FLOPs count
    # the unpadded one
    report["dictionary_ours"] = padded_vocab = -(-args.vocab // PAD_VOCAB_TO) * PAD_VOCAB_TO
    with tempfile.TemporaryDirectory() as root:
        lines = (args.steps + 1) * args.sequences_per_update  # one epoch covers every update
        databins = {
            ours: synthetic_databin(Path(root) / str(ours), vocab, args.seq, lines)
            for ours, vocab in ((False, args.vocab), (True, padded_vocab))
        }
        for micro_batch in micro_batches:
            update_freq = args.sequences_per_update // micro_batch
            options = [
                "--steps",
                str(args.steps),
                "--threads",
                str(args.threads),
                "--arch",
                args.arch,
                "--seq",
                str(args.seq),
                "--vocab",
                str(args.vocab),
                "--batch",
                str(micro_batch),
                "--update-freq",
                str(update_freq),
                *(["--cpu"] if args.cpu else []),
            ]
            measured = {route: [] for route in routes}
            for repeat in range(args.repeats):
                for route in routes:
                    name = f"{route}@{micro_batch}x{update_freq}"
                    reason = cannot_run_here(route, args.cpu)
                    if reason:
                        report["runs"][name] = {"skipped": reason}
                        continue
                    databin = databins[ROUTES[route].get("ours", False)]
                    start = time.perf_counter()
                    run = child(route, "--databin", str(databin), *options)
                    run["process_wall_s"] = round(time.perf_counter() - start, 1)
                    measured[route].append(run)
                    print(json.dumps({name: run, "repeat": repeat + 1}), file=sys.stderr)
                    report["runs"][name] = summary(measured[route], flops_per_token, peak)
        if args.distillation:
            # the paper's shape: a roberta_large teacher, the --arch student, one micro-batch per
            # step
            device_args = ["--cpu"] if args.cpu else ["--bf16"]
            teacher = train_teacher(
                databins[True],
                Path(root) / "teacher",
                ["--arch", args.distillation_teacher],
                args.seq,
                [*device_args, "--user-dir", str(USER_DIR)],
            )
            report["distillation"] = child(
                "distillation",
                "--databin",
                str(databins[True]),
                "--teacher",
                str(teacher),
                "--batch",
                str(micro_batches[0]),
                *options[: options.index("--batch")],
                *(["--cpu"] if args.cpu else []),
            )
    report["ratios"] = route_ratios(report["runs"])
    report["loss_tracking"] = loss_tracking(report["runs"])
    return report


def loss_tracking(runs: dict) -> dict:
    """Each lever route's per-update losses against those of the route it adds to, at the same
    shape (same seed, data and steps: the levers change the arithmetic, not the updates): the
    levers against ours_bf16, CUDA graphs and FP8 against the levers; the largest relative
    difference over the updates."""
    tracking = {}
    for name, run in runs.items():
        route, shape = name.split("@")
        if not route.startswith("ours_bf16_levers"):
            continue
        base = "ours_bf16" if route == "ours_bf16_levers" else "ours_bf16_levers"
        reference = runs.get(f"{base}@{shape}", {}).get("losses")
        losses = run.get("losses")
        if losses and reference:
            tracking[f"{route}_against_{base}@{shape}"] = {
                "max_relative_difference": round(
                    max(abs(a - b) / abs(b) for a, b in zip(losses, reference)), 5
                ),
                "updates": min(len(losses), len(reference)),
            }
    return tracking


def summary(runs: list, flops_per_token: float, peak_tflops: float) -> dict:
    """One route's runs: median tokens/s, its model-FLOPs utilisation, the spread
    (max - min) / median, every run's figures, the largest peak memory; runs that failed are kept
    with their error."""
    timed = [run for run in runs if "tokens_per_s" in run]
    errors = [run["error"] for run in runs if "error" in run]
    result = {"errors": errors} if errors else {}
    if not timed:
        return result
    tokens_per_s = [run["tokens_per_s"] for run in timed]
    median = statistics.median(tokens_per_s)
    result |= {
        "tokens_per_s": median,
        "mfu": round(median * flops_per_token / (peak_tflops * 1e12), 4),
        "spread": round((max(tokens_per_s) - min(tokens_per_s)) / median, 4),
        "runs": len(timed),
        "tokens_per_s_runs": tokens_per_s,
        "process_wall_s_runs": [run["process_wall_s"] for run in timed],
        "load_average_1_5_15min_runs": [run["load_average_1_5_15min"] for run in timed],
    }
    if "losses" in timed[0]:  # per update, of the first run (fairseq routes)
        result["losses"] = timed[0]["losses"]
    for memory in ("peak_gpu_memory_gb", "peak_rss_mb"):
        if memory in timed[0]:
            result[memory] = max(run[memory] for run in timed)
    if "masking_seconds_per_update" in timed[0]:  # transformers': its collator's, each run
        result["masking_seconds_per_update_runs"] = [
            run["masking_seconds_per_update"] for run in timed
        ]
    return result


def route_ratios(runs: dict) -> dict:
    """ours_bf16 against each other route at the same micro-batch, and best against best."""
    measured = {name: run["tokens_per_s"] for name, run in runs.items() if "tokens_per_s" in run}
    ratios = {}
    for name, tokens_per_s in measured.items():
        route, shape = name.split("@")
        ours = measured.get(f"ours_bf16@{shape}")
        if route != "ours_bf16" and ours:
            ratios[f"ours_bf16_over_{route}@{shape}"] = round(ours / tokens_per_s, 3)
        if route.startswith("ours_bf16_levers") and ours:
            ratios[f"{route}_over_ours_bf16@{shape}"] = round(tokens_per_s / ours, 3)
    best = {}
    for name, tokens_per_s in measured.items():
        route = name.split("@")[0]
        if tokens_per_s > measured.get(best.get(route, ""), 0):
            best[route] = name
    if "ours_bf16" in best:
        for route, name in best.items():
            if route != "ours_bf16":
                ratios[f"best_ours_bf16_over_best_{route}"] = round(
                    measured[best["ours_bf16"]] / measured[name], 3
                )
        ratios["best"] = best
    return ratios
