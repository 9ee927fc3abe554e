"""Provenance shared by every manifest and result record: input hashes, versions, git revision.

Every artifact that passes between stages carries these fields, so a number in a report traces
back to the bytes it came from (see docs/artifacts.md).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

TRACKED_PACKAGES = (
    "bio-roberta",
    "fairseq-fixed",
    "torch",
    "numpy",
    "tokenizers",
    "sentencepiece",
    "fastBPE",
    "blingfire",
    "pubmed_parser",
    "lxml",
    "hydra-core",
    "transformers",
)


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_record(path: str | os.PathLike) -> dict[str, Any]:
    """Path, size and sha256 of one input file."""
    path = Path(path)
    return {"path": str(path.resolve()), "size": path.stat().st_size, "sha256": sha256_file(path)}


def package_versions(names: Iterable[str] = TRACKED_PACKAGES) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def git_revision(start: str | os.PathLike | None = None) -> str | None:
    """The project's git revision (with '-dirty' for uncommitted changes), None outside git."""
    where = Path(start) if start else Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return rev + ("-dirty" if dirty else "")


def environment_record() -> dict[str, Any]:
    """The fields every manifest and result record carries besides its own counts."""
    return {"git_revision": git_revision(), "package_versions": package_versions()}


NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # disk full, quota, file size limit


@contextlib.contextmanager
def naming_file(path: str | os.PathLike) -> Iterator[None]:
    """Name `path` in an error of running out of room while the block writes it (a write's
    OSError names no file); an error that a named one caused (a file closed after its failed
    flush) is replaced by that one."""
    try:
        yield
    except OSError as error:
        if error.errno not in NO_ROOM or error.filename:
            raise
        cause = error.__context__
        if isinstance(cause, OSError) and cause.errno in NO_ROOM and cause.filename:
            raise cause from None
        raise OSError(error.errno, error.strerror, str(path)) from None


_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file handle whose bytes appear at path only once the block ends without error: they
    go to a temporary file in the same directory, which is fsynced and renamed over path. A process
    killed mid-write leaves path as it was (and the temporary file, named .<name>.*.tmp)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the usual mode
        with naming_file(path), os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write through a temporary file in the same directory and rename: readers never see half a
    file."""
    with atomic_file(path) as handle:
        handle.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def kill_point(name: str, pid: int | None = None) -> None:
    """For kill tests: SIGKILL this process (or process `pid`) here when $BIO_ROBERTA_KILL_AT is
    `name`."""
    if os.environ.get("BIO_ROBERTA_KILL_AT") == name:
        os.kill(os.getpid() if pid is None else pid, signal.SIGKILL)


def json_hash(obj: Any) -> str:
    """Stable sha256 of a JSON-serialisable object (e.g. a manifest)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()
