"""Whole or not at all: how every stage writes its output dir (docs/artifacts.md).

- One run per output: `output_lock` holds an flock on `.<name>.lock` beside the dir for the whole
  run (`hold_until_exit`: across exec, for a command that execs its run); a second run on it is
  refused at once, naming the first (pid, host, start, command). The kernel drops the lock when
  its process dies, so a killed run leaves nothing held. The lock is beside the dir, not in it,
  because the dir itself is swapped.
- `new_output_dir`: the dir is built beside its target (`.<name>.new`), manifest last, fsynced and
  swapped in (`replace_dir`): a reader sees the old dir whole, then the new one whole; a killed or
  failed run leaves the old one as it was. Only a dir that is empty or holds files of the stage's
  own kinds is replaced; one holding anything else is refused (it is not the stage's to delete).
- Disk full (or a file size limit) while the dir is written: one line naming the file being
  written and how much the output had used (DiskFullError); the partial build is removed.

Stages that resume in place (parse, sweep) take only the lock and the disk-full line.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import re
import shutil
import socket
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.provenance import NO_ROOM, file_record, kill_point


class OutputDirError(BioRobertaError):
    """An output dir that cannot be written as asked; the message is one line saying what to do."""


class OutputBusyError(OutputDirError):
    """Another run holds the output dir."""


class DiskFullError(OutputDirError):
    """No room to write the output: the message names the file and the space used."""


_held_locks: list[int] = []  # fds of the locks this process holds


def _close_locks_in_child() -> None:
    """A forked worker does not keep its parent's locks: the lock ends with the run's process."""
    for fd in _held_locks:
        os.close(fd)
    _held_locks.clear()


os.register_at_fork(after_in_child=_close_locks_in_child)


def _holder(lock_file: Path) -> str:
    try:
        holder = json.loads(lock_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "another run (it has not written who it is yet)"
    return (
        f"pid {holder['pid']} on {holder['host']}, started {holder['started']} "
        f"(`{holder['command']}`)"
    )


@contextlib.contextmanager
def output_lock(target: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of output dir `target` while the block runs; OutputBusyError naming the
    holder if another run has it. The lock file is removed when the block ends."""
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    path = target.with_name(f".{target.name}.lock")
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputBusyError(
                f"{target}: another run is writing it: {_holder(path)}; wait for it to end or "
                f"stop it (one run per output)"
            ) from None
        try:
            same_file = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same_file = False
        if same_file:
            break
        os.close(fd)  # the previous holder removed this file as we opened it: take the new one
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }
    with contextlib.suppress(OSError):  # who holds it is for the message only (a full disk...)
        os.ftruncate(fd, 0)  # a killed run's file may be there still
        os.write(fd, json.dumps(holder).encode("utf-8"))
    _held_locks.append(fd)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # before the unlock: a run waiting on this file retries
        _held_locks.remove(fd)
        os.close(fd)


_kept_until_exit: list = []  # the output_lock blocks hold_until_exit entered


def hold_until_exit(target: str | os.PathLike) -> None:
    """Hold output dir `target`'s lock (OutputBusyError naming the holder if another run has it)
    for the rest of this process, across exec: for a command that execs its run in its own place
    (pretrain, distill), so the lock is the run's until it ends, kill -9 included."""
    held = output_lock(target)
    held.__enter__()
    _kept_until_exit.append(held)
    os.set_inheritable(_held_locks[-1], True)


@contextlib.contextmanager
def disk_full_named(directory: Path) -> Iterator[None]:
    """Turn running out of room while writing under `directory` into one DiskFullError line: the
    file being written (the error's, provenance.naming_file; else the newest file there), and the
    bytes written there."""
    try:
        yield
    except OSError as error:
        if error.errno not in NO_ROOM:
            raise
        raise _no_room(directory, error.filename, error.strerror) from None
    except sqlite3.Error as error:  # an on-disk index (the parse's) on a full disk
        if getattr(error, "sqlite_errorcode", None) != sqlite3.SQLITE_FULL:
            raise
        raise _no_room(directory, None, str(error)) from None


def _no_room(directory: Path, file: str | None, reason: str) -> DiskFullError:
    files = [Path(root) / name for root, _, names in os.walk(directory) for name in names]
    newest = max(files, key=lambda path: path.stat().st_mtime_ns, default=directory)
    used = sum(path.stat().st_size for path in files)
    free = shutil.disk_usage(directory if directory.is_dir() else directory.parent).free
    return DiskFullError(
        f"{file or newest}: {reason}: the output needed more than the {used:,} bytes written "
        f"under {directory} ({free:,} bytes free on that file system); the run's partial "
        "files are removed and nothing was put in place of a finished file: make room (or "
        "raise the limit) and re-run"
    )


def check_replaceable(target: Path, own_file: re.Pattern[str]) -> None:
    """Refuse a target that is a file, or a dir holding entries whose names are not `own_file`."""
    if target.exists() and not target.is_dir():
        raise OutputDirError(f"{target}: exists and is not a directory; pass a directory for --out")
    names = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
    foreign = [name for name in names if not own_file.match(name)]
    if foreign:
        raise OutputDirError(
            f"{target}: holds {foreign[0]!r}{' and more' if len(foreign) > 1 else ''}, which is "
            "not of this output, and the output replaces the whole dir; choose another --out"
        )


def replace_dir(new: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the finished dir `new` (beside `target`, on its file system) in target's place: readers
    see the old dir whole, then no dir, then the new one whole; never a mix of both."""
    new, target = Path(new), Path(target)
    for root, _, names in os.walk(new, topdown=False):  # on disk before the rename shows them
        for path in [*(Path(root) / name for name in names), Path(root)]:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)  # left by a run killed between the renames
    if not target.exists():
        os.rename(new, target)
        return
    os.rename(target, old)
    kill_point("replace_dir:old-moved-aside")
    os.rename(new, target)
    shutil.rmtree(old)


@dataclass(frozen=True)
class OutputBuild:
    """The dir being built (`path`) and the dir it becomes (`target`)."""

    path: Path
    target: Path

    def file_record(self, name: str) -> dict[str, Any]:
        """file_record of a built file, with the path it has once the build is in place."""
        return {**file_record(self.path / name), "path": str(self.target / name)}


@contextlib.contextmanager
def new_output_dir(target: str | os.PathLike, own_file: re.Pattern[str]) -> Iterator[OutputBuild]:
    """Build output dir `target` beside it and swap it in when the block ends without error (the
    block writes the manifest last); under the lock; the partial build is removed on error. The
    target may be missing, empty or hold only names matching `own_file` (check_replaceable)."""
    target = Path(target).resolve()
    check_replaceable(target, own_file)
    with output_lock(target):
        check_replaceable(target, own_file)  # as it is now that no other run writes it
        building = target.with_name(f".{target.name}.new")
        shutil.rmtree(building, ignore_errors=True)  # left by a killed run
        building.mkdir()
        try:
            with disk_full_named(building):
                yield OutputBuild(building, target)
                replace_dir(building, target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
