"""fairseq's Adam with its fp32 step in torch's fused AdamW kernel, for GPUs without apex.

fairseq's `adam` optimizer runs apex's FusedAdam when apex is installed and otherwise its own
Python loop: about eight elementwise passes over every parameter tensor per update. torch ships a
fused AdamW kernel (one pass, all tensors in a few launches) whose update equals fairseq's:
    fairseq:  p <- p(1 - lr wd) - lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)
    torch:    p <- p(1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps')
which are the same for eps' = eps / sqrt(1 - b2^t). ``install`` offers this class where fairseq
looks for apex's (fairseq.optim.adam.get_fused_adam_class), so `--optimizer adam` uses it on GPUs;
the optimizer state (step, exp_avg, exp_avg_sq) is fairseq's own, so checkpoints resume either way.

`--fp16-adam-stats` keeps both moments in fp16, each tensor scaled by its largest value as apex's
FusedAdamV1 does (state keys exp_avg_scale, exp_avg_sq_scale: its checkpoints and ours are alike);
fairseq without apex refuses the option.

`--optimizer fused_adam` is fairseq's `adam` (its options, update and state) with this step on
every device, the CPU included, where fairseq's `adam` runs its Python loop: 2.6 instead of 7.1 ms
per update for a 3.8M-parameter model on the 2-core CPU. Fine-tuning uses it
(bio_roberta/finetuning/sweep_config.py); pretraining keeps `adam`, whose CPU runs stay as they
were. The kernel rounds differently from fairseq's loop: equal within float32 rounding, not bit
for bit.
"""

import math
from collections import defaultdict

import torch
from fairseq.optim import FairseqOptimizer, register_optimizer
from fairseq.optim import adam as fairseq_adam


class FusedAdam(fairseq_adam.Adam):
    """fairseq.optim.adam.Adam whose step on fp32 parameters and gradients is torch._fused_adamw_;
    anything else (fp16/bf16 parameters of --memory-efficient-*, amsgrad, sparse gradients) takes
    fairseq's own loop. With ``use_fp16_stats`` the moments are stored in fp16 between steps."""

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, use_fp16_stats=False
    ):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.use_fp16_stats = use_fp16_stats

    def fusable(self) -> bool:
        return all(
            not group["amsgrad"]
            and all(
                p.grad is None
                or (p.dtype == p.grad.dtype == torch.float32 and not p.grad.is_sparse)
                for p in group["params"]
            )
            for group in self.param_groups
        )

    @torch.no_grad()
    def step(self, closure=None):
        if self.use_fp16_stats:
            self.moments_to_fp32()
        loss = self.fused_step(closure) if self.fusable() else super().step(closure)
        if self.use_fp16_stats:
            self.moments_to_fp16()
        return loss

    def moments_to_fp32(self) -> None:
        """Stored fp16 moments back to fp32 values (moment x its scale) for the step."""
        for state in self.state.values():
            for key in ("exp_avg", "exp_avg_sq"):
                if f"{key}_scale" in state:
                    state[key] = state[key].float() * state[f"{key}_scale"]

    def moments_to_fp16(self) -> None:
        """Each fp32 moment stored as fp16 of moment / scale, scale = 1e-8 + its largest absolute
        value / the largest fp16 (apex's FusedAdamV1, after OpenAI's jukebox)."""
        for state in self.state.values():
            for key in ("exp_avg", "exp_avg_sq"):
                if key in state:
                    scale = 1e-8 + state[key].abs().max() / torch.finfo(torch.float16).max
                    state[key], state[f"{key}_scale"] = (state[key] / scale).half(), scale

    def fused_step(self, closure=None):
        """fairseq's update of fp32 parameters through torch._fused_adamw_ (see module doc)."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            # fairseq keeps each tensor's step count on the host; tensors at the same step, on the
            # same device, go through the kernel together
            by_step = defaultdict(list)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                by_step[state["step"], p.device].append(p)
            for (step, device), params in by_step.items():
                states = [self.state[p] for p in params]
                torch._fused_adamw_(
                    params,
                    [p.grad for p in params],
                    [s["exp_avg"] for s in states],
                    [s["exp_avg_sq"] for s in states],
                    [],
                    [torch.tensor(float(step), device=device)] * len(params),
                    lr=group["lr"],
                    beta1=beta1,
                    beta2=beta2,
                    weight_decay=group["weight_decay"],
                    eps=group["eps"] / math.sqrt(1 - beta2**step),
                    amsgrad=False,
                    maximize=False,
                )
        return loss


@register_optimizer("fused_adam", dataclass=fairseq_adam.FairseqAdamConfig)
class FairseqFusedAdam(fairseq_adam.FairseqAdam):
    """fairseq's `adam` whose step is FusedAdam's on any device (see module doc); on a TPU or with
    --use-old-adam, fairseq's own choice."""

    def __init__(self, cfg: fairseq_adam.FairseqAdamConfig, params):
        if getattr(cfg, "tpu", False) or cfg.use_old_adam:
            super().__init__(cfg, params)
            return
        FairseqOptimizer.__init__(self, cfg)
        self._optimizer = FusedAdam(
            params, use_fp16_stats=cfg.fp16_adam_stats, **self.optimizer_config
        )


def install() -> None:
    """Offer FusedAdam where fairseq's `adam` looks for apex's fused Adam (once; apex still
    wins)."""
    if getattr(fairseq_adam.get_fused_adam_class, "bio_roberta", False):
        return
    find_apex = fairseq_adam.get_fused_adam_class

    def get_fused_adam_class():
        return find_apex() or FusedAdam

    get_fused_adam_class.bio_roberta = True
    fairseq_adam.get_fused_adam_class = get_fused_adam_class
