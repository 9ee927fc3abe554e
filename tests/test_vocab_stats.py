"""vocab-stats: the entity break-out rate and coverage, on fixtures whose numbers are known by
construction, and on the real BC5CDR-Chemical data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bio_roberta.cli import main as cli_main
from bio_roberta.commands.vocab_stats import ner_entity_words
from conftest import shared_data_path
from preprocess.learn_vocab import learn_vocabulary
from preprocess.vocab_stats import vocab_stats
from test_vocab import real_abstract_lines

# Sentences of a BioBERT NER file: (word, tag) pairs.
NER_SENTENCES = [
    [("aspirin", "B"), ("and", "O"), ("ibuprofen", "B")],
    [("xyz", "B"), ("xyz", "I"), ("and", "O"), ("aspirin", "O")],
]


def write_ner_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    text = "".join(
        "".join(f"{word}\t{tag}\n" for word, tag in sentence) + "\n" for sentence in NER_SENTENCES
    )
    for name in ("train.tsv", "devel.tsv", "test.tsv"):
        (path / name).write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def drug_vocab(tmp_path_factory) -> Path:
    """A byte-level BPE that keeps "aspirin", "and", "ibuprofen" whole and never saw x, y or z."""
    root = tmp_path_factory.mktemp("drugs")
    (root / "train.txt").write_text("and aspirin and ibuprofen\n" * 50, encoding="utf-8")
    learn_vocabulary("gpt2", [root / "train.txt"], root / "vocab", vocab_size=400)
    return root


def test_breakout_rate_and_coverage_on_a_known_fixture(drug_vocab, tmp_path):
    ner_dir = write_ner_dir(tmp_path / "ner")
    ner_words = {"bc5cdr-chem": ner_entity_words("bc5cdr-chem", ner_dir)}
    stats = vocab_stats([drug_vocab / "vocab"], ner_words, [drug_vocab / "train.txt"])
    result = stats["vocabularies"][str(drug_vocab / "vocab")]
    ner = result["ner"]["bc5cdr-chem"]
    # three splits, each: mentions [aspirin] [ibuprofen] [xyz xyz]; " xyz" = Ġ x y z (4 byte tokens)
    assert ner["mentions"] == 9 and ner["sentences"] == 6
    assert ner["entity_words"]["words"] == 12 and ner["entity_words"]["tokens"] == 3 * (
        1 + 1 + 4 + 4
    )
    assert ner["entity_breakout_rate"] == pytest.approx(10 / 4)
    assert ner["all_words"]["words_kept_whole"] == pytest.approx(15 / 21)
    assert result["text"] == {
        "words": 200,
        "distinct_words": 3,
        "tokens": 200,
        "tokens_per_word": 1.0,
        "words_kept_whole": 1.0,
        "unk_rate": 0.0,
    }
    assert [Path(r["path"]).name for r in stats["inputs"]["ner"]["bc5cdr-chem"]] == [
        "train.tsv",
        "devel.tsv",
        "test.tsv",
    ]


def test_every_vocabulary_kind_is_measured(drug_vocab, tmp_path):
    ner_dir = write_ner_dir(tmp_path / "ner")
    learn_vocabulary("fastbpe", [drug_vocab / "train.txt"], tmp_path / "fastbpe", vocab_size=100)
    ner_words = {"bc5cdr-chem": ner_entity_words("bc5cdr-chem", ner_dir)}
    stats = vocab_stats([drug_vocab / "vocab", tmp_path / "fastbpe"], ner_words)
    fastbpe = stats["vocabularies"][str(tmp_path / "fastbpe")]["ner"]["bc5cdr-chem"]
    # fastBPE keeps the known words whole; x, y, z were never seen: 3 units each, all <unk>
    assert fastbpe["entity_words"]["tokens"] == 3 * (1 + 1 + 3 + 3)
    assert fastbpe["entity_words"]["unk_rate"] == pytest.approx(6 / 8)


def test_vocab_stats_command(drug_vocab, tmp_path, capsys):
    ner_dir = write_ner_dir(tmp_path / "ner")
    out = tmp_path / "stats.json"
    assert (
        cli_main(
            [
                "vocab-stats",
                "--vocab",
                str(drug_vocab / "vocab"),
                "--ner",
                f"bc5cdr-chem={ner_dir}",
                "--text",
                str(drug_vocab / "train.txt"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "bc5cdr-chem break-out 2.500 (9 mentions)" in capsys.readouterr().out
    assert json.loads(out.read_text())["vocabularies"][str(drug_vocab / "vocab")]["kind"] == "gpt2"
    assert (
        cli_main(["vocab-stats", "--vocab", str(drug_vocab / "vocab"), "--ner", str(ner_dir)]) == 2
    )
    assert "expected TASK=DIR" in capsys.readouterr().err


@pytest.mark.real_data
def test_breakout_rate_on_real_bc5cdr_chemical(tmp_path):
    ner_dir = shared_data_path("ner", "BC5CDR-Chemical")
    corpus = tmp_path / "abstracts.txt"
    corpus.write_text("\n".join(real_abstract_lines()) + "\n", encoding="utf-8")
    learn_vocabulary("gpt2", [corpus], tmp_path / "vocab", vocab_size=3000)
    ner_words = {"bc5cdr-chem": ner_entity_words("bc5cdr-chem", ner_dir)}
    stats = vocab_stats([tmp_path / "vocab"], ner_words, [corpus])
    ner = stats["vocabularies"][str(tmp_path / "vocab")]["ner"]["bc5cdr-chem"]
    begins = sum(
        line.endswith("\tB")
        for name in ("train.tsv", "devel.tsv", "test.tsv")
        for line in (ner_dir / name).read_text(encoding="utf-8").splitlines()
    )
    assert ner["mentions"] == begins
    # a 3k vocabulary from ~200 abstracts splits chemical names far more than Bio-50k's 1.48
    assert 1.5 < ner["entity_breakout_rate"] < 6
    assert ner["entity_breakout_rate"] > ner["all_words"]["tokens_per_word"]
    assert ner["all_words"]["unk_rate"] == 0.0
