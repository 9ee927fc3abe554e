"""`python -m bio_roberta` is the `bio-roberta` command (for an environment not on PATH)."""

from bio_roberta.cli import console_main

console_main()
