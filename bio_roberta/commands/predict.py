"""Predict with a fine-tuned model on new text: MODEL is a fine-tuning run dir
(RESULTS/<task>/seed<seed>), its checkpoint file, or an export-hf dir whose checkpoint is still
there. --input is plain text (one example a line), JSON lines (--text-field, --text-pair-field)
or a dir in the task's own file layout (its --split is read). One JSON line per input comes out,
keyed by its line number (or the release id), with entities and their character offsets (NER),
the label and probabilities (classification), the labels over 0.5 (multi-label) or the score
(regression); docs/predict.md gives the records."""

HELP = "predict with a fine-tuned model on text, JSON lines or a task's files; JSON lines out"


def add_arguments(parser):
    from bio_roberta.commands._task_files import add_task_file_argument

    parser.add_argument(
        "model", metavar="MODEL", help="fine-tuning run dir, its checkpoint, or export-hf dir"
    )
    parser.add_argument("--input", required=True, help="text file, .jsonl file, or task dir")
    parser.add_argument(
        "--layout",
        choices=("auto", "text", "jsonl", "task"),
        default="auto",
        help="how --input is read; auto: a dir is the task's layout, .jsonl/.json JSON lines, "
        "anything else text",
    )
    parser.add_argument("--out", default=None, help="output JSON lines (default: stdout)")
    parser.add_argument("--batch-size", type=int, default=32, help="rows per forward pass")
    parser.add_argument("--text-field", default="text", help="JSON lines: the text's field")
    parser.add_argument(
        "--text-pair-field", default="text_pair", help="JSON lines: the second text's field"
    )
    add_task_file_argument(parser)
    parser.add_argument("--split", default="test", help="task layout: the split to read")


def run(args):
    import json
    import logging
    import sys
    from pathlib import Path

    from bio_roberta.commands._task_files import declare_task_files
    from bio_roberta.prediction.input_files import count_records, read_inputs
    from bio_roberta.prediction.predictor import load
    from bio_roberta_core.provenance import atomic_write_text

    declare_task_files(args)
    predictor = load(args.model)
    inputs = read_inputs(
        Path(args.input),
        predictor.spec,
        args.layout,
        args.text_field,
        args.text_pair_field,
        args.split,
    )
    records = predictor.predict(inputs.inputs, args.batch_size, names=inputs.names)
    lines = "".join(
        json.dumps({**key, **record}, ensure_ascii=False) + "\n"
        for key, record in zip(inputs.keys, records)
    )
    if args.out:
        atomic_write_text(Path(args.out), lines)
    else:
        sys.stdout.write(lines)
    logging.getLogger(__name__).info(
        "%s: %s -> %s", predictor.spec.name, dict(count_records(records)), args.out or "stdout"
    )
    return 0
