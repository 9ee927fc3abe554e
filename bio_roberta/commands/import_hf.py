"""Import a transformers encoder (RoBERTa, BERT, ELECTRA discriminator, Megatron-BERT, ModernBERT)
as a fairseq checkpoint: OUT becomes a vocabulary dir of the model's own tokenizer (gpt2 for
RoBERTa, wordpiece for the BERT family, hf_bpe for ModernBERT) holding the checkpoint as
OUT/model.pt, which convert-task takes as --vocab and fine-tuning takes as its pretrained
checkpoint (docs/import.md)."""

HELP = "import a Hugging Face transformers encoder as a fairseq checkpoint + vocabulary dir"


def add_arguments(parser):
    parser.add_argument("hf_dir", help="transformers model dir (config.json, weights, tokenizer)")
    parser.add_argument("out", help="output vocabulary dir (created; holds model.pt)")


def run(args):
    from bio_roberta.hf.import_hf import import_hf

    manifest = import_hf(args.hf_dir, args.out)
    options = manifest["options"]
    print(
        f"{options['hf_model_class'] or 'a config without architectures'} "
        f"({options['model_type']}) -> {args.out}/"
        f"{options['checkpoint']} (arch {options['arch']}), {manifest['kind']} vocabulary of "
        f"{manifest['dict_size']} entries"
    )
    return 0
