"""A BLURB run: convert, sweep, report and submit the suite in one command (run), the
submission directory of the chosen runs' predictions (submission) and its rescoring against the
release files (rescore)."""
