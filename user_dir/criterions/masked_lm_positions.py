"""fairseq's masked_lm loss without a wait for the GPU in each micro-batch.

fairseq's criterion selects the masked tokens with a boolean mask (in the LM head and again for
the targets); the number of rows that produces is only known once the GPU has computed the
mask, so the host stops queueing work twice per micro-batch, and again for the encoder's padding
check. corpora_masked_lm's batches carry those positions, found on the host while collating
(HostPositionsDataset): this criterion gathers logits and targets there, the same rows in the same
order, with sizes the host already knows. On batches without them (fairseq's own masked_lm task)
or on a TPU it is fairseq's masked_lm.

With ``lm_loss_chunk_rows`` the LM head's vocabulary projection and the cross-entropy run
together, that many masked rows at a time (_chunked_lm_loss.py): the same loss and gradients
without the full-vocabulary logits of every masked token in memory; compiled when the encoder is.
"""

from dataclasses import dataclass, field

from fairseq import modules
from fairseq.criterions import register_criterion
from fairseq.criterions.masked_lm import MaskedLmConfig, MaskedLmLoss

from user_dir.criterions._chunked_lm_loss import chunked_linear_cross_entropy
from user_dir.criterions._finetune_metrics import trainer_logging_output
from user_dir.models.fused_roberta_encoder import lm_head_hidden
from user_dir.tasks.corpora_masked_lm import lm_inputs


@dataclass
class MaskedLmPositionsConfig(MaskedLmConfig):
    lm_loss_chunk_rows: int = field(
        default=0,
        metadata={
            "help": "project the masked tokens onto the vocabulary and take their cross-entropy "
            "this many rows at a time, gradients computed on the way (no full-vocabulary logits "
            "of all masked tokens in memory); 0: all rows at once, as fairseq's masked_lm"
        },
    )


@register_criterion("masked_lm_positions", dataclass=MaskedLmPositionsConfig)
class MaskedLmPositionsLoss(MaskedLmLoss):
    def __init__(self, cfg: MaskedLmPositionsConfig, task):
        super().__init__(cfg, task)
        if cfg.lm_loss_chunk_rows < 0:
            raise ValueError(
                f"criterion.lm_loss_chunk_rows={cfg.lm_loss_chunk_rows}: give a number of rows "
                "(0: no chunks)"
            )
        self.lm_loss_chunk_rows = cfg.lm_loss_chunk_rows

    def forward(self, model, sample, reduce=True):
        positions = sample.get("masked_positions")
        if positions is None or self.tpu:
            return super().forward(model, sample, reduce)
        targets = sample["target"].view(-1).index_select(0, positions)
        inputs = lm_inputs(model, sample, self.padding_idx)
        if self.lm_loss_chunk_rows:
            loss = self.chunked_loss(model, sample, inputs, positions, targets)
        else:
            logits = model(**sample["net_input"], **inputs)[0]
            loss = modules.cross_entropy(
                logits, targets, reduction="sum", ignore_index=self.padding_idx
            )
        sample_size = len(positions)
        return loss, sample_size, trainer_logging_output(loss, sample, sample_size)

    def chunked_loss(self, model, sample, inputs, positions, targets):
        """The summed cross-entropy of the masked rows, projected lm_loss_chunk_rows at a time."""
        inputs.pop("masked_tokens")
        features = model(**sample["net_input"], features_only=True, **inputs)[0]
        head = model.encoder.lm_head
        return chunked_linear_cross_entropy(
            lm_head_hidden(head, features, positions),
            head.weight,
            head.bias,
            targets,
            self.padding_idx,
            self.lm_loss_chunk_rows,
            compiled=getattr(model.encoder, "implementation", None) == "compiled",
        )
