"""Distillation loss of paper §7 (DistilBERT recipe), on top of the masked-LM cross-entropy.

loss = α_mlm · CE(student, targets)                        mean over masked positions
     + α_kl · T² · KL(softmax(teacher/T) ‖ softmax(student/T))   mean over masked positions
     + α_cos · (1 − cos(W·h_student, h_teacher))          mean over non-padding positions

Both vocabulary projections are computed on the masked positions only (RoBERTa's masked_tokens),
and the two logit terms share one closed-form gradient (MaskedLogitLoss), which keeps a
distillation step near the cost of a student step plus a teacher forward. α_cos = 0
is the paper's "distill", α_cos > 0 its "distill + align". The projection W (student width to
teacher width, identity when equal) belongs to this criterion: the trainer optimises it and
stores it under the checkpoint's "criterion" key, apart from the student model. h is each
model's output, its last layer's states through its final norm where it has one (ModernBERT and
other pre-norm encoders: what their heads read), so the student and teacher may be of different
architectures and widths; their vocabulary is one (the distillation task refuses another).
"""

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics

from user_dir.tasks.corpora_masked_lm import lm_inputs


def softmax_in_place(shifted: torch.Tensor) -> torch.Tensor:
    """Rows already shifted by their maximum become log-probabilities in place; returns the
    probabilities, the only new [rows x V] buffer."""
    probs = shifted.exp()
    total = probs.sum(-1, keepdim=True)
    probs.div_(total)
    shifted.sub_(total.log_())
    return probs


class MaskedLogitLoss(torch.autograd.Function):
    """α_mlm · CE(student, targets) + α_kl · T² · KL(softmax(teacher/T) ‖ softmax(student/T)),
    summed.

    On [masked x V] logits (V ≈ 50k) these elementwise passes, and above all each fresh buffer of
    that size, cost as much as a layer: autograd through log_softmax, kl_div and the divisions by T
    allocated about a dozen. The gradient has a closed form,
        α_mlm · (softmax(s) − onehot(targets)) + α_kl · T · (softmax(s/T) − softmax(t/T)),
    so forward builds it in a single saved buffer with in-place operations and backward only scales
    it. Returns (loss, mlm_loss, kl_loss); the two terms are for logging and carry no gradient.
    teacher_logits are overwritten; the saved gradient is scaled in place, so backward runs once.
    """

    @staticmethod
    def forward(ctx, student_logits, teacher_logits, targets, temperature, alpha_mlm, alpha_kl):
        rows = torch.arange(len(targets), device=targets.device)
        log_p_teacher = teacher_logits.float()
        log_p_teacher.sub_(log_p_teacher.amax(-1, keepdim=True)).div_(temperature)
        p_teacher = softmax_in_place(log_p_teacher)

        student = student_logits.float()
        student_max = student.amax(-1, keepdim=True)
        # one buffer holds (s − max) / T, then q_s = softmax(s / T), then the gradient;
        # log_p_teacher becomes log p_t − log q_s elementwise, as exact as kl_div's own difference
        grad = torch.sub(student, student_max).div_(temperature)
        log_p_teacher.sub_(grad)
        q_student = grad.exp_()
        q_total = q_student.sum(-1, keepdim=True)
        q_student.div_(q_total)
        log_p_teacher.add_(q_total.log_())
        kl_loss = log_p_teacher.mul_(p_teacher).sum() * temperature**2
        del log_p_teacher
        grad.sub_(p_teacher).mul_(alpha_kl * temperature)

        p_student = torch.sub(student, student_max, out=p_teacher).exp_()
        del p_teacher
        p_total = p_student.sum(-1)
        mlm_loss = (p_total.log() - (student[rows, targets] - student_max[:, 0])).sum()
        p_student.div_(p_total[:, None])
        p_student[rows, targets] -= 1
        grad.add_(p_student, alpha=alpha_mlm)

        ctx.save_for_backward(grad)
        ctx.dtype = student_logits.dtype
        ctx.mark_non_differentiable(mlm_loss, kl_loss)
        return alpha_mlm * mlm_loss + alpha_kl * kl_loss, mlm_loss, kl_loss

    @staticmethod
    def backward(ctx, grad_loss, grad_mlm_loss, grad_kl_loss):
        (grad,) = ctx.saved_tensors
        return grad.mul_(grad_loss).to(ctx.dtype), None, None, None, None, None


def real_rows(states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The rows of T x B x C STATES at flat batch-major POSITIONS (row * T + column)."""
    return states.transpose(0, 1).flatten(0, 1).index_select(0, positions)


def final_norm(model) -> torch.nn.Module:
    """The norm a pre-norm encoder applies after its last layer (ModernBERT's final_norm, a
    pre-norm fairseq encoder's layer_norm; none in RoBERTa), which inner_states leave out."""
    encoder = model.encoder.sentence_encoder
    norm = getattr(encoder, "final_norm", None) or getattr(encoder, "layer_norm", None)
    return norm if norm is not None else torch.nn.Identity()


def last_hidden_states(model, extra: dict, positions: torch.Tensor) -> torch.Tensor:
    """The encoder's output at POSITIONS: the last inner state, through the final norm where the
    encoder has one, so that a pre-norm model (ModernBERT) is aligned on what its heads read."""
    return final_norm(model)(real_rows(extra["inner_states"][-1], positions))


@dataclass
class DistillationLossConfig(FairseqDataclass):
    alpha_mlm: float = field(
        default=5.0, metadata={"help": "weight of the masked-LM cross-entropy"}
    )
    alpha_kl: float = field(
        default=2.0, metadata={"help": "weight of the teacher-student KL divergence"}
    )
    alpha_cos: float = field(
        default=1.0, metadata={"help": "weight of the hidden-state cosine loss; 0 = no align"}
    )
    temperature: float = field(default=2.0, metadata={"help": "softmax temperature of the KL term"})


@register_criterion("distillation", dataclass=DistillationLossConfig)
class DistillationLoss(FairseqCriterion):
    def __init__(self, cfg: DistillationLossConfig, task):
        super().__init__(task)
        self.cfg = cfg
        if not hasattr(task, "teacher"):
            raise ValueError(
                "the distillation criterion needs the distillation task (task.teacher_path)"
            )
        if not hasattr(task, "student_dim"):
            raise ValueError(
                "build the student model (task.build_model) before the distillation criterion"
            )
        self.projection = (
            torch.nn.Linear(task.student_dim, task.teacher_dim)
            if cfg.alpha_cos > 0 and task.student_dim != task.teacher_dim
            else torch.nn.Identity()
        )

    def load_state_dict(self, state_dict, strict=True):
        """A student checkpoint from plain MLM pretraining has no criterion state: W starts
        fresh."""
        if state_dict is None:
            return None
        return super().load_state_dict(state_dict, strict=strict)

    def teacher_on(self, reference: torch.Tensor) -> torch.nn.Module:
        """The task's frozen teacher, moved once to the student's device and precision."""
        teacher = self.task.teacher
        weight = teacher.encoder.sentence_encoder.embed_tokens.weight
        if weight.device != reference.device or weight.dtype != reference.dtype:
            teacher.to(device=reference.device, dtype=reference.dtype)
        return teacher

    def forward(self, model, sample, reduce=True):
        """The distillation task's batches carry their masked and real positions (found while
        collating, on the host): logits, targets and states are gathered there, with no wait for
        the GPU."""
        positions = sample["masked_positions"]
        real = sample["non_padding_positions"]
        sample_size = len(positions)

        student_logits, student_extra = model(
            **sample["net_input"],
            **lm_inputs(model, sample, self.padding_idx),
            return_all_hiddens=self.cfg.alpha_cos > 0,
        )
        teacher = self.teacher_on(student_logits)
        with torch.no_grad():
            teacher_logits, teacher_extra = teacher(
                **sample["net_input"],
                **lm_inputs(teacher, sample, self.padding_idx),
                return_all_hiddens=self.cfg.alpha_cos > 0,
            )

        logit_loss, mlm_loss, kl_loss = MaskedLogitLoss.apply(
            student_logits,
            teacher_logits,
            sample["target"].view(-1).index_select(0, positions),
            self.cfg.temperature,
            self.cfg.alpha_mlm,
            self.cfg.alpha_kl,
        )
        if self.cfg.alpha_cos > 0:
            student_states = self.projection(last_hidden_states(model, student_extra, real))
            with torch.no_grad():
                teacher_states = last_hidden_states(teacher, teacher_extra, real)
            cos_mean = (
                1 - F.cosine_similarity(student_states.float(), teacher_states.float(), dim=-1)
            ).mean()
            # on the same per-masked-token scale as the other terms, which fairseq divides by
            # sample_size
            cos_loss = cos_mean * sample_size
        else:
            cos_loss = student_logits.new_zeros((), dtype=torch.float)

        loss = logit_loss + self.cfg.alpha_cos * cos_loss
        logging_output = {
            "loss": loss.data,
            "mlm_loss": mlm_loss.data,
            "kl_loss": kl_loss.data,
            "cos_loss": cos_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        """loss and mlm_loss in bits per masked token as fairseq's masked_lm logs them; KL and
        cosine terms in their own units, each per masked token."""
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        for key, scale in (
            ("loss", math.log(2)),
            ("mlm_loss", math.log(2)),
            ("kl_loss", 1.0),
            ("cos_loss", 1.0),
        ):
            total = sum(log.get(key, 0) for log in logging_outputs)
            metrics.log_scalar(key, total / sample_size / scale, sample_size, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["mlm_loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
