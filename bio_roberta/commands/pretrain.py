"""Pretrain a RoBERTa on one or more data-bins with the paper's recipe (configs/pretrain/base.yaml,
or a recipe of it): compose the config, plan the per-process micro-batch and update_freq for the
8,192-sequence batch, and start fairseq-hydra-train with the plugin, under torchrun when several
processes take part. scripts/pretrain.sh DATA SAVE [RECIPE] [overrides...] runs this command."""

from bio_roberta.pretraining.launch import CONFIGS, add_launch_arguments

HELP = "pretrain a RoBERTa with fairseq: plan the batch for the GPUs at hand, then launch"


def add_arguments(parser):
    parser.add_argument("data", metavar="DATA", help="data-bin dir, or several joined with ':'")
    parser.add_argument("save", metavar="SAVE", help="checkpoint dir (resumes from its last)")
    add_launch_arguments(parser, CONFIGS / "pretrain", config_dir_variable="CONFIG_DIR")


def run(args):
    import sys

    from bio_roberta.pretraining.launch import continued_shape, launch

    # a model of ours continued (checkpoint.finetune_from_model): the shape its weights have
    shape, continuing = continued_shape(args.overrides)
    if continuing:
        print(f"bio-roberta pretrain: {continuing}", file=sys.stderr, flush=True)
    return launch(args, tuple(shape))
