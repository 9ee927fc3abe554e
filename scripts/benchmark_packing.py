#!/usr/bin/env python
"""Fine-tuning runs packed several per device against one run per job: `bio-roberta sweep` over
the same runs both ways, alternating, as one JSON object.

The model: RoBERTa of --shape tiny (4 layers x 256, 128 positions: for the CPU) or base
(roberta-base's 12 x 768, 512 positions: for a GPU), random-initialised and given two masked-LM
updates on the tasks' converted text with a BPE vocabulary learned on the tasks' files
(scripts/benchmark_finetune.py's pretrained_model; the bundled sample's NCBI-disease and ChemProt,
or --task NAME=DIR), each task converted once with convert-task.

The routes, each one `bio-roberta sweep` of the same runs (the tasks x --seeds seeds, --updates
updates each at the registry's batch size, validation once at the end) on --device:
- one_per_job: no packing option, as a sweep runs by default (each Hydra job trains its one run
  in the job's process, one after another);
- packed: --runs-per-device N|auto --devices D (each run in a process of its own, N at once).
Per route and repeat: the sweep's wall clock (start to exit), runs per hour, the median of the
runs' own seconds (result.json timings.seconds), the load average before it; for packed the
packing line the sweep printed; and whether every run's test score equals the other route's.
    python scripts/benchmark_packing.py --device cuda --shape base --runs-per-device auto
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
from benchmark_finetune import MODEL, POSITIONS  # noqa: E402  (scripts/ on the path above)

SHAPES = {
    "tiny": (MODEL, POSITIONS),
    "base": (["--arch", "roberta_base", "--max-positions", "512"], 512),
}
PACKING_LINE = re.compile(r"one multirun of packs: (.*)")


def sweep(route: str, tasks, pretrained: Path, data_root: Path, results: Path, args) -> dict:
    """One `bio-roberta sweep` of the route; its wall, runs/hour, per-run seconds, test scores."""
    # python -m: a checkout on PYTHONPATH without the console script (a lent GPU) runs it too
    command = [sys.executable, "-m", "bio_roberta", "sweep", "--tasks", ",".join(tasks)]
    command += ["--seed-list", ",".join(str(seed) for seed in range(1, args.seeds + 1))]
    command += ["--pretrained", str(pretrained), "--data-root", str(data_root)]
    command += ["--results", str(results)]
    if route == "packed":
        command += ["--runs-per-device", args.runs_per_device, "--devices", args.devices]
    command += [f"max_update={args.updates}", f"hparams.validate_interval_updates={args.updates}"]
    command += [f"hparams.max_epoch={args.max_epoch}", f"cpu={str(args.device == 'cpu').lower()}"]
    command += ["fp16=true"] if args.fp16 else []
    load = round(os.getloadavg()[0], 2)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bio-roberta sweep ({route}) failed: {done.stderr[-3000:]}")
    records = [json.loads(path.read_text()) for path in sorted(results.rglob("result.json"))]
    shutil.rmtree(results)  # roberta-base's checkpoints: ~1 GB a run
    packing = PACKING_LINE.search(done.stderr)
    measured = {
        "wall_seconds": round(wall, 3),
        "runs": len(records),
        "runs_per_hour": round(len(records) * 3600 / wall, 1),
        "median_run_seconds": statistics.median(r["timings"]["seconds"] for r in records),
        "load": load,
        **({"packing": packing.group(1)} if packing else {}),
        "test_scores": {f"{r['task']} seed {r['seed']}": r["test_score"] for r in records},
    }
    print(json.dumps({route: measured}), file=sys.stderr, flush=True)  # kept if a later one is cut
    return measured


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--runs-per-device", default="auto", help="N or auto (packed route)")
    parser.add_argument("--devices", help="the packed route's --devices (default: cpu, or 0)")
    parser.add_argument("--seeds", type=int, default=4, help="runs per task")
    parser.add_argument("--updates", type=int, default=100, help="updates per run")
    parser.add_argument("--max-epoch", type=int, default=100, help="epochs for --updates")
    parser.add_argument("--fp16", action="store_true", help="fp16 training (a GPU)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--task", action="append", metavar="NAME=DIR", help="a registry task and its release "
        "folder, instead of the sample's NCBI-disease and ChemProt (repeatable)",
    )  # fmt: skip
    args = parser.parse_args()
    args.devices = args.devices or ("cpu" if args.device == "cpu" else "0")
    import torch
    from benchmark_finetune import chosen_tasks, pretrained_model

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no GPU")
    tasks = chosen_tasks(args.task)
    model, positions = SHAPES[args.shape]
    result = {
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "shape": args.shape,
        "fp16": args.fp16,
        "runs_per_device": args.runs_per_device,
        "devices": args.devices,
        "updates": args.updates,
        "repeats": args.repeats,
        "data": {task: str(folder) for task, folder in tasks.items()},
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _, data_root, pretrained = pretrained_model(tasks, root, model, positions)
        routes = {"one_per_job": [], "packed": []}
        for repeat in range(args.repeats):
            for route, runs in routes.items():
                results = root / f"{route}{repeat}"
                runs.append(sweep(route, list(tasks), pretrained, data_root, results, args))
    for route, runs in routes.items():
        result[route] = {
            "wall_seconds": statistics.median(run["wall_seconds"] for run in runs),
            "runs_per_hour": statistics.median(run["runs_per_hour"] for run in runs),
            "repeats": runs,
        }
    result["packed_over_one_per_job_wall"] = round(
        result["packed"]["wall_seconds"] / result["one_per_job"]["wall_seconds"], 3
    )
    scores = [run["test_scores"] for runs in routes.values() for run in runs]
    result["test_scores_equal"] = all(score == scores[0] for score in scores)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
