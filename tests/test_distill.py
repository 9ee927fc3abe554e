"""Distillation: the criterion's three terms against a hand computation, the teacher frozen and
kept out of checkpoints, and a tiny pretrain -> distill -> load-as-RoBERTa run with
fairseq-train."""

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import user_dir  # noqa: F401  (registers the distillation task and criterion)

# isort: split
# after user_dir, which replaces fairseq's load_checkpoint_to_cpu with its own
from fairseq.checkpoint_utils import load_checkpoint_to_cpu

from bio_roberta_core.checkpoints import read_checkpoint
from conftest import USER_DIR
from host_waits import HostWaits
from tiny_training import (
    NARROW_STUDENT,
    TINY_ROBERTA,
    fairseq_preprocess,
    fairseq_train,
    write_tiny_corpus,
)
from user_dir.criterions.distillation import (
    DistillationLoss,
    DistillationLossConfig,
    MaskedLogitLoss,
)
from user_dir.tasks.distillation import DistillationConfig, DistillationTask

BIN = Path(sys.executable).parent


def distill_task(databin, teacher, encoder_implementation="auto"):
    return DistillationTask.setup_task(
        DistillationConfig(
            data=str(databin),
            teacher_path=str(teacher),
            tokens_per_sample=32,
            seed=5,
            encoder_implementation=encoder_implementation,
        )
    )


def student_model(task, width):
    """A roberta_tiny student of the given width, built the way fairseq-train builds it."""
    model_cfg = copy.deepcopy(load_checkpoint_to_cpu(task.cfg.teacher_path)["cfg"].model)
    model_cfg.encoder_embed_dim, model_cfg.encoder_ffn_embed_dim = width, 2 * width
    return task.build_model(model_cfg)


def fixed_batch(task):
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    return dataset.collater([dataset[i] for i in range(6)])


@pytest.fixture(scope="module", params=["fairseq", "fused"])
def setup(request, tiny_databin, tiny_roberta_checkpoint):
    """Task (teacher and student on fairseq's encoder or ours), student, criterion and batch."""
    torch.manual_seed(0)
    task = distill_task(tiny_databin, tiny_roberta_checkpoint, request.param)
    student = student_model(task, 32).eval()
    criterion = DistillationLoss(
        DistillationLossConfig(alpha_mlm=5.0, alpha_kl=2.0, alpha_cos=1.0, temperature=2.0), task
    )
    return task, student, criterion, fixed_batch(task)


def test_each_term_equals_a_hand_computed_reference(setup):
    task, student, criterion, batch = setup
    loss, sample_size, log = criterion(student, batch)

    tokens, targets = batch["net_input"]["src_tokens"], batch["target"]
    masked, real = targets.ne(task.dictionary.pad()), tokens.ne(task.dictionary.pad())
    with torch.no_grad():
        s_logits, s_extra = student(tokens, return_all_hiddens=True)  # every position, then select
        t_logits, t_extra = task.teacher(tokens, return_all_hiddens=True)
        s_masked, t_masked, gold = s_logits[masked], t_logits[masked], targets[masked]
        ce = -(s_masked.log_softmax(-1).gather(1, gold[:, None])).sum()
        p_t = (t_masked / 2.0).softmax(-1)
        kl = (p_t * (p_t.log() - (s_masked / 2.0).log_softmax(-1))).sum() * 4.0
        h_s = (
            s_extra["inner_states"][-1].transpose(0, 1)[real] @ criterion.projection.weight.T
            + criterion.projection.bias
        )
        h_t = t_extra["inner_states"][-1].transpose(0, 1)[real]
        cos = (
            1 - (h_s * h_t).sum(-1) / (h_s.norm(dim=-1) * h_t.norm(dim=-1))
        ).mean() * masked.sum()

    assert sample_size == masked.sum() > 0
    assert log["mlm_loss"].item() == pytest.approx(ce.item(), rel=1e-4)
    assert log["kl_loss"].item() == pytest.approx(kl.item(), rel=1e-4)
    assert log["cos_loss"].item() == pytest.approx(cos.item(), rel=1e-4)
    assert kl.item() > 0 and cos.item() > 0
    assert loss.item() == pytest.approx((5 * ce + 2 * kl + cos).item(), rel=1e-4)


def test_the_closed_form_logit_gradient_equals_autograd_through_the_reference():
    """MaskedLogitLoss builds its gradient by hand; it must be the one autograd derives."""
    generator = torch.Generator().manual_seed(3)
    student = (torch.randn(7, 50, generator=generator) * 3).requires_grad_()
    teacher = torch.randn(7, 50, generator=generator) * 3
    targets = torch.randint(0, 50, (7,), generator=generator)

    loss, ce, kl = MaskedLogitLoss.apply(student, teacher.clone(), targets, 2.0, 5.0, 3.0)
    (loss * 0.5).backward()
    reference = student.detach().clone().requires_grad_()
    ce_ref = torch.nn.functional.cross_entropy(reference, targets, reduction="sum")
    kl_ref = (
        torch.nn.functional.kl_div(
            (reference / 2.0).log_softmax(-1),
            (teacher / 2.0).log_softmax(-1),
            log_target=True,
            reduction="sum",
        )
        * 4.0
    )
    ((5.0 * ce_ref + 3.0 * kl_ref) * 0.5).backward()

    assert ce.item() == pytest.approx(ce_ref.item(), rel=1e-5)
    assert kl.item() == pytest.approx(kl_ref.item(), rel=1e-5)
    assert not ce.requires_grad and not kl.requires_grad
    torch.testing.assert_close(student.grad, reference.grad, rtol=1e-5, atol=1e-6)


def test_kl_and_cosine_vanish_when_the_student_is_the_teacher(setup):
    task, _, _, batch = setup
    task.student_dim = task.teacher_dim
    criterion = DistillationLoss(DistillationLossConfig(), task)
    assert isinstance(criterion.projection, torch.nn.Identity)
    _, _, log = criterion(copy.deepcopy(task.teacher), batch)
    assert abs(log["kl_loss"].item()) < 1e-4 and abs(log["cos_loss"].item()) < 1e-4
    assert log["mlm_loss"].item() > 1.0


def test_gradients_reach_the_projection_and_never_the_teacher(setup):
    task, student, criterion, batch = setup
    loss, _, _ = criterion(student, batch)
    loss.backward()
    assert criterion.projection.weight.grad.abs().sum() > 0
    assert all(p.grad is None and not p.requires_grad for p in task.teacher.parameters())
    assert not task.teacher.training
    # the teacher is no part of what the trainer optimises or saves
    saved = set(criterion.state_dict()) | {f"model.{k}" for k in student.state_dict()}
    assert set(criterion.state_dict()) == {"projection.weight", "projection.bias"}
    assert len(saved) == len(student.state_dict()) + 2


def test_a_distillation_micro_batch_never_makes_the_host_wait(setup):
    """On our encoder, student, teacher and criterion read no value back from the GPU in forward
    or backward (tests/host_waits.py; fairseq's encoder checks each layer for padding)."""
    task, student, criterion, batch = setup
    with HostWaits() as recorded:
        loss, _, _ = criterion(student, batch)
        loss.backward()
    if type(student.encoder).__name__ == "FusedRobertaEncoder":
        assert recorded.waits == []
    else:
        assert "_local_scalar_dense" in recorded.waits


def test_a_teacher_with_another_vocabulary_is_refused(tiny_roberta_checkpoint, tmp_path):
    other = write_tiny_corpus(tmp_path / "text", seed=1, lines={"train": 20, "valid": 4})
    (other / "train.txt").write_text((other / "train.txt").read_text() + "zebrafish kinase\n")
    databin = fairseq_preprocess(other, tmp_path / "bin")
    with pytest.raises(ValueError, match="another vocabulary"):
        distill_task(databin, tiny_roberta_checkpoint)


def distill(databin, teacher, save_dir, *options, check=True):
    """A tiny distillation run: roberta_tiny student and teacher, 32-token sequences."""
    return fairseq_train(
        databin,
        "--task",
        "distillation",
        "--teacher-path",
        teacher,
        "--criterion",
        "distillation",
        *TINY_ROBERTA,
        "--batch-size",
        "8",
        "--tokens-per-sample",
        "32",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--log-interval",
        "1",
        "--log-format",
        "simple",
        "--disable-validation",
        *options,
        check=check,
    )


def test_a_student_that_trained_for_days_gets_its_own_clock(
    tiny_databin, tiny_roberta_checkpoint, tmp_path
):
    """fairseq carried the student's cumulative training time into the distillation run, whose
    stop_time_hours then stopped it after its first update."""
    state = read_checkpoint(tiny_roberta_checkpoint)
    state["extra_state"]["previous_training_time"] = 100 * 3600
    student = tmp_path / "student.pt"
    torch.save(state, student)
    log = distill(
        tiny_databin,
        tiny_roberta_checkpoint,
        tmp_path / "run",
        "--finetune-from-model",
        student,
        "--max-update",
        "3",
        "--stop-time-hours",
        "1",
    )
    assert (
        "loading pretrained model from" in log
        and "Stopping training due to cumulative_training_time" not in log
    )
    assert re.findall(r"num_updates=(\d+)", log)[-1] == "3"
    assert (
        read_checkpoint(tmp_path / "run" / "checkpoint_last.pt")["extra_state"][
            "previous_training_time"
        ]
        < 3600
    )


@pytest.mark.parametrize("damage", ["truncated", "hostile"])
def test_an_unreadable_teacher_ends_the_run_with_one_line(
    tiny_databin, tiny_roberta_checkpoint, tmp_path, damage
):
    teacher = tmp_path / "teacher.pt"
    if damage == "truncated":
        teacher.write_bytes(tiny_roberta_checkpoint.read_bytes()[:4096])
        reason = (
            "truncated, or not a fairseq checkpoint (RuntimeError: PytorchStreamReader "
            "failed reading zip archive"
        )
    else:
        torch.save({"model": {}, "cfg": {"model": print}}, teacher)
        reason = "refused to load: it holds the global print, which no fairseq checkpoint does"
    run = distill(tiny_databin, teacher, tmp_path / "run", "--max-update", "1", check=False)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: teacher (task.teacher_path) {teacher}: {reason}")
    )


@pytest.mark.slow
@pytest.mark.parametrize("precision", [[], ["--bf16"]], ids=["fp32", "bf16"])
def test_pretrain_then_distill_then_load_the_student_as_roberta(
    tiny_databin, tiny_roberta_checkpoint, tmp_path, precision
):
    log = distill(
        tiny_databin,
        tiny_roberta_checkpoint,
        tmp_path,
        *precision,
        "--alpha-cos",
        "1.0",
        *NARROW_STUDENT,
        "--max-update",
        "4",
    )
    assert "kl_loss" in log and "cos_loss" in log and "mlm_loss" in log, log[-2000:]
    state = load_checkpoint_to_cpu(str(tmp_path / "checkpoint_last.pt"))
    assert set(state["criterion"]) == {"projection.weight", "projection.bias"}
    assert state["criterion"]["projection.weight"].shape == (64, 32)
    assert not any("teacher" in k for k in state["model"])

    from fairseq.models.roberta import RobertaModel

    (tmp_path / "dict.txt").write_bytes((tiny_databin / "dict.txt").read_bytes())
    student = RobertaModel.from_pretrained(str(tmp_path), "checkpoint_last.pt", bpe=None)
    features = student.extract_features(torch.tensor([[0, 5, 6, 7, 2]]))
    assert features.shape == (1, 5, 32)


@pytest.mark.slow
def test_hydra_distill_recipe_with_align(tiny_databin, tiny_roberta_checkpoint, tmp_path):
    """configs/distill: the student starts from a pretrained checkpoint (finetune_from_model)."""
    run = subprocess.run(
        [
            str(c)
            for c in [
                BIN / "fairseq-hydra-train",
                "--config-dir",
                USER_DIR.parent / "configs/distill",
                "--config-name",
                "base",
                "+recipe=[tiny,align]",
                f"task.data={tiny_databin}",
                f"task.teacher_path={tiny_roberta_checkpoint}",
                f"checkpoint.finetune_from_model={tiny_roberta_checkpoint}",
                "model.encoder_embed_dim=64",
                "model.encoder_ffn_embed_dim=128",
                f"common.user_dir={USER_DIR}",
                f"checkpoint.save_dir={tmp_path}",
            ]
        ],
        capture_output=True,
        text=True,
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    assert "loading pretrained model from" in log and "num_updates=6" in log
    kl = [float(x) for x in re.findall(r"kl_loss=([\d.]+)", log)]
    assert kl and kl[0] < 0.05  # the student starts as a copy of the teacher
    assert "'alpha_cos': 1.0" in log
