"""PMC parsing: .nxml and tar packages, safe member handling, failing articles, real data."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pubmed_parser
import pytest
from lxml import etree

from conftest import SAMPLE_DIR, shared_data_path
from preprocess.input_log import InputLog
from preprocess.pmc import iter_pmc_records, parse_pmc, read_article
from preprocess.text_shards import ShardOptions, iter_shard_documents

BIO_ROBERTA = str(Path(sys.executable).parent / "bio-roberta")

PMC_SAMPLE = SAMPLE_DIR / "corpus" / "pmc"


def test_sample_articles_and_package(tmp_path):
    manifest = parse_pmc([PMC_SAMPLE], tmp_path, ShardOptions(valid_fraction=0.0))
    counts = manifest["counts"]
    assert counts["documents_read"] == 5  # 3 loose articles + 2 in the package
    assert counts["documents_skipped"] == {
        "superseded": 2
    }  # the package sorts last and re-issues two articles
    assert counts["documents_written"]["train"] == 3
    package = next(i for i in manifest["inputs"] if i["path"].endswith(".tar.gz"))
    assert package["other"]["other_members"] == 2  # the licence files
    docs = list(iter_shard_documents(tmp_path, "train"))
    titles = {doc[0] for doc in docs}
    assert titles == {
        "Neutrophil extracellular traps promote thrombosis in a mouse model of sepsis",
        "Machine learning prediction of acute kidney injury from routine laboratory data",
        "Senolytic treatment reduces frailty in aged mice",
    }
    nets = next(doc for doc in docs if doc[0].startswith("Neutrophil"))
    assert (
        nets[1]
        == "Neutrophil extracellular traps (NETs) are web-like structures of DNA and histones "
        "released by activated neutrophils."
    )
    assert "DNase I (10 mg/kg) or vehicle was injected i.v. 1 h after surgery." in nets
    assert "" not in nets


def test_ids_come_from_pmc_id_or_file_name():
    ids = [
        doc.doc_id for path in sorted(PMC_SAMPLE.glob("*.nxml")) for doc in iter_pmc_records(path)
    ]
    assert ids == ["PMC9100001", "PMC9100002", "aging-cells-2024-017"]


def _member(
    name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, linkname: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def test_unsafe_members_refused_and_bad_articles_reported(tmp_path):
    good = (PMC_SAMPLE / "PMC9100002.nxml").read_bytes()
    members = [
        _member("/etc/evil.nxml", good),
        _member("pkg/../../escape.nxml", good),
        _member("pkg/link.nxml", kind=tarfile.SYMTYPE, linkname="/etc/passwd"),
        _member("pkg/hard.nxml", kind=tarfile.LNKTYPE, linkname="pkg/PMC9100002.nxml"),
        _member("pkg/broken.nxml", good.replace(b"</article-title>", b"</article-titel>")),
        _member("pkg/PMC9100002.nxml", good),
    ]
    package = tmp_path / "in" / "oa_bad.tar.gz"
    package.parent.mkdir()
    with tarfile.open(package, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    shutil.copy(PMC_SAMPLE / "aging-cells-2024-017.nxml", tmp_path / "in")
    manifest = parse_pmc([tmp_path / "in"], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    reasons = [(p["position"], p["reason"]) for p in manifest["problems"]]
    assert reasons[0] == ("member 1 '/etc/evil.nxml'", "unsafe tar member refused: absolute path")
    assert reasons[1] == (
        "member 2 'pkg/../../escape.nxml'",
        "unsafe tar member refused: '..' in path",
    )
    assert reasons[2][1] == reasons[3][1] == "unsafe tar member refused: link"
    assert (
        reasons[4][0].startswith("oa_bad.tar.gz:pkg/broken.nxml: line ")
        and "malformed XML" in reasons[4][1]
    )
    assert manifest["counts"]["documents_skipped"] == {"unparseable_article": 1}
    assert manifest["counts"]["documents_written"]["train"] == 2
    assert not (tmp_path / "escape.nxml").exists() and not Path("/etc/evil.nxml").exists()


def test_invalid_utf8_article_is_reported_with_its_package_member_and_the_run_goes_on(tmp_path):
    good = (PMC_SAMPLE / "PMC9100002.nxml").read_bytes()
    bad = good.replace(b"Machine learning", b"Machine \xff\xfe learning", 1)
    assert bad != good
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "PMC9100002.nxml").write_bytes(bad)  # a loose article
    shutil.copy(PMC_SAMPLE / "aging-cells-2024-017.nxml", inputs)
    with tarfile.open(inputs / "oa_utf8.tar.gz", "w:gz") as tar:
        for info, data in [
            _member("pkg/bad.nxml", bad),
            _member("pkg/PMC9100001.nxml", (PMC_SAMPLE / "PMC9100001.nxml").read_bytes()),
        ]:
            tar.addfile(info, io.BytesIO(data))
    manifest = parse_pmc([inputs], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    problems = [
        (Path(p["file"]).name, p["position"], p["reason"], p["fatal"]) for p in manifest["problems"]
    ]
    assert [problem[:2] for problem in problems] == [
        ("PMC9100002.nxml", "PMC9100002.nxml: line 4, column 282"),
        ("oa_utf8.tar.gz", "oa_utf8.tar.gz:pkg/bad.nxml: line 4, column 282"),
    ]
    assert all(
        reason.startswith("malformed XML: Invalid bytes in character encoding") and not fatal
        for _, _, reason, fatal in problems
    )
    assert manifest["counts"]["documents_skipped"] == {"unparseable_article": 2}
    assert manifest["counts"]["inputs_failed"] == 0
    titles = {doc[0] for doc in iter_shard_documents(tmp_path / "out", "train")}
    assert titles == {
        "Neutrophil extracellular traps promote thrombosis in a mouse model of sepsis",  # packaged
        "Senolytic treatment reduces frailty in aged mice",
    }


def test_corrupt_package_is_reported_and_other_inputs_processed(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    data = (PMC_SAMPLE / "oa_package_sample.tar.gz").read_bytes()
    (inputs / "oa_truncated.tar.gz").write_bytes(data[: len(data) // 2])
    shutil.copy(PMC_SAMPLE / "aging-cells-2024-017.nxml", inputs)
    manifest = parse_pmc([inputs], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    problem = manifest["problems"][-1]
    assert (
        problem["fatal"]
        and problem["file"].endswith("oa_truncated.tar.gz")
        and "corrupt package" in problem["reason"]
    )
    assert manifest["counts"]["inputs_failed"] == 1
    assert manifest["counts"]["documents_written"]["train"] >= 1


@pytest.mark.real_data
def test_real_pmc_articles_match_independent_count(tmp_path):
    corpus = shared_data_path("corpus", "pmc")
    files = sorted(corpus.glob("*.nxml"))
    expected_ids = set()
    for path in files:
        tree = etree.parse(str(path))
        has_text = bool("".join(tree.xpath("//body//p//text() | //abstract//text()")).strip())
        pmc = tree.xpath("string(//article-meta/article-id[@pub-id-type='pmc'])").strip()
        if has_text:
            expected_ids.add(pmc or path.stem)
    manifest = parse_pmc([corpus], tmp_path, ShardOptions(valid_fraction=0.0))
    assert manifest["counts"]["documents_read"] == len(files)
    assert manifest["counts"]["documents_written"]["train"] == len(expected_ids)
    assert manifest["counts"]["problems"] == 0
    paragraphs = sum(len(etree.parse(str(p)).xpath("//body//p")) for p in files)
    sentences = manifest["counts"]["sentences"]["train"]
    assert sentences > paragraphs  # every paragraph contributes at least one sentence, most several


def assert_paragraphs_are_pubmed_parsers(path: Path) -> None:
    """The paragraphs read from our one parse are those parse_pubmed_paragraph reads itself."""
    expected = [
        paragraph["text"]
        for paragraph in pubmed_parser.parse_pubmed_paragraph(str(path), all_paragraph=True)
        if paragraph["text"].strip()
    ]
    document = read_article(path, path.name, InputLog(str(path)))
    assert expected and document.paragraphs[-len(expected) :] == tuple(expected)


def test_sample_paragraphs_are_pubmed_parsers():
    for path in sorted(PMC_SAMPLE.glob("*.nxml")):
        assert_paragraphs_are_pubmed_parsers(path)


@pytest.mark.real_data
def test_real_paragraphs_are_pubmed_parsers():
    for path in sorted(shared_data_path("corpus", "pmc").glob("*.nxml")):
        assert_paragraphs_are_pubmed_parsers(path)


def test_paragraph_over_libxml2_text_limit_is_read(tmp_path):
    """libxml2 refuses a text node over 10 MB unless huge_tree; pubmed_parser's own reader then
    failed with "XMLSyntaxError: Start tag expected"."""
    paragraph = "Cells divide. " * (11 * 2**20 // 14)
    article = tmp_path / "long.nxml"
    article.write_text(
        "<article><front><article-meta><article-id pub-id-type='pmc'>7</article-id>"
        "<title-group><article-title>Long</article-title></title-group></article-meta></front>"
        f"<body><sec><p>{paragraph}</p></sec></body></article>"
    )
    log = InputLog(str(article))
    (document,) = iter_pmc_records(article, log)
    assert log.problems == [] and not log.skipped
    assert document.doc_id == "PMC7" and document.paragraphs == ("Long", paragraph)


def test_names_that_are_not_utf8_are_reported_escaped_and_the_good_inputs_parsed(tmp_path):
    """A loose article, and a packaged one without a PMC id (the name is its id), named in Latin-1:
    the whole parse stopped with "'utf-8' codec can't encode character '\\udce9'"."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(PMC_SAMPLE / "PMC9100001.nxml", inputs)
    shutil.copy(PMC_SAMPLE / "PMC9100002.nxml", inputs / os.fsdecode(b"caf\xe9.nxml"))
    no_pmc_id = (PMC_SAMPLE / "aging-cells-2024-017.nxml").read_bytes()
    with tarfile.open(inputs / "oa.tar.gz", "w:gz") as tar:
        for info, data in [
            _member(os.fsdecode(b"pkg/ag\xe9.nxml"), no_pmc_id),
            _member("pkg/aging.nxml", no_pmc_id.replace(b"Senolytic", b"Senolytic drug")),
        ]:
            tar.addfile(info, io.BytesIO(data))
    out = tmp_path / "out"
    run = subprocess.run(
        [BIO_ROBERTA, "parse-pmc", str(inputs), "--out", str(out), "--valid-fraction", "0"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stdout.startswith(
        "pmc: 3 inputs (1 failed), documents read 3, written 2 (train 2, valid 0), skipped 1 "
        "(file_name_not_utf8 1)"
    )
    assert run.stderr.splitlines()[-3:-1] == [
        (
            f"  {inputs}/oa.tar.gz: oa.tar.gz:pkg/ag\\xe9.nxml: the article has no PMC id and its "
            "file name, its id then, is not valid UTF-8: article skipped; rename the file"
        ),
        (
            f"  {inputs}/caf\\xe9.nxml: file name: the path is not valid UTF-8 (shown with "
            "\\xNN for its other bytes): input not parsed; rename it"
        ),
    ]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [Path(i["path"]).name for i in manifest["inputs"]] == [
        "PMC9100001.nxml",
        "oa.tar.gz",
        "caf\\xe9.nxml",
    ]
    assert [doc[0] for doc in iter_shard_documents(out)] == [
        "Neutrophil extracellular traps promote thrombosis in a mouse model of sepsis",
        "Senolytic drug treatment reduces frailty in aged mice",
    ]
