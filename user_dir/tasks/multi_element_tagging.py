"""Multi-element word tagging (EBM-PICO): each word carries any subset of the elements
Participants, Interventions, Outcomes (Gu et al. §5.2: "a token may belong to more than one
element").

Reads the NER layout of finetune-bin/<task> (docs/task_dirs.md): one label symbol per BPE token,
the word's element set (``O``, ``I-PAR``, ``I-PAR+I-INT``, ...; bio_roberta_core.tagging) on its
first subword and <pad> elsewhere. Each symbol becomes a 0/1 vector over PICO_ELEMENTS, so the
model makes one binary decision per element per word (a sigmoid each, not a softmax over sets);
positions without a word start get UNLABELLED in every element.
"""

from dataclasses import dataclass

import torch
from fairseq.data import BaseWrapperDataset
from fairseq.tasks import register_task

from bio_roberta_core.tagging import PICO_ELEMENTS, pico_elements
from user_dir.tasks._finetune_bin import UNLABELLED, WordTaggingConfig, WordTaggingTask


class ElementVectorsDataset(BaseWrapperDataset):
    """Label-symbol ids of a sentence -> (positions x elements) floats: 0/1 at word starts,
    UNLABELLED elsewhere; batches are right-padded with UNLABELLED."""

    def __init__(self, dataset, vectors: torch.Tensor):
        super().__init__(dataset)
        self.vectors = vectors  # label-symbol id -> its element vector

    def __getitem__(self, index):
        return self.vectors[self.dataset[index].long()]

    def collater(self, samples):
        length = max(len(sample) for sample in samples)
        batch = torch.full((len(samples), length, self.vectors.size(1)), float(UNLABELLED))
        for row, sample in zip(batch, samples):
            row[: len(sample)] = sample
        return batch


def element_vectors(dictionary) -> torch.Tensor:
    """One row per label symbol: its element set as 0/1 over PICO_ELEMENTS; special symbols
    (<pad> on non-initial subwords, <s>, </s>) UNLABELLED."""
    vectors = torch.full((len(dictionary), len(PICO_ELEMENTS)), float(UNLABELLED))
    for index in range(dictionary.nspecial, len(dictionary)):
        elements = pico_elements(dictionary[index])
        vectors[index] = torch.tensor([float(e in elements) for e in PICO_ELEMENTS])
    return vectors


@dataclass
class MultiElementTaggingConfig(WordTaggingConfig):
    """multi_element_tagging's options: those of every word-tagging task."""


@register_task("multi_element_tagging", dataclass=MultiElementTaggingConfig)
class MultiElementTaggingTask(WordTaggingTask):
    cfg: MultiElementTaggingConfig

    num_outputs = len(PICO_ELEMENTS)

    def word_targets(self, labels):
        try:
            vectors = element_vectors(self.label_dictionary)
        except ValueError as error:
            raise ValueError(f"{self.cfg.data}/label/dict.txt: {error}") from None
        return ElementVectorsDataset(labels, vectors)
