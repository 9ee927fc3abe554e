"""bio-roberta: the library behind the `bio-roberta` command (task registry, fine-tuning sweeps,
reports, export). Importing it makes fairseq checkpoints load under torch's weights_only default."""

from bio_roberta_core import checkpoints as _checkpoints  # noqa: F401

__version__ = "0.1.0"
