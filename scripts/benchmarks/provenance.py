"""What a measurement ran on, recorded beside its figures: date, commit, device, torch, load."""

import datetime
import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def commit() -> str:
    """The checkout's commit (with -dirty when it has uncommitted changes); where the checkout
    has no .git (a copy of the working tree on a lent GPU machine), $BIO_ROBERTA_COMMIT, which
    the command that copied it sets, else 'unknown'."""

    def git(*args) -> str:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True)
        if done.returncode:
            raise OSError(done.stderr)
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        return f"{head}-dirty" if git("status", "--porcelain", "--untracked-files=no") else head
    except OSError:
        return os.environ.get("BIO_ROBERTA_COMMIT", "unknown")


def device_name(cpu: bool) -> str:
    import torch

    return "cpu" if cpu else torch.cuda.get_device_name()


def provenance(cpu: bool) -> dict:
    import torch

    return {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "device": device_name(cpu),
        "torch": torch.__version__,
        "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()],
    }
