"""scripts/benchmark_distill.py's verdict: the per-seed table (each score as % of the same seed's
teacher, none where the teacher scored 0) and the seed-by-seed differences of (a) from the others,
on numbers given by hand; and its validation loss, read on fixed masks, against fairseq's own
masked-LM criterion on the same batches."""

import math
import sys

import pytest
import torch

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from benchmark_distill import per_seed_table, summary  # noqa: E402


def test_the_table_and_the_summary_from_numbers_given_by_hand():
    bits = {"teacher": 8.0, "distill-seed1": 8.1, "mlm_only-seed1": 8.3}
    bits |= {"distill-seed2": 8.2, "mlm_only-seed2": 8.2}
    scores = {
        ("teacher", "ner", 1): 0.5, ("distill", "ner", 1): 0.4, ("mlm_only", "ner", 1): 0.2,
        ("teacher", "ner", 2): 0.0, ("distill", "ner", 2): 0.1, ("mlm_only", "ner", 2): 0.3,
    }  # fmt: skip
    rows = per_seed_table([1, 2], ["distill", "mlm_only"], bits, scores, ["ner"])
    assert rows[1] == {
        "seed": 1,
        "model": "distill",
        "valid_mlm_bits": 8.1,
        "valid_mlm_bits_over_teacher": pytest.approx(0.1),
        "ner": 0.4,
        "ner_pct_of_teacher": 80.0,
    }
    assert rows[4]["ner_pct_of_teacher"] is None  # the teacher scored 0 with seed 2
    result = summary(rows, ["distill", "mlm_only"], ["ner"])
    assert result["seed_by_seed"]["distill_minus_mlm_only"] == {
        "valid_mlm_bits": [pytest.approx(-0.2), pytest.approx(0.0)],
        "ner": [pytest.approx(0.2), pytest.approx(-0.2)],
    }
    distill = result["by_model"]["distill"]
    assert distill["valid_mlm_bits"] == {"mean": 8.15, "stdev": round(math.sqrt(0.005), 4)}
    assert distill["ner_pct_of_teacher"] == {"mean": 80.0, "stdev": None}


def test_validation_bits_are_fairseqs_masked_lm_loss_on_the_same_batches(
    tiny_databin, tiny_roberta_checkpoint
):
    from benchmarks.distillation import (
        load_model,
        masked_lm_task,
        valid_batches,
        validation_bits,
    )
    from fairseq.criterions.masked_lm import MaskedLmConfig, MaskedLmLoss

    bits = validation_bits({"tiny": tiny_roberta_checkpoint}, tiny_databin, 32, 8)["tiny"]
    task = masked_lm_task(tiny_databin, 32)
    model = load_model(tiny_roberta_checkpoint, task)
    criterion = MaskedLmLoss(MaskedLmConfig(), task)
    total = count = 0
    with torch.no_grad():
        for sample in valid_batches(task, 8):
            loss, sample_size, _ = criterion(model, sample)
            total, count = total + float(loss), count + int(sample_size)
    assert bits == pytest.approx(total / count / math.log(2), abs=1e-4)
