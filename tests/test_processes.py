"""The one rule for child processes (bio_roberta_core/processes.py): a Hydra job under a launcher
the command does not control ends with the command that owns it ($BIO_ROBERTA_OWNER), at once
when the owner is already gone, within a poll when it dies later, and not at all on another host
(SLURM). The end-to-end case, kill -9 of a joblib sweep, is in test_sweep.py."""

import signal
import socket
import subprocess
import sys

from bio_roberta_core.processes import OWNER_ENV, _start_time, owner_environment

JOB = "from bio_roberta_core.processes import end_with_owner; end_with_owner(); import time; "


def job(owner: str, then: str = "print('ran')") -> subprocess.Popen:
    """A job process that calls end_with_owner with this owner, then runs `then`."""
    return subprocess.Popen(
        [sys.executable, "-c", JOB + then],
        env=owner_environment() | {OWNER_ENV: owner},
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_job_whose_owner_is_gone_does_not_start():
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
    )
    identity = f"{socket.gethostname()}:{int(gone.stdout)}:{_start_time(1)}"  # pid gone (or reused)
    late = job(identity)
    assert late.wait(timeout=60) == -signal.SIGKILL and late.stdout.read() == ""


def test_a_job_ends_when_its_owner_is_killed_and_not_on_another_host():
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    identity = f"{socket.gethostname()}:{owner.pid}:{_start_time(owner.pid)}"
    running = job(identity, "print('ran', flush=True); time.sleep(600)")
    assert running.stdout.readline() == "ran\n"  # started: its owner runs
    elsewhere = job(f"other-host:{owner.pid}:{_start_time(owner.pid)}")
    owner.kill()
    owner.wait()
    assert running.wait(timeout=60) == -signal.SIGKILL
    assert elsewhere.wait(timeout=60) == 0 and elsewhere.stdout.read() == "ran\n"
