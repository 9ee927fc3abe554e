"""The pretraining route's speed options (docs/pretrain.md, "Speed"), each equal to the eager
route where it runs on the CPU: the compiled layers, the chunked LM-head loss and the fused Adam
step give stock fairseq masked_lm's losses over several updates (fp32, dropout off, to 1e-5);
FP8 projections track fp32's losses; CUDA graphs, and every option where it cannot run, are
refused with one line naming the option."""

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import user_dir  # noqa: F401
from conftest import USER_DIR
from test_fused_encoder import masked_lm_setup, tiny_roberta
from tiny_training import BIN
from user_dir.criterions._chunked_lm_loss import chunked_linear_cross_entropy
from user_dir.models._encoder_levers import EncoderOptionError
from user_dir.models._float8 import Float8Error, float8_linear
from user_dir.models.fused_roberta_encoder import use_fused_encoder

TOLERANCE = 1e-5


@pytest.mark.parametrize("compiled", [False, True])
def test_chunked_lm_loss_is_cross_entropy_of_the_full_logits(compiled):
    """Loss and gradients of x, weight and bias, rows with the ignored target left out, whether
    the rows fit one chunk, split unevenly, or come one at a time."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(37, 16, generator=generator, requires_grad=True)
    weight = torch.randn(50, 16, generator=generator, requires_grad=True)
    bias = torch.randn(50, generator=generator, requires_grad=True)
    targets = torch.randint(2, 50, (37,), generator=generator)
    targets[[3, 10, 36]] = 1  # the padding index: no loss
    expected = F.cross_entropy(F.linear(x, weight, bias), targets, reduction="sum", ignore_index=1)
    (2 * expected).backward()  # an incoming gradient other than 1 (fp16's loss scale)
    expected_grads = [p.grad.clone() for p in (x, weight, bias)]
    for chunk_rows in (64, 8, 1):
        for p in (x, weight, bias):
            p.grad = None
        loss = chunked_linear_cross_entropy(x, weight, bias, targets, 1, chunk_rows, compiled)
        (2 * loss).backward()
        assert loss.item() == pytest.approx(expected.item(), rel=TOLERANCE), chunk_rows
        for p, expected_grad in zip((x, weight, bias), expected_grads):
            scale = expected_grad.abs().max()
            assert (p.grad - expected_grad).abs().max() <= TOLERANCE * scale, chunk_rows
    assert x.grad[3].abs().max() == 0  # an ignored row gets no gradient


def losses_over_updates(databin, criterion, implementation, task, flags=(), updates=4):
    """The losses of UPDATES fairseq updates (forward, backward, optimizer step) on the task's
    first batches, from the same initial weights (seed 0)."""
    fairseq_task, model, fairseq_criterion, optimizer, _ = masked_lm_setup(
        databin, criterion, implementation, task=task, flags=flags
    )
    batches = fairseq_task.get_batch_iterator(
        fairseq_task.dataset("train"), max_sentences=8, seed=1
    ).next_epoch_itr(shuffle=False)
    losses = []
    for update, sample in zip(range(updates), batches):
        loss, sample_size, _ = fairseq_task.train_step(
            sample, model, fairseq_criterion, optimizer, update
        )
        sample_size = float(sample_size)
        optimizer.multiply_grads(1 / sample_size)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item() / sample_size)
    return losses, model


@pytest.mark.parametrize(
    "implementation, flags",
    [
        ("compiled", ["--lm-loss-chunk-rows", "7", "--optimizer", "fused_adam"]),
        ("fused", ["--lm-loss-chunk-rows", "7"]),
        ("compiled", []),
    ],
)
def test_levers_train_as_stock_fairseq_masked_lm(tiny_databin, implementation, flags):
    """Four updates with the levers on (regional compile, the chunked LM-head loss, compiled with
    the layers or not, the fused Adam step) give stock fairseq's loss at every update and its
    weights after them (to 1e-5 of the largest)."""
    stock_losses, stock = losses_over_updates(tiny_databin, "masked_lm", "fairseq", "masked_lm")
    losses, model = losses_over_updates(
        tiny_databin, "masked_lm_positions", implementation, "corpora_masked_lm", flags
    )
    assert stock_losses[-1] != stock_losses[0]  # the weights moved between the compared losses
    assert losses == pytest.approx(stock_losses, rel=TOLERANCE)
    # to the largest weight: the key bias, whose true gradient is 0, holds only rounding
    largest = max(p.abs().max() for p in stock.parameters())
    for (name, p), stock_p in zip(model.named_parameters(), stock.parameters()):
        assert (p - stock_p).abs().max() <= TOLERANCE * largest, name


def test_float8_training_tracks_fp32(tiny_databin):
    """torchao's FP8 GEMMs in the fused layers (run on the CPU by torch._scaled_mm): the losses
    of six updates stay within 2% of fp32's and fall alike."""
    pytest.importorskip("torchao.float8", reason="float8_training needs torchao")
    plain, _ = losses_over_updates(
        tiny_databin, "masked_lm_positions", "fused", "corpora_masked_lm", updates=6
    )
    float8, model = losses_over_updates(
        tiny_databin,
        "masked_lm_positions",
        "fused",
        "corpora_masked_lm",
        ["--float8-training"],
        updates=6,
    )
    assert model.encoder.float8
    assert float8 != plain  # FP8 rounding did happen
    assert float8 == pytest.approx(plain, rel=0.02)
    assert float8[-1] < float8[0] - 0.1 and plain[-1] < plain[0] - 0.1


def test_each_lever_is_refused_where_it_cannot_run(monkeypatch):
    model = tiny_roberta()
    with pytest.raises(EncoderOptionError, match="encoder_cuda_graphs needs a CUDA device"):
        use_fused_encoder(model, "compiled", cuda_graphs=True, cpu=True)
    with pytest.raises(EncoderOptionError, match="needs task.encoder_implementation=compiled"):
        use_fused_encoder(model, "fused", cuda_graphs=True)
    with pytest.raises(EncoderOptionError, match="float8_training .* not fairseq"):
        use_fused_encoder(model, "fairseq", float8=True)
    with pytest.raises(EncoderOptionError, match="which has no encoder_layerdrop > 0"):
        use_fused_encoder(tiny_roberta(encoder_layerdrop=0.1), "fused", float8=True)
    float8_linear.cache_clear()
    for name in ["torchao", *(name for name in sys.modules if name.startswith("torchao."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if torchao were not installed
    with pytest.raises(Float8Error, match=r"needs torchao .*pip install 'torchao>=0.17'"):
        use_fused_encoder(model, "fused", float8=True)
    float8_linear.cache_clear()
    assert type(model.encoder).__name__ == "RobertaEncoder"  # refused: nothing changed


def test_fairseq_train_refuses_cuda_graphs_on_the_cpu_in_one_line(tiny_databin, tmp_path):
    run = subprocess.run(
        [
            BIN / "fairseq-train",
            tiny_databin,
            "--user-dir",
            USER_DIR,
            "--cpu",
            "--task",
            "corpora_masked_lm",
            "--criterion",
            "masked_lm_positions",
            "--arch",
            "roberta_tiny",
            "--encoder-implementation",
            "compiled",
            "--encoder-cuda-graphs",
            "--optimizer",
            "adam",
            "--batch-size",
            "8",
            "--max-update",
            "1",
            "--save-dir",
            tmp_path,
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "error: task.encoder_cuda_graphs needs a CUDA device (CUDA graphs): drop it on the CPU"
    )
    assert "Traceback" not in run.stderr


def bf16_training_config(databin, *flags):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from user_dir.precision import configure_precision

    args = options.parse_args_and_arch(
        options.get_training_parser(),
        [str(databin), "--user-dir", str(USER_DIR), "--task", "masked_lm", "--arch"]
        + ["roberta_tiny", "--bf16", "--lr", "1e-3", "--batch-size", "8", *flags],
    )
    cfg = convert_namespace_to_omegaconf(args)
    configure_precision(cfg)
    return cfg


def test_flat_buffers_update_as_fairseq_s_fp16_optimizer(tiny_databin, monkeypatch):
    """The optimizer-step lever (--optimizer fused_adam over bf16's flat fp32 master, one
    process): weights and gradients in flat buffers, moved in one copy each way; three updates of
    two micro-batches give fairseq's FP16Optimizer's gradients exactly and its master weights to
    float rounding (one fused kernel over one tensor against one per tensor)."""
    from fairseq.optim.fp16_optimizer import FP16Optimizer

    from user_dir.precision import FlatBuffersFP16Optimizer, flat_buffers

    cfg = bf16_training_config(tiny_databin, "--cpu", "--optimizer", "fused_adam")
    reference = tiny_roberta().bfloat16()
    ours = tiny_roberta().bfloat16()
    optimizers = [
        FP16Optimizer.build_optimizer(cfg, list(reference.parameters())),  # per-tensor on CPU
        FlatBuffersFP16Optimizer.build_optimizer(cfg, list(ours.parameters())),
    ]
    generator = torch.Generator().manual_seed(3)
    for _ in range(3):
        batches = [torch.randint(4, 300, (3, 24), generator=generator) for _ in range(2)]
        for model, optimizer in zip((reference, ours), optimizers):
            for tokens in batches:
                masked = tokens.remainder(5).eq(0)
                logits = model(tokens, masked_tokens=masked)[0]
                optimizer.backward(F.cross_entropy(logits.float(), tokens[masked]))
            optimizer.multiply_grads(0.5)
            optimizer.clip_grad_norm(0.0)
        flat_reference = torch.cat([p.grad.view(-1) for p in optimizers[0].fp32_params])
        assert torch.equal(optimizers[1].master.grad, flat_reference)
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad()
    masters = torch.cat([p.data.view(-1) for p in optimizers[0].fp32_params])
    assert (optimizers[1].master.data - masters).abs().max() <= 1e-6 * masters.abs().max()
    for p, q in zip(reference.parameters(), ours.parameters()):  # the bf16 weights, copied back
        assert q.data_ptr() != p.data_ptr() and q.dtype == torch.bfloat16
        assert (q.float() - p.float()).abs().max() <= 1e-2 * p.float().abs().max()
    assert ours.state_dict().keys() == reference.state_dict().keys()

    # chosen for bf16 on one GPU with fused_adam only
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    params = list(ours.parameters())
    assert flat_buffers(bf16_training_config(tiny_databin, "--optimizer", "fused_adam"), params)
    assert not flat_buffers(bf16_training_config(tiny_databin, "--optimizer", "adam"), params)
    assert not flat_buffers(cfg, params)  # --cpu
