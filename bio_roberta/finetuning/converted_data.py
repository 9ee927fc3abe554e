"""A task's converted data (finetune-bin/<task>/manifest.json) as the checks before fine-tuning read
it: the positions it was converted for against the model's, and the convert-task command that
makes it again from what the manifest records (the task file, the source folder, the vocabulary,
the scheme and the route of long inputs), so the command an error prints can be pasted as it is.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Optional

from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.tagging import BIO


def converted_manifest(data_dir: Path, spec: TaskSpec) -> dict:
    """The manifest of the task's data (its first fold's for a folded task); {} when unreadable,
    which the checks that need it report themselves."""
    fold = spec.run_folds[0]
    path = data_dir / (f"fold{fold}" if fold is not None else "") / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def convert_again_command(
    spec: TaskSpec, data_dir: Path, vocab: Optional[str] = None, pretrained: Optional[str] = None
) -> str:
    """`bio-roberta convert-task ...` writing data_dir again as its manifest records it, with
    another vocabulary dir and positions taken from `pretrained` where given."""
    manifest = converted_manifest(data_dir, spec)
    options = manifest.get("options") or {}
    declared = manifest.get("task_declaration") or {}
    declared_path = declared.get("path") or (
        spec.declaration.path if spec.declaration is not None else None
    )
    vocab = vocab or (manifest.get("vocab") or {}).get("path") or "<the model's vocabulary dir>"
    words = ["bio-roberta", "convert-task", spec.name]
    if declared_path:
        words += ["--task-file", str(declared_path)]
    source = options.get("data_dir")
    if source and not (declared_path and Path(source) == Path(declared_path).parent):
        words += ["--data", source]
    elif not declared_path:
        words += ["--data", "<its source files>"]
    words += ["--vocab", str(vocab), "--out", str(data_dir)]
    if options.get("scheme") and options["scheme"] != BIO:
        words += ["--scheme", options["scheme"]]
    long_inputs = options.get("long_inputs") or {}
    for option, key in (
        ("--long-inputs", "route"),
        ("--window-stride", "stride"),
        ("--window-pooling", "pooling"),
    ):
        if long_inputs.get(key) is not None:
            words += [option, str(long_inputs[key])]
    if pretrained is not None:
        words += ["--pretrained", str(pretrained)]
    elif options.get("max_positions"):
        words += ["--max-positions", str(options["max_positions"])]
    # paths quoted for the shell; a placeholder (<...>) is the user's to fill in, as it reads
    return " ".join(word if word.startswith("<") else shlex.quote(word) for word in words)


def positions_problem(
    spec: TaskSpec, data_dir: Path, pretrained: str, positions: int
) -> Optional[str]:
    """What is wrong with fine-tuning a model of `positions` on the task's data (None: nothing):
    examples converted for more positions than it has."""
    converted = converted_manifest(data_dir, spec).get("max_positions")
    if not converted or converted <= positions:
        return None
    again = convert_again_command(spec, data_dir, None, pretrained)
    return (
        f"{data_dir} was converted for {converted} positions but {pretrained} has {positions}: "
        f"convert it again for the model's: {again}"
    )


def task_data_dir(data_root: str | os.PathLike, spec: TaskSpec, fold: Optional[int]) -> Path:
    """finetune-bin/<task>[/fold<k>] (layout: user_dir/tasks/sequence_labeling.py)."""
    path = Path(data_root) / spec.name
    return path / f"fold{fold}" if fold is not None else path
