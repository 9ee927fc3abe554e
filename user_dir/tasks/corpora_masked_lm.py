"""fairseq's masked_lm over several corpora at once, with whole-word masking from our own BPE files.

fairseq's masked_lm reads one ':'-separated data path per epoch (round robin), so "PM+M3" would
alternate corpora by epoch instead of mixing them; this task concatenates every path's blocks
into one training set, optionally resampled each epoch to a per-corpus share. Its
`mask_whole_words` also needs a BPE (PubMedBERT's whole-word masking): fairseq looks for it on
`self.args`, which a dataclass-configured task does not have, and its gpt2 default downloads the
general vocabulary; here the BPE comes from the local vocabulary dir (encoder.json + vocab.bpe).
The models it builds (and the distillation teacher) run the encoder implementation chosen by
`encoder_implementation` (user_dir/models/fused_roberta_encoder.py); checkpoints are the same.

Its batches also say, found on the host while collating, where the masked and the real tokens are
(HostPositionsDataset): with them the masked_lm_positions and distillation criteria gather the
masked rows without a boolean index, whose data-dependent size makes the host wait for the GPU
in every micro-batch.
"""

import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from fairseq import utils
from fairseq.data import BaseWrapperDataset, ConcatDataset, ResamplingDataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.masked_lm import MaskedLMConfig, MaskedLMTask
from omegaconf import II

from bio_roberta_core.vocab_files import bpe_options
from user_dir.models.fused_roberta_encoder import (
    IMPLEMENTATIONS,
    FusedRobertaEncoder,
    use_fused_encoder,
)

logger = logging.getLogger(__name__)


@dataclass
class CorporaMaskedLMConfig(MaskedLMConfig):
    corpus_sampling_ratios: str = field(
        default="",
        metadata={
            "help": "comma-separated share of training sequences drawn from each ':'-separated "
            "data dir, e.g. '0.8,0.2' (resampled every epoch); empty: plain concatenation"
        },
    )
    bpe_dir: str = field(
        default="",
        metadata={
            "help": "vocabulary dir holding the gpt2 encoder.json and vocab.bpe of the data's "
            "dict.txt; needed by --mask-whole-words"
        },
    )
    encoder_implementation: ChoiceEnum(["auto", *IMPLEMENTATIONS]) = field(
        default="auto",
        metadata={
            "help": "how the RoBERTa encoder runs (parameters and checkpoints are the same): "
            "fairseq's own; fused (one QKV GEMM into scaled_dot_product_attention, "
            "batch-major); compiled (fused, each layer through torch.compile); auto: "
            "compiled on a GPU, fairseq on CPU"
        },
    )
    encoder_cuda_graphs: bool = field(
        default=False,
        metadata={
            "help": "replay each compiled encoder layer as a CUDA graph (torch.compile's "
            "reduce-overhead mode; the compiled layers' shapes are static): GPU and "
            "encoder_implementation compiled only"
        },
    )
    float8_training: bool = field(
        default=False,
        metadata={
            "help": "run the encoder layers' projections as FP8 GEMMs (torchao's float8 "
            "training, dynamic tensorwise scaling; needs torchao and, on a GPU, compute "
            "capability 8.9+); weights, LM head and checkpoints stay as they are"
        },
    )
    cpu: bool = II("common.cpu")


class HostPositionsDataset(BaseWrapperDataset):
    """A masked-LM dataset whose batches add the flat positions (row * length + column) of their
    masked tokens (``masked_positions``) and of their real, non-padding ones
    (``non_padding_positions``), computed by the collater on the host: their sizes are known
    there, so the model gathers those rows with no wait for the GPU (lm_inputs)."""

    def __init__(self, dataset, padding_idx: int):
        super().__init__(dataset)
        self.padding_idx = padding_idx

    def collater(self, samples):
        batch = self.dataset.collater(samples)
        if batch:
            for key, tokens in (
                ("masked_positions", batch["target"]),
                ("non_padding_positions", batch["net_input"]["src_tokens"]),
            ):
                batch[key] = tokens.ne(self.padding_idx).view(-1).nonzero().squeeze(1)
        return batch


def lm_inputs(model, sample, padding_idx: int) -> dict:
    """The LM-head keyword arguments for ``model(**sample["net_input"], ...)``: a
    FusedRobertaEncoder takes the batch's host-side positions (no host synchronisation), fairseq's
    encoder its boolean mask of the masked tokens."""
    if "masked_positions" not in sample or not isinstance(model.encoder, FusedRobertaEncoder):
        return {"masked_tokens": sample["target"].ne(padding_idx)}
    return {
        "masked_tokens": sample["masked_positions"],
        "has_padding": len(sample["non_padding_positions"])
        < sample["net_input"]["src_tokens"].numel(),
    }


def parse_sampling_ratios(text: str, num_corpora: int) -> list:
    """Per-corpus shares normalised to sum to 1; a clear error when they do not match the data
    dirs."""
    ratios = [float(r) for r in text.split(",")]
    if len(ratios) != num_corpora or any(r < 0 for r in ratios) or sum(ratios) <= 0:
        raise ValueError(
            f"corpus_sampling_ratios={text!r} must give one non-negative share per data dir "
            f"({num_corpora} given in task.data) and not all zero"
        )
    total = sum(ratios)
    return [r / total for r in ratios]


@register_task("corpora_masked_lm", dataclass=CorporaMaskedLMConfig)
class CorporaMaskedLMTask(MaskedLMTask):
    cfg: CorporaMaskedLMConfig

    def _load_dataset_split(self, split, epoch, combine):
        """Every corpus's blocks of `split`, concatenated (and resampled to the configured
        shares)."""
        num_corpora = len(utils.split_paths(self.cfg.data))
        # the parent loads paths[(epoch - 1) % num_corpora]: ask it for each corpus in turn
        corpora = [
            super(CorporaMaskedLMTask, self)._load_dataset_split(split, i + 1, combine)
            for i in range(num_corpora)
        ]
        if num_corpora == 1:
            return corpora[0]
        dataset = ConcatDataset(corpora)
        if self.cfg.corpus_sampling_ratios and split == "train":
            ratios = parse_sampling_ratios(self.cfg.corpus_sampling_ratios, num_corpora)
            weights = np.concatenate([np.full(len(c), r / len(c)) for c, r in zip(corpora, ratios)])
            dataset = ResamplingDataset(
                dataset, weights=weights, size_ratio=1.0, seed=self.cfg.seed, epoch=epoch
            )
        logger.info("%s: %d blocks from %d corpora", split, len(dataset), num_corpora)
        return dataset

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch, combine, **kwargs)
        if not self.cfg.d2v2_multi:  # data2vec batches have no targets
            self.datasets[split] = HostPositionsDataset(
                self.datasets[split], self.source_dictionary.pad()
            )

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        use_fused_encoder(
            model,
            self.encoder_implementation(),
            cuda_graphs=self.cfg.encoder_cuda_graphs,
            float8=self.cfg.float8_training,
            cpu=self.cfg.cpu,
        )
        return model

    def encoder_implementation(self) -> str:
        choice = str(self.cfg.encoder_implementation)
        if choice == "auto":
            return "compiled" if torch.cuda.is_available() and not self.cfg.cpu else "fairseq"
        return choice

    def has_sharded_data(self, split):
        """Reload each epoch only when the per-corpus resampling must be drawn afresh."""
        return bool(self.cfg.corpus_sampling_ratios) and split == "train"

    @property
    def args(self):
        """The BPE namespace fairseq's get_whole_word_mask reads (MaskedLMTask uses self.args)."""
        if not self.cfg.bpe_dir:
            raise ValueError(
                "mask_whole_words needs task.bpe_dir: the vocabulary dir with the "
                "encoder.json and vocab.bpe that produced the data's dict.txt"
            )
        options = bpe_options("gpt2", self.cfg.bpe_dir)
        for key, path in vars(options).items():
            if key != "bpe" and not os.path.exists(path):
                raise FileNotFoundError(f"whole-word masking needs {path} (task.bpe_dir)")
        return options
