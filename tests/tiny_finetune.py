"""Toy fine-tuning runs of a registry task, as a user makes one: source files -> convert-task ->
a tiny RoBERTa pretrained on the converted text -> bio_roberta.finetune (real fairseq, CPU).
Used by the BLURB end-to-end tests and the export tests of the kinds they fine-tune."""

import subprocess
import sys
from pathlib import Path

from bio_roberta import finetune
from bio_roberta.sweep import compose_config
from bio_roberta.tasks.convert import convert_task
from bio_roberta.tasks.registry import get_task
from conftest import USER_DIR

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
    from preprocess.vocab import learn_vocabulary

    corpus = tmp_path / "corpus.txt"
    corpus.write_text((text + "\n") * 20)
    learn_vocabulary("gpt2", [corpus], tmp_path / "vocab", vocab_size=300)
    return tmp_path / "vocab"


def pretrain_on(input0: Path, save_dir: Path) -> Path:
    """A roberta_tiny checkpoint with the converted task's vocabulary: a few masked-LM updates
    on finetune-bin/<task>/input0 (its dict.txt and train split)."""
    cmd = [
        Path(sys.executable).parent / "fairseq-train",
        input0,
        "--user-dir",
        USER_DIR,
        "--task",
        "masked_lm",
        "--criterion",
        "masked_lm",
        "--arch",
        "roberta_tiny",
        "--cpu",
        "--batch-size",
        "8",
        "--tokens-per-sample",
        str(POSITIONS),
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--max-update",
        "3",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--seed",
        "1",
        "--num-workers",
        "0",
        "--disable-validation",
    ]
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return save_dir / "checkpoint_last.pt"


def fine_tune(tmp_path: Path, task: str, data: Path, vocab: Path):
    """convert -> pretrain on its text -> one fine-tuning run; (manifest, result record)."""
    root = tmp_path / "finetune-bin"
    (manifest,) = convert_task(get_task(task), data, vocab, root / task, max_positions=POSITIONS)
    pretrained = pretrain_on(root / task / "input0", tmp_path / "pretrained")
    cfg = compose_config(
        [
            f"task_name={task}",
            "seed=1",
            f"pretrained={pretrained}",
            f"data_root={root}",
            f"results_dir={tmp_path / 'results'}",
            *TINY,
        ]
    )
    (record,) = finetune.run_task_seed(cfg)
    assert record["status"] == "ok", record.get("error")
    return manifest, record
