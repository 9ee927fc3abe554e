"""The shared text-shard writer: format, size bound, split, dedup, and kill-and-resume."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lxml import etree

from conftest import REPO_ROOT, SAMPLE_DIR
from preprocess.pubmed import parse_pubmed
from preprocess.text_shards import ShardOptions, iter_shard_documents, valid_split
from preprocess.work_files import text_fingerprint

PUBMED_SAMPLE = SAMPLE_DIR / "corpus" / "pubmed"


def write_pubmed_inputs(directory: Path, files: int, copies: int) -> Path:
    """`files` PubMed files, each with `copies` renumbered copies of the sample's first baseline
    file."""
    directory.mkdir(parents=True, exist_ok=True)
    source = etree.fromstring(
        gzip.decompress((PUBMED_SAMPLE / "pubmed25n0001.xml.gz").read_bytes())
    )
    articles = source.findall("PubmedArticle")
    for file_index in range(files):
        root = etree.Element("PubmedArticleSet")
        for copy in range(copies):
            for article_index, article in enumerate(articles):
                clone = etree.fromstring(etree.tostring(article))
                pmid = 10_000_000 + (file_index * copies + copy) * 100 + article_index
                clone.find("MedlineCitation/PMID").text = str(pmid)
                for text in clone.iterfind(".//AbstractText"):
                    text.text = f"Record {pmid}. " + (text.text or "")
                root.append(clone)
        data = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
        (directory / f"pubmed25n{file_index:04d}.xml.gz").write_bytes(gzip.compress(data, mtime=0))
    return directory


def tree_bytes(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_shard_format_size_bound_and_accounting(tmp_path):
    inputs = write_pubmed_inputs(tmp_path / "in", files=2, copies=5)
    manifest = parse_pubmed(
        [inputs], tmp_path / "out", ShardOptions(shard_size_mb=0.004, valid_fraction=0.3)
    )
    shards = manifest["shards"]
    assert len([s for s in shards if s["split"] == "train"]) > 3
    for split in ("train", "valid"):
        names = [s["name"] for s in shards if s["split"] == split]
        assert names == [f"{split}.{i:05d}.txt" for i in range(len(names))]
    for shard in shards:
        data = (tmp_path / "out" / shard["name"]).read_bytes()
        assert len(data) == shard["bytes"]
        text = data.decode("utf-8")
        assert text.endswith("\n\n") and "\n\n\n" not in text and not text.startswith("\n")
        documents = text[:-2].split("\n\n")
        assert len(documents) == shard["documents"]
        assert sum(len(d.split("\n")) for d in documents) == shard["sentences"]
        # the bound holds unless a single document is bigger than it
        assert shard["bytes"] <= 0.004 * 1024 * 1024 or shard["documents"] == 1
    counts = manifest["counts"]
    written = sum(counts["documents_written"].values())
    assert written + sum(counts["documents_skipped"].values()) == counts["documents_read"] == 60
    assert (
        counts["documents_written"]["valid"]
        == sum(s["documents"] for s in shards if s["split"] == "valid")
        > 0
    )
    train_docs = list(iter_shard_documents(tmp_path / "out", "train"))
    assert len(train_docs) == counts["documents_written"]["train"]
    assert all(
        doc and all(sentence.strip() == sentence and sentence for sentence in doc)
        for doc in train_docs
    )


def test_split_is_a_function_of_the_id():
    ids = [str(10_000_000 + i) for i in range(20_000)]
    fraction = sum(valid_split(i, 0.05) for i in ids) / len(ids)
    assert 0.04 < fraction < 0.06
    assert [valid_split(i, 0.05) for i in ids[:100]] == [valid_split(i, 0.05) for i in ids[:100]]
    assert not any(valid_split(i, 0.0) for i in ids[:100]) and all(
        valid_split(i, 1.0) for i in ids[:100]
    )
    # a larger fraction only adds documents to valid
    assert all(valid_split(i, 0.2) for i in ids if valid_split(i, 0.05))


def test_exact_duplicates_removed_and_kept_with_no_dedup(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    data = gzip.decompress((PUBMED_SAMPLE / "pubmed25n0001.xml.gz").read_bytes())
    (inputs / "pubmed25n0001.xml").write_bytes(data)
    # the same texts under other PMIDs, with different spacing and case in one abstract
    changed = data.replace(b">3900000", b">4900000").replace(
        b"Iron-deficiency anaemia is common", b"IRON-deficiency   anaemia is common"
    )
    (inputs / "pubmed25n0002.xml").write_bytes(changed)
    deduped = parse_pubmed([inputs], tmp_path / "dedup", ShardOptions(valid_fraction=0.0))
    assert deduped["counts"]["documents_skipped"]["duplicate_text"] == 5
    assert deduped["counts"]["documents_written"]["train"] == 5
    kept = parse_pubmed([inputs], tmp_path / "kept", ShardOptions(valid_fraction=0.0, dedup=False))
    assert "duplicate_text" not in kept["counts"]["documents_skipped"]
    assert kept["counts"]["documents_written"]["train"] == 10


def test_rerun_reuses_inputs_and_cleans_leftovers(tmp_path):
    inputs = write_pubmed_inputs(tmp_path / "in", files=3, copies=2)
    options = ShardOptions(shard_size_mb=0.004, valid_fraction=0.2)
    out = tmp_path / "out"
    parse_pubmed([inputs], out, options)
    clean = tree_bytes(out)
    # what a run killed during the shard stage can leave: temporaries, an old shard, no manifest
    (out / ".train.00001.txt.x1y2.tmp").write_bytes(b"partial")
    (out / ".work" / ".abc.docs.jsonl.tmp").write_bytes(b"partial")
    (out / "train.00000.txt").write_bytes(b"stale shard from an older run\n\n")
    (out / "train.00099.txt").write_bytes(b"stale\n\n")
    (out / "manifest.json").unlink()
    summaries = sorted((out / ".work").glob("*.json"))
    before = {p: p.stat().st_mtime_ns for p in summaries}
    parse_pubmed([inputs], out, options)
    assert tree_bytes(out) == clean
    assert {
        p: p.stat().st_mtime_ns for p in summaries
    } == before  # parsed inputs were reused, not redone


def _parse_command(inputs: Path, out: Path) -> list[str]:
    return [
        str(Path(sys.executable).parent / "bio-roberta"),
        "parse-pubmed",
        str(inputs),
        "--out",
        str(out),
        "--shard-size-mb",
        "0.05",
        "--valid-fraction",
        "0.1",
    ]


@pytest.mark.slow
def test_killed_run_resumes_to_byte_identical_output(tmp_path):
    inputs = write_pubmed_inputs(tmp_path / "in", files=24, copies=30)
    reference = tmp_path / "reference"
    subprocess.run(
        _parse_command(inputs, reference), check=True, capture_output=True, cwd=REPO_ROOT
    )
    expected = tree_bytes(reference)
    assert len([name for name in expected if name.startswith("train.")]) > 3

    out = tmp_path / "resumed"
    kills = 0
    for finished_inputs in (2, 9, 17):
        process = subprocess.Popen(
            _parse_command(inputs, out),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=REPO_ROOT,
        )
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if len(list((out / ".work").glob("*.json"))) >= finished_inputs:
                os.kill(process.pid, signal.SIGKILL)
                kills += 1
                break
            time.sleep(0.02)
        process.wait()
        assert not (out / "manifest.json").exists() or process.returncode == 0
    assert kills >= 2, "the run finished before it could be killed; give it more input"
    subprocess.run(_parse_command(inputs, out), check=True, capture_output=True, cwd=REPO_ROOT)
    assert tree_bytes(out) == expected
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["documents_read"] == 24 * 30 * 6


def test_out_dir_of_another_source_options_or_files_is_refused_unless_overwrite(tmp_path):
    from preprocess.pmc import parse_pmc
    from preprocess.text_shards import TextDirError

    out = tmp_path / "pubmed"
    parse_pubmed([PUBMED_SAMPLE], out, ShardOptions(valid_fraction=0.2))
    pubmed_dir = tree_bytes(out)
    pmc_sample = SAMPLE_DIR / "corpus" / "pmc"
    with pytest.raises(
        TextDirError,
        match=r"pubmed: holds the text shards of another run \(source 'pubmed' \(this "
        r"run: 'pmc'\); valid_fraction 0.2 \(this run: 0.005\); reader \{\} \(this run: "
        r"\{'max_article_mb': 256.0\}\)\).*--overwrite",
    ):
        parse_pmc([pmc_sample], out)
    with pytest.raises(TextDirError, match=r"valid_fraction 0.2 \(this run: 0.1\)"):
        parse_pubmed([PUBMED_SAMPLE], out, ShardOptions(valid_fraction=0.1))
    assert tree_bytes(out) == pubmed_dir  # nothing was deleted or rewritten
    parse_pubmed(
        [PUBMED_SAMPLE], out, ShardOptions(valid_fraction=0.2, workers=1)
    )  # same run: goes on
    # a killed run has no manifest yet, but .work/run.json already says what the dir is for
    (out / "manifest.json").unlink()
    with pytest.raises(TextDirError, match="source 'pubmed' \\(this run: 'pmc'\\)"):
        parse_pmc([pmc_sample], out)
    manifest = parse_pmc([pmc_sample], out, overwrite=True)
    assert manifest["source"] == "pmc" and sorted(p.name for p in out.glob("*.txt")) == [
        "train.00000.txt"
    ]
    # a dir that is not empty and not a text-shard dir, or a file
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me\n")
    with pytest.raises(TextDirError, match="notes: not empty and not a text-shard dir"):
        parse_pmc([pmc_sample], tmp_path / "notes")
    with pytest.raises(TextDirError, match="todo.txt: exists and is not a directory"):
        parse_pmc([pmc_sample], tmp_path / "notes" / "todo.txt")


def test_text_fingerprint_is_the_hash_of_the_normalised_joined_text():
    """Hashed sentence by sentence, it stays the hash of the whole text, whitespace collapsed and
    casefolded, so duplicates are found across sentence boundaries and spacing."""
    sentences = ["  Straße\tund ΣΊΣΥΦΟΣ ", "", "a\u2028b", " ", "\u00c5ngstr\u00f6m  units."]
    joined = " ".join(" ".join(" ".join(sentences).split()).casefold().split())
    assert text_fingerprint(sentences) == hashlib.sha256(joined.encode("utf-8")).digest()
    assert text_fingerprint(["Strasse und", "σίσυφοσ a b ångström units."]) == text_fingerprint(
        sentences
    )
    assert text_fingerprint(["ab"]) != text_fingerprint(["a", "b"])
