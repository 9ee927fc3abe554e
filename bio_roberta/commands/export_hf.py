"""Export a fairseq RoBERTa checkpoint (pretrained, distilled or fine-tuned) as a transformers
model directory: RobertaForMaskedLM, or RobertaForSequenceClassification /
RobertaForTokenClassification with the label names of the fine-tuning data, plus tokenizer files
whose ids equal the fairseq dictionary's, and a manifest.json with the input hashes. A checkpoint
whose manifests record MIMIC-III notes among its training data needs a passing memorisation audit
of it (`bio-roberta audit`, docs/audit.md)."""

HELP = "export a fairseq checkpoint as a Hugging Face transformers model + tokenizer"


def add_arguments(parser):
    from bio_roberta.commands._task_files import add_task_file_argument

    parser.add_argument("checkpoint", help="fairseq checkpoint file (checkpoint_best.pt, ...)")
    parser.add_argument("out", help="output directory (created)")
    parser.add_argument(
        "--vocab",
        required=True,
        help="vocabulary dir from learn-vocab (gpt2 or sentencepiece) the model was trained with",
    )
    parser.add_argument(
        "--dict", default=None, help="dict.txt the model was trained with (default: VOCAB/dict.txt)"
    )
    parser.add_argument(
        "--label-dict",
        default=None,
        help="label/dict.txt of the fine-tuning data (default: from the checkpoint's data dir)",
    )
    add_task_file_argument(parser)
    parser.add_argument(
        "--head", default=None, help="classification head to export when there are several"
    )
    parser.add_argument(
        "--audit",
        default=None,
        help="the checkpoint's audit record from `bio-roberta audit` (default: "
        "CHECKPOINT.audit.json); needed when its training data include MIMIC-III notes",
    )
    parser.add_argument(
        "--allow-unaudited",
        action="store_true",
        help="export a MIMIC-III-trained checkpoint without a passing audit (or one whose "
        "recorded training data cannot be followed); the model card's first lines say so",
    )
    parser.add_argument(
        "--training-data",
        action="append",
        default=[],
        metavar="DATA_BIN",
        help="the data-bin the checkpoint (or the pretrained model of a fine-tuned one) was "
        "trained on, where the paths its options record no longer lead there (moved, renamed, "
        "copied); repeat for several; the model card says the gate was pointed there",
    )


def run(args):
    from bio_roberta.commands._task_files import declare_task_files
    from bio_roberta.hf.export_hf import export

    declare_task_files(args)

    manifest = export(
        args.checkpoint,
        args.out,
        args.vocab,
        dict_txt=args.dict,
        label_dict=args.label_dict,
        head=args.head,
        audit=args.audit,
        allow_unaudited=args.allow_unaudited,
        given_training_data=args.training_data,
    )
    print(f"{manifest['hf_model_class']} ({manifest['vocab_size']} tokens) -> {args.out}")
    return 0
