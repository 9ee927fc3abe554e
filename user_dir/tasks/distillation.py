"""Task-agnostic distillation (paper §7): masked-LM data plus a frozen teacher for the criterion.

The teacher lives on the task, not inside the student model, so the trainer never hands its
parameters to the optimizer and never writes them into a checkpoint: the student checkpoint stays
a plain RoBERTa checkpoint.
"""

import logging
import os
from dataclasses import dataclass, field

import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary
from fairseq.tasks import register_task
from omegaconf import MISSING

from bio_roberta_core.checkpoints import CheckpointError
from bio_roberta_core.model_dictionary import load_model_dictionary
from user_dir.tasks.corpora_masked_lm import CorporaMaskedLMConfig, CorporaMaskedLMTask

logger = logging.getLogger(__name__)


@dataclass
class DistillationConfig(CorporaMaskedLMConfig):
    teacher_path: str = field(default=MISSING, metadata={"help": "teacher checkpoint (.pt)"})
    teacher_dict: str = field(
        default="",
        metadata={
            "help": "teacher dict.txt; default: beside the checkpoint, else its training data's"
        },
    )


def first_difference(ours: Dictionary, theirs: Dictionary) -> str:
    """Where two dictionaries stop agreeing, for the error message."""
    for index, (a, b) in enumerate(zip(ours.symbols, theirs.symbols)):
        if a != b:
            return f"entry {index} is {a!r} in the data but {b!r} in the teacher's"
    return f"the data has {len(ours)} entries, the teacher's {len(theirs)}"


@register_task("distillation", dataclass=DistillationConfig)
class DistillationTask(CorporaMaskedLMTask):
    cfg: DistillationConfig

    def __init__(self, cfg: DistillationConfig, dictionary=None):
        super().__init__(cfg, dictionary)
        self.teacher = self.load_teacher()

    def build_model(self, cfg, from_checkpoint=False):
        """The student; its width is recorded for the criterion's student-to-teacher projection."""
        model = super().build_model(cfg, from_checkpoint)
        self.student_dim = model.encoder.sentence_encoder.embed_tokens.embedding_dim
        return model

    @property
    def teacher_dim(self) -> int:
        return self.teacher.encoder.sentence_encoder.embed_tokens.embedding_dim

    def teacher_dictionary_path(self, state) -> str:
        """task.teacher_dict, else dict.txt beside the checkpoint, else the teacher's own training
        data's."""
        candidates = (
            [self.cfg.teacher_dict]
            if self.cfg.teacher_dict
            else [
                os.path.join(os.path.dirname(self.cfg.teacher_path), "dict.txt"),
                os.path.join(state["cfg"].task.data.split(":")[0], "dict.txt"),
            ]
        )
        for candidate in candidates:
            if os.path.isfile(candidate):
                return candidate
        raise FileNotFoundError(
            f"teacher dictionary not found (looked at {', '.join(candidates)}); put the teacher's "
            f"dict.txt beside its checkpoint or pass task.teacher_dict"
        )

    def load_teacher(self) -> torch.nn.Module:
        """The teacher model in inference mode with gradients off; refuses a different
        vocabulary."""
        path = self.cfg.teacher_path
        try:
            state = checkpoint_utils.load_checkpoint_to_cpu(path)
        except CheckpointError as error:
            raise CheckpointError(f"teacher (task.teacher_path) {error}") from None
        teacher_dictionary = load_model_dictionary(self.teacher_dictionary_path(state))
        if teacher_dictionary.symbols != self.source_dictionary.symbols:
            raise ValueError(
                f"the teacher {path} was trained with another vocabulary than the data "
                f"{self.cfg.data}: {first_difference(self.source_dictionary, teacher_dictionary)}. "
                f"Distillation compares output distributions token by token, so binarize the data "
                f"with the teacher's dict.txt"
            )
        teacher = super().build_model(state["cfg"].model)
        teacher.load_state_dict(state["model"], strict=True, model_cfg=state["cfg"].model)
        teacher.eval()
        teacher.requires_grad_(False)
        logger.info(
            "teacher %s: %d parameters (frozen)", path, sum(p.numel() for p in teacher.parameters())
        )
        return teacher
