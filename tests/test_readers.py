"""Task readers: real public files (sizes from their SOURCE.txt), our sample files, and every
error."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bio_roberta.readers import READERS, TaskFormatError, read_task
from bio_roberta.readers.formats.ddi_xml import PLACEHOLDER as DDI_PLACEHOLDER
from bio_roberta.readers.source_files import TaggedSentence
from bio_roberta.tasks.blurb_entries import HOC_HALLMARKS
from bio_roberta.tasks.registry import TASKS, get_task
from conftest import REPO_ROOT, SAMPLE_DIR, shared_data_path


def measured(source_txt: Path, pattern: str) -> list[tuple[str, ...]]:
    """Rows of the first 'measured sizes' block of a SOURCE.txt matching pattern."""
    text = source_txt.read_text()
    block = text[text.index("measured") :]
    block = block[: block.find("\n\n")] if "\n\n" in block else block
    rows = re.findall(pattern, block)
    assert rows, f"no measured sizes matching {pattern!r} in {source_txt}"
    return rows


# ---------------------------------------------------------------- real data (../shared/data)


@pytest.mark.real_data
@pytest.mark.parametrize(
    "task, folder",
    [
        ("ncbi-disease", "ner/NCBI-disease"),
        ("bc5cdr-chem", "ner/BC5CDR-Chemical"),
        ("species-800", "ner/Species-800"),
    ],
)
def test_biobert_ner_real_sizes(task, folder):
    data = shared_data_path(folder)
    sizes = {
        name: tuple(map(int, numbers))
        for name, *numbers in measured(
            data / "SOURCE.txt",
            r"(train|devel|test)\.tsv\s+(\d+) lines\s+(\d+) sentences\s+(\d+) tokens\s+(\d+) B",
        )
    }
    splits = read_task(get_task(task), data).splits
    for split, file_name in (("train", "train"), ("valid", "devel"), ("test", "test")):
        lines, sentences, tokens, begins = sizes[file_name]
        got = splits[split]
        assert (
            got.counts["lines"],
            got.counts["examples"],
            got.counts["words"],
            got.label_counts["B"],
        ) == (lines, sentences, tokens, begins)


@pytest.mark.real_data
def test_blue_hoc_real_sizes():
    data = shared_data_path("cls/HOC")
    sizes = {
        name: tuple(map(int, numbers))
        for name, *numbers in measured(
            data / "SOURCE.txt",
            r"(train|dev|test)\.tsv\s+(\d+) lines\s+(\d+) sentences\s+(\d+) abstracts",
        )
    }
    splits = read_task(get_task("hoc"), data).splits
    for split, file_name in (("train", "train"), ("valid", "dev"), ("test", "test")):
        got = splits[split]
        assert (got.counts["lines"], got.counts["examples"], got.counts["abstracts"]) == sizes[
            file_name
        ]
        assert set(got.label_counts) <= set(HOC_HALLMARKS)
    # Abstract-level grouping: every sentence id starts with its group's PMID.
    assert all(e.id.startswith(e.group + "_s") for e in splits["test"].examples)


@pytest.mark.real_data
def test_biobert_re_folds_real_sizes():
    data = shared_data_path("re/GAD")
    rows = measured(
        data / "SOURCE.txt",
        r"fold (\d+)\s+train=\s*(\d+)\s+test=\s*(\d+) \(=(\d+) examples\)\s+train "
        r"label counts: 0:(\d+) 1:(\d+)",
    )
    assert len(rows) == 10
    spec = get_task("gad")
    for fold, train_lines, test_lines, test_examples, zeros, ones in (
        tuple(map(int, r)) for r in rows
    ):
        splits = read_task(spec, data, fold).splits
        train, valid, test = splits["train"], splits["valid"], splits["test"]
        assert train.counts["lines"] == train_lines
        assert train.counts["examples"] + valid.counts["examples"] == train_lines
        assert train.label_counts + valid.label_counts == Counter({"0": zeros, "1": ones})
        assert 0.05 < valid.counts["examples"] / train_lines < 0.15
        assert (test.counts["lines"], test.counts["examples"]) == (test_lines, test_examples)


@pytest.mark.real_data
def test_ddi_xml_real_sizes():
    data = shared_data_path("re/DDI-2013/DDICorpus")
    pattern = (
        r"(Train/DrugBank|Train/MedLine|Test\(DDI\)/DrugBank|Test\(DDI\)/MedLine):\s+docs=(\d+) "
        r"sentences=(\d+) pairs=(\d+) positive=(\d+) \[([^\]]*)\]"
    )
    source = {}
    for where, docs, sentences, pairs, positive, types in measured(
        data.parent / "SOURCE.txt", pattern
    ):
        type_counts = {f"DDI-{t}": int(n) for t, n in re.findall(r'type="(\w+)"=(\d+)', types)}
        source[where] = (
            Counter(documents=int(docs), sentences=int(sentences), pairs=int(pairs)),
            int(positive),
            Counter(type_counts),
        )
    splits = read_task(get_task("ddi"), data).splits
    train_counts = splits["train"].counts + splits["valid"].counts
    train_labels = splits["train"].label_counts + splits["valid"].label_counts
    for got_counts, got_labels, parts in (
        (train_counts, train_labels, ("Train/DrugBank", "Train/MedLine")),
        (
            splits["test"].counts,
            splits["test"].label_counts,
            ("Test(DDI)/DrugBank", "Test(DDI)/MedLine"),
        ),
    ):
        expected = sum((source[p][0] for p in parts), Counter())
        for key in ("documents", "sentences", "pairs"):
            assert got_counts[key] == expected[key], key
        typed = sum((source[p][2] for p in parts), Counter())
        assert Counter({k: v for k, v in got_labels.items() if k != "DDI-false"}) == typed
        # The corpus has one ddi="true" pair without a type: counted as skipped, never lost
        # silently.
        positives = sum(source[p][1] for p in parts)
        assert sum(typed.values()) + got_counts["skipped_true_pair_without_type"] == positives
        assert (
            got_counts["examples"]
            == got_counts["pairs"] - got_counts["skipped_true_pair_without_type"]
        )
    valid_docs = {e.group for e in splits["valid"].examples}
    assert valid_docs and valid_docs.isdisjoint(e.group for e in splits["train"].examples)
    assert 0.15 < splits["valid"].counts["documents"] / train_counts["documents"] < 0.35
    assert all(e.text.count(DDI_PLACEHOLDER) in (1, 2) for e in splits["test"].examples)


# ---------------------------------------------------------------- our sample files


def test_sample_ner_and_chemprot_files():
    ner = read_task(get_task("ncbi-disease"), SAMPLE_DIR / "tasks" / "ncbi-disease").splits
    assert [ner[s].counts["examples"] for s in ("train", "valid", "test")] == [60, 20, 20]
    assert all(
        isinstance(e, TaggedSentence) and len(e.words) == len(e.tags) for e in ner["train"].examples
    )
    assert ner["train"].label_counts["B"] > 20
    chemprot = read_task(get_task("chemprot"), SAMPLE_DIR / "tasks" / "chemprot").splits
    assert [chemprot[s].counts["examples"] for s in ("train", "valid", "test")] == [80, 25, 25]
    assert set(chemprot["train"].label_counts) == set(get_task("chemprot").labels)
    assert all("@CHEMICAL$" in e.text and "@GENE$" in e.text for e in chemprot["test"].examples)


# ------------------------------------------------------------ synthetic files for the other formats


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def mednli_dir(root: Path, line: str) -> Path:
    """MedNLI's three files, each the one line given."""
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        write(root / name, line)
    return root


def write_ner_dir(root: Path, train: str, other: str = "Pain\tO\n\n") -> Path:
    write(root / "train.tsv", train)
    write(root / "devel.tsv", other)
    write(root / "test.tsv", other)
    return root


def test_i2b2_ner_typed_tags_and_sentence_ids(tmp_path):
    root = write_ner_dir(
        tmp_path, "Chest\tB-problem\npain\tI-problem\n\nGiven\tO\naspirin\tB-treatment\n"
    )
    splits = read_task(get_task("i2b2-2010"), root).splits
    first, second = splits["train"].examples
    assert (first.id, first.words, first.tags) == (
        "train.tsv:1",
        ("Chest", "pain"),
        ("B-problem", "I-problem"),
    )
    assert (second.id, second.tags) == (
        "train.tsv:4",
        ("O", "B-treatment"),
    )  # no trailing blank line
    assert splits["train"].counts["words"] == 4


def test_blue_tsv_i2b2_relations(tmp_path):
    rows = (
        "index\tsentence\tlabel\n"
        "r1\t@problem$ improved after @treatment$ .\tTrIP\n"
        "r2\t@test$ showed @problem$ .\tTeRP\n"
        "r3\tHe denies @problem$ and @problem$ .\tfalse\n"
    )
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        write(tmp_path / name, rows)
    splits = read_task(get_task("i2b2-2010-re"), tmp_path).splits
    assert [e.labels for e in splits["valid"].examples] == [("TrIP",), ("TeRP",), ("false",)]
    assert splits["test"].examples[1].text == "@test$ showed @problem$ ."


def write_euadr_folds(root: Path, folds=range(1, 11), rows: int = 40) -> Path:
    for fold in folds:
        train = "".join(
            f"Variant {i} of @GENE$ in fold {fold} relates to @DISEASE$ .\t{i % 2}\n"
            for i in range(rows)
        )
        test = "index\tsentence\tlabel\n" + "".join(
            f"{i}\t@GENE$ expression is not linked to @DISEASE$ ({i}).\t0\n" for i in range(5)
        )
        write(root / str(fold) / "train.tsv", train)
        write(root / str(fold) / "test.tsv", test)
    return root


def test_euadr_folds_valid_carved_deterministically_from_train(tmp_path):
    spec = get_task("euadr")
    root = write_euadr_folds(tmp_path)
    first = read_task(spec, root, 3).splits
    again = read_task(spec, root, 3).splits
    assert [e.id for e in first["valid"].examples] == [e.id for e in again["valid"].examples]
    train_ids = {e.id for e in first["train"].examples}
    valid_ids = {e.id for e in first["valid"].examples}
    assert valid_ids and train_ids.isdisjoint(valid_ids)
    assert len(train_ids | valid_ids) == 40 and first["train"].counts["lines"] == 40
    assert first["test"].counts["examples"] == 5
    assert "never used for selection" in first["valid"].derivation


def test_mednli_jsonl(tmp_path):
    records = [
        {
            "sentence1": "Labs were notable for Cr 1.7.",
            "sentence2": "Patient has elevated Cr.",
            "gold_label": "entailment",
            "pairID": "a1",
        },
        {
            "sentence1": "No history of smoking.",
            "sentence2": "The patient smokes.",
            "gold_label": "contradiction",
        },
    ]
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        write(tmp_path / name, "".join(json.dumps(r) + "\n" for r in records))
    test = read_task(get_task("mednli"), tmp_path).splits["test"]
    first, second = test.examples
    assert (first.id, first.text_pair, first.labels) == (
        "a1",
        "Patient has elevated Cr.",
        ("entailment",),
    )
    assert second.id == "mli_test_v1.jsonl:2"
    assert test.label_counts == Counter({"entailment": 1, "contradiction": 1})


DDI_DOC = """<?xml version="1.0" encoding="UTF-8"?>
<document id="{doc}">
    <sentence id="{doc}.s0" text="Ketoconazole increases plasma levels of cisapride and of terfenadine.">
        <entity id="{doc}.s0.e0" charOffset="0-11" type="drug" text="Ketoconazole"/>
        <entity id="{doc}.s0.e1" charOffset="40-48" type="drug" text="cisapride"/>
        <entity id="{doc}.s0.e2" charOffset="57-67" type="drug" text="terfenadine"/>
        <pair id="{doc}.s0.p0" e1="{doc}.s0.e0" e2="{doc}.s0.e1" ddi="true" type="mechanism"/>
        <pair id="{doc}.s0.p1" e1="{doc}.s0.e1" e2="{doc}.s0.e2" ddi="false"/>
    </sentence>
    <sentence id="{doc}.s1" text="Beta-adrenergic blocking agents may interact.">
        <entity id="{doc}.s1.e0" charOffset="0-14;24-29" type="group" text="Beta-adrenergic agents"/>
        <entity id="{doc}.s1.e1" charOffset="0-3" type="drug" text="Beta"/>
        <pair id="{doc}.s1.p0" e1="{doc}.s1.e0" e2="{doc}.s1.e1" ddi="true" type="int"/>
    </sentence>
</document>
"""  # noqa: E501  (DDI corpus XML, kept as it is)


def write_ddi_corpus(root: Path, train_docs: int = 12) -> Path:
    for i in range(train_docs):
        folder = "Train/DrugBank" if i % 2 else "Train/MedLine"
        write(root / folder / f"doc{i}.xml", DDI_DOC.format(doc=f"DDI-Sample.d{i}"))
    for folder in ("DrugBank", "MedLine"):
        write(
            root / "Test/Test for DDI Extraction task" / folder / "t.xml",
            DDI_DOC.format(doc=f"DDI-{folder}.t0"),
        )
    return root


def test_ddi_xml_blue_derivation(tmp_path):
    splits = read_task(get_task("ddi"), write_ddi_corpus(tmp_path)).splits
    test = {e.id: e for e in splits["test"].examples}
    assert (
        test["DDI-DrugBank.t0.s0.p0"].text
        == "@DRUG$ increases plasma levels of @DRUG$ and of terfenadine."
    )
    assert test["DDI-DrugBank.t0.s0.p0"].labels == ("DDI-mechanism",)
    assert (
        test["DDI-DrugBank.t0.s0.p1"].text
        == "Ketoconazole increases plasma levels of @DRUG$ and of @DRUG$."
    )
    assert test["DDI-DrugBank.t0.s0.p1"].labels == ("DDI-false",)
    # Discontinuous entity: its first span; overlapping pair: one placeholder over their union.
    assert test["DDI-DrugBank.t0.s1.p0"].text == "@DRUG$ blocking agents may interact."
    assert splits["test"].counts["pairs_overlapping"] == 2
    documents = splits["train"].counts["documents"] + splits["valid"].counts["documents"]
    assert documents == 12 and splits["valid"].counts["documents"] > 0
    assert {e.group for e in splits["train"].examples}.isdisjoint(
        e.group for e in splits["valid"].examples
    )


# ---------------------------------------------------------- malformed input: file, line, what to do


def hoc_dir(root: Path, row: str) -> Path:
    header = "labels\tsentence\tindex\n"
    good = "0_0,1_1,2_0,3_0,4_0,5_0,6_0,7_0,8_0,9_1\tTumour cells evade apoptosis .\t123_s0\n"
    write(root / "train.tsv", header + good + row)
    write(root / "dev.tsv", header + good)
    write(root / "test.tsv", header + good)
    return root


def blue_dir(root: Path, train_rows: str, header: str = "index\tsentence\tlabel\n") -> Path:
    write(root / "train.tsv", header + train_rows)
    for name in ("dev.tsv", "test.tsv"):
        write(root / name, "index\tsentence\tlabel\n0\t@CHEMICAL$ inhibits @GENE$ .\tCPR:4\n")
    return root


@pytest.mark.parametrize(
    "task, make, message",
    [
        (
            "ncbi-disease",
            lambda p: write_ner_dir(p, "Pain\tO\nin\tO\tX\n"),
            r"train\.tsv:2: expected 2 TAB-separated columns",
        ),
        (
            "ncbi-disease",
            lambda p: write_ner_dir(p, "Pain\tO\nfever\tE-Disease\n"),
            r"train\.tsv:2: unknown label 'E-Disease' for ncbi-disease",
        ),
        (
            "ncbi-disease",
            lambda p: write_ner_dir(p, "Pain\tO\n\tO\n"),
            r"train\.tsv:2: empty token",
        ),
        (
            "ncbi-disease",
            lambda p: write_ner_dir(p, b"Pain\tO\n\xff\tO\n"),
            r"train\.tsv:2: not UTF-8",
        ),
        (
            "ncbi-disease",
            lambda p: (write(p / "train.tsv", "a\tO\n"), p)[1],
            r"devel\.tsv: missing",
        ),
        (
            "chemprot",
            lambda p: blue_dir(p, "0\t@CHEMICAL$ binds @GENE$ .\tCPR:7\n"),
            r"train\.tsv:2: unknown label 'CPR:7' for chemprot",
        ),
        (
            "chemprot",
            lambda p: blue_dir(p, "0\t@CHEMICAL$ binds @GENE$ .\n"),
            r"train\.tsv:2: expected 3 TAB-separated columns \(index, sentence, label\), found 2",
        ),
        (
            "chemprot",
            lambda p: blue_dir(p, "0\ta\tfalse\n0\tb\tfalse\n"),
            r"train\.tsv:3: index '0' already used on line 2",
        ),
        (
            "chemprot",
            lambda p: blue_dir(p, "0\ta\tfalse\n", header="sentence\tlabel\n"),
            (
                r"train\.tsv:1: expected the TAB-separated header .index sentence "
                r"label., found .sentence.tlabel."
            ),
        ),
        (
            "hoc",
            lambda p: hoc_dir(p, "0_0,1_1,2_0,3_0,4_0,5_0,6_0,7_0,8_0,10_1\tx .\t123_s1\n"),
            r"train\.tsv:3: unknown label class id 10",
        ),
        (
            "hoc",
            lambda p: hoc_dir(p, "0_0,1_1\tx .\t123_s1\n"),
            r"train\.tsv:3: class ids \[2, 3, .*\] missing",
        ),
        (
            "hoc",
            lambda p: hoc_dir(p, "0_0,1_1,2_0,3_0,4_0,5_0,6_0,7_0,8_0,9_1\tx .\ts1\n"),
            r"train\.tsv:3: index 's1' is not <PMID>_s<sentence number>",
        ),
        (
            "mednli",
            lambda p: mednli_dir(
                p, '{"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}\n'
            ),
            r"mli_train_v1\.jsonl:1: unknown label 'maybe'",
        ),
        (
            "mednli",
            lambda p: mednli_dir(p, '{"sentence1": "a", "gold_label": "neutral"}\n{\n'),
            r"mli_train_v1\.jsonl:1: field 'sentence2' missing",
        ),
        (
            "mednli",
            lambda p: mednli_dir(p, '["a", "b", "neutral"]\n'),
            r"mli_train_v1\.jsonl:1: expected one MedNLI object .* a line, found a JSON list",
        ),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, task, make, message):
    with pytest.raises(TaskFormatError, match=message):
        read_task(get_task(task), make(tmp_path))


def test_missing_fold_is_an_error(tmp_path):
    root = write_euadr_folds(tmp_path, folds=[1, 2, 4])
    read_task(get_task("euadr"), root, 2)
    with pytest.raises(TaskFormatError, match=r"/3: fold missing; euadr needs folds 1\.\.10"):
        read_task(get_task("euadr"), root, 3)
    with pytest.raises(TaskFormatError, match=r"euadr has 10 folds"):
        read_task(get_task("euadr"), root)
    with pytest.raises(TaskFormatError, match=r"fold 11 is not in 1\.\.10"):
        read_task(get_task("euadr"), root, 11)


def test_fold_train_wrong_columns(tmp_path):
    root = write_euadr_folds(tmp_path, folds=[1])
    write(root / "1" / "train.tsv", "a @GENE$ b @DISEASE$\t1\n0\ta @GENE$\t1\n")
    with pytest.raises(TaskFormatError, match=r"1/train\.tsv:2: expected 2 TAB-separated columns"):
        read_task(get_task("euadr"), root, 1)


def test_ddi_errors_name_file_and_line(tmp_path):
    root = write_ddi_corpus(tmp_path, train_docs=2)
    bad = root / "Train/MedLine/doc0.xml"
    bad.write_text(
        DDI_DOC.format(doc="D").replace('e2="D.s0.e1" ddi="true"', 'e2="D.s0.e9" ddi="true"')
    )
    with pytest.raises(
        TaskFormatError, match=r"doc0\.xml:7: pair D\.s0\.p0 names an entity not in its sentence"
    ):
        read_task(get_task("ddi"), root)
    bad.write_text(DDI_DOC.format(doc="D").replace('charOffset="40-48"', 'charOffset="41-48"'))
    with pytest.raises(TaskFormatError, match=r"doc0\.xml:5: charOffset gives 'isapride'"):
        read_task(get_task("ddi"), root)
    bad.write_text(DDI_DOC.format(doc="D").replace("</document>", ""))
    with pytest.raises(TaskFormatError, match=r"doc0\.xml:\d+: not well-formed XML"):
        read_task(get_task("ddi"), root)


def test_every_source_format_is_one_reader_file_and_every_reader_file_a_source_format():
    formats = REPO_ROOT / "bio_roberta" / "readers" / "formats"
    files = {path.stem for path in formats.glob("*.py")} - {"__init__"}
    from bio_roberta.tasks.task_file import FORMATS

    used = {spec.source_format for spec in TASKS.values()} | set(FORMATS.values())  # task files'
    assert (
        set(READERS) == files == used | {f for spec in TASKS.values() for f in spec.other_formats}
    )
