#!/usr/bin/env python
"""Does distillation pay? A teacher, its students three ways, each seed's validation masked-LM
loss and fine-tuned scores, as one JSON object (docs/benchmarks/, with the commit and the load).

On the shared corpus (../shared/data/corpus: PubMed abstracts and PMC articles; the bundled
sample/corpus without it), parsed, given a 1,000-unit BPE vocabulary and binarized by the project's
commands, fairseq-train trains a teacher (RoBERTa, 4 layers x 64 by default (--width), heads of
32 channels, FFN 4 x width, 128-token blocks, batch 16), a 2-layer model as long (is the teacher
clearly better?), and, for each seed, three 2-layer students of its width, for the same updates
and tokens (the same batches, the same masks):
  a  distill     the student built from the teacher's layers 0 and 3 (task.student_layers
                 every_other: DistilBERT's initialisation), its embeddings and LM head, trained
                 with the paper's loss (5·MLM + 2·T²·KL, T = 2)
  b  mlm_only    the same start, the same task, MLM only (alpha_kl 0: the teacher is run, unused)
  c  scratch     a 2-layer student from random weights, masked-LM pretraining (corpora_masked_lm)
and, with --more, a+hidden and a+minilm: (a) with TinyBERT's per-layer MSE or MiniLM's relations.
Each model (the teacher too, per seed) is scored by its masked-LM loss on the valid split (bits
per masked token, the same masks for all) and fine-tuned with `bio-roberta finetune` on two tasks,
NER and classification (NCBI-disease and GAD as BLURB splits it, the sample's NCBI-disease and
ChemProt without the shared data; the registry's metric on test), with the seed; each score also
as % of the teacher's with the same seed. Then, one at a time: encoder tokens/s of teacher and
student on the same batch (alternately, the ratio within the run), the distillation step against
student MLM step + teacher forward at the same micro-batch, and the teacher's logits computed in
the step against read from a cache. Runs go --workers at a time, one thread each.
    python scripts/benchmark_distill.py [--seeds 1,2,3] [--workers 2] [--more] [--out FILE]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(SCRIPTS))
from benchmark_finetune import SHARED_DATA, default_tasks, run_overrides  # noqa: E402
from benchmarks.provenance import commit  # noqa: E402

USER_DIR = REPO / "user_dir"
SEQ, BATCH, VOCAB = 128, 16, 1000
TEACHER_LAYERS, STUDENT_LAYERS = 4, 2


def model_flags(layers: int, width: int) -> list[str]:
    """RoBERTa of `layers` x `width`, heads of 32 channels, FFN 4 x width."""
    return [
        "--arch", "roberta", "--encoder-layers", str(layers), "--encoder-embed-dim", str(width),
        "--encoder-ffn-embed-dim", str(4 * width), "--encoder-attention-heads",
        str(width // 32), "--max-positions", str(SEQ),
    ]  # fmt: skip


def training_flags(save_dir: Path, updates: int, lr: float, seed: int) -> list[str]:
    """fairseq-train's flags shared by every run: plugin on CPU, Adam as the paper's recipe has
    it, linear warmup over 10% then linear decay, checkpoint at the end only."""
    return [
        "--user-dir", str(USER_DIR), "--cpu", "--num-workers", "0", "--tokens-per-sample",
        str(SEQ), "--batch-size", str(BATCH), "--optimizer", "adam", "--adam-betas",
        "(0.9,0.98)", "--adam-eps", "1e-6", "--weight-decay", "0.01", "--lr", str(lr),
        "--lr-scheduler", "polynomial_decay", "--warmup-updates", str(max(1, updates // 10)),
        "--total-num-update", str(updates), "--max-update", str(updates), "--seed", str(seed),
        "--save-dir", str(save_dir), "--no-epoch-checkpoints", "--disable-validation",
        "--log-format", "simple", "--log-interval", "50",
    ]  # fmt: skip


MASKED_LM = ["--task", "corpora_masked_lm", "--criterion", "masked_lm_positions"]
DISTILL = ["--task", "distillation", "--criterion", "distillation", "--alpha-cos", "0"]
# variant: (what it is, its task/criterion flags given the teacher, whether it starts from it)
VARIANTS = {
    "distill": lambda teacher: [*DISTILL, "--teacher-path", teacher, "--student-layers",
                                "every_other"],
    "mlm_only": lambda teacher: [*DISTILL, "--teacher-path", teacher, "--student-layers",
                                 "every_other", "--alpha-mlm", "1", "--alpha-kl", "0"],
    "scratch": lambda teacher: MASKED_LM,
    "distill_hidden": lambda teacher: [*VARIANTS["distill"](teacher), "--alpha-hidden", "1"],
    "distill_minilm": lambda teacher: [*VARIANTS["distill"](teacher), "--alpha-attention", "1"],
}  # fmt: skip


class Runner:
    """Jobs run `workers` at a time, each a sequence of commands on one thread; per command its
    wall seconds and the 1-minute load average at its start."""

    def __init__(self, workers: int):
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}

    def command(self, name: str, command: list, log: Path) -> dict:
        """Run one command to its end (in the calling worker), its output in log."""
        load = round(os.getloadavg()[0], 2)
        started = time.perf_counter()
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as out:
            done = subprocess.run(
                [str(c) for c in command], stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        if done.returncode != 0:
            raise SystemExit(f"{name} failed: {log.read_text()[-3000:]}")
        wall = round(time.perf_counter() - started, 1)
        print(f"{name}: {wall} s, load {load}", file=sys.stderr, flush=True)
        return {"wall_s": wall, "load_at_start": load}

    def job(self, function, *arguments):
        return self.pool.submit(function, *arguments)

    def run(self, name: str, command: list, log: Path):
        return self.job(self.command, name, command, log)


def corpus_text_dirs(root: Path, runner: Runner) -> tuple[list[Path], str]:
    """The corpus parsed into text shards (a tenth of the documents held out for validation)."""
    shared = SHARED_DATA / "corpus"
    source = shared if (shared / "pubmed").is_dir() else REPO / "sample" / "corpus"
    jobs = {
        kind: runner.run(
            f"parse-{kind}",
            [
                sys.executable,
                "-m",
                "bio_roberta",
                f"parse-{kind}",
                source / kind,
                "--out",
                root / kind,
                "--valid-fraction",
                "0.1",
                "--workers",
                "1",
            ],
            root / f"parse-{kind}.log",
        )  # fmt: skip
        for kind in ("pubmed", "pmc")
        if (source / kind).is_dir()
    }
    for job in jobs.values():
        job.result()
    return [root / kind for kind in jobs], str(source)


def prepare(root: Path, runner: Runner) -> dict:
    """Vocabulary, data-bin and the tasks converted with that vocabulary."""
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.tasks.registry import get_task

    text_dirs, source = corpus_text_dirs(root, runner)
    python = [sys.executable, "-m", "bio_roberta"]
    runner.run("learn-vocab", [*python, "learn-vocab", *text_dirs, "--out", root / "vocab",
               "--vocab-size", str(VOCAB)], root / "vocab.log").result()  # fmt: skip
    runner.run("binarize", [*python, "binarize", *text_dirs, "--vocab", root / "vocab", "--out",
               root / "bin", "--workers", "1"], root / "binarize.log").result()  # fmt: skip
    tasks = default_tasks()
    for name, folder in tasks.items():
        convert_task(get_task(name), folder, root / "vocab", root / "finetune-bin" / name,
                     max_positions=SEQ)  # fmt: skip
    manifest = json.loads((root / "bin" / "manifest.json").read_text())
    return {
        "corpus": source,
        "data_bin": {split: manifest.get(split) for split in ("train", "valid")},
        "tasks": {name: str(folder) for name, folder in tasks.items()},
    }


def pretrain_command(root, flags, layers, width, updates, lr, seed, name) -> list:
    model = model_flags(layers, width)
    return [sys.executable, "-m", "fairseq_cli.train", root / "bin", *flags, *model,
            *training_flags(root / name, updates, lr, seed)]  # fmt: skip


def finetune(runner, root, model: str, checkpoint: Path, task: str, seed: int, args) -> dict:
    """`bio-roberta finetune` of checkpoint on task with the seed (in the calling worker): its run
    and test score (the registry's metric)."""
    results = root / "finetune" / f"{model}-{task}-seed{seed}"
    overrides = run_overrides(task, root / "finetune-bin", args) + [f"hparams.lr={args.ft_lr}"]
    command = [sys.executable, "-m", "bio_roberta", "finetune", "--task", task, "--seed",
               str(seed), "--pretrained", checkpoint, "--data-root", root / "finetune-bin",
               "--results", results, *overrides]  # fmt: skip
    run = runner.command(f"finetune {model} {task} seed {seed}", command, results / "run.log")
    (record,) = results.rglob("result.json")
    return {**run, "score": json.loads(record.read_text())["test_score"]}


def train_then_finetune(runner, root, name, command, model, seeds, tasks, args) -> dict:
    """A job: train (unless command is None), then fine-tune the checkpoint on each task with each
    seed; {"train": run, (task, seed): fine-tuning run}."""
    done = {} if command is None else {"train": runner.command(name, command, root / f"{name}.log")}
    checkpoint = root / name / "checkpoint_last.pt"
    for seed in seeds:
        for task in tasks:
            done[task, seed] = finetune(runner, root, model, checkpoint, task, seed, args)
    return done


def percent(value, teacher):
    return round(100 * value / teacher, 1) if teacher else None


def per_seed_table(seeds, variants, bits, scores, tasks) -> list[dict]:
    """One row per seed and model: valid MLM bits and each task's score, with % of the teacher."""
    rows = []
    for seed in seeds:
        for model in ["teacher", *variants]:
            name = "teacher" if model == "teacher" else f"{model}-seed{seed}"
            row = {"seed": seed, "model": model, "valid_mlm_bits": bits[name]}
            row["valid_mlm_bits_over_teacher"] = round(bits[name] - bits["teacher"], 4)
            for task in tasks:
                score = scores[model, task, seed]
                row[task] = round(score, 4)
                row[f"{task}_pct_of_teacher"] = percent(score, scores["teacher", task, seed])
            rows.append(row)
    return rows


def spread(values) -> dict:
    """Mean and standard deviation over seeds of the values that exist (a % of a teacher that
    scored 0 does not)."""
    values = [value for value in values if value is not None]
    return {
        "mean": round(statistics.mean(values), 4) if values else None,
        "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else None,
    }


def summary(rows, variants, tasks) -> dict:
    """Mean and spread over seeds per model, and (a) against each other variant seed by seed."""
    keys = ["valid_mlm_bits", *tasks, *(f"{task}_pct_of_teacher" for task in tasks)]
    by_model = {
        model: {key: spread(row[key] for row in rows if row["model"] == model) for key in keys}
        for model in ["teacher", *variants]
    }
    paired = {}
    for other in [variant for variant in variants if variant != "distill"]:
        pairs = [
            (a, b)
            for a in rows
            for b in rows
            if a["model"] == "distill" and b["model"] == other and a["seed"] == b["seed"]
        ]
        paired[f"distill_minus_{other}"] = {
            key: [round(a[key] - b[key], 4) for a, b in pairs] for key in ["valid_mlm_bits", *tasks]
        }
    return {"by_model": by_model, "seed_by_seed": paired}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64, help="of teacher and students")
    parser.add_argument("--teacher-updates", type=int, default=1000)
    parser.add_argument("--student-updates", type=int, default=300)
    parser.add_argument("--teacher-lr", type=float, default=2e-3)
    parser.add_argument("--student-lr", type=float, default=1e-3)
    parser.add_argument("--finetune-updates", type=int, default=150)
    parser.add_argument("--ft-lr", type=float, default=1e-3, help="fine-tuning lr (tiny models)")
    parser.add_argument("--more", action="store_true", help="also (a) with hidden and minilm")
    parser.add_argument(
        "--out", type=Path, help="default: docs/benchmarks/cpu-distill-4xWIDTH-DATE.json"
    )
    parser.add_argument("--keep", type=Path, help="work in this dir and keep it")
    args = parser.parse_args()
    args.updates, args.batch_size, args.log_interval = args.finetune_updates, BATCH, 50
    seeds = [int(seed) for seed in args.seeds.split(",")]
    variants = ["distill", "mlm_only", "scratch"] + (
        ["distill_hidden", "distill_minilm"] if args.more else []
    )
    started, loads = time.perf_counter(), {"start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="benchmark-distill-") as temporary:
        root = args.keep or Path(temporary)
        root.mkdir(parents=True, exist_ok=True)
        runner = Runner(args.workers)
        data = prepare(root, runner)
        tasks = list(data["tasks"])
        teacher = root / "teacher" / "checkpoint_last.pt"
        args_for = (args.student_updates, args.student_lr)
        # the teacher; beside it the students that do not need it: a 2-layer model trained as
        # long as the teacher (is the teacher clearly better?) and the scratch students
        jobs = {
            name: runner.job(train_then_finetune, runner, root, name, pretrain_command(
                root, MASKED_LM, layers, args.width, args.teacher_updates, args.teacher_lr, 1,
                name),
                name, [], tasks, args)
            for name, layers in (("teacher", TEACHER_LAYERS),
                                 ("two_layers_at_teacher_budget", STUDENT_LAYERS))
        }  # fmt: skip
        order = ["scratch", *(variant for variant in variants if variant != "scratch")]
        for variant in order:
            if variant != "scratch":
                jobs["teacher"].result()
            for seed in seeds:
                name = f"{variant}-seed{seed}"
                command = pretrain_command(root, VARIANTS[variant](str(teacher)), STUDENT_LAYERS,
                                           args.width, *args_for, seed, name)  # fmt: skip
                jobs[name] = runner.job(
                    train_then_finetune, runner, root, name, command, variant, [seed], tasks, args
                )
        for seed in seeds:
            jobs[f"teacher-finetune-seed{seed}"] = runner.job(
                train_then_finetune, runner, root, "teacher", None, "teacher", [seed], tasks, args
            )
        done = {name: job.result() for name, job in jobs.items()}
        runner.pool.shutdown()
        loads["runs_done"] = os.getloadavg()
        trained = [name for name in done if "train" in done[name]]
        runs = {name: done[name]["train"] for name in trained}
        checkpoints = {name: root / name / "checkpoint_last.pt" for name in trained}
        scores = {
            (name.split("-")[0], task, seed): run["score"]
            for name, job_runs in done.items()
            for (task, seed), run in ((key, run) for key, run in job_runs.items() if key != "train")
        }
        runs["finetuning"] = {
            f"{name.split('-')[0]} {task} seed {seed}": run
            for name, job_runs in done.items()
            for (task, seed), run in ((key, run) for key, run in job_runs.items() if key != "train")
        }

        # one at a time, in this process, on one thread
        import torch
        from benchmarks.distillation import (
            inference_speed,
            measure_distillation,
            teacher_logits_routes,
            validation_bits,
        )

        torch.set_num_threads(1)
        bits = validation_bits(checkpoints, root / "bin", SEQ, BATCH)
        student = checkpoints[f"distill-seed{seeds[0]}"]
        speed = inference_speed(teacher, student, root / "bin", SEQ, BATCH)
        step_cost = {
            name: measure_distillation(
                root / "bin",
                teacher,
                12,
                model_flags(STUDENT_LAYERS, args.width),
                BATCH,
                SEQ,
                True,
                ["--alpha-cos", "0", *extra],
            )  # fmt: skip
            for name, extra in {
                "distill": [],
                "distill_hidden": ["--alpha-hidden", "1"],
                "distill_minilm": ["--alpha-attention", "1"],
            }.items()
        }
        logits = teacher_logits_routes(teacher, root / "bin", SEQ, BATCH, root)
        loads["end"] = os.getloadavg()

    rows = per_seed_table(seeds, variants, bits, scores, tasks)
    record = {
        "benchmark": "scripts/benchmark_distill.py",
        "commit": commit(),
        "date": date.today().isoformat(),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch_threads_per_run": 1,
            "workers": args.workers,
            "load_average_1_5_15": {
                key: [round(x, 2) for x in value] for key, value in loads.items()
            },  # fmt: skip
        },
        "settings": {
            **{key: value for key, value in vars(args).items() if key not in ("out", "keep")},
            "teacher": f"roberta {TEACHER_LAYERS} layers x {args.width}, "
            f"{args.width // 32} heads, FFN {4 * args.width}",
            "student": f"roberta {STUDENT_LAYERS} layers x {args.width} (teacher layers 0 and 3)",
            "sequence": SEQ,
            "batch": BATCH,
            "vocabulary_units": VOCAB,
        },  # fmt: skip
        "data": data,
        "runs": runs,
        "teacher_against_two_layers_at_its_budget": {
            "teacher_valid_mlm_bits": bits["teacher"],
            "two_layers_valid_mlm_bits": bits["two_layers_at_teacher_budget"],
            "teacher_lower_by_bits": round(
                bits["two_layers_at_teacher_budget"] - bits["teacher"], 4
            ),
        },
        "per_seed": rows,
        "summary": summary(rows, variants, tasks),
        "inference": speed,
        "step_cost_vs_student_step_plus_teacher_forward": step_cost,
        "teacher_logits": logits,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    shape = f"{TEACHER_LAYERS}x{args.width}"
    out = args.out or REPO / "docs" / "benchmarks" / f"cpu-distill-{shape}-{date.today()}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["summary"], indent=1))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
