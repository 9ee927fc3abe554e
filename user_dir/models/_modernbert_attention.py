"""ModernBERT's attention of one layer type (user_dir/models/modernbert.py): rotary position
embeddings, a full layer's attention with the padding as one row of keys (chunked where SDPA has
no fused kernel for it), and a sliding layer's attention on blocks of queries, each with only the
keys its window reaches."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RotaryEmbedding(nn.Module):
    """cos and sin of RoPE at positions 0..T-1 for one theta (fp32, as transformers')."""

    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, length: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(length, device=device, dtype=torch.float)
        freqs = positions[:, None] * self.inv_freq.to(device)[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


# the most attention scores (batch x heads x queries x keys) one chunk of queries of a full
# layer computes when SDPA has no fused kernel for it (attention dropout on the CPU): 16 MB fp32
CHUNK_SCORES = 2**22


def query_chunk(batch: int, heads: int, length: int) -> int:
    """Queries per chunk of ChunkedAttention: CHUNK_SCORES' worth, at least one."""
    return max(1, CHUNK_SCORES // (batch * heads * length))


class ChunkedAttention(torch.autograd.Function):
    """SDPA over chunks of the queries, each recomputed in the backward pass rather than kept,
    its dropout drawn again from the random state the forward pass started from: memory
    chunk x T for any T. For attention dropout on the CPU, where torch's flash kernel takes no
    dropout and SDPA's math path would hold every layer's T x T probabilities and dropout mask
    until the backward pass. (torch.utils.checkpoint does the same, but it, as torch.autograd.grad
    given grad_outputs, imports sympy on its first call: ~800 modules, seconds and 40-76 MB.)"""

    @staticmethod
    def attend(q, k, v, keys, dropout_p, scale):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=keys, dropout_p=dropout_p, scale=scale
        )

    @staticmethod
    def forward(ctx, q, k, v, keys, dropout_p: float, scale: float):
        ctx.random_state = torch.get_rng_state()
        ctx.options = keys, dropout_p, scale
        ctx.save_for_backward(q, k, v)
        size = query_chunk(q.shape[0], q.shape[1], k.shape[2])
        chunks = [
            ChunkedAttention.attend(q[:, :, start : start + size], k, v, *ctx.options)
            for start in range(0, q.shape[2], size)
        ]
        return torch.cat(chunks, dim=2)

    @staticmethod
    def backward(ctx, grad):
        q, k, v = ctx.saved_tensors
        k, v = k.detach().requires_grad_(), v.detach().requires_grad_()
        size = query_chunk(q.shape[0], q.shape[1], k.shape[2])
        grad_q, grad_k, grad_v = [], torch.zeros_like(k), torch.zeros_like(v)
        with torch.random.fork_rng(devices=[]), torch.enable_grad():
            torch.set_rng_state(ctx.random_state)
            for start in range(0, q.shape[2], size):
                chunk = q[:, :, start : start + size].detach().requires_grad_()
                out = ChunkedAttention.attend(chunk, k, v, *ctx.options)
                # the chunk's share of the loss: d/d out is grad itself (torch.autograd.grad
                # given grad_outputs would import sympy, see above)
                share = (out * grad[:, :, start : start + size]).sum()
                dq, dk, dv = torch.autograd.grad(share, (chunk, k, v))
                grad_q.append(dq)
                grad_k += dk
                grad_v += dv
        return torch.cat(grad_q, dim=2), grad_k, grad_v, None, None, None


class FullAttention:
    """A full layer's attention over one batch: every real key. The padding goes to SDPA as one
    row of keys per sequence (B x 1 x 1 x T, broadcast over queries), which its flash (CPU) and
    memory-efficient (GPU) kernels take without a T x T matrix; none when nothing is padded.
    A padding query sees the real keys (a row always holds [CLS]), so no row is empty. Attention
    dropout on the CPU (torch's CPU flash kernel has none) goes through ChunkedAttention once the
    layer's scores exceed one chunk (CHUNK_SCORES); below, SDPA's math path holds them."""

    def __init__(self, padding_mask: torch.Tensor):
        self.keys = ~padding_mask[:, None, None, :] if padding_mask.any() else None

    def __call__(self, q, k, v, dropout_p: float, scale: float) -> torch.Tensor:
        batch, heads, length, _ = q.shape
        if dropout_p > 0 and q.device.type == "cpu" and query_chunk(batch, heads, length) < length:
            return ChunkedAttention.apply(q, k, v, self.keys, dropout_p, scale)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=self.keys, dropout_p=dropout_p, scale=scale
        )


class SlidingWindowAttention:
    """A sliding layer's attention over one batch: query i sees key j where |i - j| <= half_window
    and j is real, computed without a T x T mask or score matrix. The T queries are cut into
    blocks of `half_window` (the last padded); a block starting at s sees keys s - half_window ..
    s + 2 x half_window - 1, every key its queries' windows can reach, so SDPA runs on
    (B x blocks) x H x block x 3 blocks and memory grows with T x window. Each block's mask is
    the exact band |i - j| <= half_window and the real keys; a padding query (or one past T)
    also sees itself, so no row is empty (SDPA would give NaN, and NaN x 0 spoils gradients).
    When the window holds the whole input (T - 1 <= half_window) this is full attention."""

    def __init__(self, padding_mask: torch.Tensor, half_window: int):
        batch, length = padding_mask.shape
        self.full = FullAttention(padding_mask) if length - 1 <= half_window else None
        if self.full is not None:
            return
        self.length, self.halo = length, half_window
        self.block = max(half_window, 1)
        self.blocks = -(-length // self.block)
        self.span = self.block + 2 * half_window  # the keys a block of queries can reach
        rest = self.blocks * self.block - length
        # real keys over -halo .. blocks x block + halo, in each block's span
        real = F.pad(~padding_mask, (half_window, rest + half_window), value=False)
        keys = real.unfold(1, self.span, self.block)  # B x blocks x span
        device = padding_mask.device
        query = torch.arange(self.block, device=device)[:, None]
        key = torch.arange(self.span, device=device)[None, :]
        # key offset c of query offset a: position distance c - halo - a
        band = (key >= query) & (key <= query + 2 * half_window)
        itself = key == query + half_window
        mask = (keys[:, :, None, :] & band) | itself  # B x blocks x block x span
        self.mask = mask.reshape(batch * self.blocks, 1, self.block, self.span)

    def __call__(self, q, k, v, dropout_p: float, scale: float) -> torch.Tensor:
        if self.full is not None:
            return self.full(q, k, v, dropout_p, scale)
        batch, heads, length, dim = q.shape
        rest = self.blocks * self.block - length

        def query_blocks(x):  # B x H x T x D -> (B x blocks) x H x block x D
            x = F.pad(x, (0, 0, 0, rest)).view(batch, heads, self.blocks, self.block, dim)
            return x.transpose(1, 2).reshape(batch * self.blocks, heads, self.block, dim)

        def key_blocks(x):  # B x H x T x D -> (B x blocks) x H x span x D (overlapping)
            x = F.pad(x, (0, 0, self.halo, rest + self.halo)).unfold(2, self.span, self.block)
            return x.permute(0, 2, 1, 4, 3).reshape(batch * self.blocks, heads, self.span, dim)

        out = F.scaled_dot_product_attention(
            query_blocks(q),
            key_blocks(k),
            key_blocks(v),
            attn_mask=self.mask,
            dropout_p=dropout_p,
            scale=scale,
        )
        out = out.view(batch, self.blocks, heads, self.block, dim).transpose(1, 2)
        return out.reshape(batch, heads, self.blocks * self.block, dim)[:, :, :length]
