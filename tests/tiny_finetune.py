"""Toy fine-tuning runs of a registry task, as a user makes one: source files -> convert-task ->
a tiny RoBERTa pretrained on the converted text -> bio_roberta.finetuning.job (real fairseq, CPU).
Used by the BLURB end-to-end tests and the export tests of the kinds they fine-tune."""

from pathlib import Path

from bio_roberta.conversion.finetune_bin import convert_task
from bio_roberta.finetuning import job as finetune
from bio_roberta.finetuning.sweep import compose_config
from bio_roberta.tasks.registry import get_task
from tiny_training import pretrain_tiny_roberta

POSITIONS = 32
TINY = [
    "arch=roberta_tiny",
    "hparams.max_epoch=3",
    "hparams.batch_size=8",
    "hparams.validate_interval_updates=4",
    "num_workers=0",
    "log_interval=1",
    "cpu=true",
]


def tiny_vocab(tmp_path: Path, text: str) -> Path:
    from preprocess.learn_vocab import learn_vocabulary

    corpus = tmp_path / "corpus.txt"
    corpus.write_text((text + "\n") * 20)
    learn_vocabulary("gpt2", [corpus], tmp_path / "vocab", vocab_size=300)
    return tmp_path / "vocab"


def fine_tune(
    tmp_path: Path, task: str, data: Path, vocab: Path, long_inputs=None, overrides: tuple = ()
):
    """convert (long_inputs: convert-task's route, default the kind's) -> pretrain on its text ->
    one fine-tuning run (overrides: more sweep-config settings); (manifest, result record)."""
    root = tmp_path / "finetune-bin"
    (manifest,) = convert_task(
        get_task(task), data, vocab, root / task, max_positions=POSITIONS, long_inputs=long_inputs
    )
    # a tiny RoBERTa with the converted task's vocabulary: masked-LM updates on its input0/
    pretrained = pretrain_tiny_roberta(
        root / task / "input0", tmp_path / "pretrained", max_update=3, tokens_per_sample=POSITIONS
    )
    cfg = compose_config(
        [
            f"task_name={task}",
            "seed=1",
            f"pretrained={pretrained}",
            f"data_root={root}",
            f"results_dir={tmp_path / 'results'}",
            *TINY,
            *overrides,
        ]
    )
    (record,) = finetune.run_task_seed(cfg)
    assert record["status"] == "ok", record.get("error")
    return manifest, record
