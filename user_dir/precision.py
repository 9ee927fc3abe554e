"""bf16 training on GPUs (and CPUs), which stock fairseq 0.12 only allows on TPUs.

fairseq's command line turns `--bf16` into `--tpu` (fairseq/options.py; facebookresearch/fairseq
#4696), so `fairseq-train --bf16` on a GPU dies looking for torch_xla. Its trainer and FP16Optimizer
handle bf16 on any device (bf16 weights, fp32 master copies, no loss scaling), so the only fix
needed is to drop that implied TPU flag when torch_xla is not installed: in every config group,
since the argparse route copies it into each (criterion, optimizer, distributed_training, ...), and
the masked_lm criterion "on TPU" projects all positions onto the vocabulary instead of the masked
15% (40% slower on an H100). The Hydra route never sets it, but
there `common.fp16=true` silently wins over `common.bf16=true`; that combination is refused here
whenever our call_main runs (fairseq-train --user-dir, scripts/pretrain.sh and distill.sh, or
`python -m user_dir.distributed_launch fairseq-hydra-train ...`).

fairseq also gives bf16 one fp32 master tensor per parameter ("faster on TPUs without flat grads"),
so every update runs a Python loop over ~200 tensors with the GPU idle; ``install`` makes bf16 on
GPUs keep one flat fp32 master tensor, as fp16 does, with the same arithmetic.
"""

import importlib.util
import logging

import torch
from fairseq import optim
from fairseq.optim.fp16_optimizer import FP16Optimizer
from omegaconf import DictConfig, open_dict

logger = logging.getLogger(__name__)


def configure_precision(cfg) -> None:
    common = cfg.common
    if not common.bf16:
        return
    if common.fp16:
        raise ValueError(
            "common.fp16 and common.bf16 are both true, and fairseq would train in fp16: "
            "for bf16 add common.fp16=false (configs/pretrain/base.yaml and "
            "configs/distill/base.yaml set fp16), for fp16 drop common.bf16"
        )
    if common.tpu and importlib.util.find_spec("torch_xla") is None:
        logger.info(
            "bf16 without torch_xla: training in bf16 on %s, not on a TPU",
            "CPU" if common.cpu else "GPU",
        )
        with open_dict(cfg):
            for group in cfg.values():
                if isinstance(group, DictConfig) and group.get("tpu", False):
                    group.tpu = False


def flat_bf16_masters(cfg) -> bool:
    """bf16 on a GPU, flat grads not refused: what fairseq's FP16Optimizer flattens for fp16."""
    common = cfg.common
    return (
        common.bf16
        and not common.tpu
        and not common.cpu
        and torch.cuda.is_available()
        and not getattr(common, "fp16_no_flatten_grads", False)
    )


def install() -> None:
    """bf16 on GPUs builds FP16Optimizer with flat fp32 master weights (once; see module doc)."""
    fairseq_build = FP16Optimizer.build_optimizer
    if getattr(fairseq_build, "bio_roberta", False):
        return

    def build_optimizer(cls, cfg, params, **kwargs):
        if not flat_bf16_masters(cfg):
            return fairseq_build.__func__(cls, cfg, params, **kwargs)
        fp32_params = cls.build_fp32_params(cfg.optimizer, params, flatten=True)
        fp32_optimizer = optim.build_optimizer(cfg.optimizer, [fp32_params])
        if not fp32_optimizer.supports_flat_params:
            return fairseq_build.__func__(cls, cfg, params, **kwargs)
        return cls(cfg, params, fp32_optimizer, fp32_params, **kwargs)

    build_optimizer.bio_roberta = True
    FP16Optimizer.build_optimizer = classmethod(build_optimizer)
