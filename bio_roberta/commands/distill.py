"""Distil a teacher into a student (paper §7, configs/distill/base.yaml): the student starts from
its checkpoint, or, with the student6 and student4 recipes (task.student_layers), from the
teacher's own layers (DistilBERT), and learns from the frozen teacher's logits (5·MLM + 2·T²·KL at
T = 2; the align recipe adds the cosine loss of the last-layer states, hidden and minilm per-layer
terms). Planned and launched as `bio-roberta pretrain` is. scripts/distill.sh DATA SAVE TEACHER
STUDENT [RECIPE] [overrides...] runs this command."""

from bio_roberta.pretraining.launch import CONFIGS, add_launch_arguments

HELP = "distil a teacher RoBERTa into a student with fairseq: plan the batch, then launch"


def add_arguments(parser):
    parser.add_argument("data", metavar="DATA", help="data-bin dir, or several joined with ':'")
    parser.add_argument("save", metavar="SAVE", help="checkpoint dir (resumes from its last)")
    parser.add_argument("teacher", metavar="TEACHER", help="the teacher's checkpoint (frozen)")
    parser.add_argument(
        "student",
        metavar="STUDENT",
        nargs="?",
        help="the checkpoint the student starts from; none when the recipe builds the student "
        "from the teacher's layers (student6, student4, task.student_layers)",
    )
    add_launch_arguments(parser, CONFIGS / "distill")


def student_and_overrides(args) -> tuple[str | None, list[str]]:
    """(STUDENT, the overrides): argparse gives a positional after TEACHER to the overrides even
    when it is the student; a Hydra override has '=' (or starts with '~'), a checkpoint not."""
    given = [item for item in (args.student, *args.overrides) if item is not None]
    if given and "=" not in given[0] and not given[0].startswith("~"):
        return given[0], given[1:]
    return None, given


def run(args):
    from bio_roberta.pretraining.launch import launch

    student, args.overrides = student_and_overrides(args)
    start = () if student is None else (f"checkpoint.finetune_from_model={student}",)
    return launch(args, (f"task.teacher_path={args.teacher}", *start))
