#!/usr/bin/env python
"""Pretraining and distillation throughput on this machine, printed as one JSON object.

Same shape, batch and masking everywhere (RoBERTa, LAYERS x WIDTH, VOCAB entries, BATCH x SEQ
tokens, 15% masked 80/10/10): tokens/s and peak RSS of our route (fairseq-train --user-dir with
corpora_masked_lm, masked_lm_positions and our lr schedule), of stock fairseq masked_lm, and of
Hugging Face transformers' RobertaForMaskedLM; then the distillation step against student MLM
step + teacher forward. Each measurement runs in its own process so peak memory is its own.
    .venv/bin/python scripts/benchmark_train.py [--steps 12] [--threads 2] [--repeats 3]

On a GPU, --mfu measures instead the paper's model at scale: roberta-base, 512-token sequences,
RoBERTa's 50,265-entry vocabulary, 256 sequences per update; every route below, each
as tokens/s, model-FLOPs utilisation = tokens/s x model FLOPs per token (one count for all) / the
GPU's dense bf16 peak, and peak GPU memory across the run, at each per-GPU micro-batch asked for
(update_freq = 256 / micro-batch); each route --repeats times (median, spread and every run), with
date, commit, device, torch and load recorded:
  ours_bf16                  fairseq-train --user-dir --bf16, corpora_masked_lm, our encoder (auto)
  ours_bf16_levers           + the levers of docs/pretrain.md ("Speed"): compiled layers, the LM
                             head's loss in chunks of masked rows, fused Adam (routes.LEVERS)
  ours_bf16_levers_cuda_graphs  + the compiled layers replayed as CUDA graphs
  ours_bf16_levers_fp8       + FP8 projections (torchao); its losses against ours_bf16_levers'
  ours_bf16_fairseq_encoder  the same with task.encoder_implementation=fairseq
  ours_fp16                  our route in fp16
  fairseq_fp16               stock fairseq masked_lm in fp16
  fairseq_bf16               stock fairseq masked_lm in bf16 (possible off TPUs through our plugin)
  transformers_bf16          Hugging Face RobertaForMaskedLM, bf16 autocast, the same accumulation
    .venv/bin/python scripts/benchmark_train.py --mfu
        [--micro-batches 32,128 --routes ours_bf16,... --steps 20]
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.at_scale import measure_at_scale  # noqa: E402
from benchmarks.cpu_comparison import compare_on_cpu  # noqa: E402
from benchmarks.measure import measure  # noqa: E402
from benchmarks.routes import ROUTES  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of each route, the routes taking turns (--mfu: median and spread of each)",
    )
    mfu = parser.add_argument_group(
        "--mfu: bf16 model-FLOPs utilisation on a GPU, ours against the peers"
    )
    mfu.add_argument("--mfu", action="store_true")
    mfu.add_argument(
        "--arch",
        default="roberta_base",
        help="a fairseq RoBERTa architecture (default roberta_base)",
    )
    mfu.add_argument("--seq", type=int, default=512)
    mfu.add_argument(
        "--vocab", type=int, default=50265, help="dictionary size with <mask> (RoBERTa's: 50265)"
    )
    mfu.add_argument(
        "--micro-batches",
        default="32",
        help="comma-separated sequences per GPU per step (recipe: 32)",
    )
    mfu.add_argument("--sequences-per-update", type=int, default=256)
    mfu.add_argument(
        "--routes", default=",".join(ROUTES), help=f"comma-separated, of: {', '.join(ROUTES)}"
    )
    mfu.add_argument(
        "--peak-tflops",
        type=float,
        help="dense bf16/fp16 peak of the device (default: by GPU name)",
    )
    mfu.add_argument("--cpu", action="store_true", help="measure on the CPU (needs --peak-tflops)")
    mfu.add_argument(
        "--distillation",
        action="store_true",
        help="also time a distillation step against student step + teacher "
        "forward (first micro-batch)",
    )
    mfu.add_argument(
        "--distillation-teacher", default="roberta_large", help="the teacher's architecture"
    )
    one = parser.add_argument_group(
        "--measure: one measurement in this process, its JSON on the last line (the comparisons "
        "start each in a process of its own, so that its peak memory is its own)"
    )
    one.add_argument(
        "--measure",
        help="ours, fairseq, transformers, distillation, or a --routes route",
    )
    one.add_argument("--databin", help="the data-bin it trains on")
    one.add_argument("--teacher", help="distillation: the teacher checkpoint")
    one.add_argument("--batch", type=int, help="sequences per micro-batch (--mfu shape)")
    one.add_argument("--update-freq", type=int, help="micro-batches per update (--mfu shape)")
    one.add_argument(
        "--profile",
        help="with --measure: profile fairseq updates (after the first 7) into kernel tables and "
        "a summary of where the time goes (summary.json, summary.md) in this dir",
    )
    one.add_argument("--profile-updates", type=int, default=3, help="updates --profile covers")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.measure:
        print(json.dumps(measure(args)))
    elif args.mfu:
        print(json.dumps(measure_at_scale(args), indent=1))
    else:
        print(json.dumps(compare_on_cpu(args), indent=1))


if __name__ == "__main__":
    main()
