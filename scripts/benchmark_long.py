#!/usr/bin/env python
"""Fine-tuning ModernBERT at its own length: the plugin's ModernBERT with its token-classification
head against transformers' ModernBertForTokenClassification (attn_implementation="sdpa") on the
same weights, time and peak memory per example at each length, as one JSON object.

The model: a ModernBERT of --shape (`small`: 6 layers x 256, 4 heads, window 128, a global layer
every third, which 2 CPU cores run at 8,192 tokens; `base`: ModernBERT-base's 22 x 768; `tiny`:
what the tests run), random weights built by fairseq's masked_lm task with `--arch modernbert`
and a 5-class token head, exported to transformers by the hf mapping export-hf uses
(bio_roberta.hf.weights.build_hf_model), so both routes hold identical weights; the largest
difference of their logits on one input is printed with the times.

Each measurement is a process of its own (this script with --measure): one route, one length,
one mode (`train`: forward, cross-entropy over every position and backward, a fine-tuning step
without the optimizer; `infer`: forward only, no gradients), a warm-up step then --steps timed
steps of --batch examples of random ids, no padding. The routes alternate, --repeats times each.
Per measurement: seconds per example (median of its steps); on the CPU the peak RSS of the steps
(the peak restarted after the model was built, /proc/self/clear_refs) and the steps' share of it
(less the RSS then), on a GPU torch's peak allocated memory and its rise over the first step's
start; the load average at its end. Per length and mode: medians, ours over transformers'; and
what the longest length costs over the shortest (growth). --attention-dropout P trains both
with attention dropout (the published configs have none; the sweep gives 0.1): torch's CPU
flash kernel takes no dropout, so SDPA's math path holds T x T probabilities per layer where
ours computes its full layers in recomputed chunks of queries (user_dir/models/modernbert.py).
    python scripts/benchmark_long.py [--shape small --lengths 512,2048,8192 --steps 2 --repeats 2]
    python scripts/benchmark_long.py --shape base --device cuda     (a real machine)
    python scripts/benchmark_long.py --lengths 512,2048 --modes train --attention-dropout 0.1
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CLASSES = 5
HEAD = "benchmark"
SEED = 1
# shape -> (layers, width, heads, ffn, local attention window, vocabulary entries)
SHAPES = {
    "tiny": (3, 32, 2, 48, 16, 512),
    "small": (6, 256, 4, 384, 128, 50368),
    "base": (22, 768, 12, 1152, 128, 50368),  # answerdotai/ModernBERT-base
}


def model_arguments(shape: str, max_positions: int) -> list[str]:
    """fairseq's options of the shape (layer types, thetas and biases: the architecture's
    defaults, which are ModernBERT-base's)."""
    layers, width, heads, ffn, window, _ = SHAPES[shape]
    return [
        "--arch", "modernbert", "--encoder-layers", str(layers),
        "--encoder-embed-dim", str(width), "--encoder-attention-heads", str(heads),
        "--encoder-ffn-embed-dim", str(ffn), "--local-attention", str(window),
        "--max-positions", str(max_positions), "--tokens-per-sample", str(max_positions),
    ]  # fmt: skip


def build_ours(work: Path):
    """The plugin model with its token head, built as fairseq-train builds it (masked_lm task on
    work/'s dict.txt, the options of work/model.json), on the CPU."""
    import torch
    from fairseq import options, tasks

    import user_dir  # noqa: F401  (registers modernbert)
    from user_dir.models.token_classification_head import add_token_classification_head

    settings = json.loads((work / "model.json").read_text())
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        [str(work), "--user-dir", str(REPO / "user_dir"), "--task", "masked_lm",
         *settings["arguments"]],
    )  # fmt: skip
    task = tasks.setup_task(args)
    torch.manual_seed(SEED)
    model = task.build_model(args)
    add_token_classification_head(model, HEAD, CLASSES)
    return model


def prepare(work: Path, shape: str, max_positions: int) -> dict:
    """work/: dict.txt, model.json, ours.pt (the plugin model's weights) and hf/ (the same
    weights as ModernBertForTokenClassification). Returns the shape's description."""
    import torch

    from bio_roberta.hf.weights import build_hf_model

    *_, vocab = SHAPES[shape]
    # fairseq's 4 specials, these words, then masked_lm's <mask>: `vocab` rows in all
    words = vocab - 5
    (work / "dict.txt").write_text("".join(f"w{i} {words - i}\n" for i in range(words)))
    arguments = model_arguments(shape, max_positions)
    (work / "model.json").write_text(json.dumps({"arguments": arguments}))
    model = build_ours(work)
    state = model.state_dict()
    torch.save(state, work / "ours.pt")
    rows = state["encoder.sentence_encoder.embed_tokens.weight"].shape[0]
    hf_model = build_hf_model(state, model.args, rows, "token_classification", HEAD, None)
    hf_model.save_pretrained(work / "hf")
    layers, width, heads, ffn, window, _ = SHAPES[shape]
    return {
        "name": shape,
        "layers": layers,
        "width": width,
        "heads": heads,
        "ffn": ffn,
        "local_attention": window,
        "layer_types": model.args.layer_types,
        "vocabulary": rows,
        "parameters": sum(p.numel() for p in model.parameters()),
        "classes": CLASSES,
    }


def load_route(route: str, work: Path, device: str, attention_dropout: float = 0.0):
    """(model, function of ids giving batch x positions x classes logits) of one route, its
    attention dropout (ModernBERT's attention_dropout, 0 in the published configs) set."""
    import torch

    if route == "ours":
        from user_dir.models.token_classification_head import token_classification_logits

        model = build_ours(work)
        model.load_state_dict(torch.load(work / "ours.pt", weights_only=True))
        for layer in model.encoder.sentence_encoder.layers:
            layer.attn.dropout = attention_dropout
        model.to(device)
        return model, lambda ids: token_classification_logits(model, HEAD, ids)
    from transformers import ModernBertForTokenClassification

    model = ModernBertForTokenClassification.from_pretrained(
        work / "hf", attn_implementation="sdpa", attention_dropout=attention_dropout
    ).to(device)
    return model, lambda ids: model(input_ids=ids).logits


def status_mb(field: str) -> float:
    """A memory field of /proc/self/status (VmRSS: resident now, VmHWM: its peak), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"/proc/self/status has no {field}: the CPU memory needs Linux")


def reset_peak_rss() -> None:
    """Start the process's peak RSS (VmHWM) again from its RSS now (Linux >= 4.0), so the peak
    read after the steps is theirs, not the imports' or the model loading's."""
    Path("/proc/self/clear_refs").write_text("5")


def measure(args) -> dict:
    """One route, length and mode in this process: seconds per example and memory."""
    import torch
    import torch.nn.functional as F

    if args.threads:
        torch.set_num_threads(args.threads)
    work = Path(args.measure)
    model, logits_of = load_route(args.route, work, args.device, args.attention_dropout)
    vocab = len((work / "dict.txt").read_text().splitlines()) + 5
    generator = torch.Generator().manual_seed(SEED)
    # ids of words (no specials, so no padding), labels of every position
    ids = torch.randint(4, vocab - 1, (args.batch, args.length), generator=generator)
    labels = torch.randint(0, CLASSES, (args.batch, args.length), generator=generator)
    ids, labels = ids.to(args.device), labels.to(args.device)
    cuda = args.device.startswith("cuda")

    def step():
        if args.mode == "train":
            model.train()
            loss = F.cross_entropy(logits_of(ids).reshape(-1, CLASSES), labels.reshape(-1))
            loss.backward()
            model.zero_grad(set_to_none=True)
        else:
            model.eval()
            with torch.no_grad():
                logits_of(ids)
        if cuda:
            torch.cuda.synchronize()

    if cuda:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        reset_peak_rss()
        before = status_mb("VmRSS")
    seconds = []
    for index in range(args.steps + 1):  # the first: a warm-up
        started = time.perf_counter()
        step()
        if index:
            seconds.append(time.perf_counter() - started)
    result = {"seconds_per_example": statistics.median(seconds) / args.batch}
    if cuda:
        peak = torch.cuda.max_memory_allocated()
        result["peak_gpu_memory_mb"] = round(peak / 2**20)
        result["step_gpu_memory_mb"] = round((peak - before) / 2**20)
    else:
        peak = status_mb("VmHWM")
        result["peak_rss_mb"] = round(peak)
        result["step_rss_mb"] = round(peak - before)
    result["load_average_1_5_15min"] = [round(load, 2) for load in os.getloadavg()]
    return result


def child(work: Path, route: str, length: int, mode: str, args) -> dict:
    """measure() in a process of its own, or {"error": the end of its stderr}."""
    command = [
        sys.executable, __file__, "--measure", str(work), "--route", route,
        "--length", str(length), "--mode", mode, "--steps", str(args.steps),
        "--batch", str(args.batch), "--device", args.device,
        "--attention-dropout", str(args.attention_dropout),
    ]  # fmt: skip
    if args.threads:
        command += ["--threads", str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr[-1500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def logit_difference(work: Path, length: int) -> float:
    """The largest |ours - transformers'| of the two routes' logits on one input (eval)."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    vocab = len((work / "dict.txt").read_text().splitlines()) + 5
    ids = torch.randint(4, vocab - 1, (1, length), generator=generator)
    logits = []
    for route in ("ours", "transformers"):
        model, logits_of = load_route(route, work, "cpu")
        model.eval()
        with torch.no_grad():
            logits.append(logits_of(ids))
    return float((logits[0] - logits[1]).abs().max())


def summary(runs: list[dict], memory_key: str) -> dict:
    done = [run for run in runs if "error" not in run]
    if not done:
        return {"runs": runs}
    return {
        "seconds_per_example": round(statistics.median(r["seconds_per_example"] for r in done), 4),
        memory_key: round(statistics.median(r[memory_key] for r in done)),
        "runs": runs,
    }


def compare(work: Path, args) -> dict:
    """Every length and mode, the routes alternating --repeats times."""
    memory_key = "step_gpu_memory_mb" if args.device.startswith("cuda") else "step_rss_mb"
    result = {}
    for length in args.lengths:
        result[str(length)] = {}
        for mode in args.modes:
            runs = {"ours": [], "transformers": []}
            for _ in range(args.repeats):
                for route in runs:
                    runs[route].append(child(work, route, length, mode, args))
            routes = {route: summary(found, memory_key) for route, found in runs.items()}
            ours, theirs = routes["ours"], routes["transformers"]
            if "seconds_per_example" in ours and "seconds_per_example" in theirs:
                routes["ours_over_transformers"] = {
                    "seconds": round(
                        ours["seconds_per_example"] / theirs["seconds_per_example"], 3
                    ),
                    "memory": round(ours[memory_key] / max(theirs[memory_key], 1), 3),
                }
            result[str(length)][mode] = routes
    return result


def growth(by_length: dict, memory_key: str) -> dict:
    """Step memory and time at the longest length over the shortest, per route and mode: what
    4x the tokens costs (memory linear in T: about 4x; T x T scores: up to 16x)."""
    first, last = str(min(map(int, by_length))), str(max(map(int, by_length)))
    found = {}
    for mode in by_length[first]:
        for route in ("ours", "transformers"):
            short, long = by_length[first][mode][route], by_length[last][mode][route]
            if memory_key in short and memory_key in long:
                found[f"{mode}_{route}"] = {
                    "memory": round(long[memory_key] / max(short[memory_key], 1), 2),
                    "seconds": round(long["seconds_per_example"] / short["seconds_per_example"], 2),
                }
    return {"from_to_tokens": [int(first), int(last)], **found}


def commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="small")
    parser.add_argument("--lengths", default="512,2048,8192", help="comma-separated tokens")
    parser.add_argument("--modes", default="train,infer", help="comma-separated: train, infer")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per measurement")
    parser.add_argument("--repeats", type=int, default=2, help="measurements per route")
    parser.add_argument("--batch", type=int, default=1, help="examples per step")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine")
    parser.add_argument(
        "--attention-dropout", type=float, default=0.0,
        help="both routes' attention dropout in the training step (the sweep trains with 0.1; "
        "torch's CPU flash kernel has none)",
    )  # fmt: skip
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a child: its work dir
    parser.add_argument("--route", choices=("ours", "transformers"), help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("train", "infer"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args)))
        return
    args.lengths = [int(n) for n in args.lengths.split(",")]
    args.modes = args.modes.split(",")
    if set(args.modes) - {"train", "infer"}:
        parser.error("--modes takes train and/or infer")
    if min(args.lengths) < 2 or args.steps < 1 or args.repeats < 1 or args.batch < 1:
        parser.error("--lengths of at least 2 tokens; --steps, --repeats and --batch at least 1")
    import torch
    import transformers

    result = {
        "device": args.device,
        "threads": args.threads or torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "commit": commit(),
        "batch": args.batch,
        "attention_dropout": args.attention_dropout,
        "steps": args.steps,
        "repeats": args.repeats,
        "load_average_before_1_5_15min": [round(load, 2) for load in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        result["shape"] = prepare(work, args.shape, max(args.lengths))
        result["max_abs_logit_difference"] = logit_difference(work, min(args.lengths))
        result["lengths"] = compare(work, args)
    memory_key = "step_gpu_memory_mb" if args.device.startswith("cuda") else "step_rss_mb"
    if len(args.lengths) > 1:
        result["growth"] = growth(result["lengths"], memory_key)
    result["load_average_after_1_5_15min"] = [round(load, 2) for load in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
