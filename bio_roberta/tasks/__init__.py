"""The benchmark tasks: one registry of declarations, the table of task kinds, the readers of
their source formats and their conversion."""

from bio_roberta.tasks.registry import TASKS, TaskSpec, get_task

__all__ = ["TASKS", "TaskSpec", "get_task"]
