"""Sequence labelling (NER) on RoBERTa: one tag per word, predicted at the word's first subword.

It reads a finetune-bin/<task> directory: the layout, how NER labels align with BPE tokens
included, is in docs/task_dirs.md.

Labels of the source files are converted to the tagging scheme with bio_roberta_core.tagging; the
scheme is recorded in the manifest and needs no option here, because entity spans are decoded
from the tags themselves (bio_roberta_core.tagging.tag_spans reads BIO, IO and BIOUL alike).

Validation logs ``entity_f1`` (from entity counts summed over the whole validation set) for
``--best-checkpoint-metric entity_f1 --maximize-best-checkpoint-metric``.
"""

from dataclasses import dataclass, field

from fairseq.data import OffsetTokensDataset, PrependTokenDataset, RightPadDataset
from fairseq.tasks import register_task

from user_dir.models.token_classification_head import add_token_classification_head
from user_dir.tasks._finetune_bin import FinetuneBinConfig, FinetuneBinTask

# Target value of positions that carry no tag (<s>, non-initial subwords, </s>, padding): every
# special symbol of label/dict.txt lands below 0 after the class-id offset, padding at -1.
UNLABELLED = -1


@dataclass
class SequenceLabelingConfig(FinetuneBinConfig):
    classification_head_name: str = field(
        default="token_classification_head",
        metadata={"help": "name of the token-classification head"},
    )


@register_task("sequence_labeling", dataclass=SequenceLabelingConfig)
class SequenceLabelingTask(FinetuneBinTask):
    """Tag every word of a sentence; targets are class ids at word starts and UNLABELLED
    elsewhere."""

    cfg: SequenceLabelingConfig

    @property
    def tags(self) -> list[str]:
        """Tag of each class id: the label names, in the tagging scheme of the manifest."""
        return self.label_names

    def targets(self, split, input0, labels):
        self.check_word_labels_aligned(split, input0, labels)
        target = OffsetTokensDataset(
            PrependTokenDataset(labels, self.label_dictionary.pad()),
            -self.label_dictionary.nspecial,
        )
        return {"target": RightPadDataset(target, pad_idx=UNLABELLED)}

    def add_head(self, model):
        add_token_classification_head(model, self.cfg.classification_head_name, len(self.tags))
