"""Vocabulary dirs: learned byte-level BPE gives fairseq's own gpt2 ids; the ablation kinds and an
imported RoBERTa vocabulary open as fairseq BPEs; broken dirs fail with a clear message."""

from __future__ import annotations

import gzip
import json
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from bio_roberta.cli import main as cli_main
from bio_roberta_core.vocab_files import IMPORTED_KINDS, KIND_FILES
from conftest import shared_data_path, write_text_manifest
from preprocess.bpe import bpe_namespace, load_dictionary, open_bpe
from preprocess.gpt2_encoder import BatchGPT2Encoder, read_dictionary_indices
from preprocess.learn_vocab import LEARNERS, learn_vocabulary
from preprocess.roberta_vocab import import_vocabulary
from preprocess.text_shards import iter_lines
from preprocess.vocab_dir import VocabDirError, read_vocab_dir

DRUGS = [
    "cisplatin",
    "5-fluorouracil",
    "tamoxifen",
    "IFN-γ",
    "metformin",
    "β-lactam",
    "TNF-α inhibitors",
]
DISEASES = [
    "hepatocellular carcinoma",
    "type 2 diabetes",
    "Alzheimer's disease",
    "sepsis",
    "COVID-19",
]
GENES = ["BRCA1", "TP53", "EGFR", "IL-6", "CYP2D6", "HLA-B*57:01"]
TEMPLATES = [
    "Patients with {disease} (n = {n}) received {drug} at {dose} mg/kg for {weeks} weeks.",
    "Expression of {gene} was increased {fold}-fold in {disease} tissue (p < 0.0{p}).",
    "We didn't observe any association between {gene} polymorphisms and {disease}.",
    "{drug} reduced serum levels by {pct}% ± {sd}% compared with placebo [{n} μg/mL].",
    "In vitro, {drug}-treated cells showed {gene}-dependent apoptosis; see Fig. {fig}A–C.",
    "Median follow-up was {weeks} months (IQR {p}–{fold}); {pct}% were women ≥65 years.",
]
# Edge cases for byte-level BPE: whitespace runs, tabs, emoji, non-Latin scripts, "<s>" as text.
EDGE_LINES = [
    "Hello <s> wörld 😀 \t tabs   and  spaces 12,345.6 it's",
    "ÆØÅ 中文 𝔘 naïve café — “quoted” ‘text’",
    "x",
    "'s 're 've 'm 'll 'd ''",
]


def synthetic_sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        disease=rng.choice(DISEASES),
        drug=rng.choice(DRUGS),
        gene=rng.choice(GENES),
        n=rng.randint(10, 900),
        dose=rng.choice(["0.5", "2", "10", "25"]),
        weeks=rng.randint(2, 52),
        fold=rng.randint(2, 9),
        p=rng.randint(1, 5),
        pct=rng.randint(1, 99),
        sd=rng.randint(1, 9),
        fig=rng.randint(1, 6),
    )


def write_synthetic_shards(text_dir: Path, documents: dict[str, int], seed: int = 0) -> Path:
    """A text-shard dir: {split}.NNNNN.txt, one sentence per line, blank line after each
    document."""
    rng = random.Random(seed)
    text_dir.mkdir(parents=True, exist_ok=True)
    for split, count in documents.items():
        docs = [
            "\n".join(synthetic_sentence(rng) for _ in range(rng.randint(1, 5))) + "\n\n"
            for _ in range(count)
        ]
        half = len(docs) // 2 if split == "train" else len(docs)
        (text_dir / f"{split}.00000.txt").write_text("".join(docs[:half]), encoding="utf-8")
        if half < len(docs):
            (text_dir / f"{split}.00001.txt").write_text(
                "".join(docs[half:]) + "\n".join(EDGE_LINES) + "\n", encoding="utf-8"
            )
    return write_text_manifest(text_dir)


def real_abstract_lines() -> list[str]:
    """Titles and abstracts of the real PubMed baseline samples (test-side extraction only)."""
    from lxml import etree

    lines = []
    for path in sorted(shared_data_path("corpus", "pubmed").glob("*.xml.gz")):
        with gzip.open(path) as handle:
            for _, element in etree.iterparse(handle, tag=("ArticleTitle", "AbstractText")):
                text = "".join(element.itertext()).strip()
                if text:
                    lines.append(text)
                element.clear()
    return lines


def assert_same_ids_as_fairseq(vocab_dir: Path, lines: list[str]) -> int:
    """Our batch encoder must write exactly fairseq's gpt2_bpe ids, line by line; returns tokens
    compared."""
    vocab = read_vocab_dir(vocab_dir)
    fairseq_bpe = open_bpe(vocab)
    files = vocab.bpe_files
    encoder = BatchGPT2Encoder(files["gpt2_encoder_json"], files["gpt2_vocab_bpe"])
    compared = 0
    for start in range(0, len(lines), 64):  # several batches: the second meets a warm cache
        batch = lines[start : start + 64]
        flat, lengths = encoder.encode_lines(batch)
        assert len(lengths) == len(batch)
        per_line = np.split(flat, np.cumsum(lengths + 1)[:-1])
        for line, ids in zip(batch, per_line):
            expected = fairseq_bpe.encode(line)
            assert ids[-1] == encoder.LINE_END
            assert " ".join(map(str, ids[:-1])) == expected, line
            assert fairseq_bpe.decode(expected) == line
            compared += len(ids) - 1
    return compared


@pytest.fixture(scope="module")
def synthetic_text(tmp_path_factory) -> Path:
    return write_synthetic_shards(tmp_path_factory.mktemp("text"), {"train": 300, "valid": 20})


@pytest.fixture(scope="module")
def gpt2_vocab(synthetic_text, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vocab") / "gpt2"
    learn_vocabulary("gpt2", [synthetic_text], out, vocab_size=600)
    return out


def test_batch_encoder_matches_fairseq_gpt2_on_synthetic_text(gpt2_vocab, synthetic_text):
    lines = list(iter_lines(sorted(synthetic_text.glob("*.txt")))) + EDGE_LINES
    assert assert_same_ids_as_fairseq(gpt2_vocab, lines) > 1000
    with pytest.raises(ValueError, match="stripped lines without line breaks"):
        BatchGPT2Encoder(gpt2_vocab / "encoder.json", gpt2_vocab / "vocab.bpe").encode_lines(
            ["two\nlines"]
        )


def test_gpt2_vocab_dir_files_dict_and_manifest(gpt2_vocab, synthetic_text):
    manifest = read_vocab_dir(gpt2_vocab).manifest
    encoder = json.loads((gpt2_vocab / "encoder.json").read_text(encoding="utf-8"))
    assert len(encoder) == manifest["counts"]["bpe_units"] == 600
    assert sorted(encoder.values()) == list(range(600))
    # dict.txt lists every BPE id, most frequent first, counts from the training text only, then
    # fairseq's padding entries up to 640 entries with the 4 specials and <mask> (a multiple of 64)
    entries = [line.rsplit(" ", 1) for line in (gpt2_vocab / "dict.txt").read_text().splitlines()]
    units, padding = entries[:600], entries[600:]
    assert sorted(int(symbol) for symbol, _ in units) == list(range(600))
    assert (
        padding == [[f"madeupword{i:04d}", "0"] for i in range(35)] and 4 + len(entries) + 1 == 640
    )
    counts = [int(count) for _, count in units]
    assert counts == sorted(counts, reverse=True)
    assert sum(counts) == manifest["counts"]["tokens"]
    assert [Path(record["path"]).name for record in manifest["inputs"]] == [
        "train.00000.txt",
        "train.00001.txt",
    ]
    assert manifest["dict_size"] == 635 and manifest["counts"]["padding_entries"] == 35
    assert manifest["package_versions"]["tokenizers"]
    # fairseq's dictionary never maps an encoded line to <unk>
    vocab = read_vocab_dir(gpt2_vocab)
    dictionary, bpe = load_dictionary(vocab), open_bpe(vocab)
    for line in EDGE_LINES:
        ids = dictionary.encode_line(bpe.encode(line), add_if_not_exist=False)
        assert dictionary.unk() not in ids.tolist()
    assert vars(bpe_namespace(vocab)) == {
        "bpe": "gpt2",
        "gpt2_encoder_json": str(gpt2_vocab / "encoder.json"),
        "gpt2_vocab_bpe": str(gpt2_vocab / "vocab.bpe"),
    }


def test_dictionary_indices_are_fairseqs(gpt2_vocab, tmp_path):
    from fairseq.data import Dictionary

    flagged = tmp_path / "dict.txt"
    flagged.write_text(
        (gpt2_vocab / "dict.txt").read_text() + "</s> 5 #fairseq:overwrite\nmadeupword9999 0\n"
    )
    for path in (gpt2_vocab / "dict.txt", flagged):
        indices, size = read_dictionary_indices(path)
        dictionary = Dictionary.load(str(path))
        assert indices == dictionary.indices and size == len(dictionary)
    flagged.write_text("7 1\n7 2\n")
    with pytest.raises(ValueError, match="duplicate symbol '7'"):
        read_dictionary_indices(flagged)


@pytest.mark.real_data
def test_batch_encoder_matches_fairseq_gpt2_on_real_abstracts(tmp_path):
    lines = real_abstract_lines()
    corpus = tmp_path / "abstracts.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    learn_vocabulary("gpt2", [corpus], tmp_path / "vocab", vocab_size=2000)
    assert assert_same_ids_as_fairseq(tmp_path / "vocab", lines) > 50_000


@pytest.mark.parametrize(
    "kind, options",
    [
        ("sentencepiece", {"model_type": "bpe"}),
        ("sentencepiece", {"model_type": "unigram"}),
        ("fastbpe", {}),
    ],
)
def test_ablation_vocabularies_open_as_fairseq_bpe(kind, options, synthetic_text, tmp_path):
    manifest = learn_vocabulary(kind, [synthetic_text], tmp_path / kind, vocab_size=300, **options)
    vocab = read_vocab_dir(tmp_path / kind)
    bpe, dictionary = open_bpe(vocab), load_dictionary(vocab)
    lines = list(iter_lines(sorted(synthetic_text.glob("train.*"))))
    tokens = unknown = 0
    for line in lines:
        expected = " ".join(line.split())
        # fastBPE splits words at single spaces only (it expects tokenised text): collapse first
        line = expected if kind == "fastbpe" else line
        ids = dictionary.encode_line(
            bpe.encode(line), add_if_not_exist=False, append_eos=False
        ).tolist()
        tokens += len(ids)
        unknown += ids.count(dictionary.unk())
        # SentencePiece normalises NFKC by default (𝔘 -> U), like BioMegatron's vocabularies
        assert bpe.decode(bpe.encode(line)) == (
            unicodedata.normalize("NFKC", expected) if kind == "sentencepiece" else expected
        )
    assert tokens == manifest["counts"]["tokens"]
    assert list(manifest["options"]) == [*LEARNERS[kind].options, "max_lines"]
    # SentencePiece leaves characters outside its coverage (here 中, 文) unknown, and says how many
    assert unknown == manifest["counts"].get("unknown_tokens", 0) < 0.001 * tokens
    if kind == "fastbpe":
        # codes: "left right count"; the count is how often the merge fires on the training words
        rows = [line.split(" ") for line in (tmp_path / kind / "codes").read_text().splitlines()]
        assert all(len(row) == 3 for row in rows) and int(rows[0][2]) > 0
        assert sum(int(row[2]) for row in rows) > 0


def test_import_roberta_vocabulary_and_reject_a_mismatched_dict(gpt2_vocab, tmp_path):
    manifest = import_vocabulary(
        gpt2_vocab / "encoder.json",
        gpt2_vocab / "vocab.bpe",
        gpt2_vocab / "dict.txt",
        tmp_path / "roberta",
    )
    assert manifest["kind"] == "gpt2" and manifest["counts"]["ids_missing_from_dict"] == 0
    assert (tmp_path / "roberta" / "dict.txt").read_bytes() == (
        gpt2_vocab / "dict.txt"
    ).read_bytes()
    imported, learned = read_vocab_dir(tmp_path / "roberta"), read_vocab_dir(gpt2_vocab)
    assert open_bpe(imported).encode("tamoxifen") == open_bpe(learned).encode("tamoxifen")
    wrong_dict = tmp_path / "wrong_dict.txt"
    wrong_dict.write_text("the 10\nof 5\n")
    with pytest.raises(VocabDirError, match="wrong_dict.txt: 2 symbols are not encoder.json ids"):
        import_vocabulary(
            gpt2_vocab / "encoder.json", gpt2_vocab / "vocab.bpe", wrong_dict, tmp_path / "bad"
        )


def test_broken_vocab_dirs_are_reported(gpt2_vocab, tmp_path):
    with pytest.raises(VocabDirError, match="no vocabulary manifest"):
        read_vocab_dir(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "charpiece"}))
    with pytest.raises(VocabDirError, match="kind 'charpiece' is not one of"):
        read_vocab_dir(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "gpt2"}))
    (tmp_path / "encoder.json").write_text((gpt2_vocab / "encoder.json").read_text())
    with pytest.raises(VocabDirError, match="vocab.bpe: missing from the gpt2 vocabulary dir"):
        read_vocab_dir(tmp_path)


def test_learn_vocab_command(synthetic_text, tmp_path, capsys):
    assert (
        cli_main(
            [
                "learn-vocab",
                str(synthetic_text),
                "--out",
                str(tmp_path / "v"),
                "--vocab-size",
                "400",
            ]
        )
        == 0
    )
    assert "gpt2 vocabulary" in capsys.readouterr().out
    assert read_vocab_dir(tmp_path / "v").manifest["counts"]["bpe_units"] == 400
    assert cli_main(["learn-vocab", str(tmp_path / "missing"), "--out", str(tmp_path / "w")]) == 2
    assert "missing: no such file or directory" in capsys.readouterr().err
    assert cli_main(["learn-vocab", "--out", str(tmp_path / "w"), "--encoder-json", "e.json"]) == 2


def test_learn_vocab_offers_exactly_the_learners_and_each_kind_names_its_files(capsys):
    with pytest.raises(SystemExit):
        cli_main(["learn-vocab", "--help"])
    assert "--kind {" + ",".join(LEARNERS) + "}" in capsys.readouterr().out
    assert sorted(LEARNERS) == sorted(set(KIND_FILES) - set(IMPORTED_KINDS))
    with pytest.raises(VocabDirError, match="unknown vocabulary kind 'wordpiece'"):
        learn_vocabulary("wordpiece", [], "unused")


def test_dictionaries_are_padded_with_fairseq_s_madeupwords_to_a_multiple_of_64(tmp_path):
    """RoBERTa's dict.txt (50,260 lines, the last three madeupword0000-0002) gives 50,265 entries
    with <mask>; padded, 50,304, every existing id unchanged; padding a padded dict adds nothing."""
    from fairseq.data import Dictionary

    from preprocess.vocab_dir import dictionary_padding, write_padded_dict

    roberta = tmp_path / "roberta_dict.txt"
    roberta.write_text(
        "".join(f"{i} {100000 - i}\n" for i in range(50257))
        + "".join(f"madeupword{i:04d} 0\n" for i in range(3))
    )
    assert dictionary_padding(roberta) == [f"madeupword{i:04d}" for i in range(3, 42)]
    assert write_padded_dict(roberta, tmp_path / "dict.txt") == 39
    before, after = Dictionary.load(str(roberta)), Dictionary.load(str(tmp_path / "dict.txt"))
    assert len(after) + 1 == 50304 and after.symbols[: len(before)] == before.symbols
    assert write_padded_dict(tmp_path / "dict.txt", tmp_path / "dict.txt") == 0


def test_import_pads_a_roberta_checkpoint_s_vocabulary_rows(gpt2_vocab, tmp_path):
    """learn-vocab --checkpoint: RoBERTa's model.pt with rows for the padded dict.txt: every row at
    its id, <mask> moved to the last row, padding rows copied from an existing padding entry."""
    import torch

    from preprocess.vocab_dir import MADEUP_WORD_PREFIX

    entries = (gpt2_vocab / "dict.txt").read_text().splitlines()
    unpadded = (
        tmp_path / "roberta_dict.txt"
    )  # RoBERTa's own: three padding entries, to 8 without <mask>
    unpadded.write_text(
        "\n".join(
            [e for e in entries if not e.startswith(MADEUP_WORD_PREFIX)]
            + [f"madeupword{i:04d} 0" for i in range(3)]
        )
        + "\n"
    )
    rows = 4 + 603 + 1
    generator = torch.Generator().manual_seed(0)
    embedding = torch.randn(rows, 8, generator=generator)
    state = {
        "model": {
            "encoder.sentence_encoder.embed_tokens.weight": embedding,
            "encoder.lm_head.weight": embedding,
            "encoder.lm_head.bias": torch.randn(rows, generator=generator),
            "encoder.lm_head.dense.weight": torch.randn(8, 8, generator=generator),
        },
        "last_optimizer_state": {"state": {}},
    }
    torch.save(state, tmp_path / "model.pt")
    out = tmp_path / "imported"
    assert (
        cli_main(
            [
                "learn-vocab",
                "--encoder-json",
                str(gpt2_vocab / "encoder.json"),
                "--vocab-bpe",
                str(gpt2_vocab / "vocab.bpe"),
                "--dict",
                str(unpadded),
                "--checkpoint",
                str(tmp_path / "model.pt"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    padded = torch.load(out / "model.pt")
    assert "last_optimizer_state" not in padded
    for name in (
        "encoder.sentence_encoder.embed_tokens.weight",
        "encoder.lm_head.weight",
        "encoder.lm_head.bias",
    ):
        old, new = state["model"][name], padded["model"][name]
        assert (
            new.shape[0] == 640
            and torch.equal(new[: rows - 1], old[:-1])
            and torch.equal(new[-1], old[-1])
        )
        assert all(
            torch.equal(row, old[4 + 603 - 3]) for row in new[rows - 1 : -1]
        )  # madeupword0000's row
    assert torch.equal(
        padded["model"]["encoder.lm_head.dense.weight"],
        state["model"]["encoder.lm_head.dense.weight"],
    )
    assert read_vocab_dir(out).manifest["options"]["checkpoint"] == "model.pt"
    wrong_rows = tmp_path / "wrong.pt"
    torch.save({"model": {"encoder.lm_head.bias": torch.zeros(7)}}, wrong_rows)
    with pytest.raises(VocabDirError, match="not the 608 of .*roberta_dict.txt with <mask>"):
        import_vocabulary(
            gpt2_vocab / "encoder.json",
            gpt2_vocab / "vocab.bpe",
            unpadded,
            tmp_path / "x",
            checkpoint=wrong_rows,
        )
