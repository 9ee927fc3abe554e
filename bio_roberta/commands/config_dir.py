"""Print where the Hydra configs installed with this package are: the --config-dir of
fairseq-hydra-train (the pretrain and distill configs) and the sweep's (finetune). An installed
package has no checkout whose configs dir links there: this works from any directory."""

HELP = "print the dir of the installed Hydra configs (for fairseq-hydra-train --config-dir)"
STAGES = ("pretrain", "distill", "finetune")


def add_arguments(parser):
    parser.add_argument(
        "stage",
        nargs="?",
        choices=STAGES,
        help="the configs of one stage (default: the dir holding them all)",
    )


def run(args):
    from bio_roberta.pretraining.launch import CONFIGS

    print(CONFIGS / args.stage if args.stage else CONFIGS)
    return 0
