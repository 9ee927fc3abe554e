"""Task-agnostic distillation (paper §7): masked-LM data plus a frozen teacher for the criterion.

The teacher lives on the task, not inside the student model, so the trainer never hands its
parameters to the optimizer and never writes them into a checkpoint: the student checkpoint stays
a plain checkpoint of its architecture.

Teacher and student may be of different architectures (RoBERTa, the BERT family, ModernBERT) and
widths (the criterion's projection aligns the hidden states), but not of different vocabularies:
both read the data's token ids, and the KL term compares their distributions over one dictionary;
a teacher with another dict.txt is refused, and so is one with fewer positions than the blocks
it must read (task.tokens_per_sample), each in one line.

task.student_layers builds the student from the teacher instead (DistilBERT's initialisation,
_student_layers.py): the teacher's model with a subset of its layers, their weights, its embeddings
and LM head; the run's model.* options give way to the teacher's, and every checkpoint of the run
records the teacher (path and sha256) and the layers taken (extra_state["student_init"]).
"""

import logging
import os
from dataclasses import dataclass, field

import torch
from fairseq import checkpoint_utils
from fairseq.tasks import register_task
from omegaconf import MISSING

from bio_roberta_core.checkpoints import CheckpointError
from bio_roberta_core.model_dictionary import (
    checkpoint_dictionaries,
    first_difference,
    load_model_dictionary,
)
from bio_roberta_core.provenance import sha256_file
from user_dir.tasks._student_layers import (
    EVERY_OTHER,
    check_teacher,
    chosen_layers,
    copy_teacher_layers,
    student_config,
)
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
    student_layers: str = field(
        default="",
        metadata={
            "help": f"build the student from the teacher (DistilBERT): its model with these of "
            f"its layers, their weights, its embeddings and LM head; {EVERY_OTHER} (half the "
            "layers, first and last kept: 0,2,4,7,9,11 of 12) or the layers counted from 0, "
            "e.g. 0,4,7,11; empty: the student is model.*, from checkpoint.finetune_from_model"
        },
    )


@register_task("distillation", dataclass=DistillationConfig)
class DistillationTask(CorporaMaskedLMTask):
    cfg: DistillationConfig

    def __init__(self, cfg: DistillationConfig, dictionary=None):
        super().__init__(cfg, dictionary)
        self.teacher = self.load_teacher()

    def build_model(self, cfg, from_checkpoint=False):
        """The student, from the teacher's layers when task.student_layers names them; its width
        and depth are recorded for the criterion."""
        layers = None
        if self.cfg.student_layers:
            check_teacher(self.teacher, self.cfg.teacher_path)
            layers = chosen_layers(self.cfg.student_layers, self.teacher_depth)
            replaced = student_config(cfg, self.teacher_model_config, len(layers))
            if replaced:
                logger.warning(
                    "task.student_layers: the student is the teacher's model; the teacher's "
                    "replaced the run's model.%s",
                    ", model.".join(replaced),
                )
        model = super().build_model(cfg, from_checkpoint)
        if layers is not None:
            copy_teacher_layers(model, self.teacher, layers)
            self.student_init = {
                "teacher": {
                    "path": os.path.abspath(self.cfg.teacher_path),
                    "sha256": sha256_file(self.cfg.teacher_path),
                },
                "teacher_depth": self.teacher_depth,
                "teacher_layers": layers,
            }
            logger.info(
                "student: the teacher's embeddings, LM head and layers %s of its %d",
                layers,
                self.teacher_depth,
            )
        self.student_dim = model.encoder.sentence_encoder.embed_tokens.embedding_dim
        self.student_depth = len(model.encoder.sentence_encoder.layers)
        return model

    @property
    def teacher_dim(self) -> int:
        return self.teacher.encoder.sentence_encoder.embed_tokens.embedding_dim

    @property
    def teacher_depth(self) -> int:
        return len(self.teacher.encoder.sentence_encoder.layers)

    def teacher_dictionary_path(self, state) -> str:
        """task.teacher_dict, else the checkpoint's own (beside it, recorded, its training
        data's: checkpoint_dictionaries)."""
        candidates = (
            [self.cfg.teacher_dict]
            if self.cfg.teacher_dict
            else [str(path) for path in checkpoint_dictionaries(self.cfg.teacher_path, state)]
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
                "Teacher and student read the same token ids and distillation compares their "
                "output distributions token by token, so both need the data's vocabulary: "
                "binarize the data with the teacher's (an imported model's is its import dir: "
                "binarize --vocab <import dir>), and pretrain the student on that vocabulary"
            )
        self.teacher_model_config = state["cfg"].model
        teacher = super().build_model(state["cfg"].model)
        teacher.load_state_dict(state["model"], strict=True, model_cfg=state["cfg"].model)
        if teacher.max_positions() < self.cfg.tokens_per_sample:
            raise ValueError(
                f"the teacher {path} takes {teacher.max_positions()} positions, fewer than the "
                f"task.tokens_per_sample={self.cfg.tokens_per_sample} tokens of the student's "
                f"blocks: the teacher must read every block whole (a 512-position RoBERTa cannot "
                f"teach at a ModernBERT's 8,192 tokens): give task.tokens_per_sample="
                f"{teacher.max_positions()} or less"
            )
        teacher.eval()
        teacher.requires_grad_(False)
        logger.info(
            "teacher %s: %d parameters (frozen)", path, sum(p.numel() for p in teacher.parameters())
        )
        return teacher
