"""Distillation loss of paper §7 (DistilBERT recipe), on top of the masked-LM cross-entropy.

loss = α_mlm · CE(student, targets)                        mean over masked positions
     + α_kl · T² · KL(softmax(teacher/T) ‖ softmax(student/T))   mean over masked positions
     + α_cos · (1 − cos(W·h_student, h_teacher))          mean over non-padding positions
     + α_hidden · Σ_(m, g(m)) d(W·H^S_m, H^T_g(m))         TinyBERT's mapped layers (MSE or cosine)
     + α_attention · Σ_ij KL(R^T_ij ‖ R^S_ij)              MiniLM's self-attention relations

(Sanh et al. 2019 §3 for the first three; the last two, off by default, are written out with their
sources in _layer_losses.py.) Both vocabulary projections are computed on the masked positions only
(RoBERTa's masked_tokens), and the two logit terms share one closed-form gradient
(MaskedLogitLoss), which keeps a distillation step near the cost of a student step plus a teacher
forward. α_cos = 0 is the paper's "distill", α_cos > 0 its "distill + align"; their loss is the same
to the bit whatever the new options (tests/test_distill.py pins it). The projection W (student
width to teacher width, identity when equal) belongs to this criterion: the trainer optimises it
and stores it under the checkpoint's "criterion" key, apart from the student model. h is each
model's output, its last layer's states through its final norm where it has one (ModernBERT and
other pre-norm encoders: what their heads read), so the student and teacher may be of different
architectures and widths; their vocabulary is one (the distillation task refuses another). Every
term is scaled per masked token (fairseq divides by sample_size) and logged in bits, so that the
logged terms, weighted, add up to the logged loss.
"""

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.logging import metrics

from user_dir.criterions._finetune_metrics import trainer_logging_output
from user_dir.criterions._layer_losses import (
    RELATION_INPUTS,
    attention_inputs,
    attention_relations,
    hidden_alignment,
    layer_states,
    parse_layer_map,
    supports_relations,
    uniform_layer_map,
)
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
    alpha_hidden: float = field(
        default=0.0,
        metadata={
            "help": "weight of the hidden-state alignment of mapped layers (TinyBERT): "
            "hidden_distance summed over hidden_layer_map's pairs; 0 = off"
        },
    )
    hidden_distance: ChoiceEnum(["mse", "cosine"]) = field(
        default="mse", metadata={"help": "per mapped layer: mean squared error or 1 - cosine"}
    )
    hidden_layer_map: str = field(
        default="",
        metadata={
            "help": "STUDENT:TEACHER layer pairs, counted from 1 (0 = the embeddings), e.g. "
            "'1:2,2:4'; empty: TinyBERT's uniform map, student layer m of M to teacher layer "
            "m*N/M of N"
        },
    )
    alpha_attention: float = field(
        default=0.0,
        metadata={"help": "weight of MiniLM's self-attention relation loss; 0 = off"},
    )
    attention_relations: str = field(
        default="qq,kk,vv",
        metadata={
            "help": "the relations, pairs of q, k, v: MiniLMv2's 'qq,kk,vv'; 'qk,vv' with "
            "relation_heads = the attention heads is MiniLM's attention and value relation"
        },
    )
    relation_heads: int = field(
        default=0,
        metadata={"help": "relation heads A_r, dividing both widths; 0: the teacher's heads"},
    )
    relation_layers: str = field(
        default="",
        metadata={
            "help": "STUDENT:TEACHER, the layer (counted from 1) of each model whose relations "
            "are compared; empty: the last of each (MiniLM)"
        },
    )


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
            if (cfg.alpha_cos > 0 or cfg.alpha_hidden > 0) and task.student_dim != task.teacher_dim
            else torch.nn.Identity()
        )
        teacher_depth = task.teacher_depth
        self.hidden_pairs = (
            []
            if cfg.alpha_hidden <= 0
            else parse_layer_map(
                cfg.hidden_layer_map, task.student_depth, teacher_depth, "hidden_layer_map"
            )
            if cfg.hidden_layer_map
            else uniform_layer_map(task.student_depth, teacher_depth)
        )
        self.relations, self.relation_heads, self.relation_pair = (
            self.relation_options(task) if cfg.alpha_attention > 0 else ([], 0, None)
        )

    def relation_options(self, task) -> tuple[list[str], int, tuple[int, int]]:
        """(relations, relation heads, (student layer, teacher layer)) of the attention term,
        checked against both models; ValueError naming the option otherwise."""
        cfg = self.cfg
        relations = [item.strip() for item in cfg.attention_relations.split(",")]
        if not relations or any(
            len(item) != 2 or set(item) - set(RELATION_INPUTS) for item in relations
        ):
            raise ValueError(
                f"criterion.attention_relations={cfg.attention_relations!r}: give pairs of q, k "
                "and v, e.g. 'qq,kk,vv' (MiniLMv2) or 'qk,vv' (MiniLM)"
            )
        heads = cfg.relation_heads
        if not heads and supports_relations(task.teacher):
            heads = task.teacher.encoder.sentence_encoder.layers[0].self_attn.num_heads
        for name, model_dim in (("student", task.student_dim), ("teacher", task.teacher_dim)):
            if not heads or model_dim % heads:
                raise ValueError(
                    f"criterion.relation_heads={heads}: the {name}'s width {model_dim} must be a "
                    "multiple of it (give criterion.relation_heads)"
                )
        pairs = (
            parse_layer_map(
                cfg.relation_layers, task.student_depth, task.teacher_depth, "relation_layers"
            )
            if cfg.relation_layers
            else [(task.student_depth, task.teacher_depth)]
        )
        if len(pairs) != 1 or 0 in pairs[0]:
            raise ValueError(
                f"criterion.relation_layers={cfg.relation_layers!r}: give one STUDENT:TEACHER "
                "pair of layers counted from 1 (the embeddings have no self-attention)"
            )
        (pair,) = pairs
        return relations, heads, pair

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
        cfg = self.cfg
        positions = sample["masked_positions"]
        real = sample["non_padding_positions"]
        sample_size = len(positions)
        all_hiddens = cfg.alpha_cos > 0 or cfg.alpha_hidden > 0 or cfg.alpha_attention > 0

        student_logits, student_extra = model(
            **sample["net_input"],
            **lm_inputs(model, sample, self.padding_idx),
            return_all_hiddens=all_hiddens,
        )
        teacher = self.teacher_on(student_logits)
        with torch.no_grad():
            teacher_logits, teacher_extra = teacher(
                **sample["net_input"],
                **lm_inputs(teacher, sample, self.padding_idx),
                return_all_hiddens=all_hiddens,
            )

        logit_loss, mlm_loss, kl_loss = MaskedLogitLoss.apply(
            student_logits,
            teacher_logits,
            sample["target"].view(-1).index_select(0, positions),
            cfg.temperature,
            cfg.alpha_mlm,
            cfg.alpha_kl,
        )
        if cfg.alpha_cos > 0:
            last = len(student_extra["inner_states"]) - 1
            student_states = self.projection(layer_states(model, student_extra, last, real))
            with torch.no_grad():
                teacher_last = len(teacher_extra["inner_states"]) - 1
                teacher_states = layer_states(teacher, teacher_extra, teacher_last, real)
            cos_mean = (
                1 - F.cosine_similarity(student_states.float(), teacher_states.float(), dim=-1)
            ).mean()
            # on the same per-masked-token scale as the other terms, which fairseq divides by
            # sample_size
            cos_loss = cos_mean * sample_size
        else:
            cos_loss = student_logits.new_zeros((), dtype=torch.float)

        loss = logit_loss + cfg.alpha_cos * cos_loss
        terms = {"mlm_loss": mlm_loss, "kl_loss": kl_loss, "cos_loss": cos_loss}
        # the per-layer terms, added only when asked for: the paper's recipes sum as before
        if cfg.alpha_hidden > 0:
            terms["hidden_loss"] = (
                self.hidden_loss(model, student_extra, teacher, teacher_extra, real) * sample_size
            )
            loss = loss + cfg.alpha_hidden * terms["hidden_loss"]
        if cfg.alpha_attention > 0:
            terms["attention_loss"] = (
                self.attention_loss(model, student_extra, teacher, teacher_extra, sample, len(real))
                * sample_size
            )
            loss = loss + cfg.alpha_attention * terms["attention_loss"]
        logging_output = trainer_logging_output(loss, sample, sample_size)
        logging_output.update((name, term.data) for name, term in terms.items())
        return loss, sample_size, logging_output

    def hidden_loss(self, model, student_extra, teacher, teacher_extra, real) -> torch.Tensor:
        """TinyBERT's alignment of the mapped layers' states (_layer_losses.hidden_alignment)."""
        student_states = [
            self.projection(layer_states(model, student_extra, s, real))
            for s, _ in self.hidden_pairs
        ]
        with torch.no_grad():
            teacher_states = [
                layer_states(teacher, teacher_extra, t, real) for _, t in self.hidden_pairs
            ]
        return hidden_alignment(student_states, teacher_states, self.cfg.hidden_distance)

    def attention_loss(
        self, model, student_extra, teacher, teacher_extra, sample, real_tokens
    ) -> torch.Tensor:
        """MiniLM's self-attention relations of one layer of each (_layer_losses)."""
        for name, each in (("student", model), ("teacher", teacher)):
            if not supports_relations(each):
                raise ValueError(
                    f"criterion.alpha_attention: the {name} ({type(each.encoder).__name__}) has "
                    "no fairseq transformer layers whose Q, K and V the relation loss recomputes "
                    "(RoBERTa and the BERT family have); set criterion.alpha_attention=0"
                )
        student_layer, teacher_layer = self.relation_pair
        padding = sample["net_input"]["src_tokens"].eq(self.padding_idx)
        student = attention_inputs(model, student_extra, student_layer)
        with torch.no_grad():
            teacher_inputs = attention_inputs(teacher, teacher_extra, teacher_layer)
        return attention_relations(
            student, teacher_inputs, self.relations, self.relation_heads, padding, real_tokens
        )

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        """Every term in bits per masked token (nats / ln 2), as fairseq's masked_lm logs its loss,
        so that loss = α_mlm·mlm_loss + α_kl·kl_loss + α_cos·cos_loss (+ α_hidden·hidden_loss +
        α_attention·attention_loss) holds between the logged values; the cosine and MSE terms,
        which are no information quantities, are divided by ln 2 alike."""
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        for key in TERMS:
            if key in LOGGED_ALWAYS or any(key in log for log in logging_outputs):
                total = sum(log.get(key, 0) for log in logging_outputs)
                metrics.log_scalar(key, total / sample_size / math.log(2), sample_size, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["mlm_loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


# the logged terms; the per-layer ones only where the run has them
TERMS = ("loss", "mlm_loss", "kl_loss", "cos_loss", "hidden_loss", "attention_loss")
LOGGED_ALWAYS = TERMS[:4]
