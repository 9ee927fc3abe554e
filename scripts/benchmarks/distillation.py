"""A distillation step (user_dir's distillation task and criterion, with the align term) against
what it adds up: a student masked-LM step plus a teacher forward on the masked positions; and
what scripts/benchmark_distill.py measures of its models: validation masked-LM loss on fixed masks,
inference speed of teacher and student, the teacher's logits computed in the step or cached."""

import itertools
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.cpu_shape import BATCH, MODEL_ARGS, SEQ
from benchmarks.fairseq_route import fairseq_args


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


def distillation_setup(
    databin, teacher, steps, model_args, batch, seq, cpu, criterion_args=("--alpha-cos", "1.0")
):
    """What fairseq-train builds for a distillation run and for the student's own masked-LM run:
    (config, task, student, distillation criterion, masked-LM criterion, optimizer over the
    student and the criterion's projection, STEPS batches). On a GPU in bf16 with fairseq's
    FP16Optimizer, as fairseq-train --bf16 runs it."""
    from fairseq import criterions, optim, options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import user_dir  # noqa: F401
    from user_dir.precision import configure_precision

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
            *criterion_args,
        ],
    )
    cfg = convert_namespace_to_omegaconf(args)
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
    return cfg, task, student, distill, mlm, optimizer, batches


def measure_distillation(
    databin,
    teacher,
    steps,
    model_args=MODEL_ARGS,
    batch=BATCH,
    seq=SEQ,
    cpu=True,
    criterion_args=("--alpha-cos", "1.0"),
):
    """Median seconds of: a student MLM step, a teacher forward on the masked positions, a
    distillation step (with the align term, or the criterion options given); their ratio is the
    median over rounds of distill / (student + teacher)."""
    import torch

    from user_dir.tasks.corpora_masked_lm import lm_inputs

    cfg, task, student, distill, mlm, optimizer, batches = distillation_setup(
        databin, teacher, steps, model_args, batch, seq, cpu, criterion_args
    )

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
        "criterion": {
            key: cfg.criterion[key]
            for key in ("alpha_cos", "alpha_hidden", "alpha_attention")
            if key in cfg.criterion
        },
        "student_mlm_step_s": round(student_s, 4),
        "teacher_forward_s": round(teacher_s, 4),
        "distill_step_s": round(distill_s, 4),
        "distill_over_student_plus_teacher": round(statistics.median(ratios), 3),
        "target": 1.1,
    }


def masked_lm_task(databin, seq, seed=1):
    """The corpora_masked_lm task on databin, its valid split loaded (masks fixed by `seed`)."""
    import user_dir  # noqa: F401
    from user_dir.tasks.corpora_masked_lm import CorporaMaskedLMConfig, CorporaMaskedLMTask

    task = CorporaMaskedLMTask.setup_task(
        CorporaMaskedLMConfig(data=str(databin), tokens_per_sample=seq, seed=seed)
    )
    task.load_dataset("valid")
    return task


def load_model(checkpoint, task):
    """A checkpoint's model (a teacher's, a student's) for inference, as fairseq loads it."""
    from fairseq import checkpoint_utils

    (model,), _ = checkpoint_utils.load_model_ensemble([str(checkpoint)], task=task)
    return model.eval()


def valid_batches(task, batch):
    """The valid split's batches of `batch` sequences, in order."""
    iterator = task.get_batch_iterator(task.dataset("valid"), max_sentences=batch, seed=1)
    return list(iterator.next_epoch_itr(shuffle=False))


def validation_bits(checkpoints: dict, databin, seq, batch) -> dict:
    """Masked-LM cross-entropy in bits per masked token of each checkpoint on the valid split, the
    same masks for all (seed 1): {name: bits}."""
    import math

    import torch
    import torch.nn.functional as F

    task = masked_lm_task(databin, seq)
    batches = valid_batches(task, batch)
    pad = task.source_dictionary.pad()
    bits = {}
    for name, checkpoint in checkpoints.items():
        model = load_model(checkpoint, task)
        total, count = 0.0, 0
        with torch.no_grad():
            for sample in batches:
                masked = sample["target"].ne(pad)
                logits, _ = model(sample["net_input"]["src_tokens"], masked_tokens=masked)
                total += F.cross_entropy(logits.float(), sample["target"][masked], reduction="sum")
                count += int(masked.sum())
        bits[name] = round(float(total) / count / math.log(2), 4)
    return bits


def alternate(steps: dict, rounds: int) -> dict:
    """Seconds of each step, run in turn `rounds` times, the order rotated every round so that
    the load of other processes falls on all alike: {name: [seconds]}."""
    names = list(steps)
    seconds = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            steps[name]()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def inference_speed(teacher, student, databin, seq, batch, rounds=30) -> dict:
    """Encoder tokens/s of teacher and student on the same valid batch (features, no LM head),
    measured alternately; the speed-up is the median over rounds of teacher s / student s."""
    import torch

    task = masked_lm_task(databin, seq)
    sample = valid_batches(task, batch)[0]
    tokens = sample["net_input"]["src_tokens"]
    real = int(tokens.ne(task.source_dictionary.pad()).sum())
    models = {"teacher": load_model(teacher, task), "student": load_model(student, task)}

    def forward(model):
        def run():
            with torch.no_grad():
                model(tokens, features_only=True)

        return run

    seconds = alternate({name: forward(model) for name, model in models.items()}, rounds)
    timed = {name: values[3:] for name, values in seconds.items()}  # the first rounds warm up
    return {
        "batch": list(tokens.shape),
        "real_tokens": real,
        **{
            f"{name}_tokens_per_s": round(real / statistics.median(values), 1)
            for name, values in timed.items()
        },
        "student_speedup": round(
            statistics.median(t / s for t, s in zip(timed["teacher"], timed["student"])), 3
        ),
    }


def teacher_logits_routes(teacher, databin, seq, batch, cache_dir: Path, steps=20) -> dict:
    """The teacher's logits at a batch's masked positions, two ways: computed in the training
    step (the teacher's forward, as the criterion runs it), or written to a cache once (that
    forward, then float16 rows of the vocabulary, one per masked token, into a file on disk) and
    read back in the step through np.memmap (the page cache warm: the cache's best case).
    Seconds per batch of each part, computing and reading measured alternately; one run's total
    either way (a cache holds one epoch's masks: dynamic masking draws new ones every epoch);
    and the cache's size."""
    import numpy as np
    import torch

    task = masked_lm_task(databin, seq)
    model = load_model(teacher, task)
    pad = task.source_dictionary.pad()
    batches = valid_batches(task, batch)[:steps]
    masks = [sample["target"].ne(pad) for sample in batches]
    vocab = len(task.source_dictionary)
    rows = [int(mask.sum()) for mask in masks]
    offsets = np.cumsum([0, *rows])
    path = cache_dir / "teacher_logits.npy"
    cache = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(sum(rows), vocab))
    write_seconds = []
    with torch.no_grad():
        for sample, mask, start, end in zip(batches, masks, offsets, offsets[1:]):
            began = time.perf_counter()
            logits, _ = model(sample["net_input"]["src_tokens"], masked_tokens=mask)
            cache[start:end] = logits.numpy().astype(np.float16)
            write_seconds.append(time.perf_counter() - began)
    began = time.perf_counter()
    cache.flush()
    flush_seconds = time.perf_counter() - began
    del cache
    stored = np.load(path, mmap_mode="r")
    order = {name: itertools.cycle(range(len(batches))) for name in ("computed", "cached")}

    def computed():
        index = next(order["computed"])
        with torch.no_grad():
            model(batches[index]["net_input"]["src_tokens"], masked_tokens=masks[index])

    def cached():
        index = next(order["cached"])
        torch.from_numpy(np.array(stored[offsets[index] : offsets[index + 1]])).float()

    seconds = alternate({"computed": computed, "cached": cached}, 3 * len(batches))
    computed_s, read_s = (statistics.median(seconds[name][3:]) for name in seconds)
    write_s = statistics.median(write_seconds[1:]) + flush_seconds / len(batches)
    tokens = sum(int(sample["ntokens"]) for sample in batches)
    one_run = {"computed": computed_s, "cached": write_s + read_s}
    return {
        "computed_in_the_step_s": round(computed_s, 5),
        "cache_write_s": round(write_s, 5),
        "read_from_cache_s": round(read_s, 5),
        "one_run_per_batch_s": {name: round(value, 5) for name, value in one_run.items()},
        "faster_for_one_run": min(one_run, key=one_run.get),
        "runs_on_the_same_batches_for_the_cache_to_pay": int(write_s // (computed_s - read_s)) + 1
        if computed_s > read_s
        else None,
        "cache_bytes_per_training_token": round(float(offsets[-1]) * vocab * 2 / tokens, 1),
        "vocabulary": vocab,
    }
