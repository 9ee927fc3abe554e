"""The benchmark tasks: one registry of declarations and the table of task kinds (their readers
are bio_roberta.readers, their conversion bio_roberta.conversion)."""

from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta.tasks.spec import TaskSpec

__all__ = ["TASKS", "TaskSpec", "get_task"]
