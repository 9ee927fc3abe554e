"""Distil a teacher into a student (paper §7, configs/distill/base.yaml): the student starts from
its checkpoint and learns from the frozen teacher's logits (5·MLM + 2·T²·KL at T = 2; the align
recipe adds the cosine loss of the last-layer states). Planned and launched as `bio-roberta
pretrain` is. scripts/distill.sh DATA SAVE TEACHER STUDENT [RECIPE] [overrides...] runs this
command."""

from bio_roberta.pretraining.launch import CONFIGS, add_launch_arguments

HELP = "distil a teacher RoBERTa into a student with fairseq: plan the batch, then launch"


def add_arguments(parser):
    parser.add_argument("data", metavar="DATA", help="data-bin dir, or several joined with ':'")
    parser.add_argument("save", metavar="SAVE", help="checkpoint dir (resumes from its last)")
    parser.add_argument("teacher", metavar="TEACHER", help="the teacher's checkpoint (frozen)")
    parser.add_argument("student", metavar="STUDENT", help="the checkpoint the student starts from")
    add_launch_arguments(parser, CONFIGS / "distill")


def run(args):
    from bio_roberta.pretraining.launch import launch

    return launch(
        args,
        (f"task.teacher_path={args.teacher}", f"checkpoint.finetune_from_model={args.student}"),
    )
