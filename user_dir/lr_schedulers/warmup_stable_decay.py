"""The trapezoidal (warmup-stable-decay) schedule ModernBERT was trained with (Warner et al. 2024;
its Composer schedulers, AnswerDotAI/ModernBERT src/scheduler.py: WarmupStableDecayScheduler and
OneMinusSqrtScheduler): a linear warmup, the peak held, then a decay over the last share of
training, linear or 1-sqrt, to a share of the peak. fairseq has none (its polynomial_decay decays
from the end of warmup on). With T = total_num_update, W = round(warmup_ratio * T),
D = round(decay_ratio * T), peak = lr, f = end_lr_ratio, after n updates:

    n <= W          peak * max(n, 1) / W            (fairseq's warmup: the first update at peak / W)
    n <= T - D      peak
    n <= T          peak * (f + (1 - f) * shape(p)),  p = (n - (T - D)) / D,
                    shape(p) = 1 - p (linear) or 1 - sqrt(p) (one_minus_sqrt)
    n > T           peak * f   (peak when D = 0: no decay)

The learning rate is a function of n alone, so a resumed run goes on exactly where it stopped
(fairseq sets it again at every epoch's start, from the last n). Ratios, as in
warmup_ratio_linear_decay, so that warmup and decay move with max_update. (No `from __future__
import annotations`: fairseq builds fairseq-train's options from the config's field types.)"""

import math
from dataclasses import dataclass, field
from typing import List

from fairseq.dataclass import ChoiceEnum
from fairseq.optim.lr_scheduler import FairseqLRScheduler, register_lr_scheduler
from omegaconf import II

from user_dir.lr_schedulers._schedule_length import ScheduleLengthConfig, schedule_length

DECAY_SHAPES = {"linear": lambda p: 1 - p, "one_minus_sqrt": lambda p: 1 - math.sqrt(p)}


@dataclass
class WarmupStableDecayConfig(ScheduleLengthConfig):
    warmup_ratio: float = field(
        default=0.0,
        metadata={"help": "linear warmup over this share of total_num_update (default max_update)"},
    )
    decay_ratio: float = field(
        default=0.0,
        metadata={
            "help": "decay over this last share of total_num_update; 0: the peak is held to the "
            "end (a stable phase a later run can decay from)"
        },
    )
    decay_shape: ChoiceEnum(list(DECAY_SHAPES)) = field(
        default="linear",
        metadata={"help": "linear, or one_minus_sqrt (1 - sqrt of the decay's progress)"},
    )
    end_lr_ratio: float = field(
        default=0.0,
        metadata={"help": "learning rate at the end of the decay, as a share of the peak"},
    )
    lr: List[float] = II("optimization.lr")


def schedule_lengths(cfg: WarmupStableDecayConfig) -> tuple[int, int, int]:
    """(T, W, D) of the module doc; one line naming the setting that makes no schedule."""
    total = schedule_length(cfg)
    if not total or total <= 0:
        raise ValueError(
            f"lr_scheduler warmup_stable_decay needs optimization.max_update (or "
            f"lr_scheduler.total_num_update) above 0, not {total}"
        )
    for name in ("warmup_ratio", "decay_ratio", "end_lr_ratio"):
        if not 0 <= getattr(cfg, name) <= 1:
            raise ValueError(f"lr_scheduler.{name}={getattr(cfg, name)} must be in [0, 1]")
    if cfg.warmup_ratio + cfg.decay_ratio > 1:
        raise ValueError(
            f"lr_scheduler.warmup_ratio={cfg.warmup_ratio} + decay_ratio={cfg.decay_ratio} is "
            "above 1: warmup and decay would overlap"
        )
    return int(total), round(cfg.warmup_ratio * total), round(cfg.decay_ratio * total)


@register_lr_scheduler("warmup_stable_decay", dataclass=WarmupStableDecayConfig)
class WarmupStableDecaySchedule(FairseqLRScheduler):
    def __init__(self, cfg: WarmupStableDecayConfig, optimizer):
        super().__init__(cfg, optimizer)
        if len(cfg.lr) > 1:
            raise ValueError(
                f"lr_scheduler warmup_stable_decay takes one peak lr, not optimization.lr={cfg.lr}"
            )
        self.peak = cfg.lr[0]
        self.total, self.warmup, self.decay = schedule_lengths(cfg)
        self.shape = DECAY_SHAPES[str(cfg.decay_shape)]
        self.num_updates = 0
        self.optimizer.set_lr(self.lr_at(0))

    def lr_at(self, num_updates: int) -> float:
        """The learning rate after num_updates updates (the module doc's formula)."""
        if self.warmup and num_updates <= self.warmup:
            return self.peak * max(num_updates, 1) / self.warmup
        if num_updates <= self.total - self.decay or self.decay == 0:
            return self.peak
        end = self.cfg.end_lr_ratio
        progress = min(1.0, (num_updates - (self.total - self.decay)) / self.decay)
        return self.peak * (end + (1 - end) * self.shape(progress))

    def step_begin_epoch(self, epoch):
        self.optimizer.set_lr(self.lr_at(self.num_updates))
        return self.optimizer.get_lr()

    def step_update(self, num_updates):
        self.num_updates = num_updates
        self.optimizer.set_lr(self.lr_at(num_updates))
        return self.optimizer.get_lr()
