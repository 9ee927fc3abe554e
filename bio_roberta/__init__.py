"""bio-roberta: the library behind the `bio-roberta` command (task registry, fine-tuning sweeps,
reports, export, prediction). Importing it makes fairseq checkpoints load under torch's
weights_only default; `load` imports torch and fairseq only when called."""

from bio_roberta.prediction.predictor import load
from bio_roberta_core import checkpoints as _checkpoints  # noqa: F401

__all__ = ["load"]
__version__ = "0.1.0"
