"""MIMIC-III notes: category filter, ISERROR, placeholders, multi-line TEXT, bad rows."""

from __future__ import annotations

import gzip
import random
import re
import zlib

import pytest

from conftest import SAMPLE_DIR, shared_data_path
from preprocess.input_log import InputLog
from preprocess.mimic import (
    iter_mimic_records,
    normalise_placeholders,
    parse_mimic,
    placeholder_type,
)
from preprocess.sentences import (
    MAX_LINE_CHARACTERS,
    bounded_lines,
    normalize_whitespace,
    split_sentences,
)
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
    assert (
        first[0] == "Chief Complaint: hypotension, fever 24 Hour Events: - Started on "
        "norepinephrine for MAP < 65 overnight."
    )
    assert "He was treated with ceftriaxone 1 g i.v. q24h." in first
    assert any(
        "[**Hospital 1234**]" in sentence for sentence in first
    )  # kept as written by default


def test_categories_and_type_placeholders(tmp_path):
    manifest = parse_mimic(
        [NOTES], tmp_path, ShardOptions(valid_fraction=0.0), categories=None, placeholders="type"
    )
    assert manifest["counts"]["documents_written"]["train"] == 14
    assert manifest["options"]["reader"] == {"categories": None, "placeholders": "type"}
    text = "\n".join(
        sentence for doc in iter_shard_documents(tmp_path, "train") for sentence in doc
    )
    assert "[**" not in text
    assert "Admission Date: [DATE] Discharge Date: [DATE]" in text
    assert "Follow up with Dr. [NAME] [NAME] in 2 weeks." in text
    selected = parse_mimic(
        [NOTES],
        tmp_path / "radiology",
        ShardOptions(valid_fraction=0.0),
        categories=["radiology", "ECG "],
    )
    assert selected["counts"]["documents_written"]["train"] == 3


@pytest.mark.parametrize(
    "content, token",
    [
        ("2151-7-16", "[DATE]"),
        ("7-16", "[DATE]"),
        ("2119", "[DATE]"),
        ("Month (only) 51", "[DATE]"),
        ("Hospital 123", "[HOSPITAL]"),
        ("Hospital3 18", "[HOSPITAL]"),
        ("Wardname 12", "[HOSPITAL]"),
        ("Known lastname 4", "[NAME]"),
        ("First Name4 (NamePattern1) 4321", "[NAME]"),
        ("Name (NI) 512", "[NAME]"),
        ("Telephone/Fax (1) 4455", "[PHONE]"),
        ("Pager number 9", "[PHONE]"),
        ("Medical Record Number 3", "[ID]"),
        ("Location (un) 7", "[LOCATION]"),
        ("Street Address(2) 5", "[LOCATION]"),
        ("E-mail address 1", "[CONTACT]"),
        ("Age over 90 ", "[AGE]"),
        ("Attending Info 1", "[OTHER]"),
    ],
)
def test_placeholder_types(content, token):
    assert placeholder_type(content) == token
    assert normalise_placeholders(f"seen on [**{content}**] by") == f"seen on {token} by"


def test_bad_rows_are_reported_with_record_and_line(tmp_path):
    lines = NOTES.read_bytes().split(b"\n")
    header = lines[0]
    bad = tmp_path / "NOTEEVENTS.csv"
    bad.write_bytes(
        b"\n".join(
            [
                header,
                (
                    b'201,1,2,"2150-01-01","","","Physician ","Note",3,,"First note is '
                    b'fine.\nIt spans two lines."'
                ),
                b'202,1,2,"2150-01-01","","","Physician ","Note",3,"Too few fields"',
                b'203,1,2,"2150-01-01","","","Physician ","Note",3,,"Bad bytes \xff\xfe here."',
                b'204,1,2,"2150-01-01","","","Physician ","Note",3,,"Last note is fine too."',
                b"",
            ]
        )
    )
    manifest = parse_mimic([bad], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    assert manifest["counts"]["documents_skipped"] == {"bad_row": 1, "invalid_utf8": 1}
    assert manifest["counts"]["documents_written"]["train"] == 2
    problems = [(p["position"], p["reason"]) for p in manifest["problems"]]
    assert problems == [
        ("record 2 (line 4)", "expected 11 fields, found 10: row skipped"),
        ("record 3 (line 5)", "invalid UTF-8: row skipped"),
    ]


ALL_IDS = [str(i) for i in range(101, 116) if i != 104]  # 104 is ISERROR=1


def _parse_all(path, tmp_path):
    return parse_mimic([path], tmp_path / "out", ShardOptions(valid_fraction=0.0), categories=None)


def test_file_cut_inside_the_last_quoted_note_is_detected(tmp_path):
    notes = NOTES.read_bytes()
    cut = tmp_path / "NOTEEVENTS.csv"
    cut.write_bytes(notes[: notes.rindex(b"atrial fibrillation")])  # inside note 115's TEXT
    manifest = _parse_all(cut, tmp_path)
    assert manifest["problems"] == [
        {
            "file": str(cut),
            "position": "record 15 (line 90)",
            "fatal": True,
            "reason": "the file ends inside this record's quoted field: it was cut short (an "
            "interrupted copy or download?); record skipped",
        }
    ]
    assert manifest["counts"]["documents_skipped"] == {"iserror": 1, "truncated_record": 1}
    assert manifest["counts"]["documents_read"] == 15 and manifest["counts"]["inputs_failed"] == 1
    assert [doc.doc_id for doc in iter_mimic_records(cut, categories=None)] == ALL_IDS[:-1]


def test_truncated_gzip_keeps_every_note_before_the_cut(tmp_path):
    header, body = NOTES.read_bytes().split(b"\n", 1)
    copies = [
        re.sub(
            rb"^1(\d\d),", lambda m: b"%d," % (k * 1000 + int(m.group(1))), body, flags=re.MULTILINE
        )
        for k in range(1, 41)
    ]  # the sample 40 times, ROW_IDs k0NN
    data = gzip.compress(b"\n".join([header, b"".join(copies)]), mtime=0)
    cut = tmp_path / "NOTEEVENTS.csv.gz"
    cut.write_bytes(data[: len(data) * 3 // 4])
    decodable = zlib.decompressobj(wbits=31).decompress(cut.read_bytes())
    whole = re.findall(rb"^(\d+),", decodable, re.MULTILINE)[:-1]  # every record but the cut one
    log = InputLog(str(cut))
    ids = [doc.doc_id for doc in iter_mimic_records(cut, log, categories=None)]
    assert ids == [i.decode() for i in whole if not i.endswith(b"04")] and len(ids) > 200
    assert log.failed and log.problems[0]["reason"].startswith("corrupt gzip stream")


def test_blank_lines_between_records_are_ignored(tmp_path):
    spaced = tmp_path / "NOTEEVENTS.csv"
    spaced.write_bytes(NOTES.read_bytes().replace(b'"\n1', b'"\n\n1') + b"\n")
    manifest = _parse_all(spaced, tmp_path)
    assert manifest["problems"] == [] and manifest["counts"]["documents_read"] == 15
    assert [doc.doc_id for doc in iter_mimic_records(spaced, categories=None)] == ALL_IDS


@pytest.mark.parametrize(
    "stray, error",
    [
        (
            (b"Cultures grew E. coli", b'Cultures grew "E. coli'),
            "',' expected after '\"' at line 12",
        ),
        (
            (b"sensitive to ceftriaxone.\n", b'sensitive to ceftriaxone."\n'),  # line 13 is blank
            (
                "its quoted TEXT ended early (a stray quote?), line 14 after "
                "it does not start a record"
            ),
        ),
        (
            (b"Pressors weaned off at 0300.", b'Pressors weaned off", at 0300.'),
            "expected 11 fields, found 13",
        ),
    ],
)
def test_stray_quote_is_named_at_its_record_and_only_that_record_is_lost(tmp_path, stray, error):
    notes = NOTES.read_bytes()
    bad = tmp_path / "NOTEEVENTS.csv"
    bad.write_bytes(notes.replace(*stray, 1))
    assert bad.read_bytes() != notes
    manifest = _parse_all(bad, tmp_path)
    assert [(p["position"], p["reason"], p["fatal"]) for p in manifest["problems"]] == [
        (
            "record 2 (line 11)",
            (
                f"quoting went wrong here: {error}; lines 11-15 skipped as one record, "
                f"reading went on at line 16"
            ),
            False,
        )
    ]
    assert manifest["counts"]["documents_read"] == 15
    assert manifest["counts"]["documents_skipped"] == {"bad_quoting": 1, "iserror": 1}
    assert [doc.doc_id for doc in iter_mimic_records(bad, categories=None)] == [
        i for i in ALL_IDS if i != "102"
    ]


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


def test_nul_characters_are_counted_reported_and_written_as_spaces(tmp_path):
    header = NOTES.read_bytes().split(b"\n")[0]
    notes = tmp_path / "NOTEEVENTS.csv"
    notes.write_bytes(
        header
        + b'\n301,1,2,"2150-01-01","","","Physician ","Note",3,,"Blood\x00pressure was low.\x00"\n'
        + b'302,1,2,"2150-01-01","","","Physician ","Note",3,,"Nothing odd here."\n'
    )
    manifest = parse_mimic([notes], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    assert manifest["counts"]["other"] == {"nul_characters": 2}
    assert [(p["position"], p["reason"]) for p in manifest["problems"]] == [
        ("record 1 (line 2)", "2 NUL character(s) in TEXT, each written as a space")
    ]
    assert list(iter_shard_documents(tmp_path / "out")) == [
        ["Blood pressure was low."],
        ["Nothing odd here."],
    ]


def test_a_note_without_a_sentence_boundary_is_cut_into_lines_a_sample_holds(tmp_path):
    """One 36M-token line in MIMIC-III: fairseq's training dropped it ("invalid sizes")."""
    header = NOTES.read_bytes().split(b"\n")[0]
    values = " ".join(f"k{i % 10}={i}" for i in range(2000))  # a lab table, no full stop
    notes = tmp_path / "NOTEEVENTS.csv"
    notes.write_bytes(
        header + b'\n401,1,2,"2150-01-01","","","Physician ","Note",3,,"' + values.encode() + b'"\n'
    )
    manifest = parse_mimic([notes], tmp_path / "out", ShardOptions(valid_fraction=0.0))
    (lines,) = iter_shard_documents(tmp_path / "out")
    assert " ".join(lines) == values
    # each line as long as it can be, cut at the last space before the limit
    assert all(MAX_LINE_CHARACTERS - 10 < len(line) <= MAX_LINE_CHARACTERS for line in lines[:-1])
    assert 0 < len(lines[-1]) <= MAX_LINE_CHARACTERS
    assert manifest["counts"]["other"] == {"long_sentences_split": 1}
    assert manifest["counts"]["sentences"]["train"] == len(lines)


def test_bounded_lines_cut_at_the_last_space_before_the_limit():
    assert bounded_lines("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert bounded_lines("aaaaaaaaaa bb", 4) == ["aaaa", "aaaa", "aa", "bb"]
    assert bounded_lines("short", 7) == ["short"]
    assert bounded_lines("aaa   bbb ccc", 4) == ["aaa", "bbb", "ccc"]


def test_bounded_lines_keep_every_word_of_a_long_sentence_in_order():
    """A sentence of many lines (a paragraph without a sentence end) loses nothing at the cuts."""
    words = [("x" * (n % 23 + 1)) if n % 97 else "y" * 2500 for n in range(20_000)]
    sentence = " ".join(words)
    lines = bounded_lines(sentence, 1000)
    assert all(0 < len(line) <= 1000 for line in lines)
    assert "".join("".join(lines).split()) == "".join(words)
    short_words = [word for word in words if word[0] == "x"]
    assert [word for line in lines for word in line.split() if word[0] == "x"] == short_words


def test_a_long_text_collapsed_in_chunks_is_the_text_collapsed_at_once():
    rng = random.Random(7)
    spaces = [" ", "  ", "\n", "\t", "\u2028", "\u00a0", "\r\n "]
    text = "".join(
        rng.choice(["word", "x", "", "long" * 30]) + rng.choice(spaces) for _ in range(3000)
    )
    for chunk in (1, 7, 100, 5000, len(text)):
        assert normalize_whitespace(" \n" + text, chunk) == " ".join(text.split())


def test_a_long_paragraph_split_in_chunks_keeps_its_words_and_sentence_ends():
    paragraph = " ".join(f"Patient {n} was\u2028seen on day {n}." for n in range(2000))
    whole = split_sentences(paragraph)
    assert len(whole) == 2000 and whole[1] == "Patient 1 was seen on day 1."
    chunked = split_sentences(paragraph, chunk=1000)
    assert " ".join(chunked) == " ".join(whole)
    assert set(whole) - set(chunked) and len(whole) < len(chunked) <= len(whole) + 2 * 60
