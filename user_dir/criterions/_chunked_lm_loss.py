"""The masked-LM loss's vocabulary projection and cross-entropy, a chunk of masked rows at a time.

fairseq's masked_lm (and masked_lm_positions) already projects only the masked positions onto the
vocabulary, but all of them at once: at roberta-base's 128 x 512 micro-batch that is ~9,800 rows
x 50,304 entries, 1 GB of bf16 logits, then 2 GB of fp32 log-probabilities (fairseq's
cross_entropy upcasts), and in the backward pass their fp32 gradient and its bf16 copy, each
written and read again by a kernel of its own. Here the rows go through in chunks: for each, the
logits, their log-sum-exp, the loss and the gradient of the logits (softmax minus one-hot) are
computed together, turned at once into the gradients of the rows, the weight and the bias, and
dropped. What stays in memory is one chunk's logits; the arithmetic is cross_entropy's
(sum reduction, ``ignore_index`` rows left out) in fp32 over the logits in the weight's dtype.

The gradients are computed in the forward pass (as Liger-Kernel's fused linear cross-entropy
does), so the backward only scales them by the incoming gradient: the same three GEMMs as autograd
runs, no recomputation. The weight's gradient sums the chunks in fp32 (one rounding per chunk in
half precision, where one GEMM over all rows rounds once). ``compiled`` runs each chunk's
elementwise work through torch.compile, which makes the upcast, log-sum-exp, softmax and one-hot
subtraction two passes over the chunk's logits instead of about six.
"""

import functools

import torch
import torch.nn.functional as F


def chunk_loss_and_logit_grads(x, weight, bias, targets, ignore_index: int):
    """(summed cross-entropy of x @ weight.T + bias against targets, its gradient with respect to
    the logits in x's dtype); rows whose target is ignore_index count for nothing."""
    logits = F.linear(x, weight, bias).float()
    keep = targets.ne(ignore_index).unsqueeze(1)
    safe_targets = targets.masked_fill(~keep.squeeze(1), 0).unsqueeze(1)
    log_sum_exp = logits.logsumexp(dim=-1, keepdim=True)
    loss = ((log_sum_exp - logits.gather(1, safe_targets)) * keep).sum()
    # in place, the logits' memory becomes their gradient: softmax minus one-hot, kept rows only
    grad = logits.sub_(log_sum_exp).exp_().scatter_add_(1, safe_targets, -keep.to(logits.dtype))
    return loss, grad.mul_(keep).to(x.dtype)


@functools.cache
def _compiled_chunk():
    # the number of masked rows differs from batch to batch: one graph with symbolic rows
    return torch.compile(chunk_loss_and_logit_grads, dynamic=True)


class ChunkedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, targets, ignore_index, chunk_rows, compiled):
        chunk_fn = _compiled_chunk() if compiled else chunk_loss_and_logit_grads
        loss = torch.zeros((), dtype=torch.float32, device=x.device)
        grad_x = torch.empty_like(x)
        grad_weight = torch.zeros_like(weight, dtype=torch.float32)
        grad_bias = torch.zeros_like(bias, dtype=torch.float32)
        for start in range(0, x.size(0), chunk_rows):
            rows = slice(start, start + chunk_rows)
            chunk_loss, grad_logits = chunk_fn(x[rows], weight, bias, targets[rows], ignore_index)
            loss += chunk_loss
            grad_x[rows] = grad_logits @ weight
            grad_weight += (grad_logits.t() @ x[rows]).float()
            grad_bias += grad_logits.sum(0, dtype=torch.float32)
        ctx.save_for_backward(grad_x, grad_weight.to(weight.dtype), grad_bias.to(bias.dtype))
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_x, grad_weight, grad_bias = ctx.saved_tensors
        return grad_x * grad_loss, grad_weight * grad_loss, grad_bias * grad_loss, *[None] * 4


def chunked_linear_cross_entropy(
    x, weight, bias, targets, ignore_index: int, chunk_rows: int, compiled: bool = False
) -> torch.Tensor:
    """cross_entropy(F.linear(x, weight, bias), targets, reduction="sum", ignore_index=...) with
    at most chunk_rows rows of logits in memory (see module doc)."""
    return ChunkedLinearCrossEntropy.apply(
        x, weight, bias, targets, ignore_index, chunk_rows, compiled
    )
