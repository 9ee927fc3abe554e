"""Multi-label classification (HOC): each example holds any subset of the labels.

Reads the finetune-bin/<task> layout of sequence_labeling.py (label/ lines list the example's
label symbols; <split>.ids gives each example's group, the HOC abstract). The model is fairseq's
RoBERTa with its sentence classification head (as sentence_prediction registers it), one logit
per label; the multilabel_classification criterion trains it with per-label BCE and scores
validation at the group (abstract) level.
"""
import contextlib
import logging
from dataclasses import dataclass, field

import numpy as np
import torch
from fairseq import models
from fairseq.data import (
    BaseWrapperDataset,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RawLabelDataset,
    RightPadDataset,
    SortDataset,
    StripTokenDataset,
    data_utils,
)
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II, MISSING, OmegaConf, open_dict

from user_dir.tasks._finetune_bin import (
    load_input_dictionary,
    load_label_dictionary,
    load_split,
    read_ids,
    source_tokens,
)

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
class MultilabelClassificationConfig(FairseqDataclass):
    data: str = field(default=MISSING, metadata={"help": "a finetune-bin/<task> directory"})
    classification_head_name: str = field(
        default="sentence_classification_head", metadata={"help": "name of the classification head"}
    )
    max_positions: int = field(default=512, metadata={"help": "max BPE tokens per example, <s> included"})
    no_shuffle: bool = field(default=False, metadata={"help": "keep the training examples in file order"})
    seed: int = II("common.seed")


@register_task("multilabel_classification", dataclass=MultilabelClassificationConfig)
class MultilabelClassificationTask(FairseqTask):
    cfg: MultilabelClassificationConfig

    def __init__(self, cfg: MultilabelClassificationConfig, dictionary, label_dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.label_dictionary = label_dictionary

    @classmethod
    def setup_task(cls, cfg: MultilabelClassificationConfig, **kwargs):
        return cls(cfg, load_input_dictionary(cfg.data), load_label_dictionary(cfg.data))

    @property
    def label_names(self) -> list[str]:
        """Label symbol of each class id."""
        return self.label_dictionary.symbols[self.label_dictionary.nspecial:]

    def load_dataset(self, split, combine=False, **kwargs):
        input0 = load_split(self.cfg.data, "input0", split, self.dictionary, combine)
        labels = load_split(self.cfg.data, "label", split, self.label_dictionary, combine)
        if len(labels) != len(input0):
            raise ValueError(f"{self.cfg.data}: input0/{split} has {len(input0)} examples, label/{split} {len(labels)}")
        # Group ids as integers, first-seen order: validation scores HOC per abstract.
        group_index: dict[str, int] = {}
        groups = [group_index.setdefault(g, len(group_index)) for _, g in read_ids(self.cfg.data, split, len(input0))]
        src_tokens = source_tokens(input0, self.dictionary)
        target = MultiHotDataset(
            StripTokenDataset(labels, id_to_strip=self.label_dictionary.eos()),
            num_classes=len(self.label_names), offset=self.label_dictionary.nspecial,
        )
        dataset = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(src_tokens, pad_idx=self.dictionary.pad()),
                    "src_lengths": NumelDataset(src_tokens, reduce=False),
                },
                "target": target,
                "group": RawLabelDataset(groups),
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(src_tokens, reduce=True),
            },
            sizes=[src_tokens.sizes],
        )
        if not self.cfg.no_shuffle:
            with data_utils.numpy_seed(self.cfg.seed):
                dataset = SortDataset(dataset, sort_order=[np.random.permutation(len(dataset))])
        logger.info(f"loaded {split}: {len(dataset)} examples in {len(group_index)} groups")
        self.datasets[split] = dataset
        return dataset

    def build_model(self, cfg, from_checkpoint=False):
        with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
            cfg.max_positions = self.cfg.max_positions
        model = models.build_model(cfg, self, from_checkpoint)
        model.register_classification_head(self.cfg.classification_head_name, num_classes=len(self.label_names))
        return model

    def max_positions(self):
        return self.cfg.max_positions

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
