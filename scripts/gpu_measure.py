#!/usr/bin/env python
"""Issue 45's GPU measurements in one call of a few minutes, written as JSON under --out.

In order, each part only while --budget-s lasts (a part that does not fit is recorded as skipped,
and what a cut-off part measured is kept); the JSON is rewritten after every part:
  head         the LM head + loss alone at the micro-batch's shape: fairseq's (all masked rows at
               once) against criterion.lm_loss_chunk_rows, eager and compiled: ms forward +
               backward, peak memory, and the loss of each against fairseq's
  benchmark    benchmark_train.py --mfu at 128 x 2: ours bf16, ours + levers, stock fairseq fp16
               and transformers bf16, each --repeats times (median, spread, every run)
  profile      torch.profiler over --profile-updates updates (2 micro-batches each) of ours bf16
               and ours + levers: where the time goes (profile-*.md tables and
               the 40 costliest kernels, not the trace)
  levers       the levers route with CUDA graphs and with FP8 (torchao): tokens/s and each one's
               per-update losses against the levers route's from `benchmark`
  distillation a distillation step against student step + teacher (roberta_large) forward
  packing      (not by default: a call of its own) fine-tuning runs per hour packed on the GPU,
               and the hours 480 runs of that size take (scripts/benchmark_packing.py)
The file names carry the device (H100 and H200 figures stay apart) and the date; the JSON records
commit, torch, device and load. --tiny runs every part's code at CPU size
(tests/test_gpu_measure.py); its figures mean nothing.
    python scripts/gpu_measure.py --out $OUT [--budget-s 540]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
from benchmarks.provenance import provenance  # noqa: E402

PARTS = ("head", "benchmark", "profile", "levers", "distillation", "packing")
DEFAULT_PARTS = PARTS[:-1]
BENCHMARK_ROUTES = "ours_bf16,ours_bf16_levers,fairseq_fp16,transformers_bf16"
LEVER_ROUTES = "ours_bf16_levers_cuda_graphs,ours_bf16_levers_fp8"
PROFILED_ROUTES = ("ours_bf16", "ours_bf16_levers")
SHAPES = {  # the paper's model on a GPU; --tiny: the same code on the CPU in seconds
    "gpu": {"arch": "roberta_base", "seq": 512, "vocab": 50265, "batch": 128, "per_update": 256},
    "tiny": {"arch": "roberta_tiny", "seq": 64, "vocab": 1000, "batch": 4, "per_update": 8},
}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def run_json(command: list, timeout: float) -> dict:
    """The JSON a script prints last; cut off at TIMEOUT, the JSON lines it printed on stderr
    so far (benchmark_train.py prints each run there) under "partial"."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode() if isinstance(expired.stderr, bytes) else expired.stderr
        partial = [json.loads(line) for line in (stderr or "").splitlines() if line[:2] == '{"']
        return {"cut_off_after_s": round(timeout), "partial": partial}
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    return json.loads(done.stdout[done.stdout.index("{") :])


def model_options(shape) -> list:
    """benchmark_train.py's options for the model and sequence of SHAPE."""
    return ["--arch", shape["arch"], "--seq", str(shape["seq"]), "--vocab", str(shape["vocab"])]


def mfu_command(args, shape, routes: str, repeats: int, *extra) -> list:
    command = [
        sys.executable,
        SCRIPTS / "benchmark_train.py",
        "--mfu",
        *model_options(shape),
        "--micro-batches",
        str(shape["batch"]),
        "--sequences-per-update",
        str(shape["per_update"]),
        "--steps",
        str(args.steps),
        "--repeats",
        str(repeats),
        "--routes",
        routes,
        *extra,
    ]
    return command + (["--cpu", "--peak-tflops", "2", "--threads", "1"] if args.tiny else [])


def head_part(args, shape) -> dict:
    """The LM head + loss at the micro-batch's shape (see the module doc)."""
    from benchmarks.lm_head import measure_lm_head

    return measure_lm_head(shape, cpu=args.tiny)


def benchmark_part(args, shape, timeout) -> dict:
    """The routes at 128 x 2, each --repeats times; cut off, the runs it finished, summarised
    alike."""
    from benchmarks.at_scale import summary
    from benchmarks.flops import MASK_PROB, peak_bf16_tflops, training_flops_per_token
    from benchmarks.provenance import device_name

    from user_dir.architectures import architecture_shape

    result = run_json(mfu_command(args, shape, BENCHMARK_ROUTES, args.repeats), timeout)
    if "partial" in result:
        dims = architecture_shape(shape["arch"])
        flops = training_flops_per_token(
            dims["layers"], dims["width"], dims["ffn"], shape["seq"], shape["vocab"], MASK_PROB
        )
        peak = 2 if args.tiny else peak_bf16_tflops(device_name(cpu=False))
        finished = {}
        for line in result["partial"]:
            for name, run in line.items():
                if name != "repeat":
                    finished.setdefault(name, []).append(run)
        result["runs"] = {name: summary(runs, flops, peak) for name, runs in finished.items()}
    return result


def profile_part(args, shape, timeout, out: Path, device: str) -> dict:
    """Each of PROFILED_ROUTES profiled in a run of its own on a synthetic data-bin."""
    import tempfile

    from benchmarks.synthetic_data import PAD_VOCAB_TO, synthetic_databin

    result = {}
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory() as root:
        vocab = -(-shape["vocab"] // PAD_VOCAB_TO) * PAD_VOCAB_TO
        updates = 8 + args.profile_updates  # profile_updates waits 6, warms up 1
        databin = synthetic_databin(
            Path(root) / "bin", vocab, shape["seq"], (updates + 1) * shape["per_update"]
        )
        for route in PROFILED_ROUTES:
            tables = Path(root) / route
            command = [
                sys.executable,
                SCRIPTS / "benchmark_train.py",
                "--measure",
                route,
                "--databin",
                str(databin),
                *model_options(shape),
                "--batch",
                str(shape["batch"]),
                "--update-freq",
                str(shape["per_update"] // shape["batch"]),
                "--steps",
                str(updates),
                "--profile",
                str(tables),
                "--profile-updates",
                str(args.profile_updates),
                *(["--cpu", "--threads", "1"] if args.tiny else []),
            ]
            run = run_json(command, max(deadline - time.monotonic(), 1))
            if (tables / "summary.json").exists():
                run["summary"] = json.loads((tables / "summary.json").read_text())
            # the summary table, and the kernel table behind it
            kept = {"summary.md": ".md", "self_cuda_time_total.txt": "-kernels.txt"}
            for name, ending in kept.items():
                if (tables / name).exists():
                    table = out / f"profile-{route}-{device}{ending}"
                    table.write_text((tables / name).read_text())
                    run.setdefault("tables", []).append(table.name)
            result[route] = run
    return result


def levers_part(args, shape, timeout, benchmark: dict) -> dict:
    """CUDA graphs and FP8 on top of the levers; losses against the benchmark's levers run."""
    from benchmarks.at_scale import loss_tracking

    result = run_json(mfu_command(args, shape, LEVER_ROUTES, 1), timeout)
    runs = {**benchmark.get("runs", {}), **result.get("runs", {})}
    result["loss_tracking"] = loss_tracking(runs)
    return result


def distillation_part(args, shape, timeout) -> dict:
    teacher = "roberta_tiny" if args.tiny else "roberta_large"
    command = mfu_command(args, shape, "", 1, "--distillation", "--distillation-teacher", teacher)
    return run_json(command, timeout).get("distillation", {"error": "no distillation result"})


def packing_part(args, timeout) -> dict:
    """Fine-tuning runs per hour, one per job and packed on the GPU (benchmark_packing.py's runs:
    the sample's two tasks x 4 seeds, 100 updates each, fp16 as on 2026-12-04), and the hours 480
    runs of that size take packed. Its own call: one repeat takes ~6 minutes on an H200."""
    command = [sys.executable, SCRIPTS / "benchmark_packing.py", "--repeats", "1"]
    command += ["--shape", "tiny"] if args.tiny else ["--device", "cuda", "--shape", "base"]
    result = run_json(command + ([] if args.tiny else ["--fp16"]), timeout)
    packed = result.get("packed", {}).get("runs_per_hour")
    if packed:
        result["hours_for_480_runs_of_this_size_packed"] = round(480 / packed, 2)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="dir of the results")
    parser.add_argument("--budget-s", type=float, default=540, help="stop starting parts after")
    parser.add_argument("--parts", default=",".join(DEFAULT_PARTS), help=", ".join(PARTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="updates per benchmark run")
    parser.add_argument("--profile-updates", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="CPU size: tests the code, no figure")
    args = parser.parse_args()
    parts = [part for part in args.parts.split(",") if part]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SystemExit(f"gpu_measure.py: unknown part(s) {', '.join(unknown)}; parts: {PARTS}")
    if not args.tiny:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("gpu_measure.py: no CUDA device here (--tiny runs it on the CPU)")
    start = time.monotonic()
    shape = SHAPES["tiny" if args.tiny else "gpu"]
    report = provenance(cpu=args.tiny) | {"shape": shape, "tiny": args.tiny, "parts": {}}
    device = slug(report["device"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"gpu-measure-{device}-{report['date']}.json"
    for part in parts:
        left = args.budget_s - (time.monotonic() - start)
        if left < 20:
            report["parts"][part] = {"skipped": f"budget: {left:.0f} s of {args.budget_s} s left"}
            continue
        began = time.monotonic()
        if part == "head":
            result = head_part(args, shape)
        elif part == "benchmark":
            result = benchmark_part(args, shape, left)
        elif part == "profile":
            result = profile_part(args, shape, left, out, device)
        elif part == "levers":
            result = levers_part(args, shape, left, report["parts"].get("benchmark", {}))
        elif part == "distillation":
            result = distillation_part(args, shape, left)
        else:
            result = packing_part(args, left)
        result["part_wall_s"] = round(time.monotonic() - began, 1)
        report["parts"][part] = result
        path.write_text(json.dumps(report, indent=1))
        print(f"{part}: {result['part_wall_s']} s", file=sys.stderr, flush=True)
    path.write_text(json.dumps(report, indent=1))
    print(path)


if __name__ == "__main__":
    main()
