"""--mfu: the paper's model at scale on a GPU (roberta-base, 512-token sequences, RoBERTa's
50,265-entry vocabulary, 256 sequences per update): every route of routes.ROUTES at each per-GPU
micro-batch asked for (update_freq = 256 / micro-batch), each as tokens/s, model-FLOPs utilisation
(one FLOPs count for all, flops.py) and peak GPU memory; optionally a distillation step. What it
measured on an H100 (bf16, our route) is quoted where it is used: tokens/s per micro-batch in
user_dir/batch_plan.py, peak memory in tests/test_batch_plan.py."""

import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.distillation import train_teacher
from benchmarks.fairseq_route import USER_DIR
from benchmarks.flops import MASK_PROB, peak_bf16_tflops, training_flops_per_token
from benchmarks.measure import child
from benchmarks.routes import ROUTES
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
    import torch

    from user_dir.architectures import architecture_shape

    routes, micro_batches = checked_routes_and_micro_batches(args)
    device = "cpu" if args.cpu else torch.cuda.get_device_name()
    peak = args.peak_tflops or peak_bf16_tflops(device)
    shape = architecture_shape(args.arch)
    flops_per_token = training_flops_per_token(
        shape["layers"], shape["width"], shape["ffn"], args.seq, args.vocab, MASK_PROB
    )
    report = {
        "device": device,
        "peak_tflops": peak,
        "arch": args.arch,
        **shape,
        "seq": args.seq,
        "vocab": args.vocab,
        "sequences_per_update": args.sequences_per_update,
        "steps": args.steps,
        "model_flops_per_token": flops_per_token,
        "target_mfu": 0.45,
        "torch": torch.__version__,
        "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()],
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
            for route in routes:
                name = f"{route}@{micro_batch}x{update_freq}"
                if args.cpu and ROUTES[route].get("precision") == "fp16":
                    report["runs"][name] = {"skipped": "fairseq's fp16 optimizer needs CUDA"}
                    continue
                databin = databins[ROUTES[route].get("ours", False)]
                report["runs"][name] = run = child(route, "--databin", str(databin), *options)
                if "tokens_per_s" in run:
                    run["mfu"] = round(run["tokens_per_s"] * flops_per_token / (peak * 1e12), 4)
                print(json.dumps({name: run}), file=sys.stderr)
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
    return report


def route_ratios(runs: dict) -> dict:
    """ours_bf16 against each other route at the same micro-batch, and best against best."""
    measured = {name: run["tokens_per_s"] for name, run in runs.items() if "tokens_per_s" in run}
    ratios = {}
    for name, tokens_per_s in measured.items():
        route, shape = name.split("@")
        ours = measured.get(f"ours_bf16@{shape}")
        if route != "ours_bf16" and ours:
            ratios[f"ours_bf16_over_{route}@{shape}"] = round(ours / tokens_per_s, 3)
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
