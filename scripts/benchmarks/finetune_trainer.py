"""scripts/benchmark_finetune.py's peer: one transformers Trainer run (in a process of its own,
`benchmark_finetune.py --transformers-run SETTINGS`) on the examples as our fairseq task reads
them, configured as a careful user runs it.

The Trainer's options that decide its speed are the peer's configuration and go into the JSON
(``trainer_configuration``): its training sampler (``train_sampling_strategy``: "group_by_length"
puts examples of similar length in one batch, which cuts the padding of random batches, about
half on NCBI-disease; "random" is its default) and the gradient clipping, which both routes get
alike (``max_grad_norm`` here, fairseq's --clip-norm on ours: the same max-norm, 0 for none).
"""

import importlib.util
import json
import time
from pathlib import Path

NEEDS_ACCELERATE = (
    "transformers' Trainer needs the accelerate package, which this environment lacks: "
    "pip install 'bio-roberta[benchmark]' (or accelerate) to run the transformers route"
)
# transformers' training samplers the benchmark offers (TrainingArguments.train_sampling_strategy)
SAMPLING = ("group_by_length", "random")
EVAL_BATCH_SIZE = 32


def trainer_configuration(sampling: str, clip_norm: float) -> dict:
    """The Trainer options of the peer that are not the task's hyperparameters, as the JSON names
    them."""
    return {
        "train_sampling_strategy": sampling,
        "max_grad_norm": clip_norm,
        "per_device_eval_batch_size": EVAL_BATCH_SIZE,
        "dataloader_num_workers": 0,
        "load_best_model_at_end": True,
    }


def transformers_run(settings_path: Path) -> None:
    """One Trainer run from the settings benchmark_finetune's compare() wrote; its result (loop
    seconds per update, test gold and predicted class ids, evaluation seconds) to result.json
    beside them."""
    if importlib.util.find_spec("accelerate") is None:
        raise SystemExit(NEEDS_ACCELERATE)
    import numpy as np
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    settings = json.loads(settings_path.read_text())
    splits = torch.load(settings["data"])
    token_level = settings["token_level"]
    model_class = (
        AutoModelForTokenClassification if token_level else AutoModelForSequenceClassification
    )
    dropout = settings["dropout"]
    model = model_class.from_pretrained(
        settings["model"], num_labels=settings["num_labels"], hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )  # fmt: skip
    pad = model.config.pad_token_id

    def collate(examples):
        length = max(len(e["input_ids"]) for e in examples)
        ids = torch.full((len(examples), length), pad)
        for row, example in enumerate(examples):
            ids[row, : len(example["input_ids"])] = torch.tensor(example["input_ids"])
        if token_level:
            labels = torch.full((len(examples), length), -100)
            for row, example in enumerate(examples):
                labels[row, : len(example["labels"])] = torch.tensor(example["labels"])
        else:
            labels = torch.tensor([example["labels"] for example in examples])
        return {"input_ids": ids, "attention_mask": ids.ne(pad).long(), "labels": labels}

    def accuracy(prediction) -> dict:
        logits, labels = prediction
        predicted = np.argmax(logits, axis=-1)
        labelled = labels != -100
        return {"accuracy": float((predicted == labels)[labelled].mean())}

    class StepEnds(TrainerCallback):
        times = []

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter())

    updates, interval = settings["updates"], settings["log_interval"]
    peer = settings["trainer_configuration"]
    arguments = TrainingArguments(
        output_dir=settings["out"], use_cpu=True, seed=settings["seed"], max_steps=updates,
        per_device_train_batch_size=settings["batch_size"],
        learning_rate=settings["lr"], warmup_steps=int(settings["warmup_ratio"] * updates),
        lr_scheduler_type="linear", weight_decay=settings["weight_decay"],
        adam_beta1=settings["adam_betas"][0], adam_beta2=settings["adam_betas"][1],
        adam_epsilon=settings["adam_eps"], eval_strategy="steps", eval_steps=updates,
        save_strategy="steps", save_steps=updates, save_total_limit=1, save_only_model=True,
        metric_for_best_model="accuracy", logging_steps=interval, report_to=[], disable_tqdm=True,
        **peer,
    )  # fmt: skip
    trainer = Trainer(
        model=model, args=arguments, train_dataset=splits["train"],
        eval_dataset=splits["valid"], data_collator=collate, compute_metrics=accuracy,
        callbacks=[StepEnds()],
    )  # fmt: skip
    trainer.train()
    test = trainer.predict(splits["test"])
    predictions = np.argmax(test.predictions, axis=-1)
    if token_level:  # the class ids of the labelled positions, example by example
        labelled = test.label_ids != -100
        gold = [row[keep].tolist() for row, keep in zip(test.label_ids, labelled)]
        predicted = [row[keep].tolist() for row, keep in zip(predictions, labelled)]
    else:
        gold, predicted = test.label_ids.tolist(), predictions.tolist()
    loop = StepEnds.times[updates - 1] - StepEnds.times[interval - 1]
    validation = sum(entry.get("eval_runtime", 0) for entry in trainer.state.log_history)
    result = {
        "per_update": loop / (updates - interval), "gold": gold, "predicted": predicted,
        "evaluation": validation + test.metrics["test_runtime"],
    }  # fmt: skip
    (settings_path.parent / "result.json").write_text(json.dumps(result))
