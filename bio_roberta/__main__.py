"""`python -m bio_roberta` is the `bio-roberta` command (for an environment not on PATH)."""

import sys

from bio_roberta.cli import main

sys.exit(main())
