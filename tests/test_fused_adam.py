"""user_dir/optim/fused_adam.py: fairseq's Adam update through torch's fused AdamW kernel equals
fairseq's own loop (eps placed as fairseq places it), takes over and hands back fairseq's optimizer
state, and leaves what it does not fuse to fairseq's loop; fairseq's `adam` finds it where it looks
for apex, and `--optimizer fused_adam` (fine-tuning's) runs it on the CPU too."""

import copy
from argparse import Namespace

import pytest
import torch
from fairseq import optim
from fairseq.optim import adam as fairseq_adam

import user_dir  # noqa: F401  (installs the hook)
from user_dir.optim.fused_adam import FusedAdam

HYPER = dict(lr=3e-3, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
SHAPES = [(40, 24), (24,), (5, 3, 2), (1,)]


def twin_params(dtype=torch.float32):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(shape, dtype=dtype)) for shape in SHAPES]
    return params, [torch.nn.Parameter(p.detach().clone()) for p in params]


def step_both(reference, ours, optimizers, steps, seed=1):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        for p, q in zip(reference, ours):
            # gradient scales from 1e-9 to 1, where eps decides the update
            grad = (
                torch.randn(p.shape, generator=generator)
                * 10.0 ** -torch.randint(0, 10, (), generator=generator).item()
            )
            p.grad, q.grad = grad.to(p.dtype), grad.to(q.dtype)
        for optimizer in optimizers:
            optimizer.step()


def assert_same(reference, ours, rel=1e-6):
    for p, q in zip(reference, ours):
        assert (p - q).abs().max() <= rel * p.abs().max(), (p - q).abs().max()


def test_fused_step_equals_fairseq_adam():
    reference, ours = twin_params()
    step_both(
        reference, ours, [fairseq_adam.Adam(reference, **HYPER), FusedAdam(ours, **HYPER)], steps=25
    )
    assert_same(reference, ours)


def test_optimizer_state_passes_both_ways():
    reference, ours = twin_params()
    fairseq_optimizer, fused = fairseq_adam.Adam(reference, **HYPER), FusedAdam(ours, **HYPER)
    step_both(reference, ours, [fairseq_optimizer], steps=5)
    ours_data = [p.detach().clone() for p in reference]
    for q, data in zip(ours, ours_data):
        q.data.copy_(data)
    # resume a fairseq run with the fused step (a copy, as a checkpoint file gives it)
    fused.load_state_dict(copy.deepcopy(fairseq_optimizer.state_dict()))
    step_both(reference, ours, [fairseq_optimizer, fused], steps=5, seed=2)
    assert_same(reference, ours)
    assert fused.state_dict()["state"][0]["step"] == 10 and set(fused.state_dict()["state"][0]) == {
        "step",
        "exp_avg",
        "exp_avg_sq",
    }
    fairseq_optimizer.load_state_dict(copy.deepcopy(fused.state_dict()))  # and back
    step_both(reference, ours, [fairseq_optimizer, fused], steps=3, seed=3)
    assert_same(reference, ours)


def test_what_it_does_not_fuse_takes_fairseq_s_loop():
    reference, ours = twin_params(torch.bfloat16)  # --memory-efficient-bf16 hands bf16 parameters
    step_both(
        reference, ours, [fairseq_adam.Adam(reference, **HYPER), FusedAdam(ours, **HYPER)], steps=4
    )
    for p, q in zip(reference, ours):
        assert torch.equal(p, q)


class Fp16StatsAdam(fairseq_adam.Adam):
    """The reference: fairseq's own Adam step, with the moments rounded after each step to fp16 of
    moment / (1e-8 + max |moment| / 65504) and back, as apex's FusedAdamV1 stores them."""

    @torch.no_grad()
    def step(self, closure=None):
        super().step(closure)
        for state in self.state.values():
            for key in ("exp_avg", "exp_avg_sq"):
                scale = 1e-8 + state[key].abs().max() / 65504.0
                state[key] = (state[key] / scale).half().float() * scale


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])  # fused kernel, fairseq's loop
def test_fp16_adam_stats_store_scaled_fp16_moments(dtype):
    """--fp16-adam-stats: moments stored in fp16 with apex's per-tensor scales; the update equals
    fairseq's Adam on moments rounded that way, stays near full-precision Adam, and resumes from
    its state dict."""
    reference, ours = twin_params(dtype)
    reference_optimizer = Fp16StatsAdam(reference, **HYPER)
    fused = FusedAdam(ours, use_fp16_stats=True, **HYPER)
    step_both(reference, ours, [reference_optimizer, fused], steps=10)
    state = fused.state_dict()["state"][0]
    assert state["exp_avg"].dtype == state["exp_avg_sq"].dtype == torch.float16
    assert state["exp_avg_scale"] > 0 and state["exp_avg_sq_scale"] > 0
    if dtype == torch.float32:
        assert_same(reference, ours, rel=1e-5)
    else:
        for p, q in zip(reference, ours):
            assert torch.equal(p, q)
    _, full_precision = twin_params(dtype)  # the same gradients, fp32 moments
    step_both(_, full_precision, [fairseq_adam.Adam(full_precision, **HYPER)], steps=10)
    assert_same(full_precision, ours, rel=2e-2)

    resumed = FusedAdam(ours, use_fp16_stats=True, **HYPER)
    resumed.load_state_dict(copy.deepcopy(fused.state_dict()))  # as a checkpoint file gives it
    step_both(reference, ours, [reference_optimizer, resumed], steps=5, seed=2)
    assert_same(reference, ours, rel=1e-5 if dtype == torch.float32 else 1e-2)


def test_fairseq_adam_finds_it_where_it_looks_for_apex():
    assert fairseq_adam.get_fused_adam_class() is FusedAdam  # no apex here


def built(name: str, params, **options):
    """The optimizer fairseq's registry builds for `--optimizer name` from a command line's args."""
    args = Namespace(
        optimizer=name, lr=[HYPER["lr"]], adam_betas=str(HYPER["betas"]), adam_eps=HYPER["eps"],
        weight_decay=HYPER["weight_decay"], fp16_adam_stats=False, tpu=False, **options,
    )  # fmt: skip
    return optim.build_optimizer(args, params)


def test_the_fused_adam_optimizer_steps_fused_on_the_cpu_as_fairseqs_adam_does():
    reference, ours = twin_params()
    fairseq_optimizer = built("adam", reference, use_old_adam=False)
    fused = built("fused_adam", ours, use_old_adam=False)
    assert type(fairseq_optimizer.optimizer) is fairseq_adam.Adam  # fairseq's loop on the CPU
    assert type(fused.optimizer) is FusedAdam
    assert fused.optimizer.fusable()
    step_both(reference, ours, [fairseq_optimizer, fused], steps=25)
    assert_same(reference, ours)
    assert fused.optimizer.state_dict()["state"].keys() == (
        fairseq_optimizer.optimizer.state_dict()["state"].keys()
    )


def test_the_fused_adam_optimizer_keeps_fairseqs_loop_with_use_old_adam():
    reference, _ = twin_params()
    assert type(built("fused_adam", reference, use_old_adam=True).optimizer) is fairseq_adam.Adam
