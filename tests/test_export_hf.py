"""fairseq RoBERTa checkpoints exported with `bio-roberta export-hf` compute the same logits in
transformers, and the exported tokenizer gives fairseq's ids (dictionary ids, not BPE ids)."""
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import TINY_WORDS, USER_DIR, fairseq_preprocess

BIN = Path(sys.executable).parent
# Sample sentences with punctuation, digits, capitals, a leading space and bytes the tiny corpus
# never shows (µ, β: byte tokens, their dict entries have count 0).
SAMPLE_SENTENCES = [
    "The patient was given aspirin for chest pain.",
    "Glucose levels rose to 12.5 mmol/L in 3 of 10 mice (p<0.05).",
    " Insulin-treated TUMOUR cells expressed the gene; renal function improved.",
    "Treatment with 5 µg of β-blocker showed improvement",
]
TOLERANCE = 1e-4


def bpe_text(rng, n):
    lines = []
    for _ in range(n):
        words = [rng.choice(TINY_WORDS) for _ in range(rng.randint(4, 20))]
        words[0] = words[0].capitalize()
        lines.append(" ".join(words) + rng.choice([".", ",", " (p<0.05).", " 12.5 mg/L;"]))
    return lines


def fairseq_train(*args):
    run = subprocess.run([str(BIN / "fairseq-train"), *map(str, args), "--user-dir", str(USER_DIR), "--cpu",
                          "--num-workers", "0", "--seed", "1", "--no-epoch-checkpoints"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.fixture(scope="module")
def bpe_vocab(tmp_path_factory):
    """A byte-level BPE vocabulary dir from `learn-vocab` (dict.txt ordered by count, so dict ids
    differ from BPE ids) with RoBERTa's madeupword padding, and a masked_lm data-bin binarised with it."""
    from fairseq.data import Dictionary

    from preprocess.bpe import open_bpe
    from preprocess.vocab import learn_vocabulary

    root = tmp_path_factory.mktemp("export_vocab")
    rng = random.Random(0)
    bpe_corpus = root / "bpe.txt"
    bpe_corpus.write_text("\n".join(bpe_text(rng, 400)) + "\n")
    vocab_dir = root / "vocab"
    learn_vocabulary("gpt2", [bpe_corpus], vocab_dir, vocab_size=400, min_frequency=2)
    dictionary = Dictionary.load(str(vocab_dir / "dict.txt"))
    dictionary.pad_to_multiple_(8)
    dictionary.save(str(vocab_dir / "dict.txt"))

    bpe = open_bpe(vocab_dir)
    text = root / "text"
    text.mkdir()
    for split, n in (("train", 300), ("valid", 30)):
        (text / f"{split}.txt").write_text("\n".join(bpe.encode(line) for line in bpe_text(rng, n)) + "\n")
    return vocab_dir, fairseq_preprocess(text, root / "mlm-bin", srcdict=vocab_dir / "dict.txt")


@pytest.fixture(scope="module")
def mlm_checkpoint(bpe_vocab, tmp_path_factory):
    vocab_dir, databin = bpe_vocab
    save_dir = tmp_path_factory.mktemp("export_mlm")
    fairseq_train(databin, "--task", "masked_lm", "--criterion", "masked_lm", "--arch", "roberta_tiny",
                  "--batch-size", "8", "--tokens-per-sample", "64", "--max-positions", "512", "--optimizer", "adam", "--lr", "1e-3",
                  "--max-update", "6", "--save-dir", save_dir, "--disable-validation")
    return save_dir / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def classification_checkpoint(bpe_vocab, mlm_checkpoint, tmp_path_factory):
    """A 3-class sentence_prediction fine-tune of the MLM checkpoint (finetune-bin layout)."""
    vocab_dir, _ = bpe_vocab
    root = tmp_path_factory.mktemp("export_cls")
    from preprocess.bpe import open_bpe

    bpe = open_bpe(vocab_dir)
    rng = random.Random(1)
    raw = root / "raw"
    raw.mkdir()
    for split, n in (("train", 64), ("valid", 16)):
        lines = bpe_text(rng, n)
        (raw / f"{split}.input0").write_text("\n".join(bpe.encode(line) for line in lines) + "\n")
        (raw / f"{split}.label").write_text("\n".join(rng.choice(["CPR:3", "false", "CPR:9"]) for _ in lines) + "\n")
    data = root / "data"
    for name, srcdict in (("input0", ["--srcdict", vocab_dir / "dict.txt"]), ("label", [])):
        subprocess.run([str(c) for c in [BIN / "fairseq-preprocess", "--only-source", "--trainpref", raw / f"train.{name}",
                        "--validpref", raw / f"valid.{name}", "--destdir", data / name, "--workers", "1", *srcdict]],
                       check=True, capture_output=True)
    save_dir = root / "ckpt"
    fairseq_train(data, "--task", "sentence_prediction", "--criterion", "sentence_prediction",
                  "--arch", "roberta_tiny", "--num-classes", "3", "--init-token", "0", "--separator-token", "2",
                  "--max-positions", "512", "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3",
                  "--max-update", "4", "--restore-file", mlm_checkpoint, "--reset-optimizer",
                  "--reset-dataloader", "--reset-meters", "--save-dir", save_dir, "--disable-validation")
    return save_dir / "checkpoint_last.pt", data


@pytest.fixture(scope="module")
def token_classification_checkpoint(bpe_vocab, mlm_checkpoint, tmp_path_factory):
    """A sequence_labeling (NER) fine-tune of the MLM checkpoint; returns (checkpoint, finetune-bin)."""
    from finetune_data import build_ner

    vocab_dir, _ = bpe_vocab
    root = tmp_path_factory.mktemp("export_ner")
    data = build_ner(root / "data", vocab_dir / "dict.txt")
    fairseq_train(data, "--task", "sequence_labeling", "--criterion", "sequence_labeling", "--arch", "roberta_tiny",
                  "--max-positions", "512", "--batch-size", "8", "--optimizer", "adam", "--lr", "1e-3",
                  "--max-update", "4", "--restore-file", mlm_checkpoint, "--reset-optimizer", "--reset-dataloader",
                  "--reset-meters", "--save-dir", root / "ckpt", "--disable-validation")
    return root / "ckpt" / "checkpoint_last.pt", data


def export_cli(*args):
    return subprocess.run([str(BIN / "bio-roberta"), "export-hf", *map(str, args)], capture_output=True, text=True)


def fairseq_hub(checkpoint, data, vocab_dir):
    from fairseq.models.roberta import RobertaModel

    return RobertaModel.from_pretrained(
        str(checkpoint.parent), checkpoint_file=checkpoint.name, data_name_or_path=str(data), bpe="gpt2",
        gpt2_encoder_json=str(vocab_dir / "encoder.json"), gpt2_vocab_bpe=str(vocab_dir / "vocab.bpe"),
        user_dir=str(USER_DIR),
    ).eval()


def pubmed_sentences(shared_data, limit=6):
    from lxml import etree

    path = sorted(shared_data("corpus", "pubmed").glob("*.xml.gz"))[0]
    root = etree.fromstring(gzip.open(path).read())
    texts = ["".join(node.itertext()) for node in root.iter("AbstractText")]
    return [t[:400] for t in texts if t.strip()][:limit]


def assert_same_ids_and_mlm_logits(hub, out, sentences):
    from transformers import RobertaForMaskedLM, RobertaTokenizerFast

    tokenizer = RobertaTokenizerFast.from_pretrained(str(out))
    model = RobertaForMaskedLM.from_pretrained(str(out)).eval()
    for sentence in sentences:
        fairseq_ids = hub.encode(sentence)
        assert tokenizer(sentence)["input_ids"] == fairseq_ids.tolist(), sentence
        with torch.no_grad():
            expected, _ = hub.model(fairseq_ids[None])
            actual = model(fairseq_ids[None]).logits
        assert actual.shape == expected.shape
        assert torch.allclose(actual, expected, atol=TOLERANCE), (actual - expected).abs().max()


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
    assert [tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id] == [0, 1, 2, 3]
    assert "madeupword0000" in dictionary.symbols  # padding entries kept at their ids
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


def test_sequence_classification_export_matches_fairseq(bpe_vocab, classification_checkpoint, tmp_path):
    from transformers import RobertaForSequenceClassification

    vocab_dir, _ = bpe_vocab
    checkpoint, data = classification_checkpoint
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)  # label dict found via the checkpoint's data dir
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
        label = hub.task.label_dictionary.string([hub.predict("sentence_classification_head", sentence_ids).argmax() + 4])
        assert model.config.id2label[int(actual[i].argmax())] == label


def test_token_classification_export_matches_fairseq(bpe_vocab, token_classification_checkpoint, tmp_path):
    from transformers import RobertaForTokenClassification, RobertaTokenizerFast

    from bio_roberta.predictions import load_finetuned
    from user_dir.models.token_classification_head import token_classification_logits

    vocab_dir, _ = bpe_vocab
    checkpoint, data = token_classification_checkpoint
    out = tmp_path / "hf"
    run = export_cli(checkpoint, out, "--vocab", vocab_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    model = RobertaForTokenClassification.from_pretrained(str(out)).eval()
    fairseq_model, task = load_finetuned(checkpoint, data)
    assert [model.config.id2label[i] for i in range(len(task.tags))] == task.tags == ["O", "B", "I"]
    tokenizer = RobertaTokenizerFast.from_pretrained(str(out))
    batch = tokenizer(SAMPLE_SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = token_classification_logits(fairseq_model, "token_classification_head", batch["input_ids"])
        actual = model(**batch).logits
    real = batch["attention_mask"].bool()
    assert torch.allclose(actual[real], expected[real], atol=TOLERANCE), (actual - expected)[real].abs().max()


def test_export_errors_name_the_problem(bpe_vocab, mlm_checkpoint, tmp_path):
    from fairseq.data import Dictionary

    vocab_dir, _ = bpe_vocab
    missing = export_cli(tmp_path / "nope.pt", tmp_path / "out", "--vocab", vocab_dir)
    assert missing.returncode == 2 and "nope.pt does not exist" in missing.stderr

    incomplete = tmp_path / "incomplete.txt"
    incomplete.write_text("".join((vocab_dir / "dict.txt").read_text().splitlines(keepends=True)[:50]))
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
