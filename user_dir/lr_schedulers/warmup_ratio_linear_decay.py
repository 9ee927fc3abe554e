"""RoBERTa's schedule with the warmup given as a share of training (docs/recipe.md: 5%, then linear
decay to 0), so changing max_update moves the warmup with it, on the Hydra and argparse routes.

fairseq's polynomial_decay sets warmup_factor * lr at each epoch's start, and step_update leaves
warmup_factor at its first value (1 / warmup_updates) in a run resumed after the warmup: the first
update after a resume took lr / warmup_updates (and in any run, the first update of each later
epoch took the peak lr). Here an epoch's start sets the lr of the updates done so far."""

from dataclasses import dataclass, field

from fairseq.optim.lr_scheduler import register_lr_scheduler
from fairseq.optim.lr_scheduler.polynomial_decay_schedule import (
    PolynomialDecayLRSchedule,
    PolynomialDecayLRScheduleConfig,
)

from user_dir.lr_schedulers._schedule_length import ScheduleLengthConfig, schedule_length


@dataclass
class WarmupRatioLinearDecayConfig(ScheduleLengthConfig, PolynomialDecayLRScheduleConfig):
    warmup_ratio: float = field(
        default=0.05,
        metadata={
            "help": "linear warmup over this share of total_num_update (default max_update); "
            "replaces warmup_updates"
        },
    )


@register_lr_scheduler("warmup_ratio_linear_decay", dataclass=WarmupRatioLinearDecayConfig)
class WarmupRatioLinearDecaySchedule(PolynomialDecayLRSchedule):
    def __init__(self, cfg: WarmupRatioLinearDecayConfig, optimizer):
        if not 0 <= cfg.warmup_ratio < 1:
            raise ValueError(f"lr_scheduler.warmup_ratio={cfg.warmup_ratio} must be in [0, 1)")
        cfg.total_num_update = schedule_length(cfg)
        cfg.warmup_updates = round(cfg.warmup_ratio * cfg.total_num_update)
        super().__init__(cfg, optimizer)
        self.num_updates = 0

    def step_begin_epoch(self, epoch):
        lr = super().step_begin_epoch(epoch)  # the epoch's lr (optimization.lr may list several)
        return self.step_update(self.num_updates) if self.num_updates else lr

    def step_update(self, num_updates):
        self.num_updates = num_updates
        return super().step_update(num_updates)
