"""Plot loss and learning rate against updates of pretraining / distillation runs from the
TensorBoard events fairseq wrote beside their checkpoints (<save dir>/tensorboard), one panel per
run, to a PNG."""

HELP = "plot training loss and learning rate against updates of training runs (PNG)"


def add_arguments(parser):
    parser.add_argument(
        "runs", nargs="+", help="save dirs (holding tensorboard/) or TensorBoard log dirs"
    )
    parser.add_argument("--out", required=True, help="PNG file to write")


def run(args):
    from pathlib import Path

    from bio_roberta.errors import UsageError
    from bio_roberta.report.figures import figure_png
    from bio_roberta.report.tensorboard_curves import curves_figure
    from bio_roberta_core.provenance import atomic_write_bytes

    if Path(args.out).is_dir():
        raise UsageError(
            f"--out {args.out}: a directory; give the PNG file to write, e.g. "
            f"{Path(args.out) / 'training_curves.png'}"
        )
    atomic_write_bytes(args.out, figure_png(curves_figure(args.runs)))
    print(f"training curves of {len(args.runs)} runs -> {args.out}")
    return 0
