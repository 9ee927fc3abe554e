"""scripts/benchmark_train.py --mfu: the model-FLOPs count it divides by is exact for fairseq's
RoBERTa (torch's FlopCounterMode on the real model, forward + backward), the GPU peaks are looked up
by name, and the measurement runs end to end (here on the CPU, with a tiny architecture)."""

import json
import sys
from argparse import Namespace

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import user_dir  # noqa: F401
from conftest import REPO_ROOT, run_ok
from user_dir.architectures import architecture_shape

SCRIPT = REPO_ROOT / "scripts" / "benchmark_train.py"
sys.path.insert(0, str(SCRIPT.parent))
from benchmarks.flops import peak_bf16_tflops, training_flops_per_token  # noqa: E402


@pytest.mark.parametrize(
    "layers,width,ffn,heads,seq,vocab,masked",
    [(2, 64, 128, 2, 40, 1000, 17), (3, 48, 192, 4, 24, 531, 9)],
)
def test_flops_per_token_equals_torch_flop_counter_on_fairseq_roberta(
    layers, width, ffn, heads, seq, vocab, masked
):
    from fairseq.data import Dictionary
    from fairseq.models.roberta import RobertaModel
    from fairseq.models.roberta.model import base_architecture

    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial):
        dictionary.add_symbol(f"w{i}")
    task = Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    args = Namespace(
        encoder_layers=layers,
        encoder_embed_dim=width,
        encoder_ffn_embed_dim=ffn,
        encoder_attention_heads=heads,
        max_positions=seq + 2,
        tokens_per_sample=seq,
    )
    base_architecture(args)
    model = RobertaModel.build_model(args, task)
    batch = 3
    tokens = torch.randint(
        dictionary.nspecial, vocab, (batch, seq), generator=torch.Generator().manual_seed(0)
    )
    masked_tokens = torch.zeros(batch * seq, dtype=torch.bool)
    masked_tokens[
        torch.randperm(batch * seq, generator=torch.Generator().manual_seed(1))[:masked]
    ] = True
    with FlopCounterMode(display=False) as counter:
        logits, _ = model(tokens, masked_tokens=masked_tokens.view(batch, seq))
        logits.float().logsumexp(-1).sum().backward()
    assert logits.shape == (masked, vocab)
    per_token = training_flops_per_token(layers, width, ffn, seq, vocab, masked / (batch * seq))
    assert counter.get_total_flops() == pytest.approx(per_token * batch * seq, rel=1e-9)


def test_architecture_shape_and_gpu_peaks():
    assert architecture_shape("roberta_base") == {
        "layers": 12,
        "width": 768,
        "heads": 12,
        "ffn": 3072,
    }
    assert architecture_shape("roberta_large") == {
        "layers": 24,
        "width": 1024,
        "heads": 16,
        "ffn": 4096,
    }
    assert peak_bf16_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert peak_bf16_tflops("NVIDIA H100 PCIe") == 756.0
    assert peak_bf16_tflops("NVIDIA H200") == 989.4
    with pytest.raises(SystemExit, match="--peak-tflops"):
        peak_bf16_tflops("Some Future GPU")
    with pytest.raises(ValueError, match="'roberta_huge' is no registered fairseq architecture"):
        architecture_shape("roberta_huge")


@pytest.mark.slow
def test_mfu_mode_measures_every_route_and_distillation_with_one_flops_count():
    """The GPU benchmark's code paths at CPU size: each bf16 route (the fp16 ones need CUDA), our
    routes on the dictionary padded to a multiple of 64, ratios of ours to each, and a distillation
    step. (Repeats, the levers' routes and their loss curves: tests/test_gpu_measure.py.)"""
    done = run_ok(
        [
            sys.executable,
            SCRIPT,
            "--mfu",
            "--cpu",
            "--peak-tflops",
            "2",
            "--arch",
            "roberta_tiny",
            "--seq",
            "64",
            "--vocab",
            "1000",
            "--micro-batches",
            "4",
            "--sequences-per-update",
            "8",
            "--steps",
            "7",
            "--threads",
            "1",
            "--repeats",
            "1",
            "--routes",
            "ours_bf16,ours_bf16_fairseq_encoder,ours_fp16,fairseq_fp16,fairseq_bf16,transformers_bf16",
            "--distillation",
            "--distillation-teacher",
            "roberta_tiny",
        ],
        timeout=600,
    )
    report = json.loads(done.stdout)
    assert (report["layers"], report["width"], report["heads"], report["ffn"], report["seq"]) == (
        2,
        64,
        2,
        128,
        64,
    )
    assert report["dictionary_ours"] == 1024
    flops = training_flops_per_token(2, 64, 128, 64, 1000, 0.15)
    assert report["model_flops_per_token"] == flops
    runs = report["runs"]
    for name in (
        "ours_bf16@4x2",
        "ours_bf16_fairseq_encoder@4x2",
        "fairseq_bf16@4x2",
        "transformers_bf16@4x2",
    ):
        assert runs[name]["tokens_per_s"] > 0, runs[name]
        assert runs[name]["mfu"] == pytest.approx(
            runs[name]["tokens_per_s"] * flops / 2e12, abs=1e-4
        )
    assert "skipped" in runs["fairseq_fp16@4x2"] and "skipped" in runs["ours_fp16@4x2"]
    assert runs["transformers_bf16@4x2"]["masking_seconds_per_update_runs"][0] > 0
    assert report["ratios"]["ours_bf16_over_transformers_bf16@4x2"] == pytest.approx(
        runs["ours_bf16@4x2"]["tokens_per_s"] / runs["transformers_bf16@4x2"]["tokens_per_s"],
        abs=1e-3,
    )
    assert report["ratios"]["best"]["ours_bf16"] == "ours_bf16@4x2"
    distillation = report["distillation"]
    assert (
        distillation["distill_step_s"] > 0 and distillation["distill_over_student_plus_teacher"] > 0
    )


@pytest.mark.slow
def test_encoder_benchmark_compares_implementations_on_the_same_weights():
    done = run_ok(
        [
            sys.executable,
            REPO_ROOT / "scripts" / "benchmark_encoder.py",
            "--cpu",
            "--arch",
            "roberta_tiny",
            "--seq",
            "64",
            "--batches",
            "4",
            "--vocabs",
            "1000",
            "--steps",
            "2",
            "--lengths",
            "64,57",  # real data's batches: lengths vary, shorter rows padded
        ],
        timeout=600,
    )
    report = json.loads(done.stdout)
    assert report["lengths"] == "64,57"
    assert [run["implementation"] for run in report["runs"]] == ["fairseq", "fused", "compiled"]
    assert all(run["tokens_per_s"] > 0 for run in report["runs"])
    for implementation, difference in report["difference_from_fairseq"]["1000"].items():
        assert difference["logits_max_rel"] < 1e-5 and difference["grads_max_rel"] < 1e-5, (
            implementation
        )
