"""Every process a command starts dies with that command (docs/artifacts.md, "How every stage
writes its output dir"), whichever way it was started:

- a direct child (a subprocess, a forked pool worker) calls `end_with_parent` before its work (as
  preexec_fn or pool initializer): the kernel SIGKILLs it when its parent dies, even by SIGKILL;
- a process further down, started by a launcher the command does not control (Hydra's joblib/loky
  workers, submitit's local jobs, torchrun's processes), calls `end_with_owner` before its work:
  a watchdog thread SIGKILLs it as soon as the owner, the command named in $BIO_ROBERTA_OWNER
  (`owner_environment`, or `owning` for a launcher running in the command's own process), is
  gone, and a job given to it after the owner died does not start.
  (Not the parent rule there: PR_SET_PDEATHSIG follows the launcher's thread that started the
  worker, which may end before the worker does.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator, Optional

OWNER_ENV = "BIO_ROBERTA_OWNER"
OWNER_POLL_SECONDS = 0.1
_watched: set[str] = set()  # the owners this process has a watchdog for
os.register_at_fork(after_in_child=_watched.clear)  # a forked child has no thread of its parent


def end_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent dies, even by SIGKILL (Linux
    PR_SET_PDEATHSIG; elsewhere nothing): call it in a child before it starts its work, as a
    subprocess preexec_fn or a pool initializer. A killed parse, sweep or fine-tuning run then
    leaves no worker, Hydra job or fairseq-train behind still writing into its output dir."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _start_time(pid: int) -> Optional[str]:
    """The start time of process pid (clock ticks since boot, /proc/<pid>/stat field 22), which
    tells it from a later process given the same pid; None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": field 3 (state) on
    return None if fields[0] in ("Z", "X") else fields[19]  # a killed one not yet reaped: gone


def owner_environment(environment: Optional[dict[str, str]] = None) -> dict[str, str]:
    """`environment` (default: this process') naming this process as the owner of every process
    started with it, however far down: host, pid and start time."""
    identity = f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"
    return {**(os.environ if environment is None else environment), OWNER_ENV: identity}


@contextlib.contextmanager
def owning() -> Iterator[None]:
    """This process named as the owner in its own environment for the block, so every process a
    launcher running in it starts (Hydra's joblib workers, submitit's local jobs) inherits it and
    ends with this process (end_with_owner); the environment as it was after the block."""
    before = os.environ.get(OWNER_ENV)
    os.environ[OWNER_ENV] = owner_environment({})[OWNER_ENV]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OWNER_ENV, None)
        else:
            os.environ[OWNER_ENV] = before


def owner_pid() -> int:
    """The pid of the command that owns this process ($BIO_ROBERTA_OWNER on this host; this
    process' own where none is named), for the kill points of tests that kill the command while
    its jobs run."""
    identity = os.environ.get(OWNER_ENV)
    if not identity or identity.rsplit(":", 2)[0] != socket.gethostname():
        return os.getpid()
    return int(identity.rsplit(":", 2)[1])


def owner_alive(identity: str) -> bool:
    """Whether the owner `host:pid:start-time` still runs (on this host)."""
    _, pid, started = identity.rsplit(":", 2)
    return _start_time(int(pid)) == started


def end_with_owner() -> None:
    """End this process with the owner named in $BIO_ROBERTA_OWNER: SIGKILL now if the owner is
    gone, else when a watchdog thread finds it gone (every OWNER_POLL_SECONDS). Its own children
    end with it (they call end_with_parent). Without $BIO_ROBERTA_OWNER (a job started by hand),
    in the owner itself (a command that exec'd its run), or on another host than the owner's (a
    SLURM job: `scancel` ends it), nothing."""
    identity = os.environ.get(OWNER_ENV)
    if not identity or not sys.platform.startswith("linux") or identity in _watched:
        return
    host, pid, _ = identity.rsplit(":", 2)
    if host != socket.gethostname() or int(pid) == os.getpid():  # a run that is its own owner
        return
    if not owner_alive(identity):
        os.kill(os.getpid(), signal.SIGKILL)
    _watched.add(identity)

    def watch() -> None:
        while owner_alive(identity):
            threading.Event().wait(OWNER_POLL_SECONDS)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="end-with-owner", daemon=True).start()


def run_owned(command: list[str], **options) -> subprocess.CompletedProcess:
    """subprocess.run of a child that ends with this process (end_with_parent), as does everything
    it starts however far down (this process is their owner: owner_environment)."""
    environment = owner_environment(options.pop("env", None))
    return subprocess.run(command, preexec_fn=end_with_parent, env=environment, **options)
