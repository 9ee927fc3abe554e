"""A distillation step (user_dir's distillation task and criterion, with the align term) against
what it adds up: a student masked-LM step plus a teacher forward on the masked positions."""

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


def distillation_setup(databin, teacher, steps, model_args, batch, seq, cpu):
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
            "--alpha-cos",
            "1.0",
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
    databin, teacher, steps, model_args=MODEL_ARGS, batch=BATCH, seq=SEQ, cpu=True
):
    """Median seconds of: a student MLM step, a teacher forward on the masked positions, a
    distillation step (with the align term); their ratio is the median over rounds of distill /
    (student + teacher)."""
    import torch

    from user_dir.tasks.corpora_masked_lm import lm_inputs

    cfg, task, student, distill, mlm, optimizer, batches = distillation_setup(
        databin, teacher, steps, model_args, batch, seq, cpu
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
        "alpha_cos": cfg.criterion.alpha_cos,
        "student_mlm_step_s": round(student_s, 4),
        "teacher_forward_s": round(teacher_s, 4),
        "distill_step_s": round(distill_s, 4),
        "distill_over_student_plus_teacher": round(statistics.median(ratios), 3),
        "target": 1.1,
    }
