"""What `finetune` and `sweep` show of their runs (bio_roberta/commands/_run_progress.py), on
fairseq-train's own log lines and run dirs written as bio_roberta.finetuning.job writes them; the
account of a real sweep is checked in test_sweep.py::test_sweep_records_reruns_failures_and_report.
"""

import argparse
import io
import json
import sys

import pytest

from bio_roberta.commands._run_progress import (
    VALIDATION_SECONDS,
    LogProgress,
    RunsConsole,
    duration_text,
    eta_seconds,
    log_progress,
)
from bio_roberta.finetuning.results import RESULT_SCHEMA, PlannedRun, run_dir

# Lines of the train.log of a real run: test_sweep.py's chemprot seed 10 under its TINY overrides
# (fairseq-train --log-format simple --log-interval 1), captured 2026-11-26.
TRAIN_INNER = (
    "2026-11-26 20:37:38 | INFO | train_inner | epoch 001:      3 / 6 loss=2.37, nll_loss=0.228, "
    "accuracy=50, wps=736.8, ups=8.88, wpb=83, bsz=8, num_updates=3, lr=1.25e-05, gnorm=6.018, "
    "train_wall=0, wall=1"
)
VALID = (
    "2026-11-26 20:37:38 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 2.375 | "
    "nll_loss 0.236 | accuracy 37.5 | macro_f1 10.91 | micro_f1 37.5 | wps 20722.5 | wpb 80.5 | "
    "bsz 8 | num_updates 6 | best_macro_f1 10.91"
)
TRAIN_EPOCH = (
    "2026-11-26 20:37:39 | INFO | train | epoch 002 | loss 2.38 | nll_loss 0.224 | accuracy 37.5 "
    "| wps 688.7 | ups 8.1 | wpb 85 | bsz 8 | num_updates 8 | lr 0 | gnorm 6.202 | train_wall 0 | "
    "wall 2"
)
OTHER_LINES = (
    (
        "2026-11-26 20:37:38 | INFO | fairseq_cli.train | Stopping training due to "
        "num_updates: 8 >= max_update: 8"
    ),
    "2026-11-26 20:37:39 | INFO | fairseq_cli.train | done training in 1.2 seconds",
    "2026-11-26 20:37:37 | INFO | fairseq.trainer | begin training epoch 1",
)


def test_fairseq_log_lines_give_updates_wall_clock_and_the_dev_score():
    assert log_progress(TRAIN_INNER, "macro_f1") == LogProgress(3, 1.0)
    assert log_progress(VALID, "macro_f1") == LogProgress(6, None, 10.91)  # not best_macro_f1
    assert log_progress(VALID, "entity_f1") == LogProgress(6, None, None)
    assert log_progress(TRAIN_EPOCH, "macro_f1") == LogProgress(8, 2.0)
    assert [log_progress(line, "macro_f1") for line in OTHER_LINES] == [None] * 3


def test_eta_is_the_pace_so_far_times_the_updates_left():
    assert eta_seconds(LogProgress(100, 50.0), 400) == 150.0
    assert eta_seconds(LogProgress(400, 200.0), 400) == 0.0
    # no pace yet (fairseq's whole-second clock at 0, no update) or no total: unknown
    assert eta_seconds(LogProgress(3, 0.0), 8) is None
    assert eta_seconds(LogProgress(0, 5.0), 8) is None
    assert eta_seconds(LogProgress(3, 1.0), None) is None
    assert [duration_text(s) for s in (None, 4.4, 59.6, 185, 7440)] == [
        "?",
        "4s",
        "1m00s",
        "3m05s",
        "2h04m",
    ]


def write_record(path, status, **fields):
    path.mkdir(parents=True, exist_ok=True)
    record = {"schema": RESULT_SCHEMA, "status": status, "log": str(path / "train.log"), **fields}
    (path / "result.json").write_text(json.dumps(record))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_runs_are_shown_as_they_start_train_and_end_then_tabled(tmp_path):
    """A run kept from before, one that trains and ends ok, one that fails before a look sees it
    started, one never run: each as the command sees its run dir change, then one table row
    each."""
    results = tmp_path / "results"
    names = [("chemprot", 1), ("chemprot", 2), ("chemprot", 3), ("chemprot", 4)]
    runs = [PlannedRun(t, "", s, None, run_dir(results, t, s)) for t, s in names]
    kept, trained, failing, _missing = (run.dir for run in runs)
    write_record(kept, "ok", valid_score=0.5, test_score=0.25, timings={"seconds": 61})
    out, clock = io.StringIO(), Clock()
    console = RunsConsole("bio-roberta sweep", runs, lambda task: "macro_f1", out, clock=clock)

    args = {"fairseq_args": ["data", "--max-update", "8", "--seed", "2"]}
    write_record(trained, "started", config=args)
    (trained / "train.log").write_text(f"{OTHER_LINES[2]}\n{TRAIN_INNER}\n")
    console.poll()
    with open(trained / "train.log", "a") as log:
        log.write(f"{VALID}\n{TRAIN_EPOCH[:40]}")  # a line being written: not read yet
    # sooner than PROGRESS_SECONDS: a training line waits; VALIDATION_SECONDS after the last line
    # shown, a validation shows
    clock.now = VALIDATION_SECONDS
    console.poll()
    with open(trained / "train.log", "a") as log:
        log.write(f"{TRAIN_EPOCH[40:]}\n")
    console.poll()
    clock.now = VALIDATION_SECONDS + 2  # a validation 2 s after the last line shown: not shown
    with open(trained / "train.log", "a") as log:
        log.write(f"{VALID}\n")
    console.poll()
    write_record(trained, "ok", valid_score=0.1091, test_score=0.0444, timings={"seconds": 46.2})
    write_record(failing, "failed", error="FinetuneError: fairseq-train exited with status 2: x")
    console.poll()
    log = f"log {trained / 'train.log'}"
    assert out.getvalue().splitlines() == [
        f"bio-roberta sweep: run 1/4 chemprot seed 2: started, {log}",
        "bio-roberta sweep: run 1/4 chemprot seed 2: 3/8 updates (37%), ETA 2s",
        # the validation's pace: the training line's 1 s for 3 updates
        "bio-roberta sweep: run 1/4 chemprot seed 2: 6/8 updates (75%), dev macro_f1 10.91, ETA 1s",
        (
            f"bio-roberta sweep: run 1/4 chemprot seed 2: ok in 46s: dev macro_f1 10.91, test "
            f"macro_f1 4.44; {log}"
        ),
        # first seen ended, as a run that starts and ends between two looks: it ran all the same
        f"bio-roberta sweep: run 2/4 chemprot seed 3: started, log {failing / 'train.log'}",
        (
            "bio-roberta sweep: run 2/4 chemprot seed 3: failed in ?: FinetuneError: fairseq-train "
            f"exited with status 2: x; log {failing / 'train.log'}"
        ),
    ]
    assert [row.split() for row in console.table()] == [
        ["task", "seed", "setting", "fold", "metric", "dev", "test", "time", "status"],
        ["chemprot", "1", "-", "-", "macro_f1", "50.00", "25.00", "1m01s", "kept"],
        ["chemprot", "2", "-", "-", "macro_f1", "10.91", "4.44", "46s", "ok"],
        ["chemprot", "3", "-", "-", "macro_f1", "-", "-", "?", "failed"],
        ["chemprot", "4", "-", "-", "macro_f1", "-", "-", "-", "missing"],
    ]


def test_quiet_shows_nothing(tmp_path):
    run = PlannedRun("chemprot", "", 1, None, run_dir(tmp_path, "chemprot", 1))
    out = io.StringIO()
    with RunsConsole("bio-roberta sweep", [run], lambda task: "macro_f1", out, quiet=True) as shown:
        write_record(run.dir, "ok", valid_score=0.5, test_score=0.25)
    shown.print_table()
    assert out.getvalue() == ""


@pytest.mark.parametrize("verbose", [False, True])
def test_a_failed_hydra_run_names_its_last_line_and_where_its_output_is(
    tmp_path, capfd, monkeypatch, verbose
):
    """The Hydra app runs in the command's process; its output (Hydra's lines, what Python and C
    code write, what the processes it starts write) goes to RESULTS/hydra/<command>-<time>.log
    (with -v: the console); a Hydra run that fails says what it said last and where the rest
    is, and the command's own lines still reach the console meanwhile."""
    import os
    import subprocess

    from bio_roberta.commands._finetune_runs import runs_shown
    from bio_roberta.finetuning import sweep

    run_app = sweep.run_app

    def noisy_app(arguments):
        print("from python", flush=True)
        os.write(2, b"from C\n")
        subprocess.run([sys.executable, "-c", "print('from a worker')"], check=True)
        return run_app(arguments)

    monkeypatch.setattr(sweep, "run_app", noisy_app)
    args = argparse.Namespace(results=str(tmp_path), verbose=verbose, quiet=False)
    with runs_shown(args, "sweep", [], []) as (run_hydra, say):
        assert run_hydra(["--multirun", "hydra/launcher=nope"]) == 1
        say("after the run")
    out, err = capfd.readouterr()
    said = ("from python", "from C", "from a worker", "Could not find 'hydra/launcher/nope'")
    if verbose:
        assert all(line in out + err for line in said) and not (tmp_path / "hydra").exists()
        return
    (output,) = (tmp_path / "hydra").glob("sweep-*.log")
    logged = output.read_text()
    assert all(line in logged for line in said) and not any(line in out + err for line in said)
    last = logged.strip().splitlines()[-1]
    assert (
        f"bio-roberta sweep: the Hydra run exited with status 1: {last} (all its output: {output})"
    ) in err.splitlines()
    assert "bio-roberta sweep: after the run" in err.splitlines()
