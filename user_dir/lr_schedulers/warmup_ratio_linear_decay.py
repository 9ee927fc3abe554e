"""RoBERTa's schedule with the warmup given as a share of training (docs/recipe.md: 5%, then linear
decay to 0), so changing max_update moves the warmup with it, on the Hydra and argparse routes."""

from dataclasses import dataclass, field
from typing import Optional

from fairseq.optim.lr_scheduler import register_lr_scheduler
from fairseq.optim.lr_scheduler.polynomial_decay_schedule import (
    PolynomialDecayLRSchedule,
    PolynomialDecayLRScheduleConfig,
)
from omegaconf import II


@dataclass
class WarmupRatioLinearDecayConfig(PolynomialDecayLRScheduleConfig):
    warmup_ratio: float = field(
        default=0.05,
        metadata={
            "help": "linear warmup over this share of total_num_update (default max_update); "
            "replaces warmup_updates"
        },
    )
    # fairseq-train's argparse route leaves the inherited interpolation unset (null), so the
    # schedule falls back to max_update itself
    total_num_update: Optional[float] = field(
        default=II("optimization.max_update"),
        metadata={"help": "updates over which to decay the learning rate (default: max_update)"},
    )
    max_update: int = II("optimization.max_update")


@register_lr_scheduler("warmup_ratio_linear_decay", dataclass=WarmupRatioLinearDecayConfig)
class WarmupRatioLinearDecaySchedule(PolynomialDecayLRSchedule):
    def __init__(self, cfg: WarmupRatioLinearDecayConfig, optimizer):
        if not 0 <= cfg.warmup_ratio < 1:
            raise ValueError(f"lr_scheduler.warmup_ratio={cfg.warmup_ratio} must be in [0, 1)")
        if cfg.total_num_update is None:
            cfg.total_num_update = cfg.max_update
        cfg.warmup_updates = round(cfg.warmup_ratio * cfg.total_num_update)
        super().__init__(cfg, optimizer)
