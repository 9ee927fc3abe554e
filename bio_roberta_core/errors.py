"""The base of the errors a user can act on.

Every error class of our packages derives from BioRobertaError (tests/test_cli_errors.py scans for
ones that do not). `bio-roberta` catches it once, around the command that runs
(bio_roberta/cli.py), and prints its message as one line; a bug raises anything else and shows its
traceback. Under fairseq-train, which our CLI does not wrap, the plugin prints its one line itself:
a checkpoint it cannot load (CheckpointError, user_dir/distributed.py), no room to save one
(user_dir/checkpointing.py).
"""


class BioRobertaError(Exception):
    """An error the user can act on: the message names the file, record or option and what to do.
    `bio-roberta` prints it as `bio-roberta <command>: error: <message>` and exits with status 2."""
