"""Sequence labelling (NER) on RoBERTa: one tag per word, predicted at the word's first subword.

It reads a finetune-bin/<task> directory: the layout, how NER labels align with BPE tokens
included, is in docs/task_dirs.md.

Labels of the source files are converted to the tagging scheme with bio_roberta_core.tagging; the
scheme is recorded in the manifest and needs no option here, because entity spans are decoded
from the tags themselves (bio_roberta_core.tagging.tag_spans reads BIO, IO and BIOUL alike).

Validation logs ``entity_f1`` (from entity counts summed over the whole validation set) for
``--best-checkpoint-metric entity_f1 --maximize-best-checkpoint-metric``.
"""

from dataclasses import dataclass

from fairseq.data import OffsetTokensDataset, RightPadDataset
from fairseq.tasks import register_task

from user_dir.tasks._finetune_bin import UNLABELLED, WordTaggingConfig, WordTaggingTask


@dataclass
class SequenceLabelingConfig(WordTaggingConfig):
    """sequence_labeling's options: those of every word-tagging task."""


@register_task("sequence_labeling", dataclass=SequenceLabelingConfig)
class SequenceLabelingTask(WordTaggingTask):
    """Tag every word of a sentence; targets are class ids at word starts and UNLABELLED
    elsewhere."""

    cfg: SequenceLabelingConfig

    @property
    def tags(self) -> list[str]:
        """Tag of each class id: the label names, in the tagging scheme of the manifest."""
        return self.label_names

    @property
    def num_outputs(self) -> int:
        return len(self.tags)

    def word_targets(self, labels):
        target = OffsetTokensDataset(labels, -self.label_dictionary.nspecial)
        return RightPadDataset(target, pad_idx=UNLABELLED)
