"""Subcommands of `bio-roberta`, one module each (see bio_roberta/cli.py for the contract)."""
