"""Pretraining and continued pretraining with the plugin's ModernBERT (configs/pretrain/recipe/
modernbert*.yaml, continue_modernbert.yaml): a tiny ModernBERT run killed while saving resumes to
the parameters of an uninterrupted one, its learning rates the trapezoid's; a tiny ModernBERT made
with transformers and imported continues its pretraining under +recipe=continue_modernbert on
data binarized with its own vocabulary, and data of another dictionary is refused in one line;
binarize and the masked-LM task take examples of 8,192 tokens; a fresh ModernBERT starts as
ModernBERT's init has it; distillation takes a ModernBERT student of another width and refuses the
pairs that cannot be (another vocabulary, fewer positions than the blocks)."""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import numpy
import pytest
import torch

import user_dir  # noqa: F401  (registers the plugin; checkpoint allowlist)
from bio_roberta.cli import main as cli_main
from conftest import write_text_manifest
from test_checkpoint_resume import killed_writes, updates_of
from test_distill import distill, distill_task
from tiny_training import hydra_pretrain

transformers = pytest.importorskip("transformers")


def logged(run: subprocess.CompletedProcess, key: str) -> list[float]:
    return [float(x) for x in re.findall(rf"train_inner\W.*? {key}=([\d.e-]+)", run.stdout)]


# --- a fresh ModernBERT ---


def test_a_fresh_modernbert_is_initialised_as_modernbert_was(tmp_path):
    """FlexBERT's full_megatron init (user_dir/models/_modernbert_init.py), not fairseq's
    init_bert_params (untruncated N(0, 0.02) everywhere): N(0, 0.02) truncated at 2 sigma,
    0.02 / sqrt(2 x layers) for what writes into the residual stream; the untrained model's MLM
    loss is a uniform guess's, ln(vocabulary)."""
    from fairseq.data import Dictionary

    from bio_roberta.hf.import_hf import build_fairseq_model
    from user_dir.architectures import architecture_args

    dictionary = Dictionary()
    for i in range(50_000):
        dictionary.add_symbol(f"w{i}")
    torch.manual_seed(0)
    model = build_fairseq_model(
        architecture_args("modernbert_tiny", arch="modernbert_tiny"), dictionary
    )
    encoder = model.encoder.sentence_encoder
    out_std = 0.02 / math.sqrt(2 * 3)
    for weight, std in [
        (encoder.embed_tokens.weight, 0.02),
        (encoder.layers[1].attn.Wqkv.weight, 0.02),
        (encoder.layers[1].mlp.Wi.weight, 0.02),
        (encoder.layers[1].attn.Wo.weight, out_std),
        (encoder.layers[2].mlp.Wo.weight, out_std),
        (model.encoder.lm_head.dense.weight, out_std),
    ]:
        assert weight.abs().max() <= 2 * std + 1e-9
        # a normal truncated at 2 sigma has 0.88 sigma
        assert weight.std().item() == pytest.approx(0.88 * std, rel=0.15)
    assert model.encoder.lm_head.weight is encoder.embed_tokens.weight  # tied
    tokens = torch.randint(4, len(dictionary), (4, 32))
    logits = model(tokens)[0]
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten()).item()
    assert loss == pytest.approx(math.log(len(dictionary)), abs=0.1)


# --- pretraining that resumes after a kill ---


@pytest.mark.slow
def test_a_modernbert_run_killed_while_saving_resumes_to_the_same_parameters(
    tiny_databin, tmp_path
):
    """+recipe=[modernbert,modernbert_tiny], 6 updates on the trapezoid (2 of warmup, 1 at the
    peak, 3 of 1-sqrt decay), a checkpoint every 2: killed while copying checkpoint_1_2.pt to
    checkpoint_last.pt (a preemption; the plugin's kill point), the same command resumes from
    checkpoint_1_2.pt and ends with exactly the parameters of a run never stopped (data order,
    30% masking, dropout, Adam state and learning rate all picked up)."""
    schedule = [
        "optimization.max_update=6",
        "lr_scheduler.warmup_ratio=0.34",
        "lr_scheduler.decay_ratio=0.5",
        "lr_scheduler.decay_shape=one_minus_sqrt",
        "checkpoint.save_interval_updates=2",
        "common.seed=3",
    ]

    def run(save_dir, env=None):
        return hydra_pretrain(
            "modernbert,modernbert_tiny", tiny_databin, save_dir, *schedule, env=env
        )

    straight = run(tmp_path / "straight")
    assert straight.returncode == 0, straight.stderr[-3000:]
    peak = 1e-3  # the tiny recipe's
    expected = [
        peak / 2,
        peak,
        peak,
        peak * (1 - math.sqrt(1 / 3)),
        peak * (1 - math.sqrt(2 / 3)),
        0,
    ]
    assert logged(straight, "lr") == pytest.approx(expected, abs=1e-9)
    assert "mask_prob': 0.3" in straight.stdout + straight.stderr

    interrupted = tmp_path / "interrupted"
    killed = run(interrupted, env={"BIO_ROBERTA_KILL_AT": "checkpoint-written:checkpoint_last.pt"})
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert not (interrupted / "checkpoint_last.pt").exists() and killed_writes(interrupted)
    assert updates_of(interrupted / "checkpoint_1_2.pt") == 2

    resumed = run(interrupted)
    log = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, log[-3000:]
    assert f"resuming from {interrupted}/checkpoint_1_2.pt, the newest intact checkpoint" in log
    assert [int(n) for n in re.findall(r"num_updates=(\d+)", resumed.stdout)][:1] == [3]
    assert logged(resumed, "lr") == pytest.approx(expected[2:], abs=1e-9)
    finished = [torch.load(d / "checkpoint_last.pt") for d in (tmp_path / "straight", interrupted)]
    assert [updates_of(d / "checkpoint_last.pt") for d in (tmp_path / "straight", interrupted)] == [
        6,
        6,
    ]
    assert finished[0]["model"].keys() == finished[1]["model"].keys()
    assert any(".attn.Wqkv." in name for name in finished[0]["model"])  # a ModernBERT
    different = [
        name
        for name in finished[0]["model"]
        if not torch.equal(finished[0]["model"][name], finished[1]["model"][name])
    ]
    assert not different, different
    assert not killed_writes(interrupted)


# --- continued pretraining from an imported ModernBERT ---


@pytest.fixture(scope="module")
def imported_modernbert(tmp_path_factory) -> Path:
    """import-hf's output dir of a ModernBertForMaskedLM of modernbert_tiny's shape (random
    weights, a BPE vocabulary learned on the sample task text: tests/test_import_hf.py's), whose
    RoPE thetas are ModernBERT-base's, as continue_modernbert's."""
    from test_import_hf import save_and_import

    _, imported = save_and_import(
        tmp_path_factory.mktemp("modernbert"),
        "modernbert",
        num_hidden_layers=3,
        num_attention_heads=2,
        max_position_embeddings=8192,
    )
    manifest = json.loads((imported / "manifest.json").read_text())
    assert manifest["kind"] == "hf_bpe" and manifest["options"]["fresh"] == []  # decoder tied
    return imported


def write_text_dir(text: Path, lines: list[str]) -> Path:
    """A finished text dir of the lines, as train and valid shards."""
    text.mkdir(parents=True)
    for split in ("train", "valid"):
        (text / f"{split}.00000.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return write_text_manifest(text)


@pytest.mark.slow
def test_continue_modernbert_starts_from_the_import_on_its_vocabulary_and_refuses_another(
    imported_modernbert, tiny_databin, tmp_path
):
    """The documented route (docs/modernbert.md): import-hf, binarize with the import dir as the
    vocabulary, +recipe=continue_modernbert from its model.pt. With lr 0 the continued model holds
    the import's weights exactly: the recipe's model is the checkpoint's (a mismatch in width,
    layers or biases would not load). Data binarized with another dictionary is refused before
    any update, in one line naming both dictionaries."""
    from test_import_hf import sample_lines

    text = write_text_dir(tmp_path / "text", sample_lines()[:80])
    databin = tmp_path / "bin"
    binarize = ["binarize", str(text), "--vocab", str(imported_modernbert), "--out", str(databin)]
    assert cli_main(binarize) == 0
    checkpoint = imported_modernbert / "model.pt"
    start = [f"checkpoint.finetune_from_model={checkpoint}", "optimization.lr=[0.0]"]

    run = hydra_pretrain(
        "continue_modernbert,modernbert_tiny", databin, tmp_path / "ckpt", *start,
        "optimization.max_update=2",
    )  # fmt: skip
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert f"loading pretrained model from {checkpoint}" in log
    assert re.findall(r"num_updates=(\d+)", run.stdout)[:2] == ["1", "2"]
    assert all(loss > 0 for loss in logged(run, "loss"))
    before = torch.load(checkpoint)["model"]
    after = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt")["model"]
    assert before.keys() == after.keys()
    assert [name for name in before if not torch.equal(before[name], after[name])] == []

    refused = hydra_pretrain(
        "continue_modernbert,modernbert_tiny", tiny_databin, tmp_path / "other", *start
    )
    assert refused.returncode != 0 and "num_updates" not in refused.stdout
    assert "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"error: {tiny_databin}/dict.txt is not the dictionary of {checkpoint} "
        f"({imported_modernbert}/dict.txt): entry 4 is "
    ), last
    assert last.endswith("binarize the corpus with the checkpoint's vocabulary dir (bio-roberta "
                         "binarize --vocab; for an import-hf model, its output dir)")  # fmt: skip


def test_binarize_and_the_masked_lm_task_take_8192_token_examples(imported_modernbert, tmp_path):
    """Long examples (docs/modernbert.md#long-examples): binarize writes each line whole however
    long; with tokens_per_sample 8192 the task packs complete sentences into blocks of up to
    8,192 tokens (documents of a few hundred lines give blocks far past 512); a single line
    longer than a block is one block of its own, which fairseq's size filter skips and counts
    before training (the trainer passes ignore_invalid_inputs=True)."""
    from test_import_hf import sample_lines
    from user_dir.tasks.corpora_masked_lm import CorporaMaskedLMConfig, CorporaMaskedLMTask

    document = sample_lines()[:300]
    lines = [*document, "", *document, "", " ".join(document * 3)]  # ~12k tokens on one line
    databin = tmp_path / "bin"
    text = write_text_dir(tmp_path / "text", lines)
    assert (
        cli_main(
            ["binarize", str(text), "--vocab", str(imported_modernbert), "--out", str(databin)]
        )
        == 0
    )
    task = CorporaMaskedLMTask.setup_task(
        CorporaMaskedLMConfig(
            data=str(databin),
            tokens_per_sample=8192,
            sample_break_mode="complete",  # configs/pretrain/base.yaml's
            mask_prob=0.3,
            seed=1,
        )
    )
    task.load_dataset("train")
    dataset = task.dataset("train")
    sizes = numpy.asarray(dataset.sizes[0])  # the source's (NestedDictionaryDataset)
    assert sizes.max() > 8192 and sorted(sizes)[-2] > 4096  # the long line; packed documents
    kept = task.filter_indices_by_size(
        torch.arange(len(dataset)).numpy(), dataset, max_positions=8192, ignore_invalid_inputs=True
    )
    assert len(kept) == len(dataset) - 1 and max(sizes[kept]) <= 8192
    batch = dataset.collater([dataset[int(i)] for i in kept[:2]])
    assert batch["net_input"]["src_tokens"].shape[1] == max(sizes[kept[:2]])


# --- distillation into and from ModernBERT ---


@pytest.mark.slow
def test_a_roberta_teacher_distils_into_a_narrower_modernbert(
    tiny_databin, tiny_roberta_checkpoint, tmp_path
):
    """Another architecture and width: a 32-wide modernbert_tiny student learns from the 64-wide
    roberta_tiny teacher on its vocabulary, the align term through the criterion's 32 -> 64
    projection of the student's final-norm output."""
    log = distill(
        tiny_databin, tiny_roberta_checkpoint, tmp_path, "--arch", "modernbert_tiny",
        "--alpha-cos", "1.0", "--max-update", "2",
    )  # fmt: skip
    assert re.findall(r"num_updates=(\d+)", log)[:2] == ["1", "2"]
    kl, cos = (
        [float(x) for x in re.findall(rf"{key}=([\d.]+)", log)] for key in ("kl_loss", "cos_loss")
    )
    assert kl and cos and all(value > 0 for value in kl + cos)
    state = torch.load(tmp_path / "checkpoint_last.pt")
    assert state["criterion"]["projection.weight"].shape == (64, 32)
    assert "encoder.sentence_encoder.final_norm.weight" in state["model"]
    assert not any("teacher" in name for name in state["model"])


def test_a_modernbert_teacher_of_another_vocabulary_is_refused(imported_modernbert, tiny_databin):
    with pytest.raises(ValueError) as refused:
        distill_task(tiny_databin, imported_modernbert / "model.pt")
    message = str(refused.value)
    assert message.startswith(
        f"the teacher {imported_modernbert}/model.pt was trained with another vocabulary than the "
        f"data {tiny_databin}: entry 4 is "
    )
    assert "binarize --vocab <import dir>" in message and "\n" not in message


def test_a_teacher_with_fewer_positions_than_the_blocks_is_refused(
    tiny_databin, tiny_roberta_checkpoint
):
    """A RoBERTa's learned positions end at its max_positions; blocks of a ModernBERT's length
    would index past them."""
    from user_dir.tasks.distillation import DistillationConfig, DistillationTask

    positions = torch.load(tiny_roberta_checkpoint)["cfg"]["model"].max_positions
    with pytest.raises(ValueError) as refused:
        DistillationTask.setup_task(
            DistillationConfig(
                data=str(tiny_databin),
                teacher_path=str(tiny_roberta_checkpoint),
                tokens_per_sample=2 * positions,
            )
        )
    assert str(refused.value) == (
        f"the teacher {tiny_roberta_checkpoint} takes {positions} positions, fewer than the "
        f"task.tokens_per_sample={2 * positions} tokens of the student's blocks: the teacher must "
        "read every block whole (a 512-position RoBERTa cannot teach at a ModernBERT's 8,192 "
        f"tokens): give task.tokens_per_sample={positions} or less"
    )
