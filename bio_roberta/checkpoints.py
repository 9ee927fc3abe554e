"""Let fairseq's own checkpoints load under torch's weights_only default, without switching it off.

Since torch 2.6, torch.load unpickles only allowlisted globals. fairseq's checkpoint_utils calls
torch.load without weights_only, so its checkpoint_last.pt (args Namespace, meters with numpy
scalars, the data iterator state) fails to resume with UnpicklingError. We allowlist exactly the
types fairseq writes into checkpoints; anything else still fails loudly.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch


def fairseq_checkpoint_globals() -> list:
    """The non-tensor types fairseq 0.12 pickles into a checkpoint."""
    numpy_types = [np.dtype, np.ndarray]
    numpy_types += [type(np.dtype(t)) for t in ("float16", "float32", "float64", "int32", "int64", "bool")]
    try:  # numpy >= 2 moved the scalar/array reconstructors to numpy._core
        from numpy._core.multiarray import _reconstruct, scalar
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _reconstruct, scalar
    return [argparse.Namespace, _reconstruct, scalar, *numpy_types]


def install_allowlist() -> None:
    torch.serialization.add_safe_globals(fairseq_checkpoint_globals())


install_allowlist()
