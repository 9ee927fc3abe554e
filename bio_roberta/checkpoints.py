"""Let fairseq's own checkpoints load under torch's weights_only default, without switching it off.

Since torch 2.6, torch.load unpickles only allowlisted globals. fairseq's checkpoint_utils calls
torch.load without weights_only, so its checkpoint_last.pt (args Namespace, meters with numpy
scalars, the data iterator state) fails to resume with UnpicklingError. We allowlist exactly the
types fairseq writes into checkpoints; anything else still fails loudly.

Importing torch costs seconds, which every `bio-roberta` command would pay at start-up; so the
allowlist is installed when torch is imported (now, if it already is).
"""
from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import sys


def fairseq_checkpoint_globals() -> list:
    """The non-tensor types fairseq 0.12 pickles into a checkpoint."""
    import numpy as np

    numpy_types = [np.dtype, np.ndarray]
    numpy_types += [type(np.dtype(t)) for t in ("float16", "float32", "float64", "int32", "int64", "bool")]
    try:  # numpy >= 2 moved the scalar/array reconstructors to numpy._core
        from numpy._core.multiarray import _reconstruct, scalar
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _reconstruct, scalar
    return [argparse.Namespace, _reconstruct, scalar, *numpy_types]


def install_allowlist() -> None:
    import torch

    torch.serialization.add_safe_globals(fairseq_checkpoint_globals())


class _InstallAfterTorchImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch` like the rest of sys.meta_path, then installs the allowlist once it has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None:
            self.torch_loader = spec.loader
            spec.loader = self
        return spec

    def create_module(self, spec):
        return self.torch_loader.create_module(spec)

    def exec_module(self, module):
        spec = module.__spec__
        spec.loader = module.__loader__ = self.torch_loader
        self.torch_loader.exec_module(module)
        install_allowlist()


if "torch" in sys.modules:
    install_allowlist()
elif not any(isinstance(finder, _InstallAfterTorchImport) for finder in sys.meta_path):
    sys.meta_path.insert(0, _InstallAfterTorchImport())
