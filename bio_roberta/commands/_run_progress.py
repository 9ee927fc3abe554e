"""What `finetune` and `sweep` show while their runs train: each run as it starts (run i/N), its
updates with an ETA, its dev and test score as it ends (or failed, with its log), then a table of
every run the command asked for.

It watches the run dirs (bio_roberta.finetuning.results.planned_runs), not the processes: a run's
result.json says when it started and how it ended (bio_roberta.finetuning.job writes "started"
before fairseq-train runs, then "ok" or "failed"), and its train.log, fairseq's own output, is read
as it grows. So the same account comes out whichever Hydra launcher runs the jobs (basic, joblib,
submitit on a shared file system), and fairseq's lines stay in each run's log. A run whose record is
unchanged at the end was finished before and kept (bio_roberta.finetuning.job reuses a record of the
same config).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from bio_roberta.finetuning.results import FAILED, OK, STARTED, PlannedRun

POLL_SECONDS = 1.0  # a look at 780 planned run dirs (BLURB tuned, 10 seeds) takes ~40 ms
# between two progress lines of a run that only trains; a validation is shown when it is logged,
# unless the run's last line is newer than VALIDATION_SECONDS (a toy run validating every second
# would fill the console: the demo's six runs printed 187 lines in two minutes)
PROGRESS_SECONDS = 30.0
VALIDATION_SECONDS = 10.0
KEPT = "kept"  # a run finished before with the same config, not run again


@dataclass(frozen=True)
class LogProgress:
    """What one line of fairseq-train's simple log format tells about a run: updates so far,
    fairseq's wall clock of the training (seconds), and the dev score of a validation line (x100,
    as fairseq logs it; None on a training line)."""

    updates: int
    wall: Optional[float]
    dev: Optional[float] = None


UPDATES = re.compile(r"\bnum_updates[= ](\d+)")
WALL = re.compile(r"\bwall[= ]([0-9.]+)")


def log_progress(line: str, metric: str) -> Optional[LogProgress]:
    """The progress in a line of fairseq's simple log format (`| train_inner | ...
    num_updates=21, ..., wall=1`, `| train | epoch 001 | ... | num_updates 8 | ... | wall 1`,
    `| valid | epoch 001 | valid on 'valid' subset | ... | <metric> 41.2 | ... | num_updates 8`);
    None for any other line."""
    if "| train_inner |" not in line and "| train |" not in line and "| valid |" not in line:
        return None
    updates = UPDATES.search(line)
    if updates is None:
        return None
    wall = WALL.search(line)
    dev = None
    if "| valid |" in line:
        score = re.search(rf"\| {re.escape(metric)} (-?[0-9.]+)", line)
        dev = float(score.group(1)) if score else None
    return LogProgress(int(updates.group(1)), float(wall.group(1)) if wall else None, dev)


def eta_seconds(progress: LogProgress, total_updates: Optional[int]) -> Optional[float]:
    """Seconds to total_updates at the run's pace so far (fairseq's wall clock over its updates);
    None before the first update or without a wall clock or total. Early stopping may end a run
    sooner: the ETA is its longest."""
    if not total_updates or not progress.updates or not progress.wall:
        return None  # fairseq logs its wall clock in whole seconds: 0 tells no pace yet
    return progress.wall / progress.updates * max(total_updates - progress.updates, 0)


def duration_text(seconds: Optional[float]) -> str:
    """12s, 3m05s, 2h04m; '?' for None."""
    if seconds is None:
        return "?"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def score_text(score: Optional[float]) -> str:
    """A record's score (a fraction) x100 to 0.01, as the report shows scores; '-' for none."""
    from bio_roberta.report.markdown import hundredths

    return hundredths(score) or "-"


def max_update(record: dict) -> Optional[int]:
    """The --max-update of the run's fairseq-train command line (its started record holds it)."""
    options = (record.get("config") or {}).get("fairseq_args") or []
    if "--max-update" in options[:-1]:
        return int(options[options.index("--max-update") + 1])
    return None


def read_record(path: Path) -> Optional[dict]:
    """A result.json as it is now; None when it is not there (yet) or not whole JSON."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def mtime(path: Path) -> Optional[int]:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


@dataclass
class WatchedRun:
    """A planned run and what has been seen of it: its record's mtime when the command began,
    its number among the runs started (0: not yet), how far its log has been read."""

    planned: PlannedRun
    metric: str
    mtime_before: Optional[int]
    number: int = 0
    seen_running: bool = False
    ended: Optional[dict] = None
    log: Optional[Path] = None
    log_offset: int = 0
    partial_line: str = ""
    total_updates: Optional[int] = None
    last_progress: Optional[LogProgress] = None
    shown_at: float = field(default=float("-inf"))


class RunsConsole:
    """The account of a command's runs on `out` (stderr), from a thread that polls their run dirs
    while the command's Hydra run goes on: `with RunsConsole(...): run the jobs`, then
    `.print_table()`.
    quiet: nothing is printed (the failed runs are still listed by the command's exit status)."""

    def __init__(
        self,
        prefix: str,
        runs: list[PlannedRun],
        metric_of: Callable[[str], str],
        out,
        quiet: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.prefix, self.out, self.quiet, self.clock = prefix, out, quiet, clock
        self.runs = [WatchedRun(run, metric_of(run.task), mtime(run.record_path)) for run in runs]
        self.started = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="runs-console", daemon=True)

    def __enter__(self) -> "RunsConsole":
        finished = sum(
            1
            for run in self.runs
            if (read_record(run.planned.record_path) or {}).get("status") == OK
        )
        self.say(
            f"{len(self.runs)} run(s)"
            + (
                f", {finished} finished before (kept if their config is the same)"
                if finished
                else ""
            )
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()  # what the last jobs wrote after the thread's last look

    def say(self, text: str) -> None:
        if not self.quiet:
            print(f"{self.prefix}: {text}", file=self.out, flush=True)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.poll()

    def poll(self) -> None:
        """Look at every run not ended yet: started, progressed, ended."""
        for run in self.runs:
            if run.ended is not None:
                continue
            changed = mtime(run.planned.record_path)
            if changed is None or changed == run.mtime_before:
                continue
            record = read_record(run.planned.record_path)
            if record is None:
                continue
            if not run.number:
                self.started += 1
                run.number = self.started
                run.log = Path(record["log"]) if record.get("log") else None
                run.total_updates = max_update(record)
                run.seen_running = record.get("status") == STARTED
                # a run that started and ended between two looks (a tiny run, a warm worker)
                # ran in this command all the same: every run's account begins here
                self.say(f"{self.name(run)}: started, log {run.log}")
            if run.seen_running:  # not the log of a run first seen ended: its past is no news
                self.read_log(run)
            if record.get("status") in (OK, FAILED):
                run.ended = record
                self.say(f"{self.name(run)}: {ended_text(record, run.metric)}")

    def name(self, run: WatchedRun) -> str:
        return f"run {run.number}/{len(self.runs)} {run.planned.name}"

    def read_log(self, run: WatchedRun) -> None:
        """The new whole lines of the run's train.log; one progress line per validation (at most
        one per VALIDATION_SECONDS), and at most one per PROGRESS_SECONDS while it trains."""
        if run.log is None:
            return
        try:
            with open(run.log, encoding="utf-8", errors="replace") as log:
                log.seek(run.log_offset)
                text = log.read()
                run.log_offset = log.tell()
        except OSError:
            return
        *lines, run.partial_line = (run.partial_line + text).split("\n")
        for line in lines:
            progress = log_progress(line, run.metric)
            if progress is None:
                continue
            last = run.last_progress
            if progress.wall is None and last is not None and last.wall and last.updates:
                # a validation line has no wall clock: the pace of the training lines before it
                progress = dataclasses.replace(
                    progress, wall=last.wall / last.updates * progress.updates
                )
            run.last_progress = progress
            now = self.clock()
            wait = PROGRESS_SECONDS if progress.dev is None else VALIDATION_SECONDS
            if now - run.shown_at >= wait:
                run.shown_at = now
                self.say(f"{self.name(run)}: {progress_text(progress, run)}")

    def table(self) -> list[str]:
        """One row per run the command asked for: task, seed, setting, fold, dev and test score
        (x100), wall time, status (ok, failed, kept, started: unfinished, missing)."""
        header = ("task", "seed", "setting", "fold", "metric", "dev", "test", "time", "status")
        rows = [header]
        for run in self.runs:
            record = run.ended or read_record(run.planned.record_path) or {}
            status = record.get("status", "missing")
            if run.ended is None and status == OK:
                status = KEPT
            rows.append(
                (
                    run.planned.task,
                    str(run.planned.seed),
                    run.planned.setting or "-",
                    "-" if run.planned.fold is None else str(run.planned.fold),
                    run.metric,
                    score_text(record.get("valid_score")),
                    score_text(record.get("test_score")),
                    duration_text((record.get("timings") or {}).get("seconds")) if record else "-",
                    status,
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        return [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows
        ]

    def print_table(self) -> None:
        if not self.quiet:
            self.say("scores x100 of each run (dev: the selected checkpoint's)")
            print(*self.table(), sep="\n", file=self.out, flush=True)


def progress_text(progress: LogProgress, run: WatchedRun) -> str:
    """`120/400 updates (30%), dev macro_f1 41.20, ETA 3m10s` (what is known of it)."""
    total = run.total_updates
    parts = [
        f"{progress.updates}/{total} updates ({100 * progress.updates // total}%)"
        if total
        else f"{progress.updates} updates"
    ]
    if progress.dev is not None:
        parts.append(f"dev {run.metric} {progress.dev:.2f}")
    eta = eta_seconds(progress, total)
    if eta is not None:
        parts.append(f"ETA {duration_text(eta)}")
    return ", ".join(parts)


def ended_text(record: dict, metric: str) -> str:
    """`ok in 1m20s: dev macro_f1 41.20, test macro_f1 39.81; log PATH` or `failed in 12s:
    <error>; log PATH`."""
    seconds = duration_text((record.get("timings") or {}).get("seconds"))
    log = record.get("log") or "none"
    if record.get("status") == OK:
        return (
            f"ok in {seconds}: dev {metric} {score_text(record.get('valid_score'))}, test "
            f"{metric} {score_text(record.get('test_score'))}; log {log}"
        )
    error = (str(record.get("error")).splitlines() or [""])[0]
    return f"failed in {seconds}: {error}; log {log}"
