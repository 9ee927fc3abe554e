"""Child processes that do not outlive the process that started them."""

from __future__ import annotations

import ctypes
import signal
import sys


def end_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent dies, even by SIGKILL (Linux
    PR_SET_PDEATHSIG; elsewhere nothing): call it in a child before it starts its work, as a
    subprocess preexec_fn or a pool initializer. A killed parse, sweep or fine-tuning run then
    leaves no worker, Hydra job or fairseq-train behind still writing into its output dir."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
