"""Convert a benchmark task's source files into finetune-bin/<task> (fairseq inputs) with a model's
vocabulary.

Folded tasks (GAD, EU-ADR) are converted fold by fold into <out>/fold<k>/; every fold must be
present. An input longer than the positions takes its kind's route unless --long-inputs windows
(bio_roberta/tasks/truncation.py); the manifest records the route, which fine-tuning, the
predictions and `bio-roberta predict` follow.
"""

HELP = "convert a task's source files into fairseq fine-tuning inputs (finetune-bin/<task>)"


def add_arguments(parser):
    from bio_roberta.commands._task_files import add_task_file_argument
    from bio_roberta.conversion.finetune_bin import MAX_UNKNOWN_RATE
    from bio_roberta.tasks.registry import TASKS
    from bio_roberta.tasks.truncation import PIECES, TRUNCATE, WINDOWS
    from bio_roberta_core.windows import POOLINGS

    parser.add_argument(
        "task",
        metavar="TASK",
        help=f"registry name of the task: {', '.join(TASKS)}; docs/data.md says where to get "
        "each task's files and which layout --data holds; or the name of a --task-file's task",
    )
    add_task_file_argument(parser)
    parser.add_argument(
        "--data",
        default=None,
        help="folder holding the task's source files (a --task-file's task: the folder its "
        "files are named from, default the task file's)",
    )
    parser.add_argument(
        "--vocab",
        required=True,
        help="the model's vocabulary dir (BPE files, dict.txt, manifest.json)",
    )
    parser.add_argument("--out", required=True, help="output dir, e.g. finetune-bin/TASK")
    parser.add_argument(
        "--scheme", default="BIO", choices=("BIO", "IO", "BIOUL"), help="tagging scheme (NER tasks)"
    )
    parser.add_argument(
        "--max-positions",
        type=int,
        default=None,
        help="model positions incl. <s> and </s>, at most the model's own (default: the "
        "registry's, 512, or the model's where it has fewer: --pretrained, an imported "
        "vocabulary's)",
    )
    parser.add_argument(
        "--pretrained",
        default=None,
        metavar="CHECKPOINT",
        help="the checkpoint the data is for (the one `finetune --pretrained` takes): its "
        "positions bound --max-positions and are its default where fewer than the registry's",
    )
    parser.add_argument(
        "--long-inputs",
        choices=(TRUNCATE, PIECES, WINDOWS),
        default=None,
        help=f"an input longer than the positions: {TRUNCATE} (classification) or {PIECES} "
        f"(tagging: consecutive pieces), each kind's default as the papers did, or {WINDOWS}: "
        "overlapping windows, all trained on, merged back per document for predictions",
    )
    parser.add_argument(
        "--window-stride",
        type=int,
        default=None,
        help="windows: tokens from one window's start to the next (default: half a window)",
    )
    parser.add_argument(
        "--window-pooling",
        choices=POOLINGS,
        default=None,
        help="windows of a classification task: the mean or max of the windows' logits "
        f"(default {POOLINGS[0]}); a tagged word is taken from the window where it has the "
        "most context",
    )
    parser.add_argument(
        "--max-unknown-rate",
        type=float,
        default=MAX_UNKNOWN_RATE,
        help="most of a split's tokens that may be <unk> before the conversion is refused as "
        "done with a vocabulary not the model's (default %(default)s; 1 allows any)",
    )


def run(args):
    import json

    from bio_roberta.commands._task_files import declare_task_files
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.errors import UsageError
    from bio_roberta.tasks.registry import find_task, task_names
    from bio_roberta.tasks.truncation import LongInputs

    declare_task_files(args)
    spec = find_task(args.task)
    if spec is None:
        raise UsageError(
            f"unknown task {args.task!r}; known: {', '.join(task_names())}, or a task of your "
            "own: --task-file FILE (docs/own_tasks.md)"
        )
    if args.data is None and spec.declaration is None:
        raise UsageError(f"{args.task}: give --data, the folder holding its source files")
    options = (args.long_inputs, args.window_stride, args.window_pooling)
    long_inputs = (
        LongInputs(args.long_inputs or spec.task_kind.long_inputs, *options[1:])
        if any(option is not None for option in options)
        else None
    )
    manifests = convert_task(
        spec,
        args.data or spec.declaration.data_dir,
        args.vocab,
        args.out,
        scheme=args.scheme,
        max_positions=args.max_positions,
        max_unknown_rate=args.max_unknown_rate,
        long_inputs=long_inputs,
        pretrained=args.pretrained,
    )
    for manifest in manifests:
        where = f" fold {manifest['fold']}" if manifest["fold"] else ""
        print(f"{args.task}{where}: {json.dumps(manifest['counts'])}")
    return 0
