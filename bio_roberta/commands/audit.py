"""Audit a checkpoint (pretrained or fine-tuned) for memorised training text before it is shared:
the exposure of the canaries its text dir holds (parse-mimic/parse-text --canaries), membership
inference on its training notes vs held-out notes (loss attack; likelihood-ratio attack with
--reference) and, with --names, name->condition probes. Writes PREFIX.json and PREFIX.md and exits
1 when the verdict is fail. See bio_roberta/audit/record.py."""

HELP = "memorisation audit of a checkpoint: canaries, membership inference, name probes"


def add_arguments(parser):
    from bio_roberta.audit.measurements import AuditOptions
    from bio_roberta.audit.verdict import Thresholds
    from bio_roberta.commands._arguments import add_field_options

    options, thresholds = AuditOptions(), Thresholds()
    parser.add_argument(
        "checkpoint",
        metavar="CHECKPOINT",
        help="the checkpoint: pretrained, or fine-tuned (read through the masked-LM head it kept)",
    )
    parser.add_argument(
        "--vocab", required=True, metavar="VOCAB_DIR", help="the vocabulary dir of its data-bin"
    )
    parser.add_argument(
        "--text-dir",
        required=True,
        metavar="TEXT_DIR",
        help="the text dir it was trained on: members are its train notes, non-members its valid "
        "notes, canaries its canaries.jsonl",
    )
    parser.add_argument(
        "--non-members",
        metavar="TEXT_DIR",
        help="held-out notes of the same source (every split) instead of the valid split of "
        "--text-dir",
    )
    parser.add_argument(
        "--reference",
        metavar="CHECKPOINT",
        help="a model trained on other data (e.g. PubMed only), same vocabulary: adds the "
        "likelihood-ratio attack",
    )
    parser.add_argument(
        "--names", metavar="FILE", help="name probes: a file of `name,condition` lines"
    )
    add_field_options(
        parser,
        options,
        {
            "--notes": "members and non-members each, at most",
            "--candidates": "candidate secrets ranked against each canary's (exposure measurable "
            "up to log2(K+1) bits)",
            "--seed": "note sample, masking and candidates",
            "--min-k-percent": "the loss attack scores a note by the mean log-probability of this "
            "percent of its tokens, its least likely (Min-K%% Prob; 100: minus the note's loss)",
            "--batch-size": "rows per forward",
        },
    )
    parser.add_argument(
        "--out",
        metavar="PREFIX",
        help="write PREFIX.json and PREFIX.md (default: CHECKPOINT.audit.json, .md)",
    )
    add_field_options(
        parser,
        thresholds,
        {
            "--max-exposure-bits": "fail when any canary's exposure exceeds it",
            "--max-auc": "fail when a membership attack's ROC AUC is further from 0.5 than this "
            "is, either side (0.6: above 0.6 or below 0.4)",
            "--max-tpr-at-1pct-fpr": "fail when an attack's true-positive rate at 1%% false "
            "positives exceeds it",
            "--max-tpr-at-01pct-fpr": "fail when an attack's true-positive rate at 0.1%% false "
            "positives exceeds it",
            "--name-probe-alpha": "fail when the name probes' top-1 hits are this unlikely at "
            "chance",
        },
    )


def run(args):
    from pathlib import Path

    from bio_roberta.audit.measurements import AuditOptions
    from bio_roberta.audit.record import audit, default_prefix
    from bio_roberta.audit.verdict import Thresholds
    from bio_roberta.commands._arguments import field_values
    from bio_roberta.errors import UsageError

    for option in ("notes", "candidates", "batch_size"):
        if getattr(args, option) < 1:
            raise UsageError(f"--{option.replace('_', '-')} must be at least 1")
    optional = {
        key: Path(value) if value else None
        for key, value in (
            ("non_members", args.non_members),
            ("reference", args.reference),
            ("names", args.names),
            ("out", args.out),
        )
    }
    record = audit(
        Path(args.checkpoint),
        Path(args.vocab),
        Path(args.text_dir),
        options=field_values(args, AuditOptions),
        thresholds=field_values(args, Thresholds),
        **optional,
    )
    prefix = optional["out"] or default_prefix(Path(args.checkpoint))
    print(
        f"audit: {record['verdict']} ({'; '.join(record['reasons']) or 'no threshold crossed'}); "
        f"{prefix}.json, {prefix}.md"
    )
    return 0 if record["verdict"] == "pass" else 1
