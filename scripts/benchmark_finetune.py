#!/usr/bin/env python
"""Fine-tuning runs on the CPU: `bio-roberta finetune` against transformers' Trainer on the export
of the same pretrained weights and the same converted data, as one JSON object.

The model: RoBERTa 4 layers x 256 (4 heads, 128 positions), random-initialised and given two
masked-LM updates (fairseq-train with the plugin) on the first task's converted text, with a BPE
vocabulary learned on the tasks' files; export-hf gives transformers the same weights and ids. The
tasks (NER: NCBI-disease; sentence classification: GAD as BLURB splits it, gad-blurb; each the
shared release when the shared data dir has it, else the bundled sample's NCBI-disease and
ChemProt; or --task NAME=DIR) are converted once with convert-task. The Trainer gets the examples
as our fairseq task reads them from that conversion (the same token ids, <s> first, and class ids),
so neither route tokenizes in its run.

A run, on either route, is one command from start to result: --updates updates of the registry's
batch size (or --batch-size), learning rate, warmup ratio, weight decay and dropout, Adam as our
sweep config has it, validation once at the end (ours: fairseq's validation and checkpoint at each
epoch's end put off past the last epoch), the best checkpoint kept, test predictions scored and
written. Ours: `bio-roberta finetune`, its batches drawn as the Trainer's are (with the Trainer's
group_by_length, our tasks' --group-by-length: megabatches of 50 batches sorted by length, as
transformers cuts them); with --baseline REV also `bio-roberta finetune` of this
repository's revision REV (git archive), alternating with the others, so that a change's before and
after are measured under the same load. Theirs: this script with --transformers-run, a new Python
process that loads the export with a new head into a Trainer (scripts/benchmarks/
finetune_trainer.py: length-grouped batches by default, --trainer-sampling; gradients clipped at
our run's max-norm, --clip-norm; load_best_model_at_end; its selection metric: accuracy of the
labelled positions; each task's JSON names this configuration) and predicts test, whose class ids
this script scores with the registry's metric of the task, as ours are scored (an NER sentence
that conversion split in pieces is scored piece by piece). The Trainer route takes NER and
single-label sentence classification tasks. transformers' Trainer needs the `accelerate` package
(setup.py's `benchmark` extra). The routes alternate, --repeats runs each.

Per run: whole-run wall (process start to exit), its CPU seconds (user + system, of every process of
the run: a loaded machine inflates them far less than the wall), examples/s in the update loop from
the end of update --log-interval to the end of the last (ours from fairseq's per-interval updates/s,
theirs from the Trainer's step ends), fixed seconds (wall - updates x the loop's seconds per
update), the seconds of its evaluation passes over dev and test, which grow with those splits (ours:
the record's valid_seconds + predict_seconds; theirs: the Trainer's eval_runtime + test_runtime),
the fixed seconds less those, and the 1-minute load average before the run. Medians of each, and
ours over theirs (and over the baseline's).
    python scripts/benchmark_finetune.py [--updates 100 --repeats 5 --threads N --batch-size N]
        [--baseline REV] [--trainer-sampling random] [--clip-norm 1.0]
"""

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
from benchmarks.finetune_runs import (  # noqa: E402
    loop_seconds_per_update,
    ratios,
    summary,
    timed,
)
from benchmarks.finetune_trainer import (  # noqa: E402
    NEEDS_ACCELERATE,
    SAMPLING,
    trainer_configuration,
    transformers_run,
)
from benchmarks.provenance import commit  # noqa: E402

# the shared release's folder as tests/conftest.py finds it
SHARED_DATA = Path(os.environ.get("BIO_ROBERTA_SHARED_DATA", REPO.parent / "shared" / "data"))
SHARED_NCBI = SHARED_DATA / "ner" / "NCBI-disease"
SHARED_GAD = SHARED_DATA / "re" / "GAD"
SAMPLE_TASKS = REPO / "sample" / "tasks"
POSITIONS = 128
MODEL = [
    "--arch", "roberta", "--encoder-layers", "4", "--encoder-embed-dim", "256",
    "--encoder-ffn-embed-dim", "1024", "--encoder-attention-heads", "4",
    "--max-positions", str(POSITIONS),
]  # fmt: skip
SEED = 1


def default_tasks() -> dict[str, Path]:
    """The issue's two kinds on the shared releases (NCBI-disease, BLURB's GAD split), each the
    sample's task where the shared data dir lacks it."""
    ner = SHARED_NCBI if SHARED_NCBI.is_dir() else SAMPLE_TASKS / "ncbi-disease"
    if SHARED_GAD.is_dir():
        return {"ncbi-disease": ner, "gad-blurb": SHARED_GAD}
    return {"ncbi-disease": ner, "chemprot": SAMPLE_TASKS / "chemprot"}


def chosen_tasks(task_options: list[str]) -> dict[str, Path]:
    """The --task NAME=DIR options as {name: release folder}; none given: default_tasks()."""
    if not task_options:
        return default_tasks()
    return {name: Path(folder) for name, folder in (item.split("=", 1) for item in task_options)}


def pretrained_model(
    tasks: dict[str, Path], root: Path, model: list = MODEL, positions: int = POSITIONS
) -> tuple[Path, Path, Path]:
    """(vocabulary dir, data root with each task converted, pretrained checkpoint) of the model of
    fairseq options `model` (scripts/benchmark_packing.py gives roberta-base's)."""
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.tasks.registry import get_task
    from preprocess.learn_vocab import learn_vocabulary

    corpus = root / "corpus.txt"
    corpus.write_text(
        "".join(
            path.read_text()
            for folder in tasks.values()
            for path in sorted(folder.rglob("*"))  # GAD's release: one subfolder a fold
            if path.is_file()
        )
    )
    learn_vocabulary("gpt2", [corpus], root / "vocab", vocab_size=2000)
    data_root = root / "finetune-bin"
    for task, folder in tasks.items():
        convert_task(
            get_task(task), folder, root / "vocab", data_root / task, max_positions=positions
        )
    # batch 2: the sample's train split is 3 blocks at 512 tokens, and fairseq's batching drops
    # the last batch unless its size is a multiple of --required-batch-size-multiple (8): at
    # batch 8 the only batch, at 2 the last one of a single block
    done = subprocess.run(
        [sys.executable, "-m", "fairseq_cli.train", data_root / next(iter(tasks)) / "input0",
         "--user-dir", REPO / "user_dir", "--cpu", "--num-workers", "0", "--task", "masked_lm",
         "--criterion", "masked_lm", *model, "--tokens-per-sample", str(positions),
         "--optimizer", "adam", "--lr", "1e-4", "--batch-size", "2", "--max-update", "2",
         "--disable-validation", "--seed", str(SEED), "--save-dir", root / "pretrained"],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the masked-LM updates of the model failed: {done.stderr[-3000:]}")
    return root / "vocab", data_root, root / "pretrained" / "checkpoint_last.pt"


def run_overrides(task: str, data_root: Path, args) -> list[str]:
    """Our run's Hydra overrides: the registry's hyperparameters, --updates updates (enough epochs
    for them), validation once, at the end: fairseq's validation and checkpoint at each epoch's
    end come every max_epoch + 1 epochs, so never; batches of similar lengths where the Trainer
    groups by length."""
    from bio_roberta.finetuning.command_line import train_examples
    from bio_roberta.tasks.registry import get_task

    batch_size = args.batch_size or get_task(task).hparams.batch_size
    per_epoch = -(-train_examples(data_root / task) // batch_size)
    epochs = -(-args.updates // per_epoch)
    return [
        f"hparams.batch_size={batch_size}",
        f"hparams.max_epoch={epochs}",
        f"max_update={args.updates}",
        f"hparams.validate_interval_updates={args.updates}",
        f"extra_args=[--validate-interval,{epochs + 1},--save-interval,{epochs + 1}"
        + (",--group-by-length]" if args.trainer_sampling == "group_by_length" else "]"),
        f"log_interval={args.log_interval}",
        "cpu=true",
        *([f"optimization.clip_norm={args.clip_norm}"] if args.clip_norm is not None else []),
    ]


def converted_examples(task: str, cfg, data_root: Path, path: Path) -> list[str]:
    """Write each split's examples as our fairseq task reads them (token ids, <s> first; class
    ids, -100 where a position has no label) to `path`; the label of each class id (the label
    dictionary's symbols)."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from bio_roberta.finetuning.command_line import (
        PretrainedModel,
        fairseq_options,
        hyperparameters,
    )
    from bio_roberta.tasks.registry import get_task

    spec = get_task(task)
    command_line = fairseq_options(
        cfg, spec, hyperparameters(spec, cfg.hparams), data_root / task, path.parent, None,
        PretrainedModel.read(cfg),
    )  # fmt: skip
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=command_line)
    fairseq_task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
    splits = {}
    for split in ("train", "valid", "test"):
        fairseq_task.load_dataset(split)
        dataset = fairseq_task.dataset(split)
        examples = []
        for index in range(len(dataset)):
            item = dataset[index]
            target = item["target"]
            examples.append(
                {
                    "input_ids": item["net_input.src_tokens"].tolist(),
                    "labels": [t if t >= 0 else -100 for t in target.tolist()]
                    if target.numel() > 1 or spec.is_sequence_labelling
                    else int(target),
                }
            )
        splits[split] = examples
    torch.save(splits, path)
    labels = fairseq_task.label_dictionary
    return labels.symbols[labels.nspecial : len(labels)]


def run_ours(task: str, pretrained: Path, data_root: Path, results: Path, overrides, env, args):
    """`bio-roberta finetune` of the code on env's PYTHONPATH (this tree's, or the baseline's: as
    `python -m bio_roberta`, whose entry is that tree's own)."""
    run = timed(
        [sys.executable, "-m", "bio_roberta", "finetune", "--task", task, "--seed",
         str(SEED), "--pretrained", pretrained, "--data-root", data_root, "--results", results,
         *overrides],
        env, "bio-roberta finetune",
    )  # fmt: skip
    (path,) = results.rglob("result.json")
    record = json.loads(path.read_text())
    per_update, _ = loop_seconds_per_update(Path(record["log"]), args.log_interval)
    timings = record["timings"]
    return {
        **run, "per_update": per_update, "score": record["test_score"],
        "evaluation": timings["valid_seconds"] + timings["predict_seconds"],
        "clip_norm": record["config"]["optimization"]["clip_norm"],
    }  # fmt: skip


def run_transformers(settings: Path, env, spec, labels: list[str]) -> dict:
    """A Trainer run (transformers_run, in a process of its own), its test predictions scored
    with the registry's metric of the task, as ours are."""
    run = timed([sys.executable, __file__, "--transformers-run", settings], env, "the Trainer run")
    result = json.loads((settings.parent / "result.json").read_text())
    gold, predicted = (
        [[labels[i] for i in example] if spec.is_sequence_labelling else labels[example]
         for example in result[key]]
        for key in ("gold", "predicted")
    )  # fmt: skip
    return {
        **run, "per_update": result["per_update"], "score": spec.score(gold, predicted),
        "evaluation": result["evaluation"],
    }  # fmt: skip


def compare(
    task: str, data_root: Path, pretrained: Path, root: Path, args, baseline: Path | None
) -> dict:
    """The routes on one task (ours, the baseline's if given, the Trainer), alternating --repeats
    times."""
    import dataclasses

    from bio_roberta.finetuning.command_line import hyperparameters
    from bio_roberta.finetuning.sweep import compose_config
    from bio_roberta.tasks.registry import get_task

    spec = get_task(task)
    overrides = run_overrides(task, data_root, args)
    cfg = compose_config(
        [f"task_name={task}", f"seed={SEED}", f"pretrained={pretrained}",
         f"data_root={data_root}", f"results_dir={root / 'results'}", *overrides]
    )  # fmt: skip
    hp = hyperparameters(spec, cfg.hparams)
    work = root / task
    work.mkdir()
    labels = converted_examples(task, cfg, data_root, work / "examples.pt")
    # gradients clipped alike: our run's --clip-norm is the Trainer's max_grad_norm
    peer = trainer_configuration(args.trainer_sampling, float(cfg.optimization["clip_norm"]))
    settings = {
        "model": str(root / "hf"), "data": str(work / "examples.pt"), "num_labels": len(labels),
        "token_level": spec.is_sequence_labelling, "seed": SEED,
        "updates": args.updates, "log_interval": args.log_interval,
        **{key: value for key, value in dataclasses.asdict(hp).items() if key != "patience"},
        "adam_betas": list(ast.literal_eval(cfg.optimization["adam_betas"])),
        "adam_eps": float(cfg.optimization["adam_eps"]),
        "trainer_configuration": peer,
    }  # fmt: skip
    env = dict(os.environ)
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    code = {"ours": source_path(REPO, env)}
    if baseline is not None:
        code["baseline"] = source_path(baseline, env)
    runs = {route: [] for route in [*code, "transformers"]}
    for repeat in range(args.repeats):
        for route in runs:
            load = round(os.getloadavg()[0], 2)
            out = work / f"{route}{repeat}"
            if route in code:
                run = run_ours(task, pretrained, data_root, out, overrides, code[route], args)
            else:
                out.mkdir()
                path = out / "settings.json"
                path.write_text(json.dumps({**settings, "out": str(out / "trainer")}))
                run = run_transformers(path, env, spec, labels)
            runs[route].append({**run, "load": load})
            print(f"{task} {route} run {repeat + 1}/{args.repeats}: {json.dumps(run)}, load "
                  f"{load}", file=sys.stderr, flush=True)  # fmt: skip
    clipped = {float(run["clip_norm"]) for route in code for run in runs[route]}
    if clipped != {peer["max_grad_norm"]}:
        raise SystemExit(f"{task}: our runs' records say clip_norm {clipped}, the Trainer's is "
                         f"{peer['max_grad_norm']}: gradients were not clipped alike")  # fmt: skip
    routes = {route: summary(found, hp.batch_size, args.updates) for route, found in runs.items()}
    return {
        "batch_size": hp.batch_size,
        "updates": args.updates,
        "trainer_configuration": peer,
        "our_extra_args": list(cfg.extra_args),
        **routes,
        **{
            f"ours_over_{other}": ratios(routes["ours"], routes[other])
            for other in ("transformers", "baseline")
            if other in routes
        },
    }


def source_path(tree: Path, env: dict) -> dict:
    """env with `tree`'s code first on the Python path (bio-roberta then runs that tree's)."""
    return {**env, "PYTHONPATH": os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])}


def baseline_tree(revision: str, root: Path) -> tuple[Path, str]:
    """(this repository's `revision`, extracted under root; its commit hash)."""
    found = subprocess.run(
        ["git", "-C", REPO, "rev-parse", "--verify", f"{revision}^{{commit}}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if found.returncode != 0:
        raise SystemExit(f"--baseline {revision}: not a revision of {REPO}: {found.stderr}")
    tree = root / "baseline"
    tree.mkdir()
    archive = subprocess.Popen(["git", "-C", REPO, "archive", found.stdout.strip()],
                               stdout=subprocess.PIPE)  # fmt: skip
    subprocess.run(["tar", "-x", "-C", tree], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"--baseline {revision}: git archive failed")
    return tree, found.stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--batch-size", type=int, help="default: each task's registry batch")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS of both routes' runs")
    parser.add_argument(
        "--trainer-sampling", choices=SAMPLING, default=SAMPLING[0], help="the Trainer's "
        "train_sampling_strategy (default: group_by_length, batches of similar lengths)",
    )  # fmt: skip
    parser.add_argument(
        "--clip-norm", type=float, help="gradient clipping max-norm of both routes (fairseq's "
        "--clip-norm, the Trainer's max_grad_norm; 0: none); default: the sweep config's",
    )  # fmt: skip
    parser.add_argument(
        "--task", action="append", metavar="NAME=DIR", help="a registry task and its release "
        "folder, instead of the default two (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", metavar="REV", help="also run `bio-roberta finetune` of this repository's "
        "revision REV (e.g. main), alternating with the others",
    )  # fmt: skip
    parser.add_argument("--transformers-run", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.transformers_run:
        return transformers_run(args.transformers_run)
    if args.updates % args.log_interval or args.updates <= args.log_interval:
        parser.error("--updates must be a multiple of --log-interval, above it")
    if importlib.util.find_spec("accelerate") is None:
        parser.error(NEEDS_ACCELERATE)
    import torch
    import transformers

    from bio_roberta.hf.export_hf import export
    from bio_roberta.tasks.classification_tables import SINGLE_LABELS
    from bio_roberta.tasks.prediction_files import TAGGED_WORDS
    from bio_roberta.tasks.registry import get_task

    tasks = chosen_tasks(args.task)
    for task in tasks:
        try:
            predictions = get_task(task).task_kind.predictions
        except KeyError as error:
            parser.error(f"--task {task}: {error.args[0]}")
        if predictions not in (TAGGED_WORDS, SINGLE_LABELS):
            parser.error(
                f"--task {task}: the Trainer route takes NER and single-label sentence "
                "classification tasks only"
            )
    result = {
        "device": "cpu",
        "threads": args.threads or torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "model": "roberta 4 layers x 256, 4 heads, 128 positions",
        "repeats": args.repeats,
        "data": {task: str(folder) for task, folder in tasks.items()},
        "commit": commit(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        baseline = None
        if args.baseline:
            baseline, result["baseline_commit"] = baseline_tree(args.baseline, root)
            tasks_code = (baseline / "user_dir" / "tasks" / "_finetune_bin.py").read_text()
            if args.trainer_sampling == "group_by_length" and "group_by_length" not in tasks_code:
                parser.error(f"--baseline {args.baseline} has no --group-by-length: compare it "
                             "with --trainer-sampling random")  # fmt: skip
        vocab, data_root, pretrained = pretrained_model(tasks, root)
        export(pretrained, root / "hf", vocab)
        for task in tasks:
            result[task] = compare(task, data_root, pretrained, root, args, baseline)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
