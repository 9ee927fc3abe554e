"""The masked-LM head and loss alone, at a micro-batch's shape: what fairseq's masked_lm computes
(all masked rows projected onto the vocabulary at once, then fairseq's cross_entropy) against
criterion.lm_loss_chunk_rows (user_dir/criterions/_chunked_lm_loss.py), eager and compiled:
milliseconds of forward + backward, peak memory above the inputs', and each one's loss and input
gradient against fairseq's. The LM head's share of an update is this times update_freq over the
update's time (profile_summary.py cannot tell its GEMMs from the encoder's)."""

import statistics
import time

CHUNK_ROWS = 4096  # routes.LEVERS' choice


def measure_lm_head(shape: dict, cpu: bool, steps: int = 6) -> dict:
    import torch
    import torch.nn.functional as F
    from fairseq import modules
    from fairseq.models.roberta.model import RobertaLMHead

    from benchmarks.flops import MASK_PROB
    from benchmarks.synthetic_data import PAD_VOCAB_TO
    from user_dir.architectures import architecture_shape
    from user_dir.criterions._chunked_lm_loss import chunked_linear_cross_entropy
    from user_dir.models.fused_roberta_encoder import lm_head_hidden

    device, dtype = ("cpu", torch.float32) if cpu else ("cuda", torch.bfloat16)
    width = architecture_shape(shape["arch"])["width"]
    vocab = -(-shape["vocab"] // PAD_VOCAB_TO) * PAD_VOCAB_TO
    rows = round(shape["batch"] * shape["seq"] * MASK_PROB)
    chunk_rows = CHUNK_ROWS if not cpu else max(rows // 3, 1)  # several chunks at CPU size too
    torch.manual_seed(0)
    head = RobertaLMHead(width, vocab, "gelu").to(device, dtype)
    features = torch.randn(rows, width, device=device, dtype=dtype, requires_grad=True)
    targets = torch.randint(4, vocab, (rows,), device=device)

    def chunked(compiled):
        return lambda: chunked_linear_cross_entropy(
            lm_head_hidden(head, features), head.weight, head.bias, targets, 1, chunk_rows, compiled
        )

    losses = {
        "fairseq_all_rows": lambda: modules.cross_entropy(
            F.linear(lm_head_hidden(head, features), head.weight, head.bias),
            targets,
            reduction="sum",
            ignore_index=1,
        ),
        "chunked": chunked(False),
        "chunked_compiled": chunked(True),
    }
    result = {"rows": rows, "width": width, "vocab": vocab, "chunk_rows": chunk_rows}
    reference = None
    for name, loss_fn in losses.items():
        seconds = []
        if not cpu:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        for _ in range(steps):
            features.grad = None
            head.zero_grad(set_to_none=True)
            start = time.perf_counter()
            loss = loss_fn()
            loss.backward()
            if not cpu:
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - start)
        measured = {
            "ms_forward_backward": round(1000 * statistics.median(seconds[2:]), 3),
            "loss": loss.item(),
        }
        if not cpu:
            peak = torch.cuda.max_memory_allocated() - base
            measured["peak_memory_above_inputs_gb"] = round(peak / 2**30, 3)
        if reference is None:
            reference = (loss.item(), features.grad.clone())
        else:
            scale = reference[1].abs().max()
            measured["loss_relative_difference"] = abs(loss.item() - reference[0]) / reference[0]
            measured["input_grad_max_difference_over_largest"] = (
                (features.grad - reference[1]).abs().max() / scale
            ).item()
        result[name] = measured
    return result
