"""Distillation beyond the paper's recipe (issue 44): the student built from its teacher's layers
(DistilBERT), the hidden-state alignment of mapped layers (TinyBERT) and MiniLM's self-attention
relations, each against a hand computation on tiny tensors; the logged terms adding up in one unit;
and the paper's `base` and `align` recipes giving, to the bit, the loss they gave at 6bfaaea."""

import math
import re

import pytest
import torch

import user_dir  # noqa: F401  (registers the distillation task and criterion)

# isort: split
from fairseq.logging import metrics

from bio_roberta_core.checkpoints import read_checkpoint
from bio_roberta_core.provenance import sha256_file
from tiny_distillation import (
    criterion_run,
    distill_task,
    fixed_batch,
    narrow_student,
    seeded_checkpoint,
)
from tiny_training import TINY_ROBERTA, fairseq_train
from user_dir.criterions._layer_losses import (
    attention_inputs,
    attention_relations,
    hidden_alignment,
    parse_layer_map,
    relation_logits,
    uniform_layer_map,
)
from user_dir.criterions.distillation import DistillationLoss, DistillationLossConfig
from user_dir.tasks._student_layers import chosen_layers


@pytest.fixture(scope="module")
def teacher4(tiny_databin, tiny_roberta_checkpoint, tmp_path_factory):
    """A 4-layer roberta_tiny teacher, seeded."""
    path = tmp_path_factory.mktemp("teacher4") / "checkpoint.pt"
    return seeded_checkpoint(tiny_databin, tiny_roberta_checkpoint, path, seed=3, layers=4)


# --- the student from the teacher's layers ------------------------------------------------------


def test_every_other_is_distilberts_choice_and_a_list_is_checked():
    assert chosen_layers("every_other", 12) == [0, 2, 4, 7, 9, 11]  # extract_distilbert.py
    assert chosen_layers("every_other", 4) == [0, 3]
    half_of_24 = chosen_layers("every_other", 24)
    assert len(half_of_24) == 12 and half_of_24[0] == 0 and half_of_24[-1] == 23
    assert all(1 <= b - a <= 3 for a, b in zip(half_of_24, half_of_24[1:]))
    assert chosen_layers("0,4,7,11", 12) == [0, 4, 7, 11]
    for wrong in ("0,4,12", "4,0", "1,1", "half"):
        with pytest.raises(ValueError, match="task.student_layers"):
            chosen_layers(wrong, 12)


def test_a_student_from_the_teachers_layers_computes_what_those_layers_compute(
    tiny_databin, teacher4
):
    """Every parameter comes from the teacher (layers 0 and 3 as 0 and 1, the embeddings, the LM
    head), the run's narrower model.* give way to the teacher's width, and the student's logits
    are the teacher's embeddings through teacher layers 0 and 3 and its LM head."""
    task = distill_task(tiny_databin, teacher4, student_layers="every_other")
    student, model_cfg = narrow_student(task, width=32)
    assert (model_cfg.encoder_layers, model_cfg.encoder_embed_dim) == (2, 64)
    assert (task.student_depth, task.student_dim) == (2, 64)
    assert task.student_init == {
        "teacher": {"path": str(teacher4.resolve()), "sha256": sha256_file(teacher4)},
        "teacher_depth": 4,
        "teacher_layers": [0, 3],
    }
    teacher_state = task.teacher.state_dict()
    for key, value in student.state_dict().items():
        source = key.replace("layers.1.", "layers.3.")  # layer 0 is the teacher's 0
        assert torch.equal(value, teacher_state[source]), key

    tokens = torch.tensor([[0, 5, 6, 7, 8, 2], [0, 9, 10, 11, 12, 2]])
    encoder = task.teacher.encoder.sentence_encoder
    student.eval()
    with torch.no_grad():
        x, _ = encoder.forward_embedding(tokens)
        x = x.transpose(0, 1)
        for layer in (0, 3):
            x = encoder.layers[layer](x, encoder_padding_mask=None)
        by_hand = task.teacher.encoder.lm_head(x.transpose(0, 1))
        logits, _ = student(tokens)
    torch.testing.assert_close(logits, by_hand, rtol=1e-5, atol=1e-5)


def test_a_list_past_the_teachers_layers_is_refused(tiny_databin, teacher4):
    task = distill_task(tiny_databin, teacher4, student_layers="0,4")
    with pytest.raises(ValueError, match=r"among the teacher's 4 \(0 to 3\)"):
        narrow_student(task)


# --- hidden-state alignment of mapped layers (TinyBERT) -----------------------------------------


def test_tinyberts_uniform_map_and_a_given_one():
    assert uniform_layer_map(2, 4) == [(1, 2), (2, 4)]
    assert uniform_layer_map(6, 12) == [(1, 2), (2, 4), (3, 6), (4, 8), (5, 10), (6, 12)]
    assert uniform_layer_map(4, 12) == [(1, 3), (2, 6), (3, 9), (4, 12)]
    assert parse_layer_map("0:0, 2:4", 2, 4, "hidden_layer_map") == [(0, 0), (2, 4)]
    with pytest.raises(ValueError, match="criterion.hidden_layer_map='3:4'.*past the student"):
        parse_layer_map("3:4", 2, 4, "hidden_layer_map")
    with pytest.raises(ValueError, match="STUDENT:TEACHER"):
        parse_layer_map("2-4", 2, 4, "hidden_layer_map")


def test_hidden_alignment_equals_a_hand_computation():
    """Two mapped layers of two tokens x two channels: MSE is the mean over tokens and channels,
    the cosine distance the mean over tokens; the layers add."""
    s1, t1 = torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[1.0, 0.0], [3.0, 3.0]])
    s2, t2 = torch.tensor([[0.0, 1.0], [2.0, 0.0]]), torch.tensor([[1.0, 1.0], [0.0, -2.0]])
    mse = (0 + 4 + 0 + 1) / 4 + (1 + 0 + 4 + 4) / 4
    assert hidden_alignment([s1, s2], [t1, t2], "mse").item() == pytest.approx(mse)
    cosine = ((1 - 1 / math.sqrt(5)) + (1 - 21 / (5 * math.sqrt(18)))) / 2 + (
        (1 - 1 / math.sqrt(2)) + (1 - 0)
    ) / 2
    assert hidden_alignment([s1, s2], [t1, t2], "cosine").item() == pytest.approx(cosine)


def test_the_criterion_aligns_each_mapped_layer(tiny_databin, teacher4):
    """A 2-layer, 32-wide student of the 4-layer teacher: the logged hidden_loss is, per masked
    token, the sum over the uniform map (1:2, 2:4) of the MSE between the projected student states
    and the teacher's at the real tokens; the loss adds it with its weight."""
    run = criterion_run(tiny_databin, teacher4, alpha_hidden=3.0)
    real = run.tokens.ne(run.task.dictionary.pad())
    with torch.no_grad():
        by_hand = sum(
            (
                (
                    run.criterion.projection(
                        run.student_extra["inner_states"][s].transpose(0, 1)[real]
                    )
                    - run.teacher_extra["inner_states"][t].transpose(0, 1)[real]
                )
                ** 2
            ).mean()
            for s, t in [(1, 2), (2, 4)]
        )
    log = run.log
    assert log["hidden_loss"].item() == pytest.approx(by_hand.item() * run.sample_size, rel=1e-4)
    assert run.loss.item() == pytest.approx(
        5 * log["mlm_loss"].item() + 2 * log["kl_loss"].item() + 3 * log["hidden_loss"].item(),
        rel=1e-5,
    )
    run.loss.backward()
    assert run.criterion.projection.weight.grad.abs().sum() > 0


# --- MiniLM's self-attention relations ----------------------------------------------------------


def relation_by_hand(left, right, heads, real):
    """Rows of softmax(l_a · r_a / sqrt(d_r)) over the real keys, per head, in plain Python."""
    width = len(left[0])
    d_r = width // heads
    rows = {}
    for a in range(heads):
        channels = range(a * d_r, (a + 1) * d_r)
        for t in range(real):
            scores = [
                sum(left[t][c] * right[u][c] for c in channels) / math.sqrt(d_r)
                for u in range(real)
            ]
            total = sum(math.exp(s) for s in scores)
            rows[a, t] = [math.exp(s) / total for s in scores]
    return rows


def test_attention_relations_equal_a_hand_computation():
    """One sequence of three tokens (the third padding), width 4, two relation heads of 2
    channels: per relation, the KL of the teacher's rows to the student's over the two real keys,
    averaged over heads and the two real queries; Q-K and V-V (MiniLM's) add."""
    generator = torch.Generator().manual_seed(1)
    student = {name: torch.randn(1, 3, 4, generator=generator) for name in "qkv"}
    teacher = {name: torch.randn(1, 3, 4, generator=generator) for name in "qkv"}
    padding = torch.tensor([[False, False, True]])

    expected = 0.0
    for left, right in ("qk", "vv"):
        p = relation_by_hand(teacher[left][0].tolist(), teacher[right][0].tolist(), 2, real=2)
        q = relation_by_hand(student[left][0].tolist(), student[right][0].tolist(), 2, real=2)
        expected += sum(
            sum(pi * math.log(pi / qi) for pi, qi in zip(p[key], q[key])) for key in p
        ) / (2 * 2)
    result = attention_relations(student, teacher, ["qk", "vv"], 2, padding, real_tokens=2)
    assert result.item() == pytest.approx(expected, rel=1e-5)
    # a padding key or query changes nothing
    moved = {name: value.clone() for name, value in student.items()}
    for value in moved.values():
        value[0, 2] = 100.0
    again = attention_relations(moved, teacher, ["qk", "vv"], 2, padding, real_tokens=2)
    assert again.item() == pytest.approx(result.item(), rel=1e-6)
    assert attention_relations(teacher, teacher, ["qq", "kk", "vv"], 2, padding, 2).item() == (
        pytest.approx(0.0, abs=1e-6)
    )


def test_the_recomputed_q_k_relation_is_the_layers_own_attention(tiny_databin, teacher4):
    """Q and K recomputed from a layer's input (attention_inputs) give, with the attention heads
    as relation heads, exactly the attention probabilities torch's multi-head attention computes
    from that layer's parameters (B x heads x T x T)."""
    task = distill_task(tiny_databin, teacher4)
    teacher = task.teacher
    tokens = torch.tensor([[0, 5, 6, 7, 2, 1], [0, 9, 10, 11, 12, 2]])
    padding = tokens.eq(task.dictionary.pad())
    with torch.no_grad():
        _, extra = teacher(tokens, return_all_hiddens=True)
        inputs = attention_inputs(teacher, extra, 3)
        relation = relation_logits(inputs["q"], inputs["k"], 2, padding).softmax(-1)
        attention = teacher.encoder.sentence_encoder.layers[2].self_attn
        x = extra["inner_states"][2]  # layer 3's input, T x B x C
        _, weights = torch.nn.functional.multi_head_attention_forward(
            x, x, x, 64, 2, None, torch.cat([attention.q_proj.bias, attention.k_proj.bias,
            attention.v_proj.bias]), None, None, False, 0.0, attention.out_proj.weight,
            attention.out_proj.bias, training=False, key_padding_mask=padding,
            need_weights=True, use_separate_proj_weight=True,
            q_proj_weight=attention.q_proj.weight, k_proj_weight=attention.k_proj.weight,
            v_proj_weight=attention.v_proj.weight, average_attn_weights=False,
        )  # fmt: skip
    torch.testing.assert_close(relation, weights, rtol=1e-5, atol=1e-6)


def test_the_criterion_adds_the_relations_of_the_last_layers(tiny_databin, teacher4):
    run = criterion_run(tiny_databin, teacher4, alpha_attention=2.0, relation_heads=4)
    assert (run.criterion.relations, run.criterion.relation_pair) == (["qq", "kk", "vv"], (2, 4))
    padding = run.tokens.eq(run.task.dictionary.pad())
    with torch.no_grad():
        by_hand = attention_relations(
            attention_inputs(run.student, run.student_extra, 2),
            attention_inputs(run.task.teacher, run.teacher_extra, 4),
            ["qq", "kk", "vv"],
            4,
            padding,
            int((~padding).sum()),
        )
    log, task = run.log, run.task
    assert log["attention_loss"].item() == pytest.approx(by_hand.item() * run.sample_size, rel=1e-4)
    assert run.loss.item() == pytest.approx(
        5 * log["mlm_loss"].item() + 2 * log["kl_loss"].item() + 2 * log["attention_loss"].item(),
        rel=1e-5,
    )
    with pytest.raises(ValueError, match=r"relation_heads=3: the student's width 32"):
        DistillationLoss(DistillationLossConfig(alpha_attention=1.0, relation_heads=3), task)
    with pytest.raises(ValueError, match="attention_relations='qx'"):
        DistillationLoss(
            DistillationLossConfig(alpha_attention=1.0, attention_relations="qx"), task
        )


# --- one unit ------------------------------------------------------------------------------------


def test_the_logged_terms_add_up_to_the_loss_in_bits():
    """loss and mlm_loss were logged in bits, kl_loss and cos_loss in nats: 5·mlm + 2·kl + cos
    missed the logged loss by the factor ln 2 on the last two."""
    nats = {"mlm_loss": 30.0, "kl_loss": 4.0, "cos_loss": 2.0, "hidden_loss": 1.0}
    output = {
        **{key: torch.tensor(value) for key, value in nats.items()},
        "loss": torch.tensor(5 * 30.0 + 2 * 4.0 + 2.0 + 0.5 * 1.0),
        "sample_size": 10,
    }
    with metrics.aggregate() as aggregated:
        DistillationLoss.reduce_metrics([output])
        logged = aggregated.get_smoothed_values()
    assert logged["mlm_loss"] == pytest.approx(3.0 / math.log(2), abs=1e-3)
    assert logged["kl_loss"] == pytest.approx(0.4 / math.log(2), abs=1e-3)
    assert logged["loss"] == pytest.approx(
        5 * logged["mlm_loss"]
        + 2 * logged["kl_loss"]
        + logged["cos_loss"]
        + 0.5 * logged["hidden_loss"],
        abs=5e-3,
    )
    assert "attention_loss" not in logged


# --- the paper's recipes as before --------------------------------------------------------------

# (loss, norm of the gradient of the student and projection) as float.hex(), computed with this
# test's steps on 6bfaaea's code: one training step (dropout on) of a seeded 32-wide student
# of the seeded 64-wide tiny teacher, one thread. The fused rows since 4df9df2, whose CPU dropout
# draws its masks from uniforms (same law, other draws; 6bfaaea's: base 0x1.167dc6p+9 and
# 0x1.2167a8p+8, align 0x1.251b84p+9 and 0x1.239d72p+8)
BEFORE = {
    ("fairseq", "base"): ("0x1.167e7e0000000p+9", "0x1.2159e20000000p+8"),
    ("fairseq", "align"): ("0x1.251ce40000000p+9", "0x1.2384460000000p+8"),
    ("fused", "base"): ("0x1.167c0c0000000p+9", "0x1.2165fe0000000p+8"),
    ("fused", "align"): ("0x1.251c480000000p+9", "0x1.239fbe0000000p+8"),
}


@pytest.mark.parametrize("implementation", ["fairseq", "fused"])
def test_the_paper_recipes_give_the_loss_they_gave_before(
    tiny_databin, tiny_roberta_checkpoint, tmp_path, implementation
):
    teacher = seeded_checkpoint(
        tiny_databin, tiny_roberta_checkpoint, tmp_path / "teacher.pt", seed=44
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        task = distill_task(tiny_databin, teacher, implementation)
        batch = fixed_batch(task)
        for recipe, alpha_cos in (("base", 0.0), ("align", 1.0)):
            torch.manual_seed(45)
            student = narrow_student(task)[0].train()
            criterion = DistillationLoss(DistillationLossConfig(alpha_cos=alpha_cos), task)
            loss, _, _ = criterion(student, batch)
            loss.backward()
            parameters = [*student.parameters(), *criterion.parameters()]
            gradient = torch.cat([p.grad.flatten() for p in parameters if p.grad is not None])
            assert (loss.item().hex(), gradient.norm().item().hex()) == BEFORE[
                implementation, recipe
            ], recipe
    finally:
        torch.set_num_threads(threads)


# --- with fairseq-train --------------------------------------------------------------------------


def distill_run(databin, teacher, save_dir, *options, check=True):
    """A tiny fairseq-train distillation run whose student is built from the teacher's layers."""
    return fairseq_train(
        databin,
        "--task", "distillation", "--teacher-path", teacher, "--teacher-dict",
        databin / "dict.txt", "--student-layers", "every_other", "--criterion", "distillation",
        *TINY_ROBERTA, "--batch-size", "8", "--tokens-per-sample", "32", "--save-dir", save_dir,
        "--no-epoch-checkpoints", "--log-interval", "1", "--log-format", "simple",
        "--disable-validation", *options,
        check=check,
    )  # fmt: skip


@pytest.mark.slow
def test_fairseq_train_builds_the_student_from_the_teacher_and_records_it(
    tiny_databin, teacher4, tmp_path
):
    """No student checkpoint and no model options: the run's roberta_tiny (2 layers) becomes the
    teacher's model with its layers 0 and 3; its checkpoints say so, and which teacher; the
    per-layer terms are logged; a student checkpoint besides is refused in one line."""
    log = distill_run(
        tiny_databin, teacher4, tmp_path / "run", "--alpha-hidden", "1", "--alpha-attention", "1",
        "--max-update", "2",
    )  # fmt: skip
    assert "layers [0, 3] of its 4" in log
    assert re.search(r"hidden_loss=[\d.]+, attention_loss=[\d.]+", log), log[-2000:]
    state = read_checkpoint(tmp_path / "run" / "checkpoint_last.pt")
    assert state["extra_state"]["student_init"] == {
        "teacher": {"path": str(teacher4.resolve()), "sha256": sha256_file(teacher4)},
        "teacher_depth": 4,
        "teacher_layers": [0, 3],
    }
    assert state["cfg"]["model"].encoder_layers == 2
    assert {key for key in state["model"] if ".layers." in key} == {
        key
        for key in read_checkpoint(teacher4)["model"]
        if ".layers.0." in key or ".layers.1." in key
    }

    refused = distill_run(
        tiny_databin, teacher4, tmp_path / "refused", "--finetune-from-model", teacher4,
        "--max-update", "1", check=False,
    )  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: task.student_layers=every_other builds the student from the teacher's layers, "
        f"and checkpoint.finetune_from_model={teacher4} would replace them: give one of the two"
    )
