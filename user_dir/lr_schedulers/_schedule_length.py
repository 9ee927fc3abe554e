"""The length the ratio schedules (warmup_ratio_linear_decay, warmup_stable_decay) take their
shares of, so that warmup and decay move with max_update (not registered: the leading
underscore). No `from __future__ import annotations`: fairseq builds fairseq-train's options from
the config's field types."""

from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import FairseqDataclass
from omegaconf import II


@dataclass
class ScheduleLengthConfig(FairseqDataclass):
    # fairseq-train's argparse route leaves the interpolation unset (null): then max_update
    total_num_update: Optional[float] = field(
        default=II("optimization.max_update"),
        metadata={"help": "updates the schedule spans (default: max_update)"},
    )
    max_update: int = II("optimization.max_update")


def schedule_length(cfg: ScheduleLengthConfig) -> Optional[float]:
    """total_num_update, else (the argparse route's null) max_update."""
    return cfg.total_num_update if cfg.total_num_update is not None else cfg.max_update
