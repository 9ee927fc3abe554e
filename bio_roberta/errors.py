"""Errors shared across the package."""


class UsageError(Exception):
    """Bad input or options: `bio-roberta` prints it as one line and exits with status 2."""


class ExportError(Exception):
    """The checkpoint or vocabulary cannot be exported as asked; the message says why."""
