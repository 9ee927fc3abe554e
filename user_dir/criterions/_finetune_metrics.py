"""Logging that the fine-tuning criteria share (not registered: the leading underscore), and the
logging output every criterion of ours returns (trainer_logging_output).

Validation scores are derived from meters that hold the whole validation set (counts summed over
every batch, or tensors concatenated), never from per-batch scores, and are logged as percentages
rounded to 2 decimals, so that a checkpoint re-scored from its prediction file
(bio_roberta.prediction.predictions) gives the number validation logged.
"""

import math

from fairseq import metrics


def trainer_logging_output(loss, sample, sample_size) -> dict:
    """The entries fairseq's trainer reads from every criterion's logging output (a criterion adds
    its own beside them)."""
    return {
        "loss": loss.data,
        "ntokens": sample["ntokens"],
        "nsentences": sample["nsentences"],
        "sample_size": sample_size,
    }


def log_loss(logging_outputs) -> int:
    """Log the loss per unit of sample_size in bits, as fairseq's criteria do; returns
    sample_size."""
    loss_sum = sum(log.get("loss", 0) for log in logging_outputs)
    sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
    metrics.log_scalar("loss", loss_sum / max(sample_size, 1) / math.log(2), sample_size, round=3)
    return sample_size


def log_count_scores(logging_outputs, count_keys, scores: dict) -> None:
    """Sum each count of each group of `count_keys` into the hidden meter "_<key>", which keeps
    summing over the validation set, and log each score(*the summed counts of each group) as a
    percentage (log_percentage) under its name."""
    for keys in count_keys:
        for key in keys:
            metrics.log_scalar_sum("_" + key, sum(log.get(key, 0) for log in logging_outputs))

    def summed(meters) -> list[list]:
        return [[meters["_" + key].sum for key in keys] for keys in count_keys]

    for name, score in scores.items():
        log_percentage(name, lambda meters, score=score: score(*summed(meters)))


def log_percentage(name: str, score_of_meters) -> None:
    """Log score_of_meters(meters), a fraction, as a percentage, derived when read. Unrounded:
    checkpoint_best and a run's valid_score (the dev score a tuned sweep picks its setting by)
    tell apart scores less than 0.01 points apart (issue 42); fairseq's logs print 6 digits."""
    metrics.log_derived(name, lambda meters: 100 * score_of_meters(meters))


def forward_keeping_head_logits(criterion, model, sample, reduce=True):
    """fairseq's sentence_prediction forward of `criterion` (a SentencePredictionCriterion) plus
    the classification head's logits it scored, kept by a hook instead of a second pass, and
    their targets: (loss, sample_size, logging_output, logits, targets, one per example)."""
    from fairseq.criterions.sentence_prediction import SentencePredictionCriterion

    captured = []
    head = model.classification_heads[criterion.classification_head_name]
    hook = head.register_forward_hook(lambda _module, _inputs, output: captured.append(output))
    try:
        loss, sample_size, logging_output = SentencePredictionCriterion.forward(
            criterion, model, sample, reduce
        )
    finally:
        hook.remove()
    logits = captured[0]
    return loss, sample_size, logging_output, logits, model.get_targets(sample, [logits]).view(-1)
