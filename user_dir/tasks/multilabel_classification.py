"""Multi-label classification (HOC): each example holds any subset of the labels.

Reads the finetune-bin/<task> layout of docs/task_dirs.md (label/ lines list the example's
label symbols; <split>.ids gives each example's group, the HOC abstract). The model is fairseq's
RoBERTa with its sentence classification head (as sentence_prediction registers it), one logit
per label; the multilabel_classification criterion trains it with per-label BCE and scores
validation at the group (abstract) level.
"""

import logging
from dataclasses import dataclass, field

import torch
from fairseq.data import BaseWrapperDataset, RawLabelDataset, StripTokenDataset
from fairseq.tasks import register_task

from user_dir.tasks._finetune_bin import FinetuneBinConfig, FinetuneBinTask, read_ids

logger = logging.getLogger(__name__)


class MultiHotDataset(BaseWrapperDataset):
    """Label-symbol ids of an example -> a 0/1 float vector over the classes."""

    def __init__(self, dataset, num_classes: int, offset: int):
        super().__init__(dataset)
        self.num_classes = num_classes
        self.offset = offset

    def __getitem__(self, index):
        vector = torch.zeros(self.num_classes)
        vector[self.dataset[index].long() - self.offset] = 1.0
        return vector

    def collater(self, samples):
        return torch.stack(samples)


@dataclass
class MultilabelClassificationConfig(FinetuneBinConfig):
    classification_head_name: str = field(
        default="sentence_classification_head", metadata={"help": "name of the classification head"}
    )


@register_task("multilabel_classification", dataclass=MultilabelClassificationConfig)
class MultilabelClassificationTask(FinetuneBinTask):
    cfg: MultilabelClassificationConfig

    def targets(self, split, input0, labels):
        if len(labels) != len(input0):
            raise ValueError(
                f"{self.cfg.data}: input0/{split} has {len(input0)} examples, "
                f"label/{split} {len(labels)}"
            )
        # Group ids as integers, first-seen order: validation scores HOC per abstract.
        group_index: dict[str, int] = {}
        groups = [
            group_index.setdefault(g, len(group_index))
            for _, g in read_ids(self.cfg.data, split, len(input0))
        ]
        logger.info("%s: %d examples in %d groups", split, len(groups), len(group_index))
        target = MultiHotDataset(
            StripTokenDataset(labels, id_to_strip=self.label_dictionary.eos()),
            num_classes=len(self.label_names),
            offset=self.label_dictionary.nspecial,
        )
        return {"target": target, "group": RawLabelDataset(groups)}

    def add_head(self, model):
        model.register_classification_head(
            self.cfg.classification_head_name, num_classes=len(self.label_names)
        )
