#!/usr/bin/env python
"""Pretraining and distillation throughput on this machine, printed as one JSON object.

Same shape, batch and masking everywhere (RoBERTa, LAYERS x WIDTH, VOCAB entries, BATCH x SEQ
tokens, 15% masked 80/10/10): tokens/s and peak RSS of our route (fairseq-train --user-dir with
corpora_masked_lm, masked_lm_positions and our lr schedule), of stock fairseq masked_lm, and of
Hugging Face transformers' RobertaForMaskedLM; then the distillation step against student MLM
step + teacher forward. Each measurement runs in its own process so peak memory is its own.
    .venv/bin/python scripts/benchmark_train.py [--steps 12] [--threads 2] [--repeats 3]

On a GPU, --mfu measures instead the paper's model at scale: roberta-base, 512-token sequences,
RoBERTa's 50,265-entry vocabulary, 256 sequences per update; every route of issue 10's table, each
as tokens/s, model-FLOPs utilisation = tokens/s x model FLOPs per token (one count for all) / the
GPU's dense bf16 peak, and peak GPU memory across the run, at each per-GPU micro-batch asked for
(update_freq = 256 / micro-batch):
  ours_bf16                  fairseq-train --user-dir --bf16, corpora_masked_lm, our encoder (auto)
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
MODEL_ARGS = [
    "--arch",
    "roberta",
    "--encoder-layers",
    str(LAYERS),
    "--encoder-embed-dim",
    str(WIDTH),
    "--encoder-ffn-embed-dim",
    str(4 * WIDTH),
    "--encoder-attention-heads",
    str(HEADS),
]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_memory(cpu: bool) -> dict:
    import torch

    if cpu:
        return {"peak_rss_mb": round(peak_rss_mb())}
    return {"peak_gpu_memory_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


MASK_PROB = 0.15
PAD_VOCAB_TO = 64  # our dictionaries' size multiple, <mask> included
# dense bf16 tensor-core peaks from NVIDIA's data sheets, TFLOP/s; the first match in the device
# name wins
PEAK_BF16_TFLOPS = (
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.4),
    ("H200", 989.4),
    ("H800", 989.4),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("A10G", 70.0),
)


def training_flops_per_token(
    layers: int, width: int, ffn: int, seq: int, vocab: int, mask_prob: float
) -> float:
    """Model FLOPs of one masked-LM training step per input token: the matrix products of the
    forward pass (per layer 2·4·d² for the attention projections, 2·2·d·ffn for the FFN, 4·seq·d for
    attention scores and values; the LM head, 2·(d² + d·vocab), on the masked positions only, as
    fairseq's masked_lm computes it), times 3 for forward + backward. Equals torch's FlopCounterMode
    on fairseq's RoBERTa (tests/test_benchmark_train.py)."""
    encoder = layers * (8 * width * width + 4 * width * ffn + 4 * seq * width)
    lm_head = mask_prob * (2 * width * width + 2 * width * vocab)
    return 3 * (encoder + lm_head)


def peak_bf16_tflops(device_name: str) -> float:
    for marker, tflops in PEAK_BF16_TFLOPS:
        if marker in device_name:
            return tflops
    raise SystemExit(
        f"benchmark_train.py: no dense bf16 peak known for {device_name!r}; "
        "give it with --peak-tflops"
    )


def synthetic_databin(
    root: Path, vocab: int = VOCAB, seq: int = SEQ, train_lines: int = 1500
) -> Path:
    """A vocab-entry dictionary and random token lines written straight to fairseq's mmap format;
    the tokens depend on the seed only, not on the dictionary size beyond the first 47,000
    entries."""
    import torch
    from fairseq.data import Dictionary, indexed_dataset

    root.mkdir(parents=True, exist_ok=True)

    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial - 1):  # masked_lm adds <mask>
        dictionary.add_symbol(f"w{i}", n=vocab - i)
    dictionary.save(str(root / "dict.txt"))
    generator = torch.Generator().manual_seed(0)
    for split, lines in (("train", train_lines), ("valid", 8)):
        builder = indexed_dataset.MMapIndexedDatasetBuilder(
            str(root / f"{split}.bin"),
            dtype=indexed_dataset.best_fitting_int_dtype(len(dictionary)),
        )
        for _ in range(lines):
            tokens = torch.randint(
                dictionary.nspecial, min(len(dictionary), VOCAB), (seq - 2,), generator=generator
            )
            builder.add_item(torch.cat([tokens, torch.tensor([dictionary.eos()])]))
        builder.finalize(str(root / f"{split}.idx"))
    return root


def fairseq_args(
    databin,
    save_dir,
    steps,
    ours,
    model_args=MODEL_ARGS,
    batch=BATCH,
    seq=SEQ,
    device_args=("--cpu",),
):
    task = (
        [
            "--user-dir",
            str(REPO_ROOT / "user_dir"),
            "--task",
            "corpora_masked_lm",
            "--lr-scheduler",
            "warmup_ratio_linear_decay",
        ]
        if ours
        else ["--task", "masked_lm"]
    )
    return [
        str(databin),
        *task,
        "--criterion",
        "masked_lm_positions" if ours else "masked_lm",
        *model_args,
        "--num-workers",
        "0",
        *device_args,
        "--batch-size",
        str(batch),
        "--tokens-per-sample",
        str(seq),
        "--sample-break-mode",
        "none",
        "--optimizer",
        "adam",
        "--adam-betas",
        "(0.9,0.98)",
        "--adam-eps",
        "1e-6",
        "--weight-decay",
        "0.01",
        "--lr",
        "6e-4",
        "--max-update",
        str(steps),
        "--save-dir",
        str(save_dir),
        "--no-save",
        "--disable-validation",
        "--log-interval",
        "1",
        "--log-format",
        "simple",
        "--seed",
        "1",
    ]


def fairseq_tokens_per_s(args, skip=2) -> float:
    """fairseq-train ARGS in this process; the median of its per-update wps after the first SKIP
    updates."""
    import io
    import logging

    from fairseq_cli import train

    stream = io.StringIO()
    logging.getLogger().addHandler(logging.StreamHandler(stream))
    sys.argv = ["fairseq-train", *args]
    train.cli_main()
    return statistics.median(
        [float(x) for x in re.findall(r"wps=([\d.]+)", stream.getvalue())][skip:]
    )


def measure_fairseq(
    databin,
    steps,
    ours,
    model_args=MODEL_ARGS,
    batch=BATCH,
    seq=SEQ,
    device_args=("--cpu",),
    skip=2,
    cpu=True,
):
    with tempfile.TemporaryDirectory() as save_dir:
        tokens_per_s = fairseq_tokens_per_s(
            fairseq_args(databin, save_dir, steps, ours, model_args, batch, seq, device_args), skip
        )
    return {"tokens_per_s": round(tokens_per_s, 1), **peak_memory(cpu)}


def architecture_shape(arch: str) -> dict:
    """Layers, width, heads and FFN width of a registered fairseq RoBERTa architecture."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    import user_dir  # noqa: F401  (registers roberta_tiny)

    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    return {
        "layers": args.encoder_layers,
        "width": args.encoder_embed_dim,
        "heads": args.encoder_attention_heads,
        "ffn": args.encoder_ffn_embed_dim,
    }


# --mfu routes: our plugin or not, precision, encoder implementation (our task's option)
ROUTES = {
    "ours_bf16": {"ours": True, "precision": "bf16", "encoder": "auto"},
    "ours_bf16_fairseq_encoder": {"ours": True, "precision": "bf16", "encoder": "fairseq"},
    "ours_fp16": {"ours": True, "precision": "fp16", "encoder": "auto"},
    "fairseq_fp16": {"ours": False, "precision": "fp16"},
    "fairseq_bf16": {"ours": False, "precision": "bf16"},
    "transformers_bf16": {},
}


def track_peak_gpu_memory():
    """fairseq's trainer resets CUDA's peak-memory counter every update: keep the largest peak seen
    before each reset, so the figure covers the whole run. Returns a function giving it in GB."""
    import torch

    largest = [0]
    reset = torch.cuda.reset_peak_memory_stats

    def reset_keeping_largest(*args, **kwargs):
        largest[0] = max(largest[0], torch.cuda.max_memory_allocated())
        reset(*args, **kwargs)

    torch.cuda.reset_peak_memory_stats = reset_keeping_largest
    return lambda: round(max(largest[0], torch.cuda.max_memory_allocated()) / 2**30, 2)


def profile_updates(directory: str, first: int = 6, count: int = 3) -> None:
    """Profile fairseq updates FIRST+1 .. FIRST+COUNT (CPU and GPU) into kernel tables in DIRECTORY:
    fairseq labels its phases (forward, backward, clip-grads, optimizer), so the tables say where an
    update's time goes beside the model itself."""
    from fairseq.trainer import Trainer
    from torch.profiler import ProfilerActivity, profile, schedule

    def write_tables(prof):
        Path(directory).mkdir(parents=True, exist_ok=True)
        for sort in ("self_cuda_time_total", "cpu_time_total"):
            table = prof.key_averages().table(sort_by=sort, row_limit=40, max_name_column_width=80)
            (Path(directory) / f"{sort}.txt").write_text(table)

    profiler = profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        on_trace_ready=write_tables,
        schedule=schedule(wait=first, warmup=1, active=count, repeat=1),
    )
    train_step = Trainer.train_step

    def profiled_train_step(self, samples, raise_oom=False):
        output = train_step(self, samples, raise_oom)
        profiler.step()
        return output

    Trainer.train_step = profiled_train_step
    profiler.start()


def measure_fairseq_at_scale(databin, arch, seq, steps, batch, update_freq, cpu, route):
    """fairseq-train on the --mfu shape along ROUTE. Tokens/s over updates 6.. ."""
    spec = ROUTES[route]
    # on a GPU, loader workers mask the next batches while the GPU computes (fairseq_args sets 0)
    device_args = [
        f"--{spec['precision']}",
        "--update-freq",
        str(update_freq),
        *(["--cpu"] if cpu else ["--num-workers", "4"]),
    ]
    if spec["ours"]:
        device_args += ["--encoder-implementation", spec["encoder"]]
    elif (
        spec["precision"] == "bf16"
    ):  # stock masked_lm; only our plugin lets --bf16 train off a TPU
        device_args += ["--user-dir", str(REPO_ROOT / "user_dir")]
    peak_gb = None if cpu else track_peak_gpu_memory()
    result = measure_fairseq(
        databin, steps, spec["ours"], ["--arch", arch], batch, seq, device_args, skip=5, cpu=cpu
    )
    if peak_gb:
        result["peak_gpu_memory_gb"] = peak_gb()
    return result


def measure_transformers(
    steps,
    layers=LAYERS,
    width=WIDTH,
    heads=HEADS,
    ffn=4 * WIDTH,
    vocab=VOCAB,
    seq=SEQ,
    batch=BATCH,
    update_freq=1,
    cpu=True,
    bf16=False,
):
    """RobertaForMaskedLM with AdamW, accumulating UPDATE_FREQ batches per update as fairseq does;
    in bf16 through torch.autocast (fp32 master weights). Tokens/s = median over updates after the
    first two."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import (
        DataCollatorForLanguageModeling,
        PreTrainedTokenizerFast,
        RobertaConfig,
        RobertaForMaskedLM,
    )

    device = "cpu" if cpu else "cuda"
    vocabulary = {f"w{i}": i for i in range(vocab)}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocabulary, unk_token="w3")),
        pad_token="w1",
        mask_token=f"w{vocab - 1}",
        unk_token="w3",
    )
    collator = DataCollatorForLanguageModeling(
        tokenizer, mlm_probability=MASK_PROB
    )  # 80/10/10 by default
    model = RobertaForMaskedLM(
        RobertaConfig(
            vocab_size=vocab,
            hidden_size=width,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=ffn,
            max_position_embeddings=seq + 2,
            pad_token_id=1,
        )
    ).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=6e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01
    )
    times = []
    for _ in range(steps):
        batches = [
            {
                key: value.to(device)
                for key, value in collator(
                    [
                        {"input_ids": torch.randint(4, vocab - 1, (seq,)).tolist()}
                        for _ in range(batch)
                    ]
                ).items()
            }
            for _ in range(update_freq)
        ]
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
    return {
        "tokens_per_s": round(update_freq * batch * seq / statistics.median(times[2:]), 1),
        **peak_memory(cpu),
    }


def train_teacher(databin, teacher_dir: Path, model_args, seq=SEQ, device_args=("--cpu",)) -> Path:
    """A teacher checkpoint for the distillation measurement: one update is enough for timing."""
    teacher_args = [
        a
        for a in fairseq_args(databin, teacher_dir, 1, False, model_args, 8, seq, device_args)
        if a != "--no-save"
    ]
    subprocess.run(
        [sys.executable, "-m", "fairseq_cli.train", *teacher_args, "--no-epoch-checkpoints"],
        check=True,
        capture_output=True,
    )
    (teacher_dir / "dict.txt").write_bytes((Path(databin) / "dict.txt").read_bytes())
    return teacher_dir / "checkpoint_last.pt"


def measure_distillation(
    databin, teacher, steps, model_args=MODEL_ARGS, batch=BATCH, seq=SEQ, cpu=True
):
    """Median seconds of: a student MLM step, a teacher forward on the masked positions, a
    distillation step (with the align term); their ratio is the median over rounds of distill /
    (student + teacher). On a GPU in bf16 with fairseq's FP16Optimizer, as fairseq-train --bf16 runs
    it."""
    import torch
    from fairseq import criterions, optim, options, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import user_dir  # noqa: F401
    from user_dir.tasks.corpora_masked_lm import lm_inputs

    device_args = ("--cpu",) if cpu else ("--bf16",)
    student_args = fairseq_args(databin, "/tmp", steps, True, model_args, batch, seq, device_args)
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        [
            *student_args,
            "--task",
            "distillation",
            "--teacher-path",
            str(teacher),
            "--criterion",
            "distillation",
            "--alpha-cos",
            "1.0",
        ],
    )
    cfg = convert_namespace_to_omegaconf(args)
    from fairseq import tasks

    from user_dir.precision import configure_precision

    configure_precision(cfg)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    student = task.build_model(cfg.model)
    distill = criterions.build_criterion(cfg.criterion, task)
    mlm = criterions.build_criterion(
        convert_namespace_to_omegaconf(
            options.parse_args_and_arch(options.get_training_parser(), student_args)
        ).criterion,
        task,
    )
    if not cpu:
        student, distill = student.cuda().bfloat16(), distill.cuda().bfloat16()
    params = list(student.parameters()) + list(distill.parameters())
    optimizer = (
        optim.build_optimizer(cfg.optimizer, params)
        if cpu
        else optim.FP16Optimizer.build_optimizer(cfg, params)
    )
    iterator = task.get_batch_iterator(
        task.dataset("train"), max_sentences=batch, seed=1
    ).next_epoch_itr(shuffle=False)
    batches = [next(iterator) if cpu else utils.move_to_cuda(next(iterator)) for _ in range(steps)]

    def synchronized(step):
        def run(batch):
            step(batch)
            if not cpu:
                torch.cuda.synchronize()

        return run

    def train_step(criterion):
        @synchronized
        def step(batch):
            loss, _, _ = criterion(student, batch)
            optimizer.backward(loss)
            optimizer.step()
            optimizer.zero_grad()

        return step

    @synchronized
    def teacher_forward(batch):
        teacher = distill.teacher_on(next(student.parameters()))
        with torch.no_grad():
            teacher(**batch["net_input"], **lm_inputs(teacher, batch, task.dictionary.pad()))

    # interleaved batch by batch, in an order rotated every round, so that load from other processes
    # and whatever ran just before hit all three alike; the ratio is taken within each round
    steps_by_name = {
        "student": train_step(mlm),
        "teacher": teacher_forward,
        "distill": train_step(distill),
    }
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
    return {
        "alpha_cos": cfg.criterion.alpha_cos,
        "student_mlm_step_s": round(student_s, 4),
        "teacher_forward_s": round(teacher_s, 4),
        "distill_step_s": round(distill_s, 4),
        "distill_over_student_plus_teacher": round(statistics.median(ratios), 3),
        "target": 1.1,
    }


def measure_at_scale(args) -> dict:
    """--mfu: each route at each micro-batch, 256 sequences per update (see the module doc);
    model-FLOPs utilisation of each by the same FLOPs count, against the device's dense bf16
    peak."""
    import torch

    if not args.cpu and not torch.cuda.is_available():
        raise SystemExit(
            "benchmark_train.py --mfu: no CUDA device here (add --cpu "
            "--peak-tflops N to run it on the CPU)"
        )
    if args.cpu and not args.peak_tflops:
        raise SystemExit(
            "benchmark_train.py --mfu --cpu: give the CPU's bf16 peak with --peak-tflops"
        )
    routes = [route for route in args.routes.split(",") if route]
    unknown = sorted(set(routes) - set(ROUTES))
    if unknown:
        raise SystemExit(
            f"benchmark_train.py: unknown route(s) {', '.join(unknown)}; "
            f"routes: {', '.join(ROUTES)}"
        )
    micro_batches = [int(b) for b in args.micro_batches.split(",")]
    if any(args.sequences_per_update % b for b in micro_batches):
        raise SystemExit(
            "benchmark_train.py: each micro-batch must divide --sequences-per-update "
            f"{args.sequences_per_update}"
        )
    device = "cpu" if args.cpu else torch.cuda.get_device_name()
    peak = args.peak_tflops or peak_bf16_tflops(device)
    shape = architecture_shape(args.arch)
    flops_per_token = training_flops_per_token(
        shape["layers"], shape["width"], shape["ffn"], args.seq, args.vocab, MASK_PROB
    )
    report = {
        "device": device,
        "peak_tflops": peak,
        "arch": args.arch,
        **shape,
        "seq": args.seq,
        "vocab": args.vocab,
        "sequences_per_update": args.sequences_per_update,
        "steps": args.steps,
        "model_flops_per_token": flops_per_token,
        "target_mfu": 0.45,
        "torch": torch.__version__,
        "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()],
        "runs": {},
    }
    # our pipeline pads the dictionary to a multiple of 64 (binarize, learn-vocab, the RoBERTa
    # import): the same tokens, fairseq-preprocess's dictionary for the stock routes; FLOPs count
    # the unpadded one
    report["dictionary_ours"] = padded_vocab = -(-args.vocab // PAD_VOCAB_TO) * PAD_VOCAB_TO
    with tempfile.TemporaryDirectory() as root:
        lines = (args.steps + 1) * args.sequences_per_update  # one epoch covers every update
        databins = {
            ours: synthetic_databin(Path(root) / str(ours), vocab, args.seq, lines)
            for ours, vocab in ((False, args.vocab), (True, padded_vocab))
        }
        for micro_batch in micro_batches:
            update_freq = args.sequences_per_update // micro_batch
            options = [
                "--steps",
                str(args.steps),
                "--threads",
                str(args.threads),
                "--arch",
                args.arch,
                "--seq",
                str(args.seq),
                "--vocab",
                str(args.vocab),
                "--batch",
                str(micro_batch),
                "--update-freq",
                str(update_freq),
                *(["--cpu"] if args.cpu else []),
            ]
            for route in routes:
                name = f"{route}@{micro_batch}x{update_freq}"
                if args.cpu and ROUTES[route].get("precision") == "fp16":
                    report["runs"][name] = {"skipped": "fairseq's fp16 optimizer needs CUDA"}
                    continue
                databin = databins[ROUTES[route].get("ours", False)]
                report["runs"][name] = run = child(route, "--databin", str(databin), *options)
                if "tokens_per_s" in run:
                    run["mfu"] = round(run["tokens_per_s"] * flops_per_token / (peak * 1e12), 4)
                print(json.dumps({name: run}), file=sys.stderr)
        if args.distillation:
            # the paper's shape: a roberta_large teacher, the --arch student, one micro-batch per
            # step
            device_args = ["--cpu"] if args.cpu else ["--bf16"]
            teacher = train_teacher(
                databins[True],
                Path(root) / "teacher",
                ["--arch", args.distillation_teacher],
                args.seq,
                [*device_args, "--user-dir", str(REPO_ROOT / "user_dir")],
            )
            report["distillation"] = child(
                "distillation",
                "--databin",
                str(databins[True]),
                "--teacher",
                str(teacher),
                "--batch",
                str(micro_batches[0]),
                *options[: options.index("--batch")],
                *(["--cpu"] if args.cpu else []),
            )
    report["ratios"] = route_ratios(report["runs"])
    return report


def route_ratios(runs: dict) -> dict:
    """ours_bf16 against each other route at the same micro-batch, and best against best."""
    measured = {name: run["tokens_per_s"] for name, run in runs.items() if "tokens_per_s" in run}
    ratios = {}
    for name, tokens_per_s in measured.items():
        route, shape = name.split("@")
        ours = measured.get(f"ours_bf16@{shape}")
        if route != "ours_bf16" and ours:
            ratios[f"ours_bf16_over_{route}@{shape}"] = round(ours / tokens_per_s, 3)
    best = {}
    for name, tokens_per_s in measured.items():
        route = name.split("@")[0]
        if tokens_per_s > measured.get(best.get(route, ""), 0):
            best[route] = name
    if "ours_bf16" in best:
        for route, name in best.items():
            if route != "ours_bf16":
                ratios[f"best_ours_bf16_over_best_{route}"] = round(
                    measured[best["ours_bf16"]] / measured[name], 3
                )
        ratios["best"] = best
    return ratios


def child(name, *extra):
    done = subprocess.run(
        [sys.executable, __file__, "--measure", name, *extra], capture_output=True, text=True
    )
    if done.returncode != 0:
        return {"error": done.stderr[-1500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of ours and of stock fairseq, alternating"
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
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--databin", help=argparse.SUPPRESS)
    parser.add_argument("--teacher", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--update-freq", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--profile",
        help="with --measure: profile three fairseq updates into kernel tables in this dir",
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.measure:
        if args.profile:
            profile_updates(args.profile)
        result = {
            "ours": lambda: measure_fairseq(args.databin, args.steps, True),
            "fairseq": lambda: measure_fairseq(args.databin, args.steps, False),
            "transformers": lambda: measure_transformers(args.steps),
            "distillation": lambda: measure_distillation(
                args.databin,
                args.teacher,
                args.steps,
                *(
                    ()
                    if args.batch is None
                    else (["--arch", args.arch], args.batch, args.seq, args.cpu)
                ),
            ),
            **{
                route: (
                    lambda route=route: measure_fairseq_at_scale(
                        args.databin,
                        args.arch,
                        args.seq,
                        args.steps,
                        args.batch,
                        args.update_freq,
                        args.cpu,
                        route,
                    )
                )
                for route in ROUTES
                if route != "transformers_bf16"
            },
            "transformers_bf16": lambda: measure_transformers(
                args.steps,
                **architecture_shape(args.arch),
                vocab=args.vocab,
                seq=args.seq,
                batch=args.batch,
                update_freq=args.update_freq,
                cpu=args.cpu,
                bf16=True,
            ),
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
        common = [
            "--databin",
            str(databin),
            "--steps",
            str(args.steps),
            "--threads",
            str(args.threads),
        ]
        report = {
            "shape": {
                "layers": LAYERS,
                "width": WIDTH,
                "vocab": VOCAB,
                "batch": BATCH,
                "seq": SEQ,
                "threads": args.threads,
                "steps": args.steps,
                "repeats": args.repeats,
                "cores": os.cpu_count(),
            },
            "load_average_at_start_1_5_15min": [round(load, 2) for load in os.getloadavg()],
        }
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
                report[name] = {
                    "tokens_per_s": round(
                        statistics.median(run["tokens_per_s"] for run in runs), 1
                    ),
                    "tokens_per_s_runs": [run["tokens_per_s"] for run in runs],
                    "peak_rss_mb": max(run["peak_rss_mb"] for run in runs),
                }
            report["ours_over_fairseq"] = round(
                statistics.median(
                    ours["tokens_per_s"] / stock["tokens_per_s"] for ours, stock in pairs
                ),
                3,
            )
        else:  # the first pair with a failure, its error in full
            report["ours"], report["fairseq"] = next(
                pair for pair in pairs if not all("tokens_per_s" in run for run in pair)
            )
        report["transformers"] = child("transformers", *common)
        # teacher: a wider, deeper RoBERTa on the same dictionary
        teacher = train_teacher(
            databin,
            Path(root) / "teacher",
            [
                "--arch",
                "roberta",
                "--encoder-layers",
                "6",
                "--encoder-embed-dim",
                "384",
                "--encoder-ffn-embed-dim",
                "1536",
                "--encoder-attention-heads",
                "6",
            ],
        )
        report["distillation"] = child("distillation", *common, "--teacher", str(teacher))
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
