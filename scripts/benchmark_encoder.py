#!/usr/bin/env python
"""Forward + backward of the RoBERTa model alone, fairseq's encoder against ours, as one JSON
object.

The same weights, batch and masked-LM loss (LM head on the 15% masked positions, fairseq's
cross_entropy) through each encoder implementation (user_dir/models/fused_roberta_encoder.py):
'fairseq' (stock), 'fused' and 'compiled'; tokens/s, model-FLOPs utilisation and peak memory per
batch size and vocabulary size, plus how far each implementation's logits and gradients are from
fairseq's (dropout off) and, with --profile, the GPU kernels that take the time. No optimizer,
no data loading: benchmark_train.py measures whole training routes.
    python scripts/benchmark_encoder.py [--batches 32,128 --vocabs 50265,50304 --profile DIR]
    python scripts/benchmark_encoder.py --cpu --arch roberta_tiny --seq 64 --batches 4   (CI size)
With --lengths 512,497,505,489 the timed steps take those batch lengths in turn, shorter rows
padded, as real data's batches of complete sentences come (the compiled encoder's static shapes
are for them); tokens/s then counts each step's padded batch.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.encoder import compare_encoders  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="roberta_base")
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batches", default="32", help="comma-separated sequences per step")
    parser.add_argument(
        "--vocabs", default="50265", help="comma-separated dictionary sizes (with <mask>)"
    )
    parser.add_argument("--implementations", default="fairseq,fused,compiled")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--lengths",
        help="comma-separated batch lengths (at most --seq) the timed steps take in turn, shorter "
        "rows padded: real data's varying batches; default: every step --seq, no padding",
    )
    parser.add_argument(
        "--cpu", action="store_true", help="fp32 on the CPU (CI size), else bf16 on the GPU"
    )
    parser.add_argument(
        "--peak-tflops", type=float, help="default: the GPU's dense bf16 peak by name"
    )
    parser.add_argument(
        "--profile", help="dir for a kernel table of each implementation at the first batch size"
    )
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else [None]
    if any(n and not 1 < n <= args.seq for n in lengths):
        parser.error(f"--lengths must lie in 2..--seq ({args.seq})")
    print(json.dumps(compare_encoders(args, lengths), indent=1))


if __name__ == "__main__":
    main()
