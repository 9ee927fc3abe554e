"""MIMIC-III notes: category filter, ISERROR, placeholders, multi-line TEXT, bad rows."""
from __future__ import annotations

import pytest

from conftest import SAMPLE_DIR, shared_data_path
from preprocess.mimic import iter_mimic_records, normalise_placeholders, parse_mimic, placeholder_type
from preprocess.text_shards import ShardOptions, iter_shard_documents

NOTES = SAMPLE_DIR / "corpus" / "mimic" / "NOTEEVENTS.csv"


def test_physician_notes_by_default_without_retracted_rows(tmp_path):
    manifest = parse_mimic([NOTES], tmp_path, ShardOptions(valid_fraction=0.0))
    counts = manifest["counts"]
    assert counts["documents_read"] == 15
    assert counts["documents_skipped"] == {"category_not_selected": 8, "iserror": 1}
    assert counts["documents_written"]["train"] == 6
    docs = list(iter_shard_documents(tmp_path, "train"))
    assert not any("wrong patient" in sentence for doc in docs for sentence in doc)
    first = docs[0]
    assert first[0] == "Chief Complaint: hypotension, fever 24 Hour Events: - Started on norepinephrine for MAP < 65 overnight."
    assert "He was treated with ceftriaxone 1 g i.v. q24h." in first
    assert any("[**Hospital 1234**]" in sentence for sentence in first)  # kept as written by default


def test_categories_and_type_placeholders(tmp_path):
    manifest = parse_mimic([NOTES], tmp_path, ShardOptions(valid_fraction=0.0), categories=None, placeholders="type")
    assert manifest["counts"]["documents_written"]["train"] == 14
    assert manifest["options"]["reader"] == {"categories": None, "placeholders": "type"}
    text = "\n".join(sentence for doc in iter_shard_documents(tmp_path, "train") for sentence in doc)
    assert "[**" not in text
    assert "Admission Date: [DATE] Discharge Date: [DATE]" in text
    assert "Follow up with Dr. [NAME] [NAME] in 2 weeks." in text
    selected = parse_mimic([NOTES], tmp_path / "radiology", ShardOptions(valid_fraction=0.0), categories=["radiology", "ECG "])
    assert selected["counts"]["documents_written"]["train"] == 3


@pytest.mark.parametrize("content, token", [
    ("2151-7-16", "[DATE]"), ("7-16", "[DATE]"), ("2119", "[DATE]"), ("Month (only) 51", "[DATE]"),
    ("Hospital 123", "[HOSPITAL]"), ("Hospital3 18", "[HOSPITAL]"), ("Wardname 12", "[HOSPITAL]"),
    ("Known lastname 4", "[NAME]"), ("First Name4 (NamePattern1) 4321", "[NAME]"), ("Name (NI) 512", "[NAME]"),
    ("Telephone/Fax (1) 4455", "[PHONE]"), ("Pager number 9", "[PHONE]"), ("Medical Record Number 3", "[ID]"),
    ("Location (un) 7", "[LOCATION]"), ("Street Address(2) 5", "[LOCATION]"), ("E-mail address 1", "[CONTACT]"),
    ("Age over 90 ", "[AGE]"), ("Attending Info 1", "[OTHER]"),
])
def test_placeholder_types(content, token):
    assert placeholder_type(content) == token
    assert normalise_placeholders(f"seen on [**{content}**] by") == f"seen on {token} by"


def test_bad_rows_are_reported_with_record_and_line(tmp_path):
    lines = NOTES.read_bytes().split(b"\n")
    header = lines[0]
    bad = tmp_path / "NOTEEVENTS.csv"
    bad.write_bytes(b"\n".join([
        header,
        b'201,1,2,"2150-01-01","","","Physician ","Note",3,,"First note is fine.\nIt spans two lines."',
        b'202,1,2,"2150-01-01","","","Physician ","Note",3,"Too few fields"',
        b'203,1,2,"2150-01-01","","","Physician ","Note",3,,"Bad bytes \xff\xfe here."',
        b'204,1,2,"2150-01-01","","","Physician ","Note",3,,"Last note is fine too."',
        b"",
    ]))
    manifest = parse_mimic([bad], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    assert manifest["counts"]["documents_skipped"] == {"bad_row": 1, "invalid_utf8": 1}
    assert manifest["counts"]["documents_written"]["train"] == 2
    problems = [(p["position"], p["reason"]) for p in manifest["problems"]]
    assert problems == [("record 2 (line 4)", "expected 11 fields, found 10: row skipped"),
                        ("record 3 (line 5)", "invalid UTF-8: row skipped")]


def test_wrong_header_fails_the_input_only(tmp_path):
    bad = tmp_path / "NOTEEVENTS_bad.csv"
    bad.write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    manifest = parse_mimic([bad, NOTES], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    assert manifest["problems"][0]["position"] == "line 1" and manifest["problems"][0]["fatal"]
    assert manifest["counts"]["documents_written"]["train"] == 6


def test_records_stream_in_file_order():
    ids = [doc.doc_id for doc in iter_mimic_records(NOTES, categories=None)]
    assert ids == [str(i) for i in range(101, 116) if i != 104]


@pytest.mark.real_data
def test_real_header_is_accepted(tmp_path):
    header_only = shared_data_path("corpus", "mimic", "NOTEEVENTS.csv")
    manifest = parse_mimic([header_only], tmp_path, ShardOptions())
    assert manifest["counts"]["documents_read"] == 0 and manifest["counts"]["problems"] == 0
