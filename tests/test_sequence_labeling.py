"""Sequence labelling plugin: a pretrained roberta_tiny fine-tuned with fairseq-train --task
sequence_labeling; validation logs entity F1 and picks checkpoint_best; the prediction file is
written, maps back to the source words and scores exactly like seqeval."""

import re

import pytest
import seqeval.metrics

from bio_roberta.prediction.predictions import predict
from bio_roberta.tasks.prediction_files import read_conll
from bio_roberta.tasks.registry import get_task
from finetune_data import build_ner, fine_tune_selecting_best

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("scheme", ["BIO", "BIOUL"])
def test_fine_tuning_validates_with_entity_f1_and_predicts_per_word(
    scheme, tiny_roberta_checkpoint, tmp_path
):
    data = build_ner(tmp_path / "bin", tiny_roberta_checkpoint.parent / "dict.txt", scheme=scheme)
    # entity_f1 at every validation; checkpoint_best re-scored from its prediction file gives the
    # best one
    log = fine_tune_selecting_best(
        data,
        tmp_path,
        tiny_roberta_checkpoint,
        "entity_f1",
        "--task",
        "sequence_labeling",
        "--criterion",
        "sequence_labeling",
        validate_interval=6,
        max_update=24,
        min_validations=4,
        valid_output="valid.conll",
    )
    assert re.search(r"loaded checkpoint .*tiny_roberta.*checkpoint_last\.pt", log, re.I), log[
        -3000:
    ]

    result = predict(tmp_path / "checkpoints" / "checkpoint_best.pt", data, tmp_path / "test.conll")
    blocks = read_conll(tmp_path / "test.conll", 3)
    assert [[row[:2] for row in block] for block in blocks] == read_conll(data / "test.conll", 2)
    assert {tag.split("-")[0] for block in blocks for _, _, tag in block} <= {"O", "B", "I"}
    gold, predicted = [[r[1] for r in b] for b in blocks], [[r[2] for r in b] for b in blocks]
    assert result.score == seqeval.metrics.f1_score(gold, predicted)
    assert result.score > 0.5  # the word-start alignment is right: the tiny model learned the tags
    assert (result.task, result.metric, result.examples) == (
        "ncbi-disease",
        get_task("ncbi-disease").metric,
        16,
    )
    assert result.predictions["sha256"]


def test_misaligned_labels_are_reported_with_the_example(tmp_path, tiny_roberta_checkpoint):
    from finetune_data import write_indexed
    from user_dir.tasks.sequence_labeling import SequenceLabelingConfig, SequenceLabelingTask

    data = build_ner(tmp_path / "bin", tiny_roberta_checkpoint.parent / "dict.txt")
    write_indexed(data / "label" / "test", [[4, 5, 2]] * 16, 8)  # 3 symbols for longer input0 lines
    task = SequenceLabelingTask.setup_task(SequenceLabelingConfig(data=str(data), seed=1))
    assert task.tags == ["O", "B", "I"]
    with pytest.raises(
        ValueError, match=r"input0/test and label/test are not aligned \(example 0\)"
    ):
        task.load_dataset("test")


def test_head_reconciliation_on_checkpoint_load():
    """A checkpoint without the head gets the fresh weights; a head of another shape is dropped."""
    import torch

    from user_dir.models.token_classification_head import (
        TokenClassificationHead,
        TokenClassificationHeads,
    )

    heads = TokenClassificationHeads({"ner": TokenClassificationHead(8, 3, 0.1)})
    state = {"encoder.weight": torch.zeros(1)}
    heads.upgrade_state_dict_named(state, "token_classification_heads")
    assert torch.equal(
        state["token_classification_heads.ner.out_proj.weight"], heads["ner"].out_proj.weight
    )
    state = {
        "token_classification_heads.ner.out_proj.weight": torch.zeros(5, 8),
        "token_classification_heads.ner.out_proj.bias": torch.zeros(5),
        "token_classification_heads.old.out_proj.bias": torch.zeros(2),
    }
    heads.upgrade_state_dict_named(state, "token_classification_heads")
    assert sorted(state) == [
        "token_classification_heads.ner.out_proj.bias",
        "token_classification_heads.ner.out_proj.weight",
    ]
    assert state["token_classification_heads.ner.out_proj.weight"].shape == (3, 8)
