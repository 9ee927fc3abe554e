"""Let fairseq's own checkpoints load under torch's weights_only default, without switching it off.

Since torch 2.6, torch.load unpickles only allowlisted globals. fairseq's checkpoint_utils calls
torch.load without weights_only, so its checkpoint_last.pt (args Namespace, meters with numpy
scalars, the data iterator state) fails to resume with UnpicklingError. We allowlist exactly the
types fairseq writes into checkpoints; anything else still fails loudly.

Importing torch costs seconds, which every `bio-roberta` command would pay at start-up; so the
allowlist is installed when torch is imported (now, if it already is).

A file that cannot be loaded (missing, empty, cut short, or pickling something the allowlist
refuses) is reported as a one-line CheckpointError naming it (read_checkpoint, and fairseq's own
loader once the plugin is imported: user_dir/checkpointing.py).
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import os
import pickle
import re
import sys
import zipfile
from pathlib import Path
from typing import Any, Callable

from bio_roberta_core.errors import BioRobertaError


def fairseq_checkpoint_globals() -> list:
    """The non-tensor types fairseq 0.12 pickles into a checkpoint."""
    import numpy as np

    numpy_types = [np.dtype, np.ndarray]
    numpy_types += [
        type(np.dtype(t)) for t in ("float16", "float32", "float64", "int32", "int64", "bool")
    ]
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


class CheckpointError(BioRobertaError):
    """A checkpoint file that cannot be loaded; the message names the file and why."""

    @classmethod
    def unreadable(cls, path: str | os.PathLike, error: Exception) -> "CheckpointError":
        """The error of a failed torch.load of path, in one line."""
        if os.path.isdir(path):
            found = sorted(Path(path).glob("checkpoint*.pt")) + sorted(Path(path).glob("model.pt"))
            names = ", ".join(p.name for p in found[:4]) or "no checkpoint*.pt nor model.pt"
            return cls(
                f"{path}: a directory, not a checkpoint file; give the file (here: {names}; "
                "checkpoint_best.pt is the run's best, checkpoint_last.pt its last)"
            )
        if not os.path.isfile(path):
            return cls(f"{path}: no such checkpoint file")
        if os.path.getsize(path) == 0:
            return cls(
                f"{path}: empty (0 bytes), a write that was cut short; use another checkpoint"
            )
        with open(path, "rb") as file:
            head = file.read(2)
        if head != b"PK" and head[:1] != pickle.PROTO:  # torch.save's zip, or its legacy pickle
            return cls(
                f"{path}: not a checkpoint at all (torch.save writes a zip archive or a pickle; "
                "this file is neither); pass a fairseq checkpoint file such as checkpoint_best.pt"
            )
        if isinstance(error, pickle.UnpicklingError):
            refused = re.search(r"GLOBAL (\S+)", str(error))
            what = (
                f"the global {refused.group(1)}"
                if refused
                else "pickle content torch's weights_only loader refuses"
            )
            return cls(
                f"{path}: refused to load: it holds {what}, which no fairseq checkpoint does "
                "(only the types in bio_roberta_core/checkpoints.py load); "
                "use checkpoints you trust"
            )
        first_sentence = (str(error).strip().splitlines() or [""])[0].split(". ")[0]
        return cls(
            f"{path}: truncated, or not a fairseq checkpoint "
            f"({type(error).__name__}: {first_sentence})"
        )


def read_checkpoint(path: str | os.PathLike, mmap: bool = False) -> dict[str, Any]:
    """torch.load of a checkpoint on CPU under the allowlist; a file that fails is a
    CheckpointError.

    mmap maps the tensors instead of reading them, which makes this a cheap check that a file is
    whole (zip-format files only; torch wrote the legacy format before 1.6)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", mmap=mmap and zipfile.is_zipfile(path))
    except Exception as error:  # noqa: BLE001 - whatever torch raises, the file is unreadable
        raise CheckpointError.unreadable(path, error) from None


def first_non_finite(model_state: dict[str, Any]) -> tuple[str, int, int] | None:
    """(name, how many NaN/Inf, of how many values) of the first floating tensor of model_state
    (in its order) holding NaN or Inf; None if all are finite."""
    import torch

    for name, tensor in model_state.items():
        if not torch.is_tensor(tensor) or not tensor.is_floating_point():
            continue
        finite = torch.isfinite(tensor)
        if not bool(finite.all()):
            return name, int((~finite).sum()), finite.numel()
    return None


def check_finite_weights(path: str | os.PathLike, model_state: dict[str, Any]) -> None:
    """A CheckpointError naming the first tensor of model_state (in its order) holding NaN or Inf:
    such weights give NaN outputs, which an export or a fine-tuning run would only show later
    and obscurely."""
    found = first_non_finite(model_state)
    if found is not None:
        name, bad, total = found
        raise CheckpointError(
            f"{path}: weights not finite: {name} holds {bad} NaN/Inf of {total} values "
            "(a diverged run?); use an earlier checkpoint"
        )


def model_option(state: dict[str, Any]) -> Callable[[str], Any]:
    """name -> the checkpoint's model option (cfg.model, or the argparse args of older ones)."""
    model = (state.get("cfg") or {}).get("model") or state.get("args")
    if isinstance(model, dict):
        return model.get
    return lambda name: getattr(model, name, None)


class PositionsError(BioRobertaError):
    """Examples longer than a checkpoint's positions: its position embeddings have no row for
    them."""


def model_positions(checkpoint: str | os.PathLike) -> int:
    """A checkpoint's positions (its cfg.model.max_positions: <s> and </s> included, as
    --max-positions counts them)."""
    positions = model_option(read_checkpoint(checkpoint, mmap=True))("max_positions")
    if positions is None:
        raise PositionsError(f"{checkpoint} records no model max_positions; not a fairseq model?")
    return int(positions)


def check_max_positions(max_positions: int, checkpoint: str | os.PathLike) -> None:
    """Refuse --max-positions above the checkpoint's own (model_positions)."""
    positions = model_positions(checkpoint)
    if max_positions > positions:
        raise PositionsError(
            f"--max-positions {max_positions}: {Path(checkpoint)} has {positions} positions; "
            f"pass at most {positions}"
        )
