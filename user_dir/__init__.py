"""The bio-roberta fairseq plugin: pass this directory as `--user-dir` (or `common.user_dir`).

Importing it registers every task, criterion and model in tasks/, criterions/ and models/ (one
component per file, as in fairseq itself) and makes fairseq checkpoints load under torch's
weights_only default (bio_roberta/checkpoints.py).
"""
import importlib
import pkgutil
from pathlib import Path

import bio_roberta.checkpoints  # noqa: F401  (installs the checkpoint allowlist)

for _package in ("models", "tasks", "criterions"):
    for _module in pkgutil.iter_modules([str(Path(__file__).parent / _package)]):
        if not _module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{_package}.{_module.name}")
