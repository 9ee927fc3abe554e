"""Start fairseq-train or fairseq-hydra-train with the plugin imported first, so that its
data-parallel launch (user_dir/distributed.py) is in place before fairseq reads its config:
    python -m user_dir.distributed_launch fairseq-hydra-train --config-dir ...
    torchrun --nproc_per_node 2 -m user_dir.distributed_launch fairseq-hydra-train --config-dir ...

The plugin's __init__ does not import this module, so `python -m` runs it once, as __main__.
"""

import importlib
import sys

import user_dir  # noqa: F401  (installs call_main before fairseq reads its config)
from bio_roberta_core.processes import end_with_owner

ENTRY_POINTS = {
    "fairseq-train": "fairseq_cli.train",
    "fairseq-hydra-train": "fairseq_cli.hydra_train",
}


def main() -> None:
    """`python -m user_dir.distributed_launch fairseq-train|fairseq-hydra-train ARGS...`"""
    if len(sys.argv) < 2 or sys.argv[1] not in ENTRY_POINTS:
        choices = "|".join(ENTRY_POINTS)
        sys.exit(f"usage: python -m user_dir.distributed_launch {{{choices}}} ARGS...")
    end_with_owner()  # a torchrun process ends with the pretrain/distill command it serves
    entry = importlib.import_module(ENTRY_POINTS[sys.argv[1]])
    sys.argv = [sys.argv[1], *sys.argv[2:]]
    entry.cli_main()


if __name__ == "__main__":
    main()
