#!/usr/bin/env python
"""Time `make demo`'s pipeline (scripts/demo.sh) from scratch, stage by stage; print one JSON.

    python scripts/benchmark_demo.py [--demo scripts/demo.sh] [--out DIR]

The demo runs into a fresh output dir (a temporary one unless --out), so no stage is reused; its
own output passes through to stderr. A stage's seconds run from its "==> [...] k/9 ..." line to the
next one (the last to the demo's end). The JSON holds per-stage and total wall seconds, the CPU
seconds of the demo's process tree (less sensitive than wall time to what else a shared machine
runs), the CPU count and the load average before and after, so a quiet and a loaded measurement
can be told apart. --demo times another checkout's demo.sh (e.g. an older commit's, extracted with
`git archive`); set PATH so that its `bio-roberta` is found, as `make demo` does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
STAGE_LINE = re.compile(r"^==> \[\s*\d+s\] (\d+/\d+) (.*)$")


def time_demo(demo: Path, out: Path, env: dict[str, str]) -> dict:
    """Run demo into out, passing its output to stderr; per-stage and total seconds."""
    stages: list[dict] = []
    start = time.monotonic()
    process = subprocess.Popen(
        ["bash", str(demo), str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    for line in process.stdout:
        sys.stderr.write(line)
        match = STAGE_LINE.match(line.rstrip("\n"))
        if match:
            now = time.monotonic() - start
            if stages:
                stages[-1]["seconds"] = round(now - stages[-1].pop("_start"), 1)
            stages.append({"stage": match.group(1), "what": match.group(2), "_start": now})
    returncode = process.wait()
    total = time.monotonic() - start
    if returncode != 0:
        raise SystemExit(f"benchmark_demo: {demo} exited with status {returncode}")
    if stages:
        stages[-1]["seconds"] = round(total - stages[-1].pop("_start"), 1)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "stages": stages,
        "total_seconds": round(total, 1),
        "cpu_seconds": round(children.ru_utime + children.ru_stime, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", type=Path, default=REPO_ROOT / "scripts" / "demo.sh")
    parser.add_argument(
        "--out", type=Path, help="demo output dir, kept (must not exist; default: a temp dir)"
    )
    args = parser.parse_args(argv)
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists; the benchmark times a demo from scratch")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="benchmark-demo-") as tmp:
        out = args.out or Path(tmp) / "demo-out"
        timing = time_demo(args.demo.resolve(), out, dict(os.environ))
    result = {
        "demo": str(args.demo),
        **timing,
        "seeds": os.environ.get("SEEDS", "10,42,1234"),
        "cpu_count": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
