"""Sequence labelling (NER) on RoBERTa: one tag per word, predicted at the word's first subword.

The finetune-bin/<task> layout, written by bio_roberta/tasks/convert.py and read by this task,
fairseq's ``sentence_prediction`` (single-label classification), ``multilabel_classification``
and bio_roberta/prediction_files.py::

    finetune-bin/<task>/                    (cross-validation folds: finetune-bin/<task>/fold<k>/)
      input0/{train,valid,test}.{bin,idx}   BPE token ids of each example in the model's dictionary,
      input0/dict.txt                       binarised with an eos appended (fairseq-preprocess's
                                            default); no bos: the tasks prepend <s> themselves.
                                            Sentence pairs (NLI) add input1/ the same way.
      label/{train,valid,test}.{bin,idx}    label symbols of each example, binarised with
      label/dict.txt                        label/dict.txt, which lists exactly
                                            ``bio_roberta.tasks.kinds.label_symbols(spec, scheme)``
                                            in that order (class id k = k-th symbol, no others):
        single-label  one symbol per example (as fairseq sentence_prediction expects);
        multi-label   the symbols of the example's labels, any order, possibly none (HOC);
        NER           one symbol per BPE token of input0, the same length as its input0 line
                      (eos included): the first subword of a word carries the word's tag in the
                      tagging scheme, every other subword carries the literal symbol ``<pad>``.
                      Positions holding a tag are therefore the word starts: predictions map
                      back to exactly one tag per word.
      {split}.ids       one line per example, in binarised order: ``<example id>`` or, where the
                        score groups examples (HOC abstracts), ``<example id>\\t<group id>``.
      {split}.conll     NER only: the source words and their source (BIO) gold tags,
                        ``word\\tgold_tag`` per line, a blank line after each example, examples in
                        binarised order. A sentence too long for max_positions is split at word
                        boundaries into consecutive examples that share one example id;
                        predictions join them back into one sentence.
      manifest.json     {"task": registry name, "tagging_scheme": "BIO" | "IO" | "BIOUL" (NER),
                         "labels": the label/dict.txt symbols in order, "counts": {split: n},
                         "vocab": {"path", "sha256" of its dict.txt}, plus
                         bio_roberta_core.provenance.environment_record() and input file_records}.

Labels of the source files are converted to the tagging scheme with bio_roberta_core.tagging; the
scheme is recorded in the manifest and needs no option here, because entity spans are decoded
from the tags themselves (bio_roberta_core.tagging.tag_spans reads BIO, IO and BIOUL alike).

Validation logs ``entity_f1`` (from entity counts summed over the whole validation set) for
``--best-checkpoint-metric entity_f1 --maximize-best-checkpoint-metric``.
"""
from dataclasses import dataclass, field

import numpy as np
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
        default="token_classification_head", metadata={"help": "name of the token-classification head"}
    )


@register_task("sequence_labeling", dataclass=SequenceLabelingConfig)
class SequenceLabelingTask(FinetuneBinTask):
    """Tag every word of a sentence; targets are class ids at word starts and UNLABELLED elsewhere."""

    cfg: SequenceLabelingConfig

    @property
    def tags(self) -> list[str]:
        """Tag of each class id: the label names, in the tagging scheme of the manifest."""
        return self.label_names

    def targets(self, split, input0, labels):
        mismatched = np.flatnonzero(np.asarray(input0.sizes) != np.asarray(labels.sizes))
        if len(input0) != len(labels) or len(mismatched):
            where = f"example {mismatched[0]}" if len(mismatched) else f"{len(input0)} vs {len(labels)} examples"
            raise ValueError(
                f"{self.cfg.data}: input0/{split} and label/{split} are not aligned ({where}); "
                "label/ must hold one symbol per BPE token of input0, eos included"
            )
        target = OffsetTokensDataset(
            PrependTokenDataset(labels, self.label_dictionary.pad()), -self.label_dictionary.nspecial
        )
        return {"target": RightPadDataset(target, pad_idx=UNLABELLED)}

    def add_head(self, model):
        add_token_classification_head(model, self.cfg.classification_head_name, len(self.tags))
