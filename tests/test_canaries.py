"""parse-mimic/parse-text --canaries: secrets inserted into training documents only, kept beside the
manifest in canaries.jsonl and never read by binarize (issue 31, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

from bio_roberta.cli import main
from preprocess.canaries import CANARY_FILE
from preprocess.text_shards import iter_shard_documents
from synthetic_notes import write_notes

CANARY_OPTIONS = ["--canaries", "6", "--canary-repeats", "1,4,16", "--canary-seed", "3"]


def parse_notes(tmp_path: Path, out: str, *options: str, notes: int = 80) -> Path:
    csv = write_notes(tmp_path / "notes" / "NOTEEVENTS.csv", notes, seed=0)
    text_dir = tmp_path / out
    command = ["parse-mimic", str(csv), "--out", str(text_dir), "--valid-fraction", "0.3"]
    assert main([*command, "--workers", "1", *options]) == 0
    return text_dir


def documents(text_dir: Path, split: str) -> list[str]:
    return ["\n".join(sentences) for sentences in iter_shard_documents(text_dir, split)]


def test_each_canary_is_in_as_many_training_documents_as_its_repeats_and_never_in_valid(tmp_path):
    text_dir = parse_notes(tmp_path, "text", *CANARY_OPTIONS)
    records = [json.loads(line) for line in (text_dir / CANARY_FILE).read_text().splitlines()]
    assert [r["repeats"] for r in records] == [1, 4, 16, 1, 4, 16]
    train, valid = documents(text_dir, "train"), documents(text_dir, "valid")
    for record in records:
        assert record["text"] == record["prefix"] + record["secret"] + record["suffix"]
        assert record["secret_format"] == "digits:8" and len(record["secret"]) == 8
        assert "{secret}" in record["template"] and record["id"].startswith("canary-")
        sentence_lines = [doc.split("\n").count(record["text"]) for doc in train]
        assert sum(1 for n in sentence_lines if n) == record["repeats"]  # distinct documents
        assert sum(sentence_lines) == record["repeats"]  # one sentence each
        assert not any(record["secret"] in doc for doc in valid)
    manifest = json.loads((text_dir / "manifest.json").read_text())
    plain = parse_notes(tmp_path, "plain")
    plain_manifest = json.loads((plain / "manifest.json").read_text())
    assert manifest["canaries"] == {
        "count": 6,
        "repeats": [1, 4, 16],
        "seed": 3,
        "file": CANARY_FILE,
        "sha256": manifest["canaries"]["sha256"],
        "inserted_sentences": 42,
    }
    assert "canaries" not in plain_manifest and not (plain / CANARY_FILE).exists()
    added = (
        manifest["counts"]["sentences"]["train"] - plain_manifest["counts"]["sentences"]["train"]
    )
    assert added == 42
    assert (
        manifest["counts"]["sentences"]["valid"] == plain_manifest["counts"]["sentences"]["valid"]
    )
    assert documents(plain, "valid") == documents(text_dir, "valid")
    assert all(shard["name"] != CANARY_FILE for shard in manifest["shards"])


def test_canaries_follow_the_seed(tmp_path):
    first = parse_notes(tmp_path, "first", *CANARY_OPTIONS)
    again = parse_notes(tmp_path, "again", *CANARY_OPTIONS)
    other = parse_notes(tmp_path, "other", *CANARY_OPTIONS[:-1], "4")
    assert (first / CANARY_FILE).read_bytes() == (again / CANARY_FILE).read_bytes()
    assert documents(first, "train") == documents(again, "train")
    assert (first / CANARY_FILE).read_bytes() != (other / CANARY_FILE).read_bytes()


def test_binarize_never_reads_the_canary_file(tmp_path):
    from preprocess.binarize import binarize
    from preprocess.learn_vocab import learn_vocabulary

    text_dir = parse_notes(tmp_path, "text", *CANARY_OPTIONS)
    vocab = tmp_path / "vocab"
    learn_vocabulary("gpt2", [text_dir], vocab, vocab_size=400)
    data_bin = tmp_path / "bin"
    manifest = binarize(text_dir, vocab, data_bin, progress=False)
    read = [Path(i["path"]).name for split in manifest["splits"].values() for i in split["inputs"]]
    assert read == ["train.00000.txt", "valid.00000.txt"]
    assert not any(CANARY_FILE in path.name for path in data_bin.rglob("*"))
    secrets = [json.loads(line)["secret"] for line in (text_dir / CANARY_FILE).open()]
    assert not any(s in (text_dir / "valid.00000.txt").read_text() for s in secrets)
    assert all(s in (text_dir / "train.00000.txt").read_text() for s in secrets)


def test_parse_text_takes_canaries_too(tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "".join(json.dumps({"text": f"Note {i} about sepsis."}) + "\n" for i in range(30))
    )
    out = tmp_path / "text"
    assert (
        main(
            [
                "parse-text",
                str(notes),
                "--out",
                str(out),
                "--workers",
                "1",
                "--canaries",
                "2",
                "--canary-repeats",
                "1,4",
            ]
        )
        == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["canaries"]["inserted_sentences"] == 5


def test_too_few_training_documents_is_one_line_naming_the_option(tmp_path, capsys):
    notes = write_notes(tmp_path / "NOTEEVENTS.csv", 5, seed=0)
    code = main(
        ["parse-mimic", str(notes), "--out", str(tmp_path / "text"), "--workers", "1"]
        + ["--canaries", "1", "--canary-repeats", "16"]
    )
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "--canary-repeats" in error and "needs 16" in error


def test_a_rerun_without_canaries_over_a_dir_with_them_removes_their_file(tmp_path):
    text_dir = parse_notes(tmp_path, "text", *CANARY_OPTIONS)
    csv = tmp_path / "notes" / "NOTEEVENTS.csv"
    without_canaries = [
        "parse-mimic",
        str(csv),
        "--out",
        str(text_dir),
        "--valid-fraction",
        "0.3",
        "--workers",
        "1",
    ]
    assert main(without_canaries) == 2  # another run's options: refused
    assert (text_dir / CANARY_FILE).is_file()
    assert main([*without_canaries, "--overwrite"]) == 0
    assert not (text_dir / CANARY_FILE).exists()
    assert "canaries" not in json.loads((text_dir / "manifest.json").read_text())
