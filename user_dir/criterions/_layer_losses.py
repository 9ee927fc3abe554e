"""The distillation terms on the encoders' inner layers that fairseq lacks, as functions of the
models' inner states, so that each can be checked against a hand computation on tiny tensors.

Hidden-state alignment of mapped layers (TinyBERT, Jiao et al. 2020, §3.1 eq. 8 and eq. 11):
    L_hidden = Σ_(m, g(m)) d(W·H^S_m, H^T_g(m))
with d the MSE (eq. 8: the mean of the squared differences over tokens and channels) or the cosine
distance 1 − cos (DistilBERT's L_cos, Sanh et al. 2019 §3, taken per mapped layer), each averaged
over the real (non-padding) tokens; W the criterion's student-to-teacher projection (TinyBERT's
W_h, one for every layer), the identity when the widths agree. g is TinyBERT's uniform map
g(m) = ⌊m·N/M⌋ (student layer m of M to teacher layer m·N/M of N, eq. 11 with λ = 1), or a given
one; layer 0 is the embeddings' output.

Self-attention relations (MiniLM, Wang et al. 2020, eq. 7-9; MiniLMv2, Wang et al. 2021, eq. 5-7):
    R_ij,a = softmax(X_i,a · X_j,a^T / √d_r)         X ∈ {Q, K, V} of one layer, split into A_r
                                                      relation heads of d_r = width / A_r channels
    L_ij = 1 / (A_r·|x|) Σ_a Σ_t KL(R^T_ij,a,t ‖ R^S_ij,a,t)
    L_attention = Σ_(i,j) L_ij
on one layer of each model (the last, MiniLM's choice, by default). MiniLMv2's relations are
Q-Q, K-K and V-V; MiniLM's are Q-K (its attention distributions) and V-V with A_r the attention
heads. Softmax and KL run over the real keys only, |x| counts the batch's real query tokens, and
the relations are computed in float32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from fairseq.models.transformer import TransformerEncoder

RELATION_INPUTS = "qkv"


def final_norm(model) -> torch.nn.Module:
    """The norm a pre-norm encoder applies after its last layer (ModernBERT's final_norm, a
    pre-norm fairseq encoder's layer_norm; none in RoBERTa), which inner_states leave out."""
    encoder = model.encoder.sentence_encoder
    norm = getattr(encoder, "final_norm", None) or getattr(encoder, "layer_norm", None)
    return norm if norm is not None else torch.nn.Identity()


def real_rows(states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The rows of T x B x C STATES at flat batch-major POSITIONS (row * T + column)."""
    return states.transpose(0, 1).flatten(0, 1).index_select(0, positions)


def layer_states(model, extra: dict, layer: int, positions: torch.Tensor) -> torch.Tensor:
    """The output of `layer` (0: the embeddings') at POSITIONS; the last layer's through the final
    norm where the encoder has one, so that a pre-norm model is aligned on what its heads read."""
    inner_states = extra["inner_states"]
    states = real_rows(inner_states[layer], positions)
    return final_norm(model)(states) if layer == len(inner_states) - 1 else states


def uniform_layer_map(student_depth: int, teacher_depth: int) -> list[tuple[int, int]]:
    """TinyBERT's uniform map: student layer m to teacher layer ⌊m·N/M⌋, m = 1..M."""
    return [(m, m * teacher_depth // student_depth) for m in range(1, student_depth + 1)]


def parse_layer_map(
    text: str, student_depth: int, teacher_depth: int, option: str
) -> list[tuple[int, int]]:
    """ "s:t,s:t" (layer outputs counted from 1, 0 = the embeddings) as pairs, each checked against
    both depths; ValueError naming `option` otherwise."""
    pairs = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
            raise ValueError(
                f"criterion.{option}={text!r}: each item is STUDENT:TEACHER, two layer numbers "
                "counted from 1 (0 = the embeddings), e.g. '1:2,2:4'"
            )
        student, teacher = (int(part) for part in parts)
        if student > student_depth or teacher > teacher_depth:
            raise ValueError(
                f"criterion.{option}={text!r}: {item.strip()} is past the student's "
                f"{student_depth} or the teacher's {teacher_depth} layers"
            )
        pairs.append((student, teacher))
    return pairs


def hidden_alignment(
    student: list[torch.Tensor], teacher: list[torch.Tensor], distance: str
) -> torch.Tensor:
    """Σ over the mapped layers of the mean distance between the rows of each pair (N x C, the
    student's already projected to the teacher's width): "mse" or "cosine" (1 − cos)."""
    total = student[0].new_zeros((), dtype=torch.float)
    for s, t in zip(student, teacher):
        s, t = s.float(), t.float()
        if distance == "mse":
            total = total + F.mse_loss(s, t)
        else:
            total = total + (1 - F.cosine_similarity(s, t, dim=-1)).mean()
    return total


def supports_relations(model) -> bool:
    """Whether the encoder's layers are fairseq's (RoBERTa, the BERT family), whose Q, K and V
    projections this module recomputes; ModernBERT's rotary Q and K are not recomputed here."""
    return isinstance(model.encoder.sentence_encoder, TransformerEncoder)


def attention_inputs(model, extra: dict, layer: int) -> dict[str, torch.Tensor]:
    """Q, K and V (B x T x C, unscaled, with their biases) of `layer` (counted from 1), recomputed
    from its input state as its self-attention projects them."""
    module = model.encoder.sentence_encoder.layers[layer - 1]
    x = extra["inner_states"][layer - 1].transpose(0, 1)
    if module.normalize_before:
        x = module.self_attn_layer_norm(x)
    attention = module.self_attn
    return {"q": attention.q_proj(x), "k": attention.k_proj(x), "v": attention.v_proj(x)}


def relation_logits(left: torch.Tensor, right: torch.Tensor, heads: int, padding) -> torch.Tensor:
    """X_i,a · X_j,a^T / √d_r per relation head (B x A_r x T x T, float32), padding keys at −inf."""
    batch, length, width = left.shape
    d_r = width // heads
    left = left.float().view(batch, length, heads, d_r).transpose(1, 2)
    right = right.float().view(batch, length, heads, d_r).transpose(1, 2)
    logits = left @ right.transpose(-1, -2) / d_r**0.5
    return logits.masked_fill(padding[:, None, None, :], float("-inf"))


def attention_relations(
    student: dict[str, torch.Tensor],
    teacher: dict[str, torch.Tensor],
    relations: list[str],
    heads: int,
    padding: torch.Tensor,
    real_tokens: int,
) -> torch.Tensor:
    """Σ over relations ("qq", "qk", ...) of the mean over relation heads and real query tokens of
    KL(R^T ‖ R^S) over the real keys; padding is the B x T mask of the padding tokens, real_tokens
    their complement's count (known on the host: no wait for the GPU)."""
    total = next(iter(student.values())).new_zeros((), dtype=torch.float)
    for left, right in relations:
        with torch.no_grad():
            log_p_teacher = relation_logits(teacher[left], teacher[right], heads, padding)
            log_p_teacher = log_p_teacher.log_softmax(-1)
        log_p_student = relation_logits(student[left], student[right], heads, padding)
        log_p_student = log_p_student.log_softmax(-1)
        kl = log_p_teacher.exp() * (log_p_teacher - log_p_student)
        # a padding key: 0 · (−inf − −inf); it takes no part in either distribution
        kl = kl.masked_fill(padding[:, None, None, :], 0.0).sum(-1)
        kl = kl.masked_fill(padding[:, None, :], 0.0)  # and no padding query is counted
        total = total + kl.sum() / (heads * real_tokens)
    return total
