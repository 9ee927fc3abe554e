#!/usr/bin/env python
"""Prediction throughput on the CPU: `bio_roberta.load(...).predict` against transformers'
pipelines on the export of the same model, as one JSON object.

Two models, 4 layers 256 wide, random-initialised and fine-tuned a few updates (fairseq-train
with the plugin) on the bundled sample's NCBI-disease and ChemProt files, converted with a BPE
vocabulary learned on them (128 positions); each exported with export-hf. The inputs: the
sample's sentences as raw text (NER: the test split's words joined by spaces; ChemProt: its
sentences), repeated to --examples. Ours and the pipeline (token-classification with
aggregation_strategy="simple"; text-classification) run the same inputs at the same batch size,
alternating, --repeats times each; examples/s of each repeat, their best and median, and the load
times are printed.
    python scripts/benchmark_predict.py [--examples 400 --batch-size 32 --repeats 3 --threads N]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SAMPLE_TASKS = REPO / "sample" / "tasks"
POSITIONS = 128
MODEL = [
    "--arch", "roberta", "--encoder-layers", "4", "--encoder-embed-dim", "256",
    "--encoder-ffn-embed-dim", "1024", "--encoder-attention-heads", "4",
    "--max-positions", str(POSITIONS), "--optimizer", "adam", "--lr", "1e-4",
]  # fmt: skip
TASKS = {"ncbi-disease": "token-classification", "chemprot": "text-classification"}  # pipelines


def build_model(task: str, vocab: Path, root: Path) -> tuple[Path, Path]:
    """(fine-tuning checkpoint, its export-hf dir) of `task` on the sample."""
    from bio_roberta.convert import convert_task
    from bio_roberta.hf.export_hf import export
    from bio_roberta.tasks.registry import get_task

    spec = get_task(task)
    data = root / "finetune-bin" / task
    convert_task(spec, SAMPLE_TASKS / task, vocab, data, max_positions=POSITIONS)
    kind = spec.task_kind
    flags = ["--task", kind.fairseq_task, "--criterion", kind.criterion]
    subprocess.run(
        [sys.executable, "-m", "fairseq_cli.train", data, "--user-dir", REPO / "user_dir",
         "--cpu", "--num-workers", "0", *flags, *kind.fairseq_options(spec), *MODEL,
         "--batch-size", "8", "--max-update", "3", "--disable-validation",
         "--save-dir", root / task],
        check=True, capture_output=True,
    )  # fmt: skip
    checkpoint = root / task / "checkpoint_last.pt"
    export(checkpoint, root / "hf" / task, vocab)
    return checkpoint, root / "hf" / task


def texts(task: str, examples: int) -> list[str]:
    from bio_roberta.readers import read_task
    from bio_roberta.tasks.registry import get_task

    split = read_task(get_task(task), SAMPLE_TASKS / task).splits["test"].examples
    sentences = [
        " ".join(example.words) if hasattr(example, "words") else example.text for example in split
    ]
    return (sentences * (examples // len(sentences) + 1))[:examples]


def timed(function) -> tuple[float, object]:
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def compare(task: str, checkpoint: Path, export_dir: Path, args) -> dict:
    from transformers import pipeline

    import bio_roberta

    name = TASKS[task]
    load_ours, ours = timed(lambda: bio_roberta.load(checkpoint))
    options = {"aggregation_strategy": "simple"} if name == "token-classification" else {}
    load_theirs, theirs = timed(lambda: pipeline(name, model=str(export_dir), device=-1, **options))
    inputs = texts(task, args.examples)
    runs = {"ours": (lambda: ours.predict(inputs, batch_size=args.batch_size)),
            "pipeline": (lambda: theirs(inputs, batch_size=args.batch_size))}  # fmt: skip
    seconds = {route: [] for route in runs}
    for route, run in runs.items():  # warm-up, not timed
        run()
    for _ in range(args.repeats):
        for route, run in runs.items():
            seconds[route].append(timed(run)[0])
    per_second = {r: [round(len(inputs) / s, 1) for s in times] for r, times in seconds.items()}
    return {
        "pipeline": name + (" (aggregation_strategy=simple)" if options else ""),
        "examples": len(inputs),
        "load_seconds": {"ours": round(load_ours, 3), "pipeline": round(load_theirs, 3)},
        "examples_per_second": per_second,
        "best": {route: max(values) for route, values in per_second.items()},
        "median": {route: statistics.median(values) for route, values in per_second.items()},
        "ours_over_pipeline_median": round(
            statistics.median(per_second["ours"]) / statistics.median(per_second["pipeline"]), 3
        ),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated")
    args = parser.parse_args()
    import torch
    import transformers

    from preprocess.learn_vocab import learn_vocabulary

    if args.threads:
        torch.set_num_threads(args.threads)
    tasks = args.tasks.split(",")
    result = {
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "model": "roberta 4 layers x 256, 4 heads, 128 positions",
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = root / "corpus.txt"
        corpus.write_text(
            "\n".join(
                line.split("\t")[0]
                for task in tasks
                for path in sorted((SAMPLE_TASKS / task).iterdir())
                for line in path.read_text().splitlines()
            )
            * 5
        )
        learn_vocabulary("gpt2", [corpus], root / "vocab", vocab_size=2000)
        for task in tasks:
            result[task] = compare(task, *build_model(task, root / "vocab", root), args)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
