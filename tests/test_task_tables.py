"""The tables of task kinds (bio_roberta/tasks/kinds.py) and metrics (bio_roberta_core/metrics.py):
what they name exists in fairseq once the plugin is imported, each metric is logged by its
criterion under its name, a task is refused when its kind cannot log its metric, and a new kind
is a row that conversion and fine-tuning follow without knowing its name."""

import dataclasses
import json

import pytest
import torch

from bio_roberta.conversion.finetune_bin import convert_task
from bio_roberta.finetuning.command_line import task_options
from bio_roberta.tasks import kinds
from bio_roberta.tasks.kinds import KINDS, NLI
from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta_core.metrics import METRICS

# One validation batch's logging output of each criterion: one class / entity / abstract.
BATCH = {"loss": torch.tensor(1.0), "sample_size": 2, "ntokens": 4, "nsentences": 2}
VALIDATION_OUTPUTS = {
    "sequence_labeling": {
        **BATCH,
        "ncorrect": 1,
        "entity_tp": 1,
        "entity_predicted": 2,
        "entity_gold": 1,
    },
    "single_label_classification": {
        **BATCH,
        "ncorrect": 1,
        "tp_1": 1,
        "predicted_1": 1,
        "gold_1": 2,
    },
    "regression": {**BATCH, "pred": [0.5, 2.5], "targ": [1.0, 3.0]},
    "multi_element_tagging": {
        **BATCH,
        **{
            f"{count}_{k}": 1
            for count in ("element_tp", "element_predicted", "element_gold")
            for k in range(3)
        },
    },
    "multilabel_classification": {
        **BATCH,
        "group": torch.tensor([0, 0]),
        "gold": torch.tensor([[True, False], [False, True]]),
        "predicted": torch.tensor([[True, False], [False, False]]),
    },
}


def test_every_kind_and_metric_names_registered_plugin_components():
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    import user_dir  # noqa: F401  (registers the plugin's tasks and criteria)

    for name, kind in KINDS.items():
        assert kind.fairseq_task in TASK_REGISTRY and kind.criterion in CRITERION_REGISTRY, name
        assert kind.inputs in (1, 2), name
    assert {metric.criterion for metric in METRICS.values()} <= set(CRITERION_REGISTRY)
    for spec in TASKS.values():
        assert METRICS[spec.metric].criterion == spec.task_kind.criterion, spec.name


@pytest.mark.parametrize("name", sorted(METRICS))
def test_each_metric_is_logged_by_its_criterion_under_its_name(name):
    from fairseq import metrics as fairseq_metrics
    from fairseq.criterions import CRITERION_REGISTRY

    import user_dir  # noqa: F401

    criterion = METRICS[name].criterion
    with fairseq_metrics.aggregate() as validation:
        CRITERION_REGISTRY[criterion].reduce_metrics([VALIDATION_OUTPUTS[criterion]])
    assert name in validation.get_smoothed_values()


def test_a_task_whose_kind_does_not_log_its_metric_is_refused():
    with pytest.raises(
        ValueError,
        match="task ncbi-disease: criterion sequence_labeling of kind ner does not log macro_f1",
    ):
        dataclasses.replace(get_task("ncbi-disease"), metric="macro_f1")
    with pytest.raises(ValueError, match="task chemprot: metric 'spearman' is not one of"):
        dataclasses.replace(get_task("chemprot"), metric="spearman")
    with pytest.raises(ValueError, match="task chemprot: kind 'ranking' is not one of"):
        dataclasses.replace(get_task("chemprot"), kind="ranking")
    with pytest.raises(
        ValueError, match="task biosses: criterion regression of kind regression does not log"
    ):
        dataclasses.replace(get_task("biosses"), metric="accuracy")


def test_a_new_kind_is_one_row(tmp_path, monkeypatch):
    """A sentence-pair kind declared as a row: conversion writes both inputs and fine-tuning gets
    its fairseq task and criterion, with no branch on the kind's name."""
    monkeypatch.setitem(KINDS, "toy_pair", dataclasses.replace(KINDS[NLI], inputs=2))
    spec = dataclasses.replace(get_task("mednli"), name="toy-qa", kind="toy_pair")
    data = tmp_path / "qa"
    data.mkdir()
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        rows = [
            {
                "sentence1": f"Does aspirin help {i}?",
                "sentence2": "Aspirin relieved the pain.",
                "gold_label": spec.labels[i % 3],
            }
            for i in range(6)
        ]
        (data / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "finetune-bin"
    (manifest,) = convert_task(spec, data, _tiny_vocab(tmp_path), out)
    assert manifest["kind"] == "toy_pair" and (out / "input1" / "train.bin").is_file()
    assert task_options(spec, 64)[:4] == [
        "--task",
        "sentence_classification",
        "--criterion",
        "single_label_classification",
    ]
    assert kinds.label_symbols(spec) == spec.labels


def _tiny_vocab(tmp_path):
    from preprocess.learn_vocab import learn_vocabulary

    text = tmp_path / "text.txt"
    text.write_text("Does aspirin help ? Aspirin relieved the pain .\n" * 20)
    learn_vocabulary("gpt2", [text], tmp_path / "vocab", vocab_size=300)
    return tmp_path / "vocab"
