"""fairseq's masked_lm loss without a wait for the GPU in each micro-batch.

fairseq's criterion selects the masked tokens with a boolean mask (in the LM head and again for
the targets); the number of rows that produces is only known once the GPU has computed the
mask, so the host stops queueing work twice per micro-batch, and again for the encoder's padding
check. corpora_masked_lm's batches carry those positions, found on the host while collating
(HostPositionsDataset): this criterion gathers logits and targets there, the same rows in the same
order, with sizes the host already knows. On batches without them (fairseq's own masked_lm task)
or on a TPU it is fairseq's masked_lm.
"""

from fairseq import modules
from fairseq.criterions import register_criterion
from fairseq.criterions.masked_lm import MaskedLmConfig, MaskedLmLoss

from user_dir.tasks.corpora_masked_lm import lm_inputs


@register_criterion("masked_lm_positions", dataclass=MaskedLmConfig)
class MaskedLmPositionsLoss(MaskedLmLoss):
    def forward(self, model, sample, reduce=True):
        positions = sample.get("masked_positions")
        if positions is None or self.tpu:
            return super().forward(model, sample, reduce)
        logits = model(**sample["net_input"], **lm_inputs(model, sample, self.padding_idx))[0]
        targets = sample["target"].view(-1).index_select(0, positions)
        loss = modules.cross_entropy(
            logits, targets, reduction="sum", ignore_index=self.padding_idx
        )
        sample_size = len(positions)
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output
