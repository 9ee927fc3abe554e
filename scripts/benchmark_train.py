#!/usr/bin/env python
"""Pretraining and distillation throughput on this machine, printed as one JSON object.

Same shape, batch and masking everywhere (RoBERTa, LAYERS x WIDTH, VOCAB entries, BATCH x SEQ
tokens, 15% masked 80/10/10): tokens/s and peak RSS of our route (fairseq-train --user-dir with
corpora_masked_lm and our lr schedule), of stock fairseq masked_lm, and of Hugging Face
transformers' RobertaForMaskedLM; then the distillation step against student MLM step + teacher
forward. Each measurement runs in its own process so peak memory is its own.
    .venv/bin/python scripts/benchmark_train.py [--steps 12] [--threads 2] [--repeats 3]

On a GPU, --mfu measures instead the paper's model at scale: roberta-base, 512-token sequences,
RoBERTa's 50,265-entry vocabulary; our route in bf16 (fairseq-train --user-dir --bf16), stock fairseq
masked_lm in fp16 and transformers in bf16, each as tokens/s and model-FLOPs utilisation = tokens/s x
model FLOPs per token (one count for all three) / the GPU's dense bf16 peak.
    .venv/bin/python scripts/benchmark_train.py --mfu [--batch 32 --update-freq 8 --steps 20]
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LAYERS, WIDTH, HEADS, VOCAB, BATCH, SEQ = 4, 256, 4, 47000, 32, 128
MODEL_ARGS = ["--arch", "roberta", "--encoder-layers", str(LAYERS), "--encoder-embed-dim", str(WIDTH),
              "--encoder-ffn-embed-dim", str(4 * WIDTH), "--encoder-attention-heads", str(HEADS)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_memory(cpu: bool) -> dict:
    import torch

    if cpu:
        return {"peak_rss_mb": round(peak_rss_mb())}
    return {"peak_gpu_memory_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


MASK_PROB = 0.15
# dense bf16 tensor-core peaks from NVIDIA's data sheets, TFLOP/s; the first match in the device name wins
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.4), ("H200", 989.4),
                    ("H800", 989.4), ("A100", 312.0), ("L40S", 362.0), ("A10G", 70.0))


def training_flops_per_token(layers: int, width: int, ffn: int, seq: int, vocab: int, mask_prob: float) -> float:
    """Model FLOPs of one masked-LM training step per input token: the matrix products of the forward
    pass (per layer 2·4·d² for the attention projections, 2·2·d·ffn for the FFN, 4·seq·d for attention
    scores and values; the LM head, 2·(d² + d·vocab), on the masked positions only, as fairseq's masked_lm
    computes it), times 3 for forward + backward. Equals torch's FlopCounterMode on fairseq's RoBERTa
    (tests/test_benchmark_train.py)."""
    encoder = layers * (8 * width * width + 4 * width * ffn + 4 * seq * width)
    lm_head = mask_prob * (2 * width * width + 2 * width * vocab)
    return 3 * (encoder + lm_head)


def peak_bf16_tflops(device_name: str) -> float:
    for marker, tflops in PEAK_BF16_TFLOPS:
        if marker in device_name:
            return tflops
    raise SystemExit(f"benchmark_train.py: no dense bf16 peak known for {device_name!r}; give it with --peak-tflops")


def synthetic_databin(root: Path, vocab: int = VOCAB, seq: int = SEQ, train_lines: int = 1500) -> Path:
    """A vocab-entry dictionary and random token lines written straight to fairseq's mmap format."""
    import torch
    from fairseq.data import Dictionary, indexed_dataset

    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial - 1):  # masked_lm adds <mask>
        dictionary.add_symbol(f"w{i}", n=vocab - i)
    dictionary.save(str(root / "dict.txt"))
    generator = torch.Generator().manual_seed(0)
    for split, lines in (("train", train_lines), ("valid", 8)):
        builder = indexed_dataset.MMapIndexedDatasetBuilder(str(root / f"{split}.bin"), dtype=indexed_dataset.best_fitting_int_dtype(len(dictionary)))
        for _ in range(lines):
            tokens = torch.randint(dictionary.nspecial, len(dictionary), (seq - 2,), generator=generator)
            builder.add_item(torch.cat([tokens, torch.tensor([dictionary.eos()])]))
        builder.finalize(str(root / f"{split}.idx"))
    return root


def fairseq_args(databin, save_dir, steps, ours, model_args=MODEL_ARGS, batch=BATCH, seq=SEQ, device_args=("--cpu",)):
    task = ["--user-dir", str(REPO_ROOT / "user_dir"), "--task", "corpora_masked_lm",
            "--lr-scheduler", "warmup_ratio_linear_decay"] if ours else ["--task", "masked_lm"]
    return [str(databin), *task, "--criterion", "masked_lm", *model_args, "--num-workers", "0", *device_args,
            "--batch-size", str(batch), "--tokens-per-sample", str(seq), "--sample-break-mode", "none",
            "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--adam-eps", "1e-6", "--weight-decay", "0.01",
            "--lr", "6e-4", "--max-update", str(steps), "--save-dir", str(save_dir), "--no-save",
            "--disable-validation", "--log-interval", "1", "--log-format", "simple", "--seed", "1"]


def fairseq_tokens_per_s(args, skip=2) -> float:
    """fairseq-train ARGS in this process; the median of its per-update wps after the first SKIP updates."""
    import io
    import logging

    from fairseq_cli import train

    stream = io.StringIO()
    logging.getLogger().addHandler(logging.StreamHandler(stream))
    sys.argv = ["fairseq-train", *args]
    train.cli_main()
    return statistics.median([float(x) for x in re.findall(r"wps=([\d.]+)", stream.getvalue())][skip:])


def measure_fairseq(databin, steps, ours, model_args=MODEL_ARGS, batch=BATCH, seq=SEQ, device_args=("--cpu",),
                    skip=2, cpu=True):
    with tempfile.TemporaryDirectory() as save_dir:
        tokens_per_s = fairseq_tokens_per_s(fairseq_args(databin, save_dir, steps, ours, model_args, batch, seq,
                                                         device_args), skip)
    return {"tokens_per_s": round(tokens_per_s, 1), **peak_memory(cpu)}


def architecture_shape(arch: str) -> dict:
    """Layers, width, heads and FFN width of a registered fairseq RoBERTa architecture."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    import user_dir  # noqa: F401  (registers roberta_tiny)

    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    return {"layers": args.encoder_layers, "width": args.encoder_embed_dim, "heads": args.encoder_attention_heads,
            "ffn": args.encoder_ffn_embed_dim}


def measure_fairseq_at_scale(databin, arch, seq, steps, batch, update_freq, cpu, ours):
    """fairseq-train on the --mfu shape: our route in bf16, or stock masked_lm in fp16 (its command line
    cannot train bf16 off a TPU). Tokens/s over updates 6.. ."""
    precision = "--bf16" if ours else "--fp16"
    # on a GPU, loader workers mask the next batches while the GPU computes (fairseq_args sets 0)
    device_args = [precision, "--update-freq", str(update_freq), *(["--cpu"] if cpu else ["--num-workers", "4"])]
    return measure_fairseq(databin, steps, ours, ["--arch", arch], batch, seq, device_args, skip=5, cpu=cpu)


def measure_transformers(steps, layers=LAYERS, width=WIDTH, heads=HEADS, ffn=4 * WIDTH, vocab=VOCAB, seq=SEQ,
                         batch=BATCH, update_freq=1, cpu=True, bf16=False):
    """RobertaForMaskedLM with AdamW, accumulating UPDATE_FREQ batches per update as fairseq does; in bf16
    through torch.autocast (fp32 master weights). Tokens/s = median over updates after the first two."""
    import torch
    from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM
    from tokenizers import Tokenizer, models

    device = "cpu" if cpu else "cuda"
    vocabulary = {f"w{i}": i for i in range(vocab)}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocabulary, unk_token="w3")),
                                        pad_token="w1", mask_token=f"w{vocab - 1}", unk_token="w3")
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=MASK_PROB)  # 80/10/10 by default
    model = RobertaForMaskedLM(RobertaConfig(vocab_size=vocab, hidden_size=width, num_hidden_layers=layers,
                                             num_attention_heads=heads, intermediate_size=ffn,
                                             max_position_embeddings=seq + 2, pad_token_id=1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    times = []
    for _ in range(steps):
        batches = [{key: value.to(device) for key, value in collator(
            [{"input_ids": torch.randint(4, vocab - 1, (seq,)).tolist()} for _ in range(batch)]).items()}
            for _ in range(update_freq)]
        if not cpu:
            torch.cuda.synchronize()
        start = time.perf_counter()
        for inputs in batches:
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
                loss = model(**inputs).loss
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if not cpu:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return {"tokens_per_s": round(update_freq * batch * seq / statistics.median(times[2:]), 1), **peak_memory(cpu)}


def measure_distillation(databin, teacher, steps):
    """Median seconds of: a student MLM step, a teacher forward on the masked positions, a distillation
    step (with the align term); their ratio is the median over rounds of distill / (student + teacher)."""
    import torch
    from fairseq import criterions, optim

    import user_dir  # noqa: F401
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq import options

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [*fairseq_args(databin, "/tmp", steps, True),
                                                "--task", "distillation", "--teacher-path", str(teacher),
                                                "--criterion", "distillation", "--alpha-cos", "1.0"])
    cfg = convert_namespace_to_omegaconf(args)
    from fairseq import tasks

    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    student = task.build_model(cfg.model)
    distill = criterions.build_criterion(cfg.criterion, task)
    mlm = criterions.build_criterion(convert_namespace_to_omegaconf(options.parse_args_and_arch(
        options.get_training_parser(), fairseq_args(databin, "/tmp", steps, True))).criterion, task)
    params = list(student.parameters()) + list(distill.parameters())
    optimizer = optim.build_optimizer(cfg.optimizer, params)
    iterator = task.get_batch_iterator(task.dataset("train"), max_sentences=BATCH, seed=1).next_epoch_itr(shuffle=False)
    batches = [next(iterator) for _ in range(steps)]

    def train_step(criterion):
        def step(batch):
            loss, _, _ = criterion(student, batch)
            optimizer.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        return step

    def teacher_forward(batch):
        with torch.no_grad():
            task.teacher(**batch["net_input"], masked_tokens=batch["target"].ne(task.dictionary.pad()))

    # interleaved batch by batch, in an order rotated every round, so that load from other processes
    # and whatever ran just before hit all three alike; the ratio is taken within each round
    steps_by_name = {"student": train_step(mlm), "teacher": teacher_forward, "distill": train_step(distill)}
    names = list(steps_by_name)
    seconds = {name: [] for name in names}
    student.train()
    for round_index, batch in enumerate(batches):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            steps_by_name[name](batch)
            seconds[name].append(time.perf_counter() - start)
    timed = {name: seconds[name][2:] for name in names}
    student_s, teacher_s, distill_s = (statistics.median(timed[name]) for name in names)
    ratios = [d / (s + t) for s, t, d in zip(timed["student"], timed["teacher"], timed["distill"])]
    return {"alpha_cos": cfg.criterion.alpha_cos, "student_mlm_step_s": round(student_s, 4),
            "teacher_forward_s": round(teacher_s, 4), "distill_step_s": round(distill_s, 4),
            "distill_over_student_plus_teacher": round(statistics.median(ratios), 3), "target": 1.1}


def measure_at_scale(args) -> dict:
    """--mfu: our bf16 route against stock fairseq (fp16) and transformers (bf16 autocast) on one shape;
    model-FLOPs utilisation of each by the same FLOPs count, against the device's dense bf16/fp16 peak."""
    import torch

    if not args.cpu and not torch.cuda.is_available():
        raise SystemExit("benchmark_train.py --mfu: no CUDA device here (add --cpu --peak-tflops N to run it on the CPU)")
    if args.cpu and not args.peak_tflops:
        raise SystemExit("benchmark_train.py --mfu --cpu: give the CPU's bf16 peak with --peak-tflops")
    device = "cpu" if args.cpu else torch.cuda.get_device_name()
    peak = args.peak_tflops or peak_bf16_tflops(device)
    shape = architecture_shape(args.arch)
    flops_per_token = training_flops_per_token(shape["layers"], shape["width"], shape["ffn"], args.seq, args.vocab, MASK_PROB)
    report = {"device": device, "peak_tflops": peak, "arch": args.arch, **shape, "seq": args.seq, "vocab": args.vocab,
              "batch": args.batch, "update_freq": args.update_freq, "steps": args.steps,
              "model_flops_per_token": flops_per_token, "target_mfu": 0.45,
              "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as root:
        lines = (args.steps + 1) * args.batch * args.update_freq  # one epoch covers every update
        databin = synthetic_databin(Path(root), args.vocab, args.seq, lines)
        options = ["--databin", str(databin), "--steps", str(args.steps), "--threads", str(args.threads), "--arch", args.arch,
                   "--seq", str(args.seq), "--vocab", str(args.vocab), "--batch", str(args.batch),
                   "--update-freq", str(args.update_freq), *(["--cpu"] if args.cpu else [])]
        for name in ("ours_bf16", "fairseq_fp16", "transformers_bf16"):
            if name == "fairseq_fp16" and args.cpu:
                report[name] = {"skipped": "fairseq's fp16 optimizer needs CUDA"}
                continue
            report[name] = child(name, *options)
            if "tokens_per_s" in report[name]:
                report[name]["mfu"] = round(report[name]["tokens_per_s"] * flops_per_token / (peak * 1e12), 4)
    for peer in ("fairseq_fp16", "transformers_bf16"):
        if "tokens_per_s" in report["ours_bf16"] and "tokens_per_s" in report[peer]:
            report[f"ours_over_{peer}"] = round(report["ours_bf16"]["tokens_per_s"] / report[peer]["tokens_per_s"], 3)
    return report


def child(name, *extra):
    done = subprocess.run([sys.executable, __file__, "--measure", name, *extra], capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr[-1500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="runs of ours and of stock fairseq, alternating")
    mfu = parser.add_argument_group("--mfu: bf16 model-FLOPs utilisation on a GPU, ours against the peers")
    mfu.add_argument("--mfu", action="store_true")
    mfu.add_argument("--arch", default="roberta_base", help="a fairseq RoBERTa architecture (default roberta_base)")
    mfu.add_argument("--seq", type=int, default=512)
    mfu.add_argument("--vocab", type=int, default=50265, help="dictionary size with <mask> (RoBERTa's: 50265)")
    mfu.add_argument("--batch", type=int, default=32, help="sequences per GPU per step (the recipe's 32)")
    mfu.add_argument("--update-freq", type=int, default=8)
    mfu.add_argument("--peak-tflops", type=float, help="dense bf16/fp16 peak of the device (default: by GPU name)")
    mfu.add_argument("--cpu", action="store_true", help="measure on the CPU (needs --peak-tflops)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--databin", help=argparse.SUPPRESS)
    parser.add_argument("--teacher", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.measure:
        result = {
            "ours": lambda: measure_fairseq(args.databin, args.steps, True),
            "fairseq": lambda: measure_fairseq(args.databin, args.steps, False),
            "transformers": lambda: measure_transformers(args.steps),
            "distillation": lambda: measure_distillation(args.databin, args.teacher, args.steps),
            "ours_bf16": lambda: measure_fairseq_at_scale(args.databin, args.arch, args.seq, args.steps, args.batch,
                                                          args.update_freq, args.cpu, True),
            "fairseq_fp16": lambda: measure_fairseq_at_scale(args.databin, args.arch, args.seq, args.steps, args.batch,
                                                             args.update_freq, args.cpu, False),
            "transformers_bf16": lambda: measure_transformers(args.steps, **architecture_shape(args.arch), vocab=args.vocab,
                                                              seq=args.seq, batch=args.batch, update_freq=args.update_freq,
                                                              cpu=args.cpu, bf16=True),
        }[args.measure]()
        # what else ran meanwhile: these timings are only comparable at a similar load
        result["load_average_1_5_15min"] = [round(load, 2) for load in os.getloadavg()]
        print(json.dumps(result))
        return
    if args.mfu:
        print(json.dumps(measure_at_scale(args), indent=1))
        return
    with tempfile.TemporaryDirectory() as root:
        databin = synthetic_databin(Path(root))
        common = ["--databin", str(databin), "--steps", str(args.steps), "--threads", str(args.threads)]
        report = {"shape": {"layers": LAYERS, "width": WIDTH, "vocab": VOCAB, "batch": BATCH, "seq": SEQ,
                            "threads": args.threads, "steps": args.steps, "repeats": args.repeats, "cores": os.cpu_count()},
                  "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()]}
        # ours and stock fairseq alternate, REPEATS times each and first in turn, so that load from
        # elsewhere hits both alike; the ratio is the median of the ratios within each pair
        pairs = []
        for repeat in range(args.repeats):
            order = ("ours", "fairseq") if repeat % 2 == 0 else ("fairseq", "ours")
            measured = {name: child(name, *common) for name in order}
            pairs.append((measured["ours"], measured["fairseq"]))
        if all("tokens_per_s" in run for pair in pairs for run in pair):
            for index, name in enumerate(("ours", "fairseq")):
                runs = [pair[index] for pair in pairs]
                report[name] = {"tokens_per_s": round(statistics.median(run["tokens_per_s"] for run in runs), 1),
                                "tokens_per_s_runs": [run["tokens_per_s"] for run in runs],
                                "peak_rss_mb": max(run["peak_rss_mb"] for run in runs)}
            report["ours_over_fairseq"] = round(statistics.median(ours["tokens_per_s"] / stock["tokens_per_s"]
                                                                  for ours, stock in pairs), 3)
        else:  # the first pair with a failure, its error in full
            report["ours"], report["fairseq"] = next(pair for pair in pairs if not all("tokens_per_s" in run for run in pair))
        report["transformers"] = child("transformers", *common)
        # teacher: a wider, deeper RoBERTa on the same dictionary, one update is enough for timing
        teacher_dir = Path(root) / "teacher"
        teacher_args = [a for a in fairseq_args(databin, teacher_dir, 1, False) if a != "--no-save"]
        subprocess.run([sys.executable, "-m", "fairseq_cli.train", *teacher_args, "--no-epoch-checkpoints",
                        "--encoder-layers", "6", "--encoder-embed-dim", "384",
                        "--encoder-ffn-embed-dim", "1536", "--encoder-attention-heads", "6"],
                       check=True, capture_output=True)
        (teacher_dir / "dict.txt").write_bytes((databin / "dict.txt").read_bytes())
        report["distillation"] = child("distillation", *common, "--teacher", str(teacher_dir / "checkpoint_last.pt"))
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
