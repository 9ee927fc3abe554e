"""The report's error, in a module of its own so that every part of the report can raise it
without importing the package that puts the parts together."""

from bio_roberta.finetuning.results import ResultRecordError


class ReportError(ResultRecordError):
    """A report that cannot be made: a data manifest its runs name is unreadable (names the
    file). Its base, ResultRecordError, is a results dir with no readable records."""
