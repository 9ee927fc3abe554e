"""The plugin's learning-rate schedules (user_dir/lr_schedulers/) against their formulas, and a
schedule rebuilt for a resumed run goes on at the learning rate of an uninterrupted one."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest
import torch
from fairseq.optim.adam import FairseqAdam

import user_dir  # noqa: F401  (registers the schedules)
from user_dir.lr_schedulers.warmup_ratio_linear_decay import (
    WarmupRatioLinearDecayConfig,
    WarmupRatioLinearDecaySchedule,
)
from user_dir.lr_schedulers.warmup_stable_decay import (
    WarmupStableDecayConfig,
    WarmupStableDecaySchedule,
)


def optimizer() -> FairseqAdam:
    options = dict(adam_betas="(0.9,0.98)", adam_eps=1e-6, weight_decay=0.0, tpu=False)
    options.update(use_old_adam=False, fp16_adam_stats=False)
    return FairseqAdam(Namespace(lr=[1.0], **options), [torch.nn.Parameter(torch.zeros(2))])


def wsd(**options) -> WarmupStableDecaySchedule:
    return WarmupStableDecaySchedule(WarmupStableDecayConfig(**options), optimizer())


def learning_rates(schedule, updates: int) -> list[float]:
    """The lr after each update 1..updates, as fairseq's trainer sets it."""
    return [schedule.step_update(n) for n in range(1, updates + 1)]


@pytest.mark.parametrize("shape", ["linear", "one_minus_sqrt"])
def test_warmup_stable_decay_follows_its_formula(shape):
    peak, total, alpha_f = 3e-4, 200, 0.001
    schedule = wsd(
        warmup_ratio=0.05,
        decay_ratio=0.25,
        decay_shape=shape,
        end_lr_ratio=alpha_f,
        total_num_update=total,
        lr=[peak],
    )
    assert schedule.optimizer.get_lr() == pytest.approx(peak / 10)  # the first update's
    got = learning_rates(schedule, total + 5)
    for step, lr in enumerate(got, start=1):
        if step <= 10:
            expected = peak * step / 10
        elif step <= 150:
            expected = peak
        else:
            progress = min(1.0, (step - 150) / 50)
            remaining = 1 - progress if shape == "linear" else 1 - math.sqrt(progress)
            # Composer: linear 1 - p (1 - alpha_f); one_minus_sqrt alpha_f + (1 - alpha_f)(1 - √p)
            expected = peak * (alpha_f + (1 - alpha_f) * remaining)
        assert lr == pytest.approx(expected, rel=1e-9, abs=1e-15), step
    assert got[149] == peak and got[199] == pytest.approx(peak * alpha_f)
    assert got[-1] == pytest.approx(peak * alpha_f)  # held after total_num_update
    # 1/50 into the decay: 1-sqrt is 14% down, linear 2%
    assert got[150] / peak == pytest.approx(0.859 if shape == "one_minus_sqrt" else 0.98, abs=1e-3)


def test_no_decay_holds_the_peak_to_the_end_and_beyond():
    """ModernBERT's pretraining phase (t_decay 0): warmup, then the peak, which a later run
    decays from."""
    got = learning_rates(wsd(warmup_ratio=0.1, total_num_update=50, lr=[8e-4]), 60)
    assert got[:5] == pytest.approx([8e-4 * n / 5 for n in range(1, 6)])
    assert set(got[5:]) == {8e-4}


def test_without_warmup_the_first_update_takes_the_peak():
    schedule = wsd(decay_ratio=1.0, total_num_update=4, lr=[1.0])
    assert schedule.optimizer.get_lr() == 1.0
    assert learning_rates(schedule, 4) == pytest.approx([0.75, 0.5, 0.25, 0.0])


@pytest.mark.parametrize(
    "options,message",
    [
        (dict(warmup_ratio=0.6, decay_ratio=0.5), "warmup_ratio=0.6 + decay_ratio=0.5 is above 1"),
        (dict(decay_ratio=1.5), "lr_scheduler.decay_ratio=1.5 must be in [0, 1]"),
        (dict(end_lr_ratio=-0.1), "lr_scheduler.end_lr_ratio=-0.1 must be in [0, 1]"),
        (dict(total_num_update=0), "needs optimization.max_update"),
        (dict(lr=[1.0, 0.5]), "takes one peak lr, not optimization.lr=[1.0, 0.5]"),
    ],
)
def test_a_schedule_that_cannot_be_is_one_line(options, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("+", r"\+")):
        wsd(**{"total_num_update": 100, "lr": [1.0], **options})


@pytest.mark.parametrize(
    "build",
    [
        lambda: wsd(warmup_ratio=0.1, decay_ratio=0.5, total_num_update=100, lr=[1.0]),
        lambda: WarmupRatioLinearDecaySchedule(
            WarmupRatioLinearDecayConfig(warmup_ratio=0.1, total_num_update=100, lr=[1.0]),
            optimizer(),
        ),
    ],
    ids=["warmup_stable_decay", "warmup_ratio_linear_decay"],
)
def test_a_resumed_schedule_takes_the_lr_of_an_uninterrupted_one(build):
    """fairseq rebuilds the schedule on a resume, sets the updates done (Trainer.set_num_updates)
    and starts the epoch (step_begin_epoch), whose lr the next update takes. fairseq's
    polynomial_decay set peak / warmup_updates there (here 0.1 instead of 0.5 after 60 updates)."""
    straight = build()
    learning_rates(straight, 60)
    resumed = build()
    resumed.step_update(60)
    assert resumed.step_begin_epoch(2) == pytest.approx(straight.optimizer.get_lr())
    assert resumed.optimizer.get_lr() == pytest.approx(straight.optimizer.get_lr())
    fresh = build()  # a first launch keeps the warmup's first step
    assert fresh.step_begin_epoch(1) == pytest.approx(0.1)


def test_fairseq_train_s_options_build_the_schedule():
    """fairseq-train's route: options generated from the config's fields (which string
    annotations would break), total_num_update unset so max_update spans the schedule."""
    from argparse import ArgumentParser

    from fairseq.dataclass.utils import gen_parser_from_dataclass

    parser = ArgumentParser()
    gen_parser_from_dataclass(parser, WarmupStableDecayConfig())
    options = ["--warmup-ratio", "0.25", "--decay-ratio", "0.5", "--decay-shape", "one_minus_sqrt"]
    args = parser.parse_args([*options, "--end-lr-ratio", "0.1"])
    args.max_update, args.lr = 4, [1e-3]
    schedule = WarmupStableDecaySchedule(WarmupStableDecayConfig.from_namespace(args), optimizer())
    assert learning_rates(schedule, 4) == pytest.approx(
        [1e-3, 1e-3, 1e-4 * (1 + 9 * (1 - 0.5**0.5)), 1e-4]
    )
