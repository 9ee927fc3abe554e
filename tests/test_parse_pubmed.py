"""PubMed parsing: title + abstract, versions and deletions across files, bad input, real data."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from lxml import etree

from conftest import SAMPLE_DIR, shared_data_path
from preprocess.input_log import InputLog
from preprocess.pubmed import iter_pubmed_records, parse_pubmed
from preprocess.text_shards import Deletion, Document, ShardOptions, iter_shard_documents
from test_text_shards import write_pubmed_inputs

PUBMED_SAMPLE = SAMPLE_DIR / "corpus" / "pubmed"
BIO_ROBERTA = str(Path(sys.executable).parent / "bio-roberta")


def all_documents(out_dir):
    return [doc for split in ("train", "valid") for doc in iter_shard_documents(out_dir, split)]


def test_sample_applies_revisions_deletions_and_duplicates(tmp_path):
    manifest = parse_pubmed([PUBMED_SAMPLE], tmp_path, ShardOptions(valid_fraction=0.2))
    counts = manifest["counts"]
    assert counts["documents_read"] == 19
    assert counts["documents_skipped"] == {
        "deleted": 1,
        "duplicate_text": 1,
        "no_abstract": 1,
        "superseded": 2,
    }
    assert sum(counts["documents_written"].values()) == 14
    assert counts["deletions_read"] == 2 and counts["deletions_applied"] == 1
    titles = [doc[0] for doc in all_documents(tmp_path)]
    assert len(titles) == 14
    # the update file's revision replaces the baseline version of PMID 39000002
    assert (
        "Gut microbiota composition and short-chain fatty acids in children with newly "
        "diagnosed type 1 diabetes." in titles
    )
    # ...and the identical abstract under 39000008 is no longer a duplicate of anything, so it stays
    assert (
        titles.count("Gut microbiota composition in children with newly diagnosed type 1 diabetes.")
        == 1
    )
    assert not any("statin use and cognitive decline" in title for title in titles)  # deleted
    assert not any(title.startswith("Erratum") for title in titles)  # no abstract
    assert (
        "Prevalence of Plasmodium falciparum kelch13 mutations in northern Uganda, 2021-2023."
        in titles
    )  # Version 2
    assert "Prevalence of Plasmodium falciparum kelch13 mutations in northern Uganda." not in titles
    # manifest provenance
    assert [Path(i["path"]).name for i in manifest["inputs"]] == [
        "pubmed25n0001.xml.gz",
        "pubmed25n0002.xml.gz",
        "pubmed25n1300.xml.gz",
        "pubmed25n1301.xml",
    ]
    assert all(len(i["sha256"]) == 64 and i["size"] > 0 for i in manifest["inputs"])
    assert "lxml" in manifest["package_versions"]


def test_structured_abstract_sections_are_paragraphs_in_order():
    records = list(iter_pubmed_records(PUBMED_SAMPLE / "pubmed25n0001.xml.gz"))
    first = records[0]
    assert isinstance(first, Document) and first.doc_id == "39000001"
    assert first.paragraphs[0].startswith("Intravenous iron versus oral iron")
    assert first.paragraphs[1].startswith("Iron-deficiency anaemia is common")
    assert first.paragraphs[-1].startswith("Intravenous iron corrected anaemia")
    assert len(first.paragraphs) == 5  # title + BACKGROUND, METHODS, RESULTS, CONCLUSIONS
    deletions = [
        r.doc_id
        for r in iter_pubmed_records(PUBMED_SAMPLE / "pubmed25n1300.xml.gz")
        if isinstance(r, Deletion)
    ]
    assert deletions == ["39000004", "38999999"]


def test_abbreviations_do_not_split_sentences(tmp_path):
    parse_pubmed(
        [PUBMED_SAMPLE / "pubmed25n0001.xml.gz"], tmp_path, ShardOptions(valid_fraction=0.0)
    )
    sentences = [s for doc in all_documents(tmp_path) for s in doc]
    assert (
        "Haemoglobin rose by 2.1 g/dL with i.v. iron vs. 1.2 g/dL with oral iron (p < 0.001)."
        in sentences
    )
    assert any(
        s.startswith("PD-L1 was scored by immunohistochemistry")
        and s.endswith("as shown in Fig. 2.")
        for s in sentences
    )
    assert not any(
        s in {"e.g.", "i.e.", "vs.", "Fig."} or s.endswith((" e.g.", " i.v.", " vs.", " Fig."))
        for s in sentences
    )


def _bad_inputs(tmp_path: Path) -> Path:
    inputs = tmp_path / "in"
    inputs.mkdir()
    good = gzip.decompress((PUBMED_SAMPLE / "pubmed25n0002.xml.gz").read_bytes())
    shutil.copy(PUBMED_SAMPLE / "pubmed25n0001.xml.gz", inputs / "pubmed25n0001.xml.gz")
    compressed = gzip.compress(good, mtime=0)
    (inputs / "pubmed25n0002.xml.gz").write_bytes(
        compressed[: len(compressed) // 2]
    )  # truncated download
    (inputs / "pubmed25n0003.xml").write_bytes(
        good.replace(b"</ArticleTitle>", b"</ArticleTitel>", 2)
    )
    (inputs / "pubmed25n0004.xml").write_bytes(
        good.replace(b"Delirium affects", b"Delirium \xff\xfe affects")
    )
    shutil.copy(PUBMED_SAMPLE / "pubmed25n1301.xml", inputs / "pubmed25n1301.xml")
    return inputs


def test_bad_inputs_are_reported_with_position_and_others_processed(tmp_path):
    manifest = parse_pubmed(
        [_bad_inputs(tmp_path)], tmp_path / "out", ShardOptions(valid_fraction=0.0)
    )
    problems = {Path(p["file"]).name: p for p in manifest["problems"]}
    assert set(problems) == {"pubmed25n0002.xml.gz", "pubmed25n0003.xml", "pubmed25n0004.xml"}
    assert problems["pubmed25n0002.xml.gz"]["reason"].startswith("corrupt gzip stream")
    assert problems["pubmed25n0002.xml.gz"]["position"].startswith("compressed byte ")
    assert problems["pubmed25n0003.xml"]["reason"].startswith("malformed XML")
    assert problems["pubmed25n0003.xml"]["position"].startswith("line 4, column")
    assert (
        "encoding" in problems["pubmed25n0004.xml"]["reason"]
        or "UTF-8" in problems["pubmed25n0004.xml"]["reason"]
    )
    assert problems["pubmed25n0004.xml"]["position"].startswith("line 4, column")
    assert all(p["fatal"] for p in problems.values())
    assert manifest["counts"]["inputs_failed"] == 3
    by_name = {Path(i["path"]).name: i for i in manifest["inputs"]}
    assert (
        by_name["pubmed25n0001.xml.gz"]["documents_read"] == 6
        and not by_name["pubmed25n0001.xml.gz"]["failed"]
    )
    assert by_name["pubmed25n1301.xml"]["documents_read"] == 5
    # records before the error in the malformed file are kept: only the first article precedes it
    assert by_name["pubmed25n0003.xml"]["documents_read"] == 0
    titles = [doc[0] for doc in all_documents(tmp_path / "out")]
    assert (
        "Ketamine for treatment-resistant depression: dose-response in a randomised trial."
        in titles
    )


def test_truncated_gzip_keeps_every_complete_record_before_the_cut(tmp_path):
    path = next(write_pubmed_inputs(tmp_path, files=1, copies=40).glob("*.xml.gz"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 4 // 5])
    decodable = zlib.decompressobj(wbits=31).decompress(
        path.read_bytes()
    )  # everything before the cut
    complete = re.findall(rb"<PMID[^>]*>(\d+)</PMID>(?=.*?</PubmedArticle>)", decodable, re.DOTALL)
    assert len(decodable) > 100_000 and len(complete) > 100
    log = InputLog(str(path))
    records = list(iter_pubmed_records(path, log))
    assert [record.doc_id for record in records] == [pmid.decode() for pmid in complete]
    assert log.failed and log.problems[0]["reason"].startswith(
        "corrupt gzip stream: compressed file ended"
    )
    assert (
        log.problems[0]["position"]
        == f"compressed byte {len(data) * 4 // 5} (after record {len(complete)})"
    )


def test_command_prints_summary_and_rejects_missing_input(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [
            BIO_ROBERTA,
            "parse-pubmed",
            str(PUBMED_SAMPLE),
            "--out",
            str(out),
            "--valid-fraction",
            "0.2",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(
        "pubmed: 4 inputs (0 failed), documents read 19, written 14"
    )
    assert (out / "manifest.json").exists()
    missing = subprocess.run(
        [BIO_ROBERTA, "parse-pubmed", str(tmp_path / "nope.xml.gz"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2
    assert (
        "input not found" in missing.stderr
        and "nope.xml.gz" in missing.stderr
        and "Traceback" not in missing.stderr
    )
    helped = subprocess.run([BIO_ROBERTA, "parse-pubmed", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--shard-size-mb" in helped.stdout


def _independent_expected_abstracts(files: list[Path]) -> set[str]:
    """PMIDs that should survive, computed with plain XPath over whole documents."""
    latest: dict[str, tuple[int, int, bool]] = {}
    for file_index, path in enumerate(sorted(files, key=lambda p: p.name)):
        data = path.read_bytes()
        tree = etree.fromstring(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
        for node in tree.xpath(
            "/PubmedArticleSet/PubmedArticle | /PubmedArticleSet/DeleteCitation"
        ):
            if node.tag == "DeleteCitation":
                for pmid in node.xpath("PMID/text()"):
                    latest.pop(pmid.strip(), None)
                continue
            pmid = node.xpath("string(MedlineCitation/PMID)").strip()
            version = int(node.xpath("string(MedlineCitation/PMID/@Version)") or 1)
            has_abstract = bool(
                "".join(node.xpath("MedlineCitation/Article/Abstract/AbstractText//text()")).strip()
            )
            previous = latest.get(pmid)
            if previous is None or file_index > previous[0] or version >= previous[1]:
                latest[pmid] = (file_index, version, has_abstract)
    return {pmid for pmid, (_, _, has_abstract) in latest.items() if has_abstract}


@pytest.mark.real_data
def test_real_pubmed_documents_kept_match_independent_xpath_count(tmp_path):
    corpus = shared_data_path("corpus", "pubmed")
    files = sorted(p for p in corpus.iterdir() if p.name.endswith((".xml", ".xml.gz")))
    expected = _independent_expected_abstracts(files)
    manifest = parse_pubmed([corpus], tmp_path, ShardOptions(valid_fraction=0.1, dedup=False))
    assert sum(manifest["counts"]["documents_written"].values()) == len(expected)
    assert manifest["counts"]["problems"] == 0
    with_dedup = parse_pubmed([corpus], tmp_path / "dedup", ShardOptions(valid_fraction=0.1))
    written = sum(with_dedup["counts"]["documents_written"].values())
    assert written + with_dedup["counts"]["documents_skipped"].get("duplicate_text", 0) == len(
        expected
    )


def test_command_exits_1_listing_problems_unless_partial_input_is_allowed(tmp_path):
    inputs = _bad_inputs(tmp_path)
    command = [
        BIO_ROBERTA,
        "parse-pubmed",
        str(inputs),
        "--out",
        str(tmp_path / "out"),
        "--valid-fraction",
        "0",
    ]
    failed = subprocess.run(command, capture_output=True, text=True)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stdout.startswith("pubmed: 5 inputs (3 failed)")
    listed = [line for line in failed.stderr.splitlines() if line.startswith("  ")]
    assert [Path(line.split(": ")[0].strip()).name for line in listed] == [
        "pubmed25n0002.xml.gz",
        "pubmed25n0003.xml",
        "pubmed25n0004.xml",
    ]
    assert "compressed byte " in listed[0] and "line 4, column" in listed[1]
    assert "bio-roberta parse-pubmed: error: 3 problems in 5 inputs" in failed.stderr
    assert "--allow-partial" in failed.stderr and (tmp_path / "out" / "manifest.json").is_file()
    accepted = subprocess.run(command + ["--allow-partial"], capture_output=True, text=True)
    assert accepted.returncode == 0
    assert "bio-roberta parse-pubmed: warning: 3 problems" in accepted.stderr
    assert "pubmed25n0004.xml" in accepted.stderr
    helped = subprocess.run([BIO_ROBERTA, "parse-pubmed", "--help"], capture_output=True, text=True)
    assert "--allow-partial" in helped.stdout and "--overwrite" in helped.stdout
