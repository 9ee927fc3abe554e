"""A command timed as a process tree: wall and CPU seconds, and peak RSS and PSS summed over the
process and its descendants (the benchmarks' stages each run as their own tree)."""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time


def tree_memory_bytes(pid: int) -> tuple[int, int]:
    """(RSS, PSS) summed over a process and all its descendants (Linux /proc). Forked workers share
    their parent's pages (imported libraries), which RSS counts once per process and PSS splits."""
    rss = pss = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith(("Rss:", "Pss:")):
                        kilobytes = int(line.split()[1]) * 1024
                        rss, pss = (
                            (rss + kilobytes, pss)
                            if line.startswith("Rss:")
                            else (rss, pss + kilobytes)
                        )
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack.extend(int(child) for child in children.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return rss, pss


def timed(command: list[str], env: dict | None = None) -> dict:
    """Run a command; its wall time, CPU time (user + system, the whole process tree: pool workers
    are waited for by their parent), peak process-tree RSS and PSS, the 1-minute load average after
    it, stdout.
    CPU time hardly depends on what else the machine runs; wall time on a shared machine does."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    peak_rss = peak_pss = 0
    done = threading.Event()

    def poll():
        nonlocal peak_rss, peak_pss
        while not done.is_set():
            rss, pss = tree_memory_bytes(process.pid)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    done.set()
    poller.join()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    cpu_seconds = (cpu_after.ru_utime - cpu_before.ru_utime) + (
        cpu_after.ru_stime - cpu_before.ru_stime
    )
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_rss_mb": peak_rss / 2**20,
        "peak_pss_mb": peak_pss / 2**20,
        "load_average_1m": os.getloadavg()[0],
        "stdout": stdout,
    }
