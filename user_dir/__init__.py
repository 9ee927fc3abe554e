"""The bio-roberta fairseq plugin: pass this directory as `--user-dir` (or `common.user_dir`).

Importing it registers every task, criterion and model in tasks/, criterions/ and models/ (one
component per file, as in fairseq itself) and makes fairseq checkpoints load under torch's
weights_only default (bio_roberta_core/checkpoints.py), appear whole or not at all, and resume
past a damaged checkpoint_last.pt (checkpointing.py). It also makes fairseq's data-parallel
launch work on CPU and under torchrun (distributed.py), gives bf16 on GPUs flat fp32 master
weights (precision.py) and fairseq's Adam a fused kernel without apex, which `--optimizer
fused_adam` runs on the CPU too (optim/fused_adam.py).
fairseq itself is imported without scikit-learn and SciPy until they are used
(bio_roberta_core/deferred_imports.py).
"""

import importlib
import pkgutil
from pathlib import Path

import bio_roberta_core.checkpoints  # noqa: F401  (installs the checkpoint allowlist)
from bio_roberta_core.deferred_imports import fairseq_without_scipy

with fairseq_without_scipy():  # 1.6 s of every process for names no path of ours calls
    import fairseq.criterions  # noqa: F401  (imports all of fairseq)

for _package in ("models", "tasks", "criterions", "lr_schedulers"):
    for _module in pkgutil.iter_modules([str(Path(__file__).parent / _package)]):
        if not _module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{_package}.{_module.name}")

from user_dir import checkpointing, distributed, precision  # noqa: E402
from user_dir.optim import fused_adam  # noqa: E402

checkpointing.install()  # atomic checkpoint files, resume past a damaged checkpoint_last.pt
distributed.install()  # data-parallel training on CPU (gloo) and under torchrun
precision.install()  # bf16 on GPUs with flat fp32 master weights
fused_adam.install()  # fairseq's adam through torch's fused kernel where apex is missing
