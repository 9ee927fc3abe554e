"""Errors shared across the bio_roberta package; their base is bio_roberta_core/errors.py."""

from bio_roberta_core.errors import BioRobertaError


class UsageError(BioRobertaError):
    """Bad options or arguments of a command: `bio-roberta` prints it as one line and exits with
    status 2."""


class ExportError(BioRobertaError):
    """The checkpoint or vocabulary cannot be exported as asked; the message says why."""


class FinetuneError(BioRobertaError):
    """A run cannot start or finish; the message names the file or setting to fix."""
