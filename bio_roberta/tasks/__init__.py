"""The benchmark tasks: one registry of declarations and the readers of their source formats."""
from bio_roberta.tasks.registry import TASKS, TaskSpec, get_task

__all__ = ["TASKS", "TaskSpec", "get_task"]
