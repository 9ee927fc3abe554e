"""fairseq RoBERTa checkpoints exported with `bio-roberta export-hf` compute the same logits in
transformers, and the exported tokenizer gives fairseq's ids (dictionary ids, not BPE ids)."""

import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bio_roberta_core.checkpoints import read_checkpoint
from bio_roberta_core.provenance import sha256_file
from conftest import REPO_ROOT, USER_DIR, write_text_manifest
from test_blurb_readers import EBM_TOKENS, SENTENCES, write_biosses, write_ebm_nlp
from tiny_finetune import fine_tune, tiny_vocab
from tiny_training import (
    NARROW_STUDENT,
    TINY_ROBERTA,
    TINY_WORDS,
    fairseq_preprocess,
    restore_flags,
    train_masked_lm,
)
from tiny_training import fairseq_train as tiny_fairseq_train

BIN = Path(sys.executable).parent
# Sample sentences with punctuation, digits, capitals, a leading space and bytes the tiny corpus
# never shows (µ, β: byte tokens, their dict entries have count 0).
SAMPLE_SENTENCES = [
    "The patient was given aspirin for chest pain.",
    "Glucose levels rose to 12.5 mmol/L in 3 of 10 mice (p<0.05).",
    " Insulin-treated TUMOUR cells expressed the gene; renal function improved.",
    "Treatment with 5 µg of β-blocker showed improvement",
]
# For SentencePiece: accents, digits, ligatures, full-width and super-script forms (spm's NFKC),
# unknown characters (fused into one <unk> piece), runs of spaces, tabs and the U+0085 that
# nmt_nfkc keeps and fairseq's whitespace split of the pieces drops, a literal "▁", the empty line.
UNUSUAL_SENTENCES = [
    "Café naïve Müller: TNF-α and IL-6 rose 2.5-fold (n=12; p≤0.001).",
    "ﬁbrosis １２３ mg x² at 37°C ≥ 3 ① ℌ",
    "Ünïcödé àccents ÀÉÎÕÜ ñ ç e\u0301",
    "emoji 😀😀 and 中文 and עברית µµ\x85µ",
    "  leading,  double   spaces and\ttabs\nnewline\u3000ideographic\u00a0nbsp  ",
    "▁already ▁ a▁b",
    "",
    "2019-2020 1,000,000 0.0001 3e-5 10^6 CD4+/CD8+ 1/2",
]
TOLERANCE = 1e-4


def bpe_text(rng, n):
    lines = []
    for _ in range(n):
        words = [rng.choice(TINY_WORDS) for _ in range(rng.randint(4, 20))]
        words[0] = words[0].capitalize()
        lines.append(" ".join(words) + rng.choice([".", ",", " (p<0.05).", " 12.5 mg/L;"]))
    return lines


def spm_text(rng, n):
    """bpe_text plus invented biomedical terms and accented words: enough distinct
    character n-grams for a few-hundred-piece SentencePiece model."""
    syllables = (
        "cyto kine neuro path ase ol ine pro te in gly co lip id hem at o myo card "
        "nephr itis onco gen ly mph"
    ).split()
    terms = ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(150)]
    terms += ["café", "naïve", "Müller", "β-blocker", "5µg", "IL-6", "TNF-α"]
    return [
        " ".join([line] + [rng.choice(terms) for _ in range(rng.randint(2, 8))])
        for line in bpe_text(rng, n)
    ]


def fairseq_train(data_dir, *flags):
    """tiny_training.fairseq_train, seed 1, the checkpoints written at the end only."""
    tiny_fairseq_train(data_dir, *flags, "--seed", "1", "--no-epoch-checkpoints")


@pytest.fixture(scope="module")
def bpe_vocab(tmp_path_factory):
    """A byte-level BPE vocabulary dir from `learn-vocab` (dict.txt ordered by count, so dict ids
    differ from BPE ids) with its madeupword padding, and a masked_lm data-bin binarised with it."""
    from preprocess.bpe import open_bpe
    from preprocess.learn_vocab import learn_vocabulary
    from preprocess.vocab_dir import read_vocab_dir

    root = tmp_path_factory.mktemp("export_vocab")
    rng = random.Random(0)
    bpe_corpus = root / "bpe.txt"
    bpe_corpus.write_text("\n".join(bpe_text(rng, 400)) + "\n")
    vocab_dir = root / "vocab"
    learn_vocabulary("gpt2", [bpe_corpus], vocab_dir, vocab_size=400, min_frequency=2)

    bpe = open_bpe(read_vocab_dir(vocab_dir))
    text = root / "text"
    text.mkdir()
    for split, n in (("train", 300), ("valid", 30)):
        (text / f"{split}.txt").write_text(
            "\n".join(bpe.encode(line) for line in bpe_text(rng, n)) + "\n"
        )
    return vocab_dir, fairseq_preprocess(text, root / "mlm-bin", srcdict=vocab_dir / "dict.txt")


def pretrain_masked_lm(databin, save_dir, max_update: int):
    """checkpoint_last.pt of a roberta_tiny masked LM trained max_update updates on databin."""
    train_masked_lm(
        databin,
        save_dir,
        max_update,
        "--max-positions",
        "512",
        "--seed",
        "1",
        "--disable-validation",
        tokens_per_sample=64,
    )
    return save_dir / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def mlm_checkpoint(bpe_vocab, tmp_path_factory):
    vocab_dir, databin = bpe_vocab
    save_dir = tmp_path_factory.mktemp("export_mlm")
    return pretrain_masked_lm(databin, save_dir, max_update=6)


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def sentencepiece_vocab(request, tmp_path_factory):
    """A SentencePiece vocabulary dir from `learn-vocab` (dict.txt ordered by count, not by spm id)
    with madeupword padding, and a masked_lm data-bin written by `bio-roberta binarize` with it."""
    from preprocess.binarize import binarize
    from preprocess.learn_vocab import learn_vocabulary

    root = tmp_path_factory.mktemp(f"export_spm_{request.param}")
    rng = random.Random(2)
    text = root / "text"
    text.mkdir()
    for split, n in (("train", 600), ("valid", 30)):
        (text / f"{split}.txt").write_text("\n".join(spm_text(rng, n)) + "\n")
    vocab_dir = root / "vocab"
    learn_vocabulary(
        "sentencepiece", [text / "train.txt"], vocab_dir, vocab_size=250, model_type=request.param
    )
    binarize(write_text_manifest(text), vocab_dir, root / "mlm-bin", progress=False)
    return vocab_dir, root / "mlm-bin"


@pytest.fixture(scope="module")
def sentencepiece_checkpoint(sentencepiece_vocab, tmp_path_factory):
    _, databin = sentencepiece_vocab
    save_dir = tmp_path_factory.mktemp("export_spm_mlm")
    return pretrain_masked_lm(databin, save_dir, max_update=4)


@pytest.fixture(scope="module")
def distilled_checkpoint(bpe_vocab, mlm_checkpoint, tmp_path_factory):
    """A narrower student distilled from the MLM checkpoint, as tests/test_distill.py trains one."""
    vocab_dir, databin = bpe_vocab
    save_dir = tmp_path_factory.mktemp("export_student")
    fairseq_train(
        databin,
        "--task",
        "distillation",
        "--teacher-path",
        mlm_checkpoint,
        "--teacher-dict",
        vocab_dir / "dict.txt",
        "--criterion",
        "distillation",
        "--alpha-cos",
        "1.0",
        *TINY_ROBERTA,
        *NARROW_STUDENT,
        "--batch-size",
        "8",
        "--tokens-per-sample",
        "64",
        "--max-positions",
        "512",
        "--max-update",
        "4",
        "--save-dir",
        save_dir,
        "--disable-validation",
    )
    return save_dir / "checkpoint_last.pt"


def tiny_finetune_from(mlm_checkpoint, save_dir) -> list:
    """fairseq-train options of a 4-update fine-tune of the MLM checkpoint into save_dir, at 512
    positions, batches of 8, no validation."""
    return [
        "--max-positions",
        "512",
        "--batch-size",
        "8",
        "--max-update",
        "4",
        *restore_flags(mlm_checkpoint),
        "--save-dir",
        save_dir,
        "--disable-validation",
    ]


@pytest.fixture(scope="module")
def classification_checkpoint(bpe_vocab, mlm_checkpoint, tmp_path_factory):
    """A 3-class sentence_prediction fine-tune of the MLM checkpoint (finetune-bin layout)."""
    vocab_dir, _ = bpe_vocab
    root = tmp_path_factory.mktemp("export_cls")
    from preprocess.bpe import open_bpe
    from preprocess.vocab_dir import read_vocab_dir

    bpe = open_bpe(read_vocab_dir(vocab_dir))
    rng = random.Random(1)
    raw = root / "raw"
    raw.mkdir()
    for split, n in (("train", 64), ("valid", 16)):
        lines = bpe_text(rng, n)
        (raw / f"{split}.input0").write_text("\n".join(bpe.encode(line) for line in lines) + "\n")
        (raw / f"{split}.label").write_text(
            "\n".join(rng.choice(["CPR:3", "false", "CPR:9"]) for _ in lines) + "\n"
        )
    data = root / "data"
    for name, srcdict in (("input0", ["--srcdict", vocab_dir / "dict.txt"]), ("label", [])):
        subprocess.run(
            [
                str(c)
                for c in [
                    BIN / "fairseq-preprocess",
                    "--only-source",
                    "--trainpref",
                    raw / f"train.{name}",
                    "--validpref",
                    raw / f"valid.{name}",
                    "--destdir",
                    data / name,
                    "--workers",
                    "1",
                    *srcdict,
                ]
            ],
            check=True,
            capture_output=True,
        )
    save_dir = root / "ckpt"
    fairseq_train(
        data,
        "--task",
        "sentence_prediction",
        "--criterion",
        "sentence_prediction",
        *TINY_ROBERTA,
        "--num-classes",
        "3",
        "--init-token",
        "0",
        "--separator-token",
        "2",
        *tiny_finetune_from(mlm_checkpoint, save_dir),
    )
    return save_dir / "checkpoint_last.pt", data


@pytest.fixture(scope="module")
def token_classification_checkpoint(bpe_vocab, mlm_checkpoint, tmp_path_factory):
    """A sequence_labeling (NER) fine-tune of the MLM checkpoint; returns (checkpoint,
    finetune-bin)."""
    from finetune_data import build_ner

    vocab_dir, _ = bpe_vocab
    root = tmp_path_factory.mktemp("export_ner")
    data = build_ner(root / "data", vocab_dir / "dict.txt")
    fairseq_train(
        data,
        "--task",
        "sequence_labeling",
        "--criterion",
        "sequence_labeling",
        *TINY_ROBERTA,
        *tiny_finetune_from(mlm_checkpoint, root / "ckpt"),
    )
    return root / "ckpt" / "checkpoint_last.pt", data


def export_cli(*args):
    return subprocess.run(
        [str(BIN / "bio-roberta"), "export-hf", *map(str, args)], capture_output=True, text=True
    )


def fairseq_hub(checkpoint, data, vocab_dir):
    """The checkpoint in fairseq, encoding text with the vocabulary dir's BPE (--bpe gpt2 /
    sentencepiece)."""
    from fairseq.models.roberta import RobertaModel

    from preprocess.bpe import bpe_namespace
    from preprocess.vocab_dir import read_vocab_dir

    return RobertaModel.from_pretrained(
        str(checkpoint.parent),
        checkpoint_file=checkpoint.name,
        data_name_or_path=str(data),
        user_dir=str(USER_DIR),
        **vars(bpe_namespace(read_vocab_dir(vocab_dir))),
    ).eval()


def pubmed_sentences(shared_data, limit=6):
    from lxml import etree

    path = sorted(shared_data("corpus", "pubmed").glob("*.xml.gz"))[0]
    root = etree.fromstring(gzip.open(path).read())
    texts = ["".join(node.itertext()) for node in root.iter("AbstractText")]
    return [t[:400] for t in texts if t.strip()][:limit]


def assert_same_ids_and_mlm_logits(hub, out, sentences, tokenizer=None):
    from transformers import RobertaForMaskedLM, RobertaTokenizerFast

    tokenizer = tokenizer or RobertaTokenizerFast.from_pretrained(str(out))
    model = RobertaForMaskedLM.from_pretrained(str(out)).eval()
    for sentence in sentences:
        fairseq_ids = hub.encode(sentence)
        assert tokenizer(sentence)["input_ids"] == fairseq_ids.tolist(), sentence
        with torch.no_grad():
            expected, _ = hub.model(fairseq_ids[None])
            actual = model(fairseq_ids[None]).logits
        assert actual.shape == expected.shape
        assert torch.allclose(actual, expected, atol=TOLERANCE), (actual - expected).abs().max()


def assert_fairseq_special_ids(tokenizer) -> None:
    """<s>, <pad>, </s>, <unk> at 0 to 3, where fairseq's dictionary puts them."""
    ids = [getattr(tokenizer, f"{name}_token_id") for name in ("bos", "pad", "eos", "unk")]
    assert ids == [0, 1, 2, 3], ids


def test_masked_lm_export_matches_fairseq(bpe_vocab, mlm_checkpoint, tmp_path):
    vocab_dir, databin = bpe_vocab
    out = tmp_path / "hf"
    run = export_cli(mlm_checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    hub = fairseq_hub(mlm_checkpoint, databin, vocab_dir)
    assert_same_ids_and_mlm_logits(hub, out, SAMPLE_SENTENCES)

    # the test means something only if dict ids differ from BPE ids
    encoder = json.loads((vocab_dir / "encoder.json").read_text())
    vocab = json.loads((out / "vocab.json").read_text())
    assert any(vocab[token] != bpe_id for token, bpe_id in encoder.items())

    from transformers import AutoConfig, RobertaTokenizerFast

    tokenizer = RobertaTokenizerFast.from_pretrained(str(out))
    dictionary = hub.task.source_dictionary
    assert len(dictionary) == AutoConfig.from_pretrained(str(out)).vocab_size
    assert tokenizer.mask_token_id == dictionary.index("<mask>") == len(dictionary) - 1
    assert_fairseq_special_ids(tokenizer)
    # learn-vocab's padding entries (a multiple of 64 with <mask>) kept at their ids, none dropped
    assert len(dictionary) % 64 == 0 and "madeupword0000" in dictionary.symbols
    padding = [symbol for symbol in dictionary.symbols if symbol.startswith("madeupword")]
    assert padding and all(vocab[symbol] == dictionary.index(symbol) for symbol in padding)
    assert sorted(vocab.values()) == list(range(len(dictionary)))
    masked = tokenizer("The patient was given <mask> for chest pain.")["input_ids"]
    assert masked.count(tokenizer.mask_token_id) == 1

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "masked_lm" and manifest["checkpoint"]["sha256"]


@pytest.mark.real_data
def test_masked_lm_export_on_pubmed_abstracts(bpe_vocab, mlm_checkpoint, tmp_path, shared_data):
    vocab_dir, databin = bpe_vocab
    sentences = pubmed_sentences(shared_data)
    assert sentences
    out = tmp_path / "hf"
    assert export_cli(mlm_checkpoint, out, "--vocab", vocab_dir).returncode == 0
    assert_same_ids_and_mlm_logits(fairseq_hub(mlm_checkpoint, databin, vocab_dir), out, sentences)


def test_sentencepiece_export_matches_fairseq(
    sentencepiece_vocab, sentencepiece_checkpoint, tmp_path
):
    import sentencepiece
    from transformers import AutoConfig, AutoTokenizer

    vocab_dir, databin = sentencepiece_vocab
    out = tmp_path / "hf"
    run = export_cli(sentencepiece_checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    hub = fairseq_hub(sentencepiece_checkpoint, databin, vocab_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    sentences = SAMPLE_SENTENCES + UNUSUAL_SENTENCES + spm_text(random.Random(3), 40)
    assert_same_ids_and_mlm_logits(hub, out, sentences, tokenizer)
    for first, second in zip(
        sentences[::2], sentences[1::2]
    ):  # pairs as RobertaHubInterface.encode joins them
        assert tokenizer(first, second)["input_ids"] == hub.encode(first, second).tolist(), (
            first,
            second,
        )
    assert (
        tokenizer.unk_token_id in tokenizer(UNUSUAL_SENTENCES[3])["input_ids"]
    )  # the test covers <unk>

    # the test means something only if dictionary ids differ from the spm model's ids
    dictionary = hub.task.source_dictionary
    spm = sentencepiece.SentencePieceProcessor(model_file=str(out / "sentencepiece.model"))
    assert any(dictionary.index(spm.id_to_piece(i)) != i for i in range(spm.get_piece_size()))
    assert len(dictionary) == AutoConfig.from_pretrained(str(out)).vocab_size == len(tokenizer)
    assert_fairseq_special_ids(tokenizer)
    assert tokenizer.mask_token_id == dictionary.index("<mask>") == len(dictionary) - 1
    assert "madeupword0000" in dictionary.symbols
    # fill-mask input encodes as RobertaHubInterface.fill_mask encodes it
    masked = "The patient was given <mask> for chest pain."
    spans = " <mask> ".join(hub.bpe.encode(span.rstrip()) for span in masked.split("<mask>"))
    expected = dictionary.encode_line(f"<s> {spans} </s>", append_eos=False, add_if_not_exist=False)
    assert tokenizer(masked)["input_ids"] == expected.tolist()
    assert (
        tokenizer.decode(tokenizer(SAMPLE_SENTENCES[0])["input_ids"], skip_special_tokens=True)
        == SAMPLE_SENTENCES[0]
    )

    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["vocabulary"]) == {"sentencepiece_model", "dict_txt"}
    assert (
        json.loads((out / "tokenizer_config.json").read_text())["tokenizer_class"]
        == "PreTrainedTokenizerFast"
    )

    incomplete = tmp_path / "incomplete.txt"
    incomplete.write_text(
        "".join((vocab_dir / "dict.txt").read_text().splitlines(keepends=True)[:50])
    )
    lacks = export_cli(
        sentencepiece_checkpoint, tmp_path / "out", "--vocab", vocab_dir, "--dict", incomplete
    )
    assert lacks.returncode == 2 and "lacks" in lacks.stderr and "learn-vocab" in lacks.stderr

    byte_fallback = tmp_path / "byte_fallback_vocab"
    shutil.copytree(vocab_dir, byte_fallback)
    sentencepiece.SentencePieceTrainer.train(
        input=str(vocab_dir.parent / "text" / "train.txt"),
        model_prefix=str(byte_fallback / "sentencepiece"),
        vocab_size=400,
        byte_fallback=True,
        minloglevel=2,
    )
    refused = export_cli(sentencepiece_checkpoint, tmp_path / "out", "--vocab", byte_fallback)
    assert refused.returncode == 2 and "byte_fallback" in refused.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.real_data
def test_sentencepiece_export_on_pubmed_abstracts(
    sentencepiece_vocab, sentencepiece_checkpoint, tmp_path, shared_data
):
    from transformers import AutoTokenizer

    vocab_dir, databin = sentencepiece_vocab
    sentences = pubmed_sentences(shared_data, limit=20)
    out = tmp_path / "hf"
    assert export_cli(sentencepiece_checkpoint, out, "--vocab", vocab_dir).returncode == 0
    assert_same_ids_and_mlm_logits(
        fairseq_hub(sentencepiece_checkpoint, databin, vocab_dir),
        out,
        sentences,
        AutoTokenizer.from_pretrained(str(out)),
    )


def test_distilled_student_exports_as_masked_lm(bpe_vocab, distilled_checkpoint, tmp_path):
    from transformers import AutoConfig

    vocab_dir, databin = bpe_vocab
    out = tmp_path / "hf"
    run = export_cli(distilled_checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads((out / "manifest.json").read_text())["hf_model_class"] == "RobertaForMaskedLM"
    assert AutoConfig.from_pretrained(str(out)).hidden_size == 32
    assert_same_ids_and_mlm_logits(
        fairseq_hub(distilled_checkpoint, databin, vocab_dir), out, SAMPLE_SENTENCES
    )


def test_sequence_classification_export_matches_fairseq(
    bpe_vocab, classification_checkpoint, tmp_path
):
    from transformers import RobertaForSequenceClassification

    vocab_dir, _ = bpe_vocab
    checkpoint, data = classification_checkpoint
    out = tmp_path / "hf"
    run = export_cli(
        checkpoint, out, "--vocab", vocab_dir
    )  # label dict found via the checkpoint's data dir
    assert run.returncode == 0, run.stderr[-3000:]
    model = RobertaForSequenceClassification.from_pretrained(str(out)).eval()
    label_symbols = (data / "label" / "dict.txt").read_text().split()[:6:2]
    assert [model.config.id2label[i] for i in range(3)] == label_symbols

    hub = fairseq_hub(checkpoint, data, vocab_dir)
    batch = [hub.encode(s) for s in SAMPLE_SENTENCES]
    tokens = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=1)
    with torch.no_grad():
        expected = hub.predict("sentence_classification_head", tokens, return_logits=True)
        actual = model(tokens, attention_mask=tokens.ne(1)).logits
    assert torch.allclose(actual, expected, atol=TOLERANCE), (actual - expected).abs().max()
    for i, sentence_ids in enumerate(batch):  # each fairseq prediction names the same label
        label = hub.task.label_dictionary.string(
            [hub.predict("sentence_classification_head", sentence_ids).argmax() + 4]
        )
        assert model.config.id2label[int(actual[i].argmax())] == label


def test_token_classification_export_matches_fairseq(
    bpe_vocab, token_classification_checkpoint, tmp_path
):
    from transformers import RobertaForTokenClassification, RobertaTokenizerFast

    from bio_roberta.prediction.predictions import load_finetuned
    from user_dir.models.token_classification_head import token_classification_logits

    vocab_dir, _ = bpe_vocab
    checkpoint, data = token_classification_checkpoint
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    model = RobertaForTokenClassification.from_pretrained(str(out)).eval()
    fairseq_model, task = load_finetuned(checkpoint, data)
    assert task.tags == [
        "O",
        "B",
        "I",
    ]  # BioBERT's untyped tags; the registry types ncbi-disease's entities
    assert [model.config.id2label[i] for i in range(len(task.tags))] == [
        "O",
        "B-Disease",
        "I-Disease",
    ]
    tokenizer = RobertaTokenizerFast.from_pretrained(str(out))
    batch = tokenizer(SAMPLE_SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = token_classification_logits(
            fairseq_model, "token_classification_head", batch["input_ids"]
        )
        actual = model(**batch).logits
    real = batch["attention_mask"].bool()
    assert torch.allclose(actual[real], expected[real], atol=TOLERANCE), (
        (actual - expected)[real].abs().max()
    )


def test_token_classification_pipeline_groups_the_exported_entities(
    bpe_vocab, token_classification_checkpoint, tmp_path
):
    """transformers' pipeline with aggregation_strategy="simple" groups B-<Type>/I-<Type> runs into
    one entity; with untyped B/I labels it reported entity_group "B" and "I" apart. The tiny model's
    own predictions are noise, so its logits are set to tag "chest pain" B I and the rest O."""
    from transformers import pipeline

    vocab_dir, _ = bpe_vocab
    checkpoint, _ = token_classification_checkpoint
    out = tmp_path / "hf"
    assert export_cli(checkpoint, out, "--vocab", vocab_dir).returncode == 0
    ner = pipeline(
        "token-classification", model=str(out), aggregation_strategy="simple", device="cpu"
    )
    sentence = "The patient was given aspirin for chest pain."
    start, end = sentence.index("chest pain"), sentence.index("chest pain") + len("chest pain")
    offsets = ner.tokenizer(sentence, return_offsets_mapping=True)["offset_mapping"]
    inside = [start <= begin < end for begin, _ in offsets]
    assert sum(inside) >= 2
    tags = ["O"] + [
        "B-Disease" if inside[i] and not inside[i - 1] else "I-Disease" if inside[i] else "O"
        for i in range(1, len(offsets))
    ]
    label2id = ner.model.config.label2id
    logits = (
        torch.nn.functional.one_hot(torch.tensor([[label2id[tag] for tag in tags]]), len(label2id))
        * 10.0
    )
    ner.model.classifier.register_forward_hook(
        lambda module, inputs, output: logits.to(output.dtype)
    )
    entities = ner(sentence)
    assert [(e["entity_group"], e["start"], e["end"]) for e in entities] == [
        ("Disease", start, end)
    ], entities


def docs_ner_snippet() -> str:
    """The python block of docs/export.md's section on transformers' NER pipeline."""
    page = (REPO_ROOT / "docs" / "export.md").read_text()
    section = page.split("## Named entities with transformers' pipeline")[1].split("\n## ")[0]
    return section.split("```python\n")[1].split("```")[0]


def test_the_documented_ner_pipeline_gives_whole_word_entities(
    bpe_vocab, token_classification_checkpoint, tmp_path
):
    """docs/export.md's pipeline call, run as written on an exported tiny NER model whose logits
    are set as fine-tuning trains them: each word's first subword tagged (B I for "renal
    insufficiency", B I for "chest pain", O elsewhere), its other subwords tagged B-Disease (noise
    that "simple" would report as fragments). The entities are the whole words."""
    from transformers import AutoTokenizer

    vocab_dir, _ = bpe_vocab
    checkpoint, _ = token_classification_checkpoint
    out = tmp_path / "hf"
    assert export_cli(checkpoint, out, "--vocab", vocab_dir).returncode == 0
    snippet = docs_ner_snippet()
    sentence = re.search(r'ner\(\s*"([^"]*)"', snippet).group(1)
    entities = {"renal": "B", "insufficiency": "I", "chest": "B", "pain": "I"}
    encoding = AutoTokenizer.from_pretrained(str(out))(sentence)
    words, tags, previous = sentence.split(" "), [], None
    for word in encoding.word_ids():
        if word is None:
            tags.append("O")
        elif word == previous:
            tags.append("B-Disease")
        else:
            tag = entities.get(words[word])
            tags.append(f"{tag}-Disease" if tag else "O")
        previous = word
    assert tags.count("B-Disease") > 2  # continuation subwords to ignore
    config = json.loads((out / "config.json").read_text())
    logits = torch.nn.functional.one_hot(
        torch.tensor([[int(config["label2id"][tag]) for tag in tags]]), len(config["label2id"])
    )

    def set_logits(module, inputs, output):
        if isinstance(module, torch.nn.Linear) and output.shape == logits.shape:
            return 10.0 * logits.to(output.dtype)

    hook = torch.nn.modules.module.register_module_forward_hook(set_logits)
    try:
        namespace = {}
        exec(snippet.replace("demo-out/hf/ncbi-disease", str(out)), namespace)
    finally:
        hook.remove()
    assert [
        (e["entity_group"], sentence[e["start"] : e["end"]]) for e in namespace["entities"]
    ] == [("Disease", "renal insufficiency"), ("Disease", "chest pain")]
    # ... and what the snippet prints is the list the page tells readers to expect
    page = (REPO_ROOT / "docs" / "export.md").read_text()
    expected = re.search(r"What to expect: .*?\n`(\[.*?\])`", page, re.S).group(1)
    printed = [(e["entity_group"], e["word"], e["start"], e["end"]) for e in namespace["entities"]]
    assert str(printed) == expected.replace("\n", " ")


@pytest.fixture(scope="module")
def biosses_run(tmp_path_factory):
    """A tiny BIOSSES (regression) model fine-tuned by bio_roberta.finetuning.job: (vocabulary dir,
    finetune-bin/biosses, the run's record)."""
    root = tmp_path_factory.mktemp("export_biosses")
    vocab = tiny_vocab(root, " ".join(SENTENCES))
    _, record = fine_tune(root, "biosses", write_biosses(root / "biosses"), vocab)
    return vocab, root / "finetune-bin" / "biosses", record


@pytest.fixture(scope="module")
def ebm_pico_run(tmp_path_factory):
    """A tiny EBM-PICO (multi_element_tagging) model, as biosses_run."""
    root = tmp_path_factory.mktemp("export_ebm_pico")
    data = write_ebm_nlp(root / "ebm-nlp", train=range(1, 41), gold=(50, 51, 52))
    vocab = tiny_vocab(root, EBM_TOKENS)
    _, record = fine_tune(root, "ebm-pico", data, vocab)
    return vocab, root / "finetune-bin" / "ebm-pico", record


HOC_SENTENCES = (
    "Tumour cells evade apoptosis and resist cell death .",
    "Angiogenesis sustains the growth of the tumour .",
    "The cells proliferate without growth signals .",
    "Patients were enrolled in the trial .",
)


def write_hoc(folder: Path) -> Path:
    """BLUE's HoC tsv files: 10 hallmarks a row, each on when its keyword is in the sentence."""
    from bio_roberta.tasks.blurb_entries import HOC_HALLMARKS

    rng = random.Random(3)
    keywords = ("apoptosis", "Angiogenesis", "proliferate")
    folder.mkdir(parents=True)
    for split, first_pmid, abstracts in (("train", 1000, 24), ("dev", 2000, 6), ("test", 3000, 6)):
        rows = ["labels\tsentence\tindex"]
        for pmid in range(first_pmid, first_pmid + abstracts):
            for number in range(3):
                sentence = rng.choice(HOC_SENTENCES)
                on = {k for k, word in enumerate(keywords) if word in sentence}
                labels = ",".join(f"{k}_{int(k in on)}" for k in range(len(HOC_HALLMARKS)))
                rows.append(f"{labels}\t{sentence}\t{pmid}_s{number}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    return folder


@pytest.fixture(scope="module")
def hoc_run(tmp_path_factory):
    """A tiny HoC (multilabel) model, as biosses_run."""
    root = tmp_path_factory.mktemp("export_hoc")
    vocab = tiny_vocab(root, " ".join(HOC_SENTENCES))
    _, record = fine_tune(root, "hoc", write_hoc(root / "hoc"), vocab)
    return vocab, root / "finetune-bin" / "hoc", record


def fairseq_test_batch(checkpoint, data):
    """(fairseq model, its task, the test split as one batch in example order)."""
    from bio_roberta.prediction.predictions import load_finetuned

    model, task = load_finetuned(checkpoint, data)
    task.load_dataset("test")
    dataset = task.dataset("test")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    assert sample["id"].tolist() == list(range(len(dataset)))
    return model, task, sample


def test_regression_export_outputs_fairseqs_predicted_scores(biosses_run, tmp_path):
    from transformers import RobertaForSequenceClassification

    from bio_roberta.tasks.classification_tables import SCORES

    vocab_dir, data, record = biosses_run
    checkpoint = Path(record["checkpoint"]["path"])
    assert not (data / "label" / "dict.txt").exists()  # regression has no label dictionary
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    model = RobertaForSequenceClassification.from_pretrained(str(out)).eval()
    assert model.config.num_labels == 1 and model.config.problem_type == "regression"
    assert model.config.id2label == {0: "LABEL_0"}  # transformers' own name of its one output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["hf_model_class"] == "RobertaForSequenceClassification"
    assert manifest["labels"] is None and manifest["label_dict"] is None

    fairseq_model, _, sample = fairseq_test_batch(checkpoint, data)
    tokens = sample["net_input"]["src_tokens"]  # <s> sentence1 </s></s> sentence2 </s>, padded
    with torch.no_grad():
        expected, _ = fairseq_model(
            tokens, features_only=True, classification_head_name="sentence_classification_head"
        )
        actual = model(tokens, attention_mask=tokens.ne(1)).logits
    assert actual.shape == expected.shape == (20, 1)
    assert torch.allclose(actual, expected, atol=TOLERANCE), (actual - expected).abs().max()
    # ... which are the scores the run's prediction file holds for the test pairs
    _, predicted = SCORES.read(Path(record["predictions"]["path"]))
    assert len(set(predicted)) > 1
    assert actual.view(-1).tolist() == pytest.approx(predicted, abs=TOLERANCE)

    # without its finetune-bin manifest, the checkpoint's own task and criterion say regression
    (data / "manifest.json").rename(tmp_path / "manifest.json")
    try:
        run = export_cli(checkpoint, tmp_path / "hf-no-manifest", "--vocab", vocab_dir)
    finally:
        (tmp_path / "manifest.json").rename(data / "manifest.json")
    assert run.returncode == 0, run.stderr[-3000:]
    again = RobertaForSequenceClassification.from_pretrained(str(tmp_path / "hf-no-manifest"))
    assert again.config.num_labels == 1 and again.config.problem_type == "regression"


def test_multi_element_tagging_export_gives_fairseqs_logits_and_says_how_to_decode_them(
    ebm_pico_run, tmp_path
):
    from transformers import AutoConfig, RobertaForTokenClassification

    from bio_roberta.tasks.prediction_files import ELEMENT_SET_WORDS
    from user_dir.criterions.multi_element_tagging import word_element_tags
    from user_dir.models.token_classification_head import token_classification_logits

    vocab_dir, data, record = ebm_pico_run
    checkpoint = Path(record["checkpoint"]["path"])
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    config = AutoConfig.from_pretrained(str(out))
    assert config.id2label == {0: "I-PAR", 1: "I-INT", 2: "I-OUT"}
    assert config.problem_type == "multi_label_classification"
    assert "sigmoid per element" in config.decoding and "argmax" in config.decoding
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["hf_model_class"] == "RobertaForTokenClassification"
    assert manifest["labels"] == ["I-PAR", "I-INT", "I-OUT"] and manifest["label_dict"] is None

    model = RobertaForTokenClassification.from_pretrained(str(out)).eval()
    fairseq_model, task, sample = fairseq_test_batch(checkpoint, data)
    tokens = sample["net_input"]["src_tokens"]
    with torch.no_grad():
        expected = token_classification_logits(
            fairseq_model, task.cfg.classification_head_name, tokens
        )
        actual = model(tokens, attention_mask=tokens.ne(1)).logits
    real = tokens.ne(1)
    assert torch.allclose(actual[real], expected[real], atol=TOLERANCE), (
        (actual - expected)[real].abs().max()
    )
    # decoded as the config says (logit > 0 per element), the words get the run's predicted tags
    _, predicted = ELEMENT_SET_WORDS.read(Path(record["predictions"]["path"]))
    decoded = word_element_tags(actual > 0, sample["target"])
    assert sum(decoded, []) == sum(predicted, []) and len(sum(predicted, [])) == 3 * 14


def test_multilabel_export_scores_each_label_with_a_sigmoid(hoc_run, tmp_path):
    """HoC's labels are independent (the criterion's BCE): the exported config says so, and
    transformers' text-classification pipeline gives sigmoid(fairseq's logits), not a softmax."""
    from transformers import pipeline

    from bio_roberta.tasks.blurb_entries import HOC_HALLMARKS
    from bio_roberta.tasks.classification_tables import ClassificationTable

    vocab_dir, data, record = hoc_run
    checkpoint = Path(record["checkpoint"]["path"])
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    classifier = pipeline("text-classification", model=str(out), top_k=None)
    assert classifier.model.config.problem_type == "multi_label_classification"
    fairseq_model, task, sample = fairseq_test_batch(checkpoint, data)
    with torch.no_grad():
        expected = torch.sigmoid(ClassificationTable.head_logits(fairseq_model, task, sample))
    first = sample["net_input"]["src_tokens"][0]
    text = classifier.tokenizer.decode(first[first.ne(1)], skip_special_tokens=True)
    scores = {item["label"]: item["score"] for item in classifier([text])[0]}
    assert sorted(scores) == sorted(label.replace(" ", "_") for label in HOC_HALLMARKS)
    names = task.label_names
    assert [scores[name] for name in names] == pytest.approx(expected[0].tolist(), abs=1e-4)
    assert sum(scores.values()) != pytest.approx(1.0, abs=1e-3)  # not a softmax


def test_a_vocabulary_other_than_the_training_one_is_refused(bpe_vocab, mlm_checkpoint, tmp_path):
    """Same size, two entries swapped: the size check passed it and the tokenizer gave wrong ids."""
    vocab_dir, databin = bpe_vocab
    recorded = read_checkpoint(mlm_checkpoint)["extra_state"]["dictionary"]
    assert recorded == {
        "path": str((databin / "dict.txt").resolve()),
        "sha256": sha256_file(databin / "dict.txt"),
    }
    lines = (vocab_dir / "dict.txt").read_text().splitlines(keepends=True)
    lines[10], lines[11] = lines[11], lines[10]
    swapped = tmp_path / "other-run" / "dict.txt"
    swapped.parent.mkdir()
    swapped.write_text("".join(lines))
    refused = export_cli(mlm_checkpoint, tmp_path / "out", "--vocab", vocab_dir, "--dict", swapped)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert refused.stderr.strip().splitlines()[-1] == (
        f"bio-roberta export-hf: error: {swapped} is not the dictionary {mlm_checkpoint} was "
        f"trained with ({recorded['path']}): its ids would be wrong; pass --vocab/--dict of the "
        "vocabulary that data was binarized with"
    )
    assert not (tmp_path / "out").exists()

    # without its data dir, the checkpoint's record decides (the gate, which cannot follow its
    # training data either, lets it through only with --allow-unaudited: tests/test_audit.py)
    state = read_checkpoint(mlm_checkpoint)
    state["cfg"]["task"]["data"] = str(tmp_path / "gone")
    state["extra_state"]["dictionary"]["path"] = str(tmp_path / "gone" / "dict.txt")
    moved = tmp_path / "moved.pt"
    torch.save(state, moved)
    unaudited = ("--vocab", vocab_dir, "--allow-unaudited")
    assert export_cli(moved, tmp_path / "out", *unaudited).returncode == 0
    refused = export_cli(moved, tmp_path / "out2", *unaudited, "--dict", swapped)
    assert (
        refused.returncode == 2 and f"({tmp_path}/gone/dict.txt, which is gone)" in refused.stderr
    )


class RunsACommand:
    def __reduce__(self):
        return os.system, ("echo pwned",)


def test_unreadable_checkpoints_are_one_line_errors(bpe_vocab, mlm_checkpoint, tmp_path):
    vocab_dir, _ = bpe_vocab
    empty, truncated, hostile = (
        tmp_path / "empty.pt",
        tmp_path / "truncated.pt",
        tmp_path / "hostile.pt",
    )
    empty.write_bytes(b"")
    truncated.write_bytes(mlm_checkpoint.read_bytes()[:100_000])
    torch.save({"model": {}, "extra_state": RunsACommand()}, hostile)
    readme = tmp_path / "README.md"
    readme.write_text("# bio-roberta\n\nRoBERTa-style biomedical language models.\n")
    expected = {
        readme: "not a checkpoint at all (torch.save writes a zip archive or a pickle; this file "
        "is neither); pass a fairseq checkpoint file such as checkpoint_best.pt",
        empty: "empty (0 bytes), a write that was cut short; use another checkpoint",
        truncated: "truncated, or not a fairseq checkpoint (RuntimeError: PytorchStreamReader "
        "failed reading zip archive: failed finding central directory)",
        hostile: "refused to load: it holds the global posix.system, which no fairseq "
        "checkpoint does (only the types in bio_roberta_core/checkpoints.py load); "
        "use checkpoints you trust",
    }
    for checkpoint, reason in expected.items():
        run = export_cli(checkpoint, tmp_path / "out", "--vocab", vocab_dir)
        assert (
            run.returncode == 2 and "Traceback" not in run.stderr and "pwned" not in run.stdout
        ), run.stderr[-3000:]
        assert (
            run.stderr.strip().splitlines()[-1]
            == f"bio-roberta export-hf: error: {checkpoint}: {reason}"
        )


def test_a_missing_checkpoint_is_reported_before_fairseq_or_torch_is_imported(bpe_vocab, tmp_path):
    """The path is checked first: here fairseq and torch cannot even be imported."""
    vocab_dir, _ = bpe_vocab
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("fairseq", "torch"):
        (blocked / f"{name}.py").write_text(f"raise ImportError('{name} imported')\n")
    run = subprocess.run(
        [BIN / "bio-roberta", "export-hf", tmp_path / "nope.pt", tmp_path / "out"]
        + ["--vocab", vocab_dir],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), *sys.path])},
    )
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"bio-roberta export-hf: error: checkpoint {tmp_path / 'nope.pt'} does not exist"
    ], run.stderr[-3000:]


def diverged_copy(checkpoint, path, value=float("nan")):
    """checkpoint with one element of its second weight tensor set to value (NaN, Inf)."""
    state = read_checkpoint(checkpoint)
    name = list(state["model"])[1]
    state["model"][name].view(-1)[3] = value
    torch.save(state, path)
    return name


def test_a_checkpoint_with_nan_or_inf_weights_is_refused_naming_the_tensor(
    bpe_vocab, mlm_checkpoint, tmp_path
):
    vocab_dir, _ = bpe_vocab
    for value in (float("nan"), float("inf")):
        diverged = tmp_path / "diverged.pt"
        name = diverged_copy(mlm_checkpoint, diverged, value)
        run = export_cli(diverged, tmp_path / "out", "--vocab", vocab_dir)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
        assert (
            run.stderr.strip()
            .splitlines()[-1]
            .startswith(
                f"bio-roberta export-hf: error: {diverged}: weights not finite: {name} holds 1 "
                "NaN/Inf of "
            )
        )
        assert not (tmp_path / "out").exists()


def test_export_errors_name_the_problem(bpe_vocab, mlm_checkpoint, tmp_path):
    from fairseq.data import Dictionary

    vocab_dir, _ = bpe_vocab
    missing = export_cli(tmp_path / "nope.pt", tmp_path / "out", "--vocab", vocab_dir)
    assert missing.returncode == 2 and "nope.pt does not exist" in missing.stderr

    incomplete = tmp_path / "incomplete.txt"
    incomplete.write_text(
        "".join((vocab_dir / "dict.txt").read_text().splitlines(keepends=True)[:50])
    )
    lacks = export_cli(mlm_checkpoint, tmp_path / "out", "--vocab", vocab_dir, "--dict", incomplete)
    assert lacks.returncode == 2 and "lacks" in lacks.stderr and "learn-vocab" in lacks.stderr

    padded = tmp_path / "padded.txt"
    dictionary = Dictionary.load(str(vocab_dir / "dict.txt"))
    dictionary.pad_to_multiple_(len(dictionary) + 8)
    dictionary.save(str(padded))
    mismatch = export_cli(mlm_checkpoint, tmp_path / "out", "--vocab", vocab_dir, "--dict", padded)
    assert mismatch.returncode == 2 and "--dict" in mismatch.stderr

    head = export_cli(mlm_checkpoint, tmp_path / "out", "--vocab", vocab_dir, "--head", "ner")
    assert head.returncode == 2 and "no classification head 'ner'" in head.stderr
    assert not (tmp_path / "out").exists()


def test_a_checkpoint_trained_through_the_compiled_encoder_exports_with_its_logits(
    bpe_vocab, tmp_path
):
    """Issue 10's fast path writes fairseq's checkpoint format: trained through it (CPU, compiled),
    exported, transformers computes the logits the fused encoder computes."""
    vocab_dir, databin = bpe_vocab
    train_masked_lm(
        databin,
        tmp_path / "ckpt",
        6,
        "--encoder-implementation",
        "compiled",
        "--max-positions",
        "512",
        "--seed",
        "1",
        "--disable-validation",
        task="corpora_masked_lm",
        tokens_per_sample=64,
    )
    checkpoint = tmp_path / "ckpt" / "checkpoint_last.pt"
    run = export_cli(checkpoint, tmp_path / "hf", "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    hub = fairseq_hub(checkpoint, databin, vocab_dir)
    assert type(hub.model.encoder).__name__ == "FusedRobertaEncoder"
    assert_same_ids_and_mlm_logits(hub, tmp_path / "hf", SAMPLE_SENTENCES)


def test_an_export_dir_is_replaced_whole_or_not_at_all(bpe_vocab, mlm_checkpoint, tmp_path):
    """A re-export killed between the weights and the tokenizer leaves the older export whole; a
    file the export does not write (a stray special_tokens_map.json naming another mask token) does
    not survive the next export; a dir of other files, or an --out that is a file, is refused in one
    line."""
    from transformers import AutoTokenizer

    from test_text_shards import tree_bytes

    vocab_dir, _ = bpe_vocab
    retrained = tmp_path / "retrained.pt"  # other weights, the same vocabulary
    state = read_checkpoint(mlm_checkpoint)
    state["model"] = {name: tensor + 0.5 for name, tensor in state["model"].items()}
    torch.save(state, retrained)
    out = tmp_path / "hf"
    assert export_cli(mlm_checkpoint, out, "--vocab", vocab_dir).returncode == 0
    older = tree_bytes(out)
    killed = subprocess.run(
        [str(BIN / "bio-roberta"), "export-hf", str(retrained), str(out), "--vocab", vocab_dir],
        capture_output=True,
        env=dict(os.environ, BIO_ROBERTA_KILL_AT="export_hf:weights-written"),
    )
    assert killed.returncode == -9
    assert tree_bytes(out) == older

    (out / "special_tokens_map.json").write_text(json.dumps({"mask_token": "[MASK]"}))
    run = export_cli(retrained, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not (out / "special_tokens_map.json").exists()
    assert json.loads((out / "manifest.json").read_text())["checkpoint"]["sha256"] == (
        sha256_file(retrained)
    )
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    dict_size = len((vocab_dir / "dict.txt").read_text().splitlines()) + 4 + 1
    assert tokenizer.mask_token == "<mask>" and tokenizer.mask_token_id == dict_size - 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf", "retrained.pt"]  # nothing beside

    (out / "notes.md").write_text("mine\n")
    refused = export_cli(mlm_checkpoint, out, "--vocab", vocab_dir)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1] == (
        f"bio-roberta export-hf: error: {out.resolve()}: holds 'notes.md', which is not of this "
        "output, and "
        "the output replaces the whole dir; choose another --out"
    )
    a_file = export_cli(mlm_checkpoint, out / "notes.md", "--vocab", vocab_dir)
    assert a_file.returncode == 2 and "Traceback" not in a_file.stderr
    assert a_file.stderr.strip().splitlines()[-1] == (
        f"bio-roberta export-hf: error: {(out / 'notes.md').resolve()}: exists and is not a "
        "directory; pass "
        "a directory for --out"
    )


def test_export_out_of_room_is_one_line_and_leaves_the_older_export_whole(
    bpe_vocab, mlm_checkpoint, tmp_path
):
    """No room for the weights (RLIMIT_FSIZE gives EFBIG, as a full disk gives ENOSPC) inside
    safetensors' writer: one line naming the output, the partial dir removed, the older export as
    it was (issue 27: a safetensors traceback)."""
    from test_output_dir import limit_file_size
    from test_text_shards import tree_bytes

    vocab_dir, _ = bpe_vocab
    out = tmp_path / "hf"
    assert export_cli(mlm_checkpoint, out, "--vocab", vocab_dir).returncode == 0
    older = tree_bytes(out)
    weights = (out / "model.safetensors").stat().st_size
    run = subprocess.run(
        [
            str(BIN / "bio-roberta"),
            "export-hf",
            str(mlm_checkpoint),
            str(out),
            "--vocab",
            vocab_dir,
        ],
        capture_output=True,
        text=True,
        preexec_fn=limit_file_size(weights // 2),
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    line = run.stderr.strip().splitlines()[-1]
    assert line.startswith("bio-roberta export-hf: error: ") and "File too large" in line
    assert str(tmp_path / ".hf.new") in line and "make room" in line
    assert tree_bytes(out) == older
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_a_second_export_into_the_same_dir_is_refused_while_the_first_runs(
    bpe_vocab, mlm_checkpoint, tmp_path, monkeypatch, capsys
):
    """The output dir's lock is held from reading the checkpoint to the swap, not only while
    swapping: a second export into it meanwhile exits 2 naming the first."""
    from bio_roberta.cli import main as cli_main
    from bio_roberta.hf import export_hf

    vocab_dir, _ = bpe_vocab
    out = tmp_path / "hf"
    export = ["export-hf", str(mlm_checkpoint), str(out), "--vocab", str(vocab_dir)]
    second = []
    build_hf_model = export_hf.build_hf_model

    def build_then_start_another(*args, **kwargs):
        second.append(cli_main(export))
        return build_hf_model(*args, **kwargs)

    monkeypatch.setattr(export_hf, "build_hf_model", build_then_start_another)
    assert cli_main(export) == 0
    assert second == [2]
    assert f"another run is writing it: pid {os.getpid()}" in capsys.readouterr().err
    assert (out / "manifest.json").is_file()


def load_card(out: Path):
    """The export's README.md as huggingface_hub reads a model card, and its text."""
    from huggingface_hub import ModelCard

    card = ModelCard.load(out / "README.md")
    again = ModelCard((out / "README.md").read_text())
    assert again.data.to_dict() == card.data.to_dict() and again.text == card.text
    return card, card.text


def run_card_snippet(text: str):
    """Runs the card's "How to load" code: it must load the export as it is."""
    snippet = re.search(r"## How to load.*?```python\n(.*?)```", text, re.S).group(1)
    namespace = {}
    exec(snippet, namespace)
    return namespace["tokenizer"], namespace["model"]


def write_corpus_chain(root: Path, source: str) -> Path:
    """A data-bin manifest naming a text dir whose manifest is parse-<source>'s (the keys of
    docs/artifacts.md's Text shards and Data-bin tables that the card reads)."""
    text = root / f"{source}-text"
    text.mkdir(parents=True)
    (text / "manifest.json").write_text(
        json.dumps(
            {
                "kind": "text_shards",
                "source": source,
                "counts": {
                    "documents_written": {"train": 1200, "valid": 7},
                    "sentences": {"train": 15000, "valid": 80},
                },
            }
        )
    )
    databin = root / "data-bin"
    databin.mkdir()
    (databin / "manifest.json").write_text(
        json.dumps(
            {
                "text_dirs": [{"path": str(text), "manifest": {}}],
                "splits": {"train": {"tokens": 345678}},
            }
        )
    )
    return databin


def test_a_pretrained_export_has_a_model_card_naming_its_corpus(
    bpe_vocab, mlm_checkpoint, tmp_path
):
    """A masked LM's card: front matter, sizes, the corpus its data-bin's manifests name (here
    none: the fixture's data-bin is fairseq-preprocess's, said as unknown), no licence, no audit."""
    vocab_dir, databin = bpe_vocab
    out = tmp_path / "hf"
    run = export_cli(mlm_checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    card, text = load_card(out)
    assert card.data.library_name == "transformers" and card.data.language == "en"
    assert card.data.pipeline_tag == "fill-mask" and "bio-roberta" in card.data.tags
    assert card.data.license is None and card.data.base_model is None
    assert "## Licence\n\nUnknown" in text
    assert f"Unknown: {databin} has no manifest (`bio-roberta binarize` writes one)" in text
    assert "2 layers" in text and "inputs of up to 512 tokens" in text
    assert "A transformers RobertaForMaskedLM exported" in text
    assert "gpt2: byte-level BPE" in text
    assert sha256_file(mlm_checkpoint) in text and "MIMIC-III licence note" not in text
    # its corpora unknown, it is not held back, and the card says why it has no audit
    assert "## Memorisation audit\n\nNot audited. Whether the training data include" in text
    tokenizer, model = run_card_snippet(text)
    assert type(model).__name__ == "RobertaForMaskedLM" and tokenizer("a b")["input_ids"][0] == 0


@pytest.mark.parametrize("source", ["mimic", "pubmed"])
def test_the_card_names_the_corpora_and_warns_of_mimics_licence(source, tmp_path):
    """The card's training data, from a data-bin manifest -> text-dir manifest chain; MIMIC's
    notes bring the PhysioNet licence note and the clinical tag."""
    from types import SimpleNamespace

    from bio_roberta.audit.lineage import TrainingData, training_corpora
    from bio_roberta.hf.model_card import model_card

    databin = write_corpus_chain(tmp_path, source)
    config = SimpleNamespace(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=514,
        vocab_size=320,
    )
    manifest = {
        "hf_model_class": "RobertaForMaskedLM",
        "head": None,
        "labels": None,
        "checkpoint": {"sha256": "ab" * 32},
        "git_revision": "0123abc",
    }
    text = model_card(
        tmp_path / "hf",
        tmp_path / "checkpoint_last.pt",
        config,
        512,
        "masked_lm",
        None,
        TrainingData(*training_corpora(str(databin))),
        {"kind": "gpt2"},
        manifest,
    )
    from huggingface_hub import ModelCard

    card = ModelCard(text)
    name = {"mimic": "MIMIC-III clinical notes", "pubmed": "PubMed abstracts"}[source]
    assert f"- {name} (`{tmp_path / f'{source}-text'}`): documents 1,200 train, 7 valid" in text
    assert "345,678 training tokens" in text and "git revision 0123abc" in text
    assert ("PhysioNet Credentialed Health Data License" in text) == (source == "mimic")
    assert ("clinical" in card.data.tags) == (source == "mimic")


def test_a_fine_tuned_export_has_a_card_with_the_runs_task_and_scores(biosses_run, tmp_path):
    """A fine-tuned run's card: the task and scores of its result.json, the corpora of the
    pretrained checkpoint it names (trained on the converted input0/, which has no binarize
    manifest: unknown); a checkpoint that is not the record's gets no scores."""
    vocab_dir, data, record = biosses_run
    checkpoint = Path(record["checkpoint"]["path"])
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    card, text = load_card(out)
    assert card.data.pipeline_tag == "text-classification"
    assert "- Task: biosses (BIOSSES)" in text
    assert f"- Metric: {record['metric']}; scores as a fraction" in text
    assert f"- Test score: {record['test_score']} ({record['test_examples']} test examples)" in text
    assert f"- Validation score: {record['valid_score']}" in text
    pretrained_data = data / "input0"
    assert f"Unknown: {pretrained_data} has no manifest (`bio-roberta binarize` writes one)" in text
    _, model = run_card_snippet(text)
    assert type(model).__name__ == "RobertaForSequenceClassification"

    copy = tmp_path / "elsewhere" / "checkpoints" / checkpoint.name
    copy.parent.mkdir(parents=True)
    shutil.copy(checkpoint, copy)
    (copy.parent.parent / "result.json").write_text(
        json.dumps({**record, "checkpoint": {**record["checkpoint"], "sha256": "0" * 64}})
    )
    run = export_cli(copy, tmp_path / "hf-other", "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    _, text = load_card(tmp_path / "hf-other")
    assert "- Scores: unknown (" in text and "is the record of another checkpoint" in text
    assert "Test score" not in text


def test_an_imported_models_card_names_its_hub_source_and_licence(tmp_path):
    """import-hf's manifest names the dir it imported: inside the Hugging Face cache that is a Hub
    repository (base_model), and the source's own card gives the licence; elsewhere neither."""
    from bio_roberta.hf.model_card import imported_source

    snapshot = tmp_path / "models--microsoft--BiomedNLP-PubMedBERT" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "README.md").write_text("---\nlicense: mit\n---\n# PubMedBERT\n")
    manifest = {"options": {"imported_from": str(snapshot)}}
    assert imported_source(manifest) == ("microsoft/BiomedNLP-PubMedBERT", "mit", str(snapshot))
    plain = tmp_path / "my-model"
    plain.mkdir()
    assert imported_source({"options": {"imported_from": str(plain)}}) == (None, None, str(plain))
    assert imported_source({"options": {}}) == (None, None, "")


def mimic_trained_copy(checkpoint: Path, root: Path) -> Path:
    """root/ckpt/checkpoint_best.pt: checkpoint with its data dir pointed at a data-bin whose
    manifests record MIMIC-III notes (write_corpus_chain), what a PM+M3 checkpoint's manifests say,
    without training one."""
    state = read_checkpoint(checkpoint)
    state["cfg"]["task"]["data"] = str(write_corpus_chain(root, "mimic"))
    copy = root / "ckpt" / "checkpoint_best.pt"
    copy.parent.mkdir(parents=True)
    torch.save(state, copy)
    return copy


def hand_written_record(path: Path, checkpoint: Path, verdict: str, reasons=(), sha256=None):
    """An audit record typed by hand with the fields an audit writes beside its evidence (issue 41,
    item 5: one of this shape opened the gate), of checkpoint unless sha256 says another."""
    attack = {
        "auc": 0.52,
        "auc_ci95": [0.47, 0.57],
        "tpr_at_1pct_fpr": 0.011,
        "tpr_at_0.1pct_fpr": 0.0,
        "members": 2000,
        "non_members": 2000,
    }
    record = {
        "checkpoint": str(checkpoint),
        "checkpoint_sha256": sha256 or sha256_file(checkpoint),
        "created": "2026-11-26T20:00:00+00:00",
        "bio_roberta_version": "0.1.0",
        "exposure": {"1": {"canaries": 10, "median_bits": 1.4}, "16": {"canaries": 10}},
        "membership": {"loss": attack, "reference": {**attack, "auc": 0.55}},
        "name_probes": None,
        "thresholds": {"membership_auc_max": 0.6, "exposure_bits_max": 10.0},
        "verdict": verdict,
        "reasons": list(reasons),
    }
    path.write_text(json.dumps(record))
    return path


def export_in_process(capsys, *args) -> tuple[int, str]:
    """(exit status, last line of stderr) of `bio-roberta export-hf ARGS`, run in this process."""
    from bio_roberta.cli import main as cli_main

    status = cli_main(["export-hf", *map(str, args)])
    err = capsys.readouterr().err.strip()
    return status, err.splitlines()[-1] if err else ""


def test_a_mimic_trained_checkpoint_is_refused_without_an_audit_record_it_can_take(
    bpe_vocab, mlm_checkpoint, tmp_path, capsys
):
    """Issue 31's gate and issue 41's: refused in one line naming the audit to run; a record of
    another checkpoint, or one that is not an audit record, refused whatever the options; a record
    typed by hand, passing or failing (no evidence of what it judged), refused even with
    --allow-unaudited. (A real record, passing and failing: tests/test_audit.py.)"""
    vocab_dir, _ = bpe_vocab
    checkpoint = mimic_trained_copy(mlm_checkpoint, tmp_path)
    text, databin = tmp_path / "mimic-text", tmp_path / "data-bin"
    default = Path(f"{checkpoint}.audit.json")
    out = tmp_path / "hf"
    command = f"bio-roberta audit {checkpoint} --vocab {vocab_dir} --text-dir {text}"

    status, line = export_in_process(capsys, checkpoint, out, "--vocab", vocab_dir)
    assert status == 2 and line == (
        f"bio-roberta export-hf: error: {checkpoint} was trained on MIMIC-III notes ({text}, "
        f"binarized into {databin}) and there is no audit record ({default} does not exist): run "
        f"`{command}`, then export again (--audit FILE names a record elsewhere; "
        "--allow-unaudited exports without one, saying so in the model card)"
    )

    hand_written_record(default, checkpoint, "pass", sha256="0" * 64)
    status, line = export_in_process(capsys, checkpoint, out, "--vocab", vocab_dir)
    assert status == 2 and f"and {default} is the audit of another checkpoint (sha256 " in line
    assert f"run `{command}`" in line
    # an --audit of another checkpoint is the wrong file, whatever --allow-unaudited says
    status, line = export_in_process(
        capsys, checkpoint, out, "--vocab", vocab_dir, "--audit", default, "--allow-unaudited"
    )
    assert status == 2 and f"{default} is the audit of another checkpoint" in line
    (tmp_path / "not-an-audit.json").write_text(json.dumps({"verdict": "pass"}))
    status, line = export_in_process(
        capsys, checkpoint, out, "--vocab", vocab_dir, "--audit", tmp_path / "not-an-audit.json"
    )
    assert status == 2 and "not an audit record (no checkpoint_sha256)" in line

    # issue 41, item 5: {"checkpoint_sha256": ..., "verdict": "pass"} exported with PASS on the card
    minimal = tmp_path / "minimal.json"
    sha256 = sha256_file(checkpoint)
    minimal.write_text(json.dumps({"checkpoint_sha256": sha256, "verdict": "pass"}))
    for record, options in (
        (minimal, ()),
        (hand_written_record(default, checkpoint, "pass"), ()),
        (hand_written_record(default, checkpoint, "fail", ["exposure"]), ("--allow-unaudited",)),
    ):
        status, line = export_in_process(
            capsys, checkpoint, out, "--vocab", vocab_dir, "--audit", record, *options
        )
        assert status == 2 and line.startswith(
            f"bio-roberta export-hf: error: {record}: not an audit record the gate can take: "
        ), line
        assert line.endswith(f"write one with `{command}`")
    assert not out.exists()


def test_allow_unaudited_exports_with_the_warning_opening_the_card(
    bpe_vocab, mlm_checkpoint, tmp_path, capsys
):
    """--allow-unaudited without a record: the export is written and its card's first line says
    so; the manifest records it. (With a failing record: tests/test_audit.py.)"""
    vocab_dir, _ = bpe_vocab
    checkpoint = mimic_trained_copy(mlm_checkpoint, tmp_path)
    out = tmp_path / "hf"
    status, line = export_in_process(
        capsys, checkpoint, out, "--vocab", vocab_dir, "--allow-unaudited"
    )
    assert status == 0, line
    card, text = load_card(out)
    assert text.lstrip().startswith(
        "> **Warning: this model has not passed a memorisation audit**. It was trained on "
        "MIMIC-III clinical notes and exported with `--allow-unaudited`"
    )
    assert "## Memorisation audit\n\nNot audited: exported with `--allow-unaudited`" in text
    audit = json.loads((out / "manifest.json").read_text())["audit"]
    assert audit == {"required": True, "record": None, "verdict": None, "allow_unaudited": True}


def test_a_model_fine_tuned_from_a_mimic_trained_checkpoint_needs_its_audit(
    biosses_run, tmp_path, capsys
):
    """The pretrained checkpoint a fine-tuning run's record names brings its corpora: MIMIC
    among them, the fine-tuned model is refused as its pretrained one is."""
    vocab_dir, _, record = biosses_run
    pretrained = mimic_trained_copy(Path(record["pretrained"]["path"]), tmp_path / "pretrained")
    checkpoint = tmp_path / "run" / "checkpoints" / "checkpoint_best.pt"
    checkpoint.parent.mkdir(parents=True)
    shutil.copy(record["checkpoint"]["path"], checkpoint)
    (tmp_path / "run" / "result.json").write_text(
        json.dumps({**record, "pretrained": {**record["pretrained"], "path": str(pretrained)}})
    )
    status, line = export_in_process(capsys, checkpoint, tmp_path / "hf", "--vocab", vocab_dir)
    assert status == 2 and f"{checkpoint} was trained on MIMIC-III notes (" in line
    assert f"run `bio-roberta audit {checkpoint} --vocab {vocab_dir} --text-dir " in line


@pytest.mark.parametrize("source", ["pubmed", None])
def test_without_mimic_recorded_the_card_says_why_there_is_no_audit(source, tmp_path):
    """No MIMIC-III among the recorded corpora: no audit asked for; a data-bin our stages never
    wrote (provenance unknown) is not refused either, and the card says it is unknown; a record
    typed by hand is refused all the same."""
    from bio_roberta.audit.lineage import TrainingData, training_corpora
    from bio_roberta.errors import ExportError
    from bio_roberta.hf.export_audit import check_audit

    databin = write_corpus_chain(tmp_path, source) if source else tmp_path / "hand-made-bin"
    databin.mkdir(exist_ok=True)
    training = TrainingData(*training_corpora(str(databin)))
    assert not training.broken
    gate = check_audit(tmp_path / "checkpoint.pt", "ab" * 32, tmp_path / "vocab", training)
    assert not gate.required and not gate.unaudited and gate.record is None
    section = "\n".join(gate.card_section())
    if source:
        assert "include no MIMIC-III notes" in section
    else:
        assert "Whether the training data include clinical notes is unknown" in section
    assert gate.card_warning() == []

    checkpoint = tmp_path / "checkpoint.pt"
    hand_written_record(
        Path(f"{checkpoint}.audit.json"), checkpoint, "fail", ["exposure"], sha256="ab" * 32
    )
    with pytest.raises(ExportError, match=r"not an audit record the gate can take: "):
        check_audit(checkpoint, "ab" * 32, tmp_path / "vocab", training, allow_unaudited=True)


@pytest.mark.parametrize(
    "section, name, what",
    [
        ("task", "teacher_path", "distillation teacher"),
        ("checkpoint", "finetune_from_model", "starting checkpoint"),
    ],
)
def test_what_a_masked_lm_learnt_from_or_started_from_counts_as_its_training_data(
    section, name, what, bpe_vocab, mlm_checkpoint, tmp_path, capsys
):
    """A student distilled from a MIMIC-trained teacher, or a model continued from a MIMIC-trained
    checkpoint, may give away what that one learnt: its corpora are the model's too."""
    vocab_dir, _ = bpe_vocab
    parent = mimic_trained_copy(mlm_checkpoint, tmp_path / "parent")
    state = read_checkpoint(mlm_checkpoint)
    state["cfg"][section][name] = str(parent)
    checkpoint = tmp_path / "student" / "checkpoint_last.pt"
    checkpoint.parent.mkdir()
    torch.save(state, checkpoint)
    status, line = export_in_process(capsys, checkpoint, tmp_path / "hf", "--vocab", vocab_dir)
    notes = tmp_path / "parent" / "mimic-text"
    assert status == 2 and f"{checkpoint} was trained on MIMIC-III notes ({notes}" in line
    status, line = export_in_process(
        capsys, checkpoint, tmp_path / "hf", "--vocab", vocab_dir, "--allow-unaudited"
    )
    assert status == 0, line
    _, text = load_card(tmp_path / "hf")
    assert f"training tokens); through the {what} `{parent}`" in text
