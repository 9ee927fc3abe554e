"""What the fine-tuning tasks share: reading a finetune-bin/<task> directory (layout:
docs/task_dirs.md), ``FinetuneBinTask``, the base of the tasks that read one, ``WordTaggingTask``,
the base of those that tag words, and what sentence_classification shares with them: the choice of
encoder implementation (``EncoderChoiceConfig``) and batches of similar lengths
(``LengthGroupingConfig``).

Not registered itself (the leading underscore keeps user_dir/__init__.py from importing it as a
component); the plugin's fine-tuning tasks subclass it.
"""

import abc
import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq import models
from fairseq.data import (
    Dictionary,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    PrependTokenDataset,
    RightPadDataset,
    SortDataset,
    data_utils,
)
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.tasks import FairseqTask
from omegaconf import II, MISSING, OmegaConf, open_dict

from bio_roberta_core.model_dictionary import load_model_dictionary
from user_dir.models.fused_roberta_encoder import (
    IMPLEMENTATIONS,
    fine_tuning_implementation,
    use_fused_encoder,
)
from user_dir.models.token_classification_head import add_token_classification_head

logger = logging.getLogger(__name__)


@dataclass
class EncoderChoiceConfig(FairseqDataclass):
    """How every fine-tuning task (these and sentence_classification) runs a RoBERTa encoder."""

    encoder_implementation: ChoiceEnum(["auto", *IMPLEMENTATIONS]) = field(
        default="auto",
        metadata={
            "help": "how a RoBERTa encoder runs (parameters and checkpoints are the same; "
            "user_dir/models/fused_roberta_encoder.py): fairseq's own; fused; compiled; "
            "unpadded (fused, its GEMMs on the real tokens only); auto: unpadded on the CPU, "
            "fairseq's own on a GPU and for encoders the fused forward does not implement"
        },
    )
    cpu: bool = II("common.cpu")


def run_encoder_as_chosen(model, cfg) -> None:
    """Give the built model the encoder implementation cfg (an EncoderChoiceConfig) chooses; a
    checkpoint's task config written before the choice existed means the defaults."""
    implementation = fine_tuning_implementation(
        model,
        str(getattr(cfg, "encoder_implementation", "auto")),
        bool(getattr(cfg, "cpu", False)),
    )
    if implementation != "fairseq":
        use_fused_encoder(model, implementation)


# transformers' LengthGroupedSampler sorts megabatches of this many batches
MEGABATCH_BATCHES = 50


@dataclass
class LengthGroupingConfig(FairseqDataclass):
    """Whether a fine-tuning task batches examples of similar lengths together."""

    group_by_length: bool = field(
        default=False,
        metadata={
            "help": "batches of examples of similar lengths, as transformers' group_by_length "
            f"draws them: the shuffled examples cut into megabatches of {MEGABATCH_BATCHES} "
            "batches (--batch-size examples each), each megabatch sorted longest first; fairseq "
            "shuffles the order of the training batches every epoch. Less padding, and on the "
            "CPU's unpadded encoder fewer attention groups a batch; which examples share a batch "
            "changes"
        },
    )
    batch_size: Optional[int] = II("dataset.batch_size")


def grouped_by_length(dataset, cfg):
    """``dataset`` (ordered as loaded: shuffled, or in file order) in megabatches sorted longest
    first when cfg (a LengthGroupingConfig; a checkpoint's config from before the option means
    no) asks for it; otherwise ``dataset`` itself."""
    if not getattr(cfg, "group_by_length", False):
        return dataset
    if not cfg.batch_size:
        raise ValueError(
            f"--group-by-length cuts megabatches of {MEGABATCH_BATCHES} batches: give "
            "--batch-size (examples per batch), not --max-tokens alone"
        )
    rank = np.empty(len(dataset), dtype=np.int64)
    rank[dataset.ordered_indices()] = np.arange(len(dataset))
    sizes = dataset.sizes[0] if isinstance(dataset.sizes, (list, tuple)) else dataset.sizes
    megabatch = rank // (MEGABATCH_BATCHES * cfg.batch_size)
    # np.lexsort: the last key first; ties in length keep the loaded order
    return SortDataset(dataset, sort_order=[rank, -np.asarray(sizes), megabatch])


@dataclass
class FinetuneBinConfig(EncoderChoiceConfig, LengthGroupingConfig):
    """Options of every finetune-bin task; each adds its head's ``classification_head_name``."""

    data: str = field(default=MISSING, metadata={"help": "a finetune-bin/<task> directory"})
    max_positions: int = field(
        default=512, metadata={"help": "max BPE tokens per example, <s> included"}
    )
    no_shuffle: bool = field(
        default=False, metadata={"help": "keep the training examples in file order"}
    )
    seed: int = II("common.seed")


class FinetuneBinTask(FairseqTask, metaclass=abc.ABCMeta):
    """A pretrained RoBERTa plus one head, trained on input0/ against targets built from label/.

    Subclasses say how label/ becomes the sample's targets (``targets``) and which head scores
    them (``add_head``); loading, batching, shuffling and the model's max_positions are the same.
    """

    cfg: FinetuneBinConfig

    def __init__(
        self, cfg: FinetuneBinConfig, dictionary: Dictionary, label_dictionary: Dictionary
    ):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.label_dictionary = label_dictionary

    @classmethod
    def setup_task(cls, cfg: FinetuneBinConfig, **kwargs):
        task = cls(cfg, load_input_dictionary(cfg.data), load_label_dictionary(cfg.data))
        logger.info(
            "[input] dictionary: %d types; labels: %s", len(task.dictionary), task.label_names
        )
        return task

    @property
    def label_names(self) -> list[str]:
        """Label symbol of each class id."""
        return self.label_dictionary.symbols[self.label_dictionary.nspecial :]

    @abc.abstractmethod
    def targets(self, split: str, input0, labels) -> dict:
        """The sample entries built from label/ (at least "target"), checked against input0."""

    @abc.abstractmethod
    def add_head(self, model) -> None:
        """Register the head named ``cfg.classification_head_name`` on the built model."""

    def load_dataset(self, split, combine=False, **kwargs):
        input0 = load_split(self.cfg.data, "input0", split, self.dictionary, combine)
        labels = load_split(self.cfg.data, "label", split, self.label_dictionary, combine)
        targets = self.targets(split, input0, labels)
        src_tokens = source_tokens(input0, self.dictionary)
        dataset = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(src_tokens, pad_idx=self.dictionary.pad()),
                    "src_lengths": NumelDataset(src_tokens, reduce=False),
                },
                **targets,
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(src_tokens, reduce=True),
            },
            sizes=[src_tokens.sizes],
        )
        if not self.cfg.no_shuffle:
            with data_utils.numpy_seed(self.cfg.seed):
                dataset = SortDataset(dataset, sort_order=[np.random.permutation(len(dataset))])
        dataset = grouped_by_length(dataset, self.cfg)
        logger.info("loaded %s: %d examples", split, len(dataset))
        self.datasets[split] = dataset
        return dataset

    def build_model(self, cfg, from_checkpoint=False):
        with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
            cfg.max_positions = self.cfg.max_positions
        model = models.build_model(cfg, self, from_checkpoint)
        self.add_head(model)
        run_encoder_as_chosen(model, self.cfg)
        return model

    def max_positions(self):
        return self.cfg.max_positions

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary


# Target of a position that carries no tag (<s>, non-initial subwords, </s>, padding) in the
# word-tagging tasks: every special symbol of label/dict.txt lands below 0 after the class-id
# offset, padding at -1.
UNLABELLED = -1


@dataclass
class WordTaggingConfig(FinetuneBinConfig):
    """Options of the word-tagging tasks."""

    classification_head_name: str = field(
        default="token_classification_head",
        metadata={"help": "name of the token-classification head: an output per tag or element"},
    )


class WordTaggingTask(FinetuneBinTask):
    """A task that tags words (sequence_labeling, multi_element_tagging): label/ holds one symbol
    per BPE token of input0, the word's on its first subword; a token-classification head of
    ``num_outputs`` outputs scores each position."""

    cfg: WordTaggingConfig

    @property
    @abc.abstractmethod
    def num_outputs(self) -> int:
        """The head's outputs per position."""

    @abc.abstractmethod
    def word_targets(self, labels):
        """The "target" dataset from label/'s symbols, <pad> prepended under <s>."""

    def targets(self, split, input0, labels):
        self.check_word_labels_aligned(split, input0, labels)
        under_bos = PrependTokenDataset(labels, self.label_dictionary.pad())
        return {"target": self.word_targets(under_bos)}

    def check_word_labels_aligned(self, split: str, input0, labels) -> None:
        """Word tagging: label/ holds one symbol per BPE token of input0 (docs/task_dirs.md)."""
        mismatched = np.flatnonzero(np.asarray(input0.sizes) != np.asarray(labels.sizes))
        if len(input0) != len(labels) or len(mismatched):
            where = (
                f"example {mismatched[0]}"
                if len(mismatched)
                else f"{len(input0)} vs {len(labels)} examples"
            )
            raise ValueError(
                f"{self.cfg.data}: input0/{split} and label/{split} are not aligned ({where}); "
                "label/ must hold one symbol per BPE token of input0, eos included"
            )

    def add_head(self, model):
        add_token_classification_head(model, self.cfg.classification_head_name, self.num_outputs)


def load_input_dictionary(data: str) -> Dictionary:
    """input0/dict.txt as the pretrained model's embeddings index it (<mask> appended)."""
    return load_model_dictionary(_require(data, "input0", "dict.txt"))


def load_label_dictionary(data: str) -> Dictionary:
    """label/dict.txt as written: class id k is its k-th symbol after the special ones."""
    dictionary = Dictionary.load(_require(data, "label", "dict.txt"))
    if len(dictionary) == dictionary.nspecial:
        raise ValueError(f"{os.path.join(data, 'label', 'dict.txt')} lists no labels")
    return dictionary


def load_split(data: str, key: str, split: str, dictionary: Dictionary, combine: bool = False):
    """The indexed dataset <data>/<key>/<split>.{bin,idx}."""
    path = os.path.join(data, key, split)
    dataset = data_utils.load_indexed_dataset(path, dictionary, combine=combine)
    if dataset is None:
        raise FileNotFoundError(
            f"{path}.bin/.idx not found: convert the task first "
            "(bio_roberta/conversion/finetune_bin.py)"
        )
    return dataset


def source_tokens(input0, dictionary: Dictionary):
    """<s> + the example's BPE tokens + </s>, the input RoBERTa was pretrained on."""
    return PrependTokenDataset(input0, dictionary.bos())


def read_ids(data: str, split: str, expected: int) -> list[tuple[str, str]]:
    """(example id, group id) per line of <split>.ids; the group is the example id if absent."""
    path = _require(data, f"{split}.ids")
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            columns = line.rstrip("\n").split("\t")
            if len(columns) not in (1, 2) or not columns[0]:
                raise ValueError(f"{path}:{len(rows) + 1}: expected '<example id>[\\t<group id>]'")
            rows.append((columns[0], columns[-1]))
    if len(rows) != expected:
        raise ValueError(f"{path} has {len(rows)} lines but the split holds {expected} examples")
    return rows


def _require(data: str, *parts: str) -> str:
    path = os.path.join(data, *parts)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: is {data} a finetune-bin/<task> directory?")
    return path
