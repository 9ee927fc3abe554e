"""The RoBERTa model alone, forward + backward, through each encoder implementation
(user_dir/models/fused_roberta_encoder.py: 'fairseq' stock, 'fused', 'compiled') on the same
weights and batch: tokens/s, model-FLOPs utilisation, peak memory, and how far each one's logits
and gradients are from fairseq's (dropout off). No optimizer, no data loading: the routes of
benchmark_train.py measure whole training runs."""

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks.flops import MASK_PROB, peak_bf16_tflops, training_flops_per_token


def build_model(arch: str, vocab: int, seq: int, dropout: float):
    import torch
    from fairseq.data import Dictionary
    from fairseq.models.roberta import RobertaModel

    from user_dir.architectures import architecture_args

    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial):
        dictionary.add_symbol(f"w{i}")

    class Task:
        source_dictionary = target_dictionary = dictionary

    args = architecture_args(
        arch, arch=arch, max_positions=seq, dropout=dropout, attention_dropout=dropout
    )
    torch.manual_seed(0)
    return RobertaModel.build_model(args, Task())


def synthetic_batch(batch: int, seq: int, vocab: int, device, length: int | None = None):
    """Random tokens and 15% masked positions. With a length: a batch that long whose rows after
    the first end at random points past 80% of it and are padded (fairseq's pad, 1)."""
    import torch

    generator = torch.Generator().manual_seed(batch)
    tokens = torch.randint(4, vocab, (batch, length or seq), generator=generator)
    tokens[:, 0] = 0
    if length:
        ends = torch.randint(int(0.8 * length), length + 1, (batch,), generator=generator)
        ends[0] = length
        tokens[torch.arange(length)[None, :] >= ends[:, None]] = 1
    masked = (torch.rand(tokens.shape, generator=generator) < MASK_PROB) & tokens.ne(1)
    return tokens.to(device), masked.to(device)


def loss_of(model, tokens, masked):
    from fairseq import modules

    logits = model(tokens, masked_tokens=masked)[0]
    return modules.cross_entropy(
        logits.view(-1, logits.size(-1)), tokens[masked], reduction="sum"
    ), logits


def synchronize(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def time_steps(model, batches, steps: int, device) -> list:
    """(tokens, seconds) of each forward + backward, the batches taken in turn, after untimed
    passes over them (at least two: compilation, allocator warm-up)."""
    warmup = max(2, len(batches))
    timed = []
    for step in range(warmup + steps):
        tokens, masked = batches[step % len(batches)]
        model.zero_grad(set_to_none=True)
        synchronize(device)
        start = time.perf_counter()
        loss_of(model, tokens, masked)[0].backward()
        synchronize(device)
        if step >= warmup:
            timed.append((tokens.numel(), time.perf_counter() - start))
    return timed


def differences(reference, candidate, tokens, masked) -> dict:
    """Largest logit difference and largest gradient difference, each relative to the reference's
    largest value (a parameter whose true gradient is 0, like the key bias, only holds rounding)."""
    results = []
    for model in (reference, candidate):
        model.zero_grad(set_to_none=True)
        loss, logits = loss_of(model, tokens, masked)
        loss.backward()
        results.append((logits.float(), {n: p.grad.float() for n, p in model.named_parameters()}))
    (logits_a, grads_a), (logits_b, grads_b) = results
    grad_scale = max(g.abs().max().item() for g in grads_a.values())
    return {
        "logits_max_rel": (logits_a - logits_b).abs().max().item() / logits_a.abs().max().item(),
        "grads_max_rel": max((grads_a[n] - grads_b[n]).abs().max().item() for n in grads_a)
        / grad_scale,
    }


def profile_table(model, tokens, masked, path: Path, rows: int = 30) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            model.zero_grad(set_to_none=True)
            loss_of(model, tokens, masked)[0].backward()
        synchronize(tokens.device)
    path.write_text(
        prof.key_averages().table(
            sort_by="self_cuda_time_total", row_limit=rows, max_name_column_width=90
        )
    )


def compare_encoders(args: argparse.Namespace, lengths: list) -> dict:
    """The report of benchmark_encoder.py, on its options; the timed steps take the batch
    lengths in turn (None: args.seq, no padding)."""
    import torch

    from user_dir.architectures import architecture_shape
    from user_dir.models.fused_roberta_encoder import use_fused_encoder

    device = torch.device("cpu" if args.cpu else "cuda")
    dtype = torch.float32 if args.cpu else torch.bfloat16
    name = "cpu" if args.cpu else torch.cuda.get_device_name()
    peak = args.peak_tflops or (None if args.cpu else peak_bf16_tflops(name))
    shape = architecture_shape(args.arch)
    implementations = args.implementations.split(",")
    report = {
        "device": name,
        "dtype": str(dtype),
        "arch": args.arch,
        **shape,
        "seq": args.seq,
        "steps": args.steps,
        "lengths": args.lengths,
        "torch": torch.__version__,
        "runs": [],
    }
    for vocab in (int(v) for v in args.vocabs.split(",")):
        flops_per_token = training_flops_per_token(
            shape["layers"], shape["width"], shape["ffn"], args.seq, vocab, MASK_PROB
        )
        stock = (
            build_model(args.arch, vocab, args.seq, dropout=0.1)
            .to(device=device, dtype=dtype)
            .train()
        )
        models = {}
        for implementation in implementations:
            models[implementation] = copy.deepcopy(stock)
            use_fused_encoder(models[implementation], implementation)
        for batch in (int(b) for b in args.batches.split(",")):
            batches = [
                synthetic_batch(batch, args.seq, vocab, device, length) for length in lengths
            ]
            tokens, masked = batches[0]
            for implementation, model in models.items():
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                timed = time_steps(model, batches, args.steps, device)
                seconds = [step_seconds for _, step_seconds in timed]
                tokens_per_s = statistics.median(n / step_seconds for n, step_seconds in timed)
                run = {
                    "implementation": implementation,
                    "vocab": vocab,
                    "batch": batch,
                    "ms_per_step": round(1000 * statistics.median(seconds), 2),
                    "tokens_per_s": round(tokens_per_s),
                }
                if peak:
                    run["mfu"] = round(tokens_per_s * flops_per_token / (peak * 1e12), 4)
                if device.type == "cuda":
                    run["peak_gpu_memory_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
                report["runs"].append(run)
                print(json.dumps(run), file=sys.stderr)
                if args.profile and batch == int(args.batches.split(",")[0]):
                    Path(args.profile).mkdir(parents=True, exist_ok=True)
                    profile_table(
                        model,
                        tokens,
                        masked,
                        Path(args.profile) / f"kernels_{implementation}_{vocab}.txt",
                    )
        # equivalence with dropout off, on the first batch size
        tokens, masked = synthetic_batch(int(args.batches.split(",")[0]), args.seq, vocab, device)
        for model in models.values():
            model.eval()
        report.setdefault("difference_from_fairseq", {})[str(vocab)] = {
            implementation: differences(models["fairseq"], model, tokens, masked)
            for implementation, model in models.items()
            if implementation != "fairseq" and "fairseq" in models
        }
        del stock, models
    return report
