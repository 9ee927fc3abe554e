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

Even then fairseq moves each parameter's gradient into the flat master, and each updated weight
back, one copy kernel per tensor (~200 each way per update for roberta-base, launched from Python
while the GPU waits). With `--optimizer fused_adam` (the optimizer-step lever, docs/pretrain.md
"Speed") the bf16 weights and gradients are laid out in flat buffers of their own, in the master's
order (FlatBuffersFP16Optimizer): each move is one copy, the same values.
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


class FlatBuffersFP16Optimizer(FP16Optimizer):
    """FP16Optimizer whose half-precision weights and gradients are views of one flat buffer each,
    laid out as the flat fp32 master: the gradients go to the master, and the updated weights come
    back, in one copy each (fairseq: one per tensor). Gradients stay allocated between updates,
    zeroed in place (backward adds into them: 0 + g is g, so the values are fairseq's). Built on
    the parameters' own device, so that it runs on the CPU too (the tests)."""

    @classmethod
    def build_optimizer(cls, cfg, params, **kwargs):
        flat = torch.cat([p.data.float().view(-1) for p in params])
        fp32_params = {params[0].device.index: torch.nn.Parameter(flat)}
        fp32_params[params[0].device.index].grad = torch.zeros_like(flat)
        fp32_optimizer = optim.build_optimizer(cfg.optimizer, [fp32_params])
        return cls(cfg, params, fp32_optimizer, fp32_params, **kwargs)

    def __init__(self, cfg, params, fp32_optimizer, fp32_params, **kwargs):
        super().__init__(cfg, params, fp32_optimizer, fp32_params, **kwargs)
        (self.master,) = fp32_params.values()
        self.flat_weights = self.master.data.to(params[0].dtype)
        self.flat_grads = torch.zeros_like(self.flat_weights)
        offset = 0
        for p in params:
            p.data = self.flat_weights[offset : offset + p.numel()].view_as(p)
            p.grad = self.flat_grads[offset : offset + p.numel()].view_as(p)
            offset += p.numel()
        self.grad_pointers = [p.grad.data_ptr() for p in params]

    def _sync_fp16_grads_to_fp32(self):
        if self._needs_sync:
            if [p.grad is not None and p.grad.data_ptr() for p in self.fp16_params] != (
                self.grad_pointers
            ):
                raise RuntimeError(
                    "a gradient left its flat buffer (replaced instead of accumulated into): "
                    "train without --optimizer fused_adam's flat buffers (use adam)"
                )
            self.master.grad.copy_(self.flat_grads)
            self._needs_sync = False

    def _sync_fp32_params_to_fp16(self):
        self.flat_weights.copy_(self.master.data)

    def zero_grad(self):
        self.flat_grads.zero_()
        self.master.grad.zero_()
        self._needs_sync = False


def flat_buffers(cfg, params) -> bool:
    """The optimizer-step lever: fused_adam over flat bf16 masters, one process, one dtype."""
    return (
        flat_bf16_masters(cfg)
        and cfg.optimizer._name == "fused_adam"
        and cfg.distributed_training.distributed_world_size == 1
        and len({p.dtype for p in params}) == 1
    )


def install() -> None:
    """bf16 on GPUs builds FP16Optimizer with flat fp32 master weights, with
    --optimizer fused_adam its flat-buffers variant (once; see module doc)."""
    fairseq_build = FP16Optimizer.build_optimizer
    if getattr(fairseq_build, "bio_roberta", False):
        return

    def build_optimizer(cls, cfg, params, **kwargs):
        if not flat_bf16_masters(cfg):
            return fairseq_build.__func__(cls, cfg, params, **kwargs)
        if cls is FP16Optimizer and flat_buffers(cfg, params):
            return FlatBuffersFP16Optimizer.build_optimizer(cfg, params, **kwargs)
        fp32_params = cls.build_fp32_params(cfg.optimizer, params, flatten=True)
        fp32_optimizer = optim.build_optimizer(cfg.optimizer, [fp32_params])
        if not fp32_optimizer.supports_flat_params:
            return fairseq_build.__func__(cls, cfg, params, **kwargs)
        return cls(cfg, params, fp32_optimizer, fp32_params, **kwargs)

    build_optimizer.bio_roberta = True
    FP16Optimizer.build_optimizer = classmethod(build_optimizer)
