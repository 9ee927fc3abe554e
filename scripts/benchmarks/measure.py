"""One measurement in its own process, so that its peak memory is its own: the comparisons start
`benchmark_train.py --measure NAME ...` (child) and read the JSON line it prints (measure)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.routes import ROUTES

BENCHMARK_TRAIN = Path(__file__).resolve().parents[1] / "benchmark_train.py"


def measurements(args) -> dict:
    """NAME -> the measurement `--measure NAME` runs, on benchmark_train.py's options."""
    from benchmarks.distillation import measure_distillation
    from benchmarks.fairseq_route import measure_fairseq, measure_fairseq_at_scale
    from benchmarks.transformers_route import measure_transformers
    from user_dir.architectures import architecture_shape

    return {
        "ours": lambda: measure_fairseq(args.databin, args.steps, True),
        "fairseq": lambda: measure_fairseq(args.databin, args.steps, False),
        "transformers": lambda: measure_transformers(args.steps),
        "distillation": lambda: measure_distillation(
            args.databin,
            args.teacher,
            args.steps,
            *(
                ()
                if args.batch is None
                else (["--arch", args.arch], args.batch, args.seq, args.cpu)
            ),
        ),
        **{
            route: (
                lambda route=route: measure_fairseq_at_scale(
                    args.databin,
                    args.arch,
                    args.seq,
                    args.steps,
                    args.batch,
                    args.update_freq,
                    args.cpu,
                    ROUTES[route],
                )
            )
            for route in ROUTES
            if route != "transformers_bf16"
        },
        "transformers_bf16": lambda: measure_transformers(
            args.steps,
            **architecture_shape(args.arch),
            vocab=args.vocab,
            seq=args.seq,
            batch=args.batch,
            update_freq=args.update_freq,
            cpu=args.cpu,
            bf16=True,
        ),
    }


def measure(args) -> dict:
    """The measurement args.measure names (profiled into args.profile when given), with the load
    average at its end."""
    if args.profile:
        from benchmarks.fairseq_route import profile_updates

        profile_updates(args.profile, count=args.profile_updates)
    result = measurements(args)[args.measure]()
    # what else ran meanwhile: these timings are only comparable at a similar load
    result["load_average_1_5_15min"] = [round(load, 2) for load in os.getloadavg()]
    return result


def child(name, *extra) -> dict:
    """The result of `benchmark_train.py --measure NAME EXTRA...` in a process of its own, or
    {"error": the end of its stderr}."""
    done = subprocess.run(
        [sys.executable, BENCHMARK_TRAIN, "--measure", name, *extra],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return {"error": done.stderr[-1500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])
