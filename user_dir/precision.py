"""bf16 training on GPUs (and CPUs), which stock fairseq 0.12 only allows on TPUs.

fairseq's command line turns `--bf16` into `--tpu` (fairseq/options.py; facebookresearch/fairseq
#4696), so `fairseq-train --bf16` on a GPU dies looking for torch_xla. Its trainer and FP16Optimizer
handle bf16 on any device (bf16 weights, fp32 master copies, no loss scaling), so the only fix needed
is to drop that implied TPU flag when torch_xla is not installed. The Hydra route never sets it, but
there `common.fp16=true` silently wins over `common.bf16=true`; that combination is refused here
whenever our call_main runs (fairseq-train --user-dir, scripts/pretrain.sh and distill.sh, or
`python -m user_dir.distributed_launch fairseq-hydra-train ...`).
"""
import importlib.util
import logging

from omegaconf import open_dict

logger = logging.getLogger(__name__)


def configure_precision(cfg) -> None:
    common = cfg.common
    if not common.bf16:
        return
    if common.fp16:
        raise ValueError("common.fp16 and common.bf16 are both true, and fairseq would train in fp16: "
                         "for bf16 add common.fp16=false (configs/pretrain/base.yaml and configs/distill/base.yaml "
                         "set fp16), for fp16 drop common.bf16")
    if common.tpu and importlib.util.find_spec("torch_xla") is None:
        logger.info("bf16 without torch_xla: training in bf16 on %s, not on a TPU", "CPU" if common.cpu else "GPU")
        with open_dict(cfg):
            common.tpu = False
