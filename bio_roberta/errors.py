"""Errors shared across the package."""


class UsageError(Exception):
    """Bad input or options: `bio-roberta` prints it as one line and exits with status 2."""
