"""The typed config of one fine-tuning sweep job, registered in Hydra's ConfigStore as
"sweep_schema" (bio_roberta/configs/finetune/sweep.yaml builds on it; fairseq's dataclass style).

Task facts (labels, metric, lr, batch size, epochs, validation interval, patience, folds) come
from bio_roberta/tasks/registry.py and are not restated here.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

SCHEMA_NAME = "sweep_schema"


@dataclass
class HparamsOverrides:
    """A value overrides the task's registry Hyperparameters for every task of the sweep (tiny
    demos, tests); None keeps the registry's."""

    lr: Optional[float] = field(default=None, metadata={"help": "peak learning rate"})
    batch_size: Optional[int] = field(default=None, metadata={"help": "examples per update"})
    max_epoch: Optional[int] = field(default=None, metadata={"help": "epochs per run"})
    validate_interval_updates: Optional[int] = field(
        default=None, metadata={"help": "updates between validations"}
    )
    warmup_ratio: Optional[float] = field(
        default=None, metadata={"help": "share of the run's updates the lr warms up over"}
    )
    weight_decay: Optional[float] = field(default=None, metadata={"help": "Adam weight decay"})
    dropout: Optional[float] = field(
        default=None, metadata={"help": "dropout and attention dropout"}
    )
    patience: Optional[int] = field(
        default=None, metadata={"help": "validations without improvement before stopping"}
    )


def roberta_finetuning_optimization() -> Dict[str, Any]:
    """Paper §5.2, RoBERTa's fine-tuning recipe: Adam with beta (0.9, 0.98), epsilon 1e-6 and no
    gradient clipping; the lr warms up over the registry's warmup_ratio of the run's updates,
    then decays linearly to 0 (polynomial_decay, power 1). The optimizer is fairseq's `adam` with
    its step in torch's fused kernel on the CPU too (user_dir/optim/fused_adam.py)."""
    return {
        "optimizer": "fused_adam",
        "adam_betas": "(0.9,0.98)",
        "adam_eps": 1e-6,
        "clip_norm": 0.0,
        "lr_scheduler": "polynomial_decay",
    }


@dataclass
class PackedRun:
    """One run of a pack job: a task and a seed (the setting is the job's hparams)."""

    task_name: str = field(default=MISSING, metadata={"help": "a registry name"})
    seed: int = field(default=MISSING, metadata={"help": "the run's seed"})


@dataclass
class SweepConfig:
    """One Hydra job of the sweep: every run of one task with one seed, or a pack of such runs
    sharing one device (bio_roberta/finetuning/packing.py)."""

    # "task_name", not "task": once fairseq is imported, "task" is a group of its ConfigStore.
    task_name: str = field(
        default=MISSING,
        metadata={
            "help": "a registry name (bio_roberta.tasks.registry.TASKS); unset in a pack job, "
            "whose runs name their own"
        },
    )
    seed: int = field(default=10, metadata={"help": "the run's seed (a pack job: its runs')"})
    pack: List[PackedRun] = field(
        default_factory=list,
        metadata={
            "help": "a pack job's runs, each trained at the same time in a process of its own on "
            "the job's device; empty: the job trains task_name x seed in its own process"
        },
    )
    devices: Optional[List[str]] = field(
        default=None,
        metadata={
            "help": "a pack job's devices on this host (CUDA ids, or cpu), of which it claims one "
            "no other pack of the sweep holds; None: the job's own (a SLURM allocation)"
        },
    )
    pretrained: str = field(
        default=MISSING, metadata={"help": "fairseq checkpoint file to fine-tune from"}
    )
    data_root: str = field(
        default=MISSING,
        metadata={"help": "holds finetune-bin/<task>/ (fold<k>/ for cross-validation tasks)"},
    )
    results_dir: str = field(
        default=MISSING,
        metadata={
            "help": "records go to <results_dir>/<task>/[<setting>/]seed<seed>/[fold<k>/]"
            "result.json (<setting>: the hparams that differ from the registry's)"
        },
    )
    arch: Optional[str] = field(
        default=None,
        metadata={
            "help": "None: the pretrained checkpoint's own architecture and shape; or a name "
            "(roberta_large, ...)"
        },
    )
    hparams: HparamsOverrides = field(default_factory=HparamsOverrides)
    max_update: Optional[int] = field(
        default=None, metadata={"help": "cap on updates per run (None: the epochs decide)"}
    )
    optimization: Dict[str, Any] = field(
        default_factory=roberta_finetuning_optimization,
        metadata={
            "help": "fairseq-train options of every task, each written as --key-with-dashes "
            "VALUE; every run's record holds them (config hash)"
        },
    )
    cpu: Optional[bool] = field(
        default=None, metadata={"help": "None: CPU only when no GPU is visible"}
    )
    fp16: bool = field(default=False, metadata={"help": "fp16 training on a GPU"})
    encoder_implementation: str = field(
        default="auto",
        metadata={
            "help": "fairseq-train --encoder-implementation of every run (its choices and what "
            "auto means: EncoderChoiceConfig, user_dir/tasks/_finetune_bin.py)"
        },
    )
    # 0: batches are loaded in the run's own process. A loader worker, in a run trained in the
    # job's process, made the run's end wait about 10 s for the worker to stop (a tiny run: 17 s
    # with 1 worker, 9 s without); a fine-tuning batch costs little to load.
    num_workers: int = field(default=0, metadata={"help": "fairseq-train --num-workers"})
    log_interval: int = field(default=50, metadata={"help": "fairseq-train --log-interval"})
    extra_args: List[Any] = field(
        default_factory=list,
        metadata={"help": "further fairseq-train options, appended verbatim"},
    )


ConfigStore.instance().store(name=SCHEMA_NAME, node=SweepConfig)
