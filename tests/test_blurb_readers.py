"""BLURB readers: real BIOSSES, PubMedQA and GAD files (../shared/data), small files we write
for BioASQ and EBM-PICO, and every error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bio_roberta.blurb.split_check import check_split, check_split_sizes
from bio_roberta.blurb.suite import BLURB
from bio_roberta.readers import TaskFormatError, read_task
from bio_roberta.readers.blurb_id_lists import VALID_ONE_IN
from bio_roberta.readers.formats.biosses_blue_rowdata import BIOSSES_BLURB_SPLIT, BIOSSES_HEADER
from bio_roberta.readers.source_files import in_valid_slice
from bio_roberta.tasks.registry import get_task
from bio_roberta_core.tagging import pico_elements
from conftest import shared_data_path

BIOSSES, PUBMEDQA, BIOASQ, EBM_PICO = map(get_task, ("biosses", "pubmedqa", "bioasq", "ebm-pico"))

# A third-party copy of pqal_fold0/dev_set.json written by PubMedQA's split_dataset.py (GitHub
# realhenrycheng/AITA_Coursework_Team11, data/pqal_fold0/dev_set.json) begins with these PMIDs.
PQAL_FOLD0_DEV_FIRST = ["15879722", "12607666", "17593459", "11882828", "23588461"]


def ids(split):
    return [example.id for example in split.examples]


def fails(pattern):
    return pytest.raises(TaskFormatError, match=pattern)


# ---------------------------------------------------------------- real data (../shared/data)


@pytest.mark.real_data
def test_biosses_real_files_rebuild_blurbs_64_16_20_split():
    data = read_task(BIOSSES, shared_data_path("sts", "BIOSSES"))
    for name, numbers in BIOSSES_BLURB_SPLIT.items():
        split = data.splits[name]
        assert ids(split) == [str(n) for n in numbers]
        assert all(
            0.0 <= float(e.labels[0]) <= 4.0 and e.text and e.text_pair for e in split.examples
        )
    assert check_split_sizes(BLURB["biosses"], data) is None
    # BLUE's rowdata files are 70/16/14 (their SOURCE.txt); every one of their pairs is placed
    drawn = {
        f: sum(s.counts[f"from_{f}"] for s in data.splits.values())
        for f in ("train.tsv", "dev.tsv", "test.tsv")
    }
    assert drawn == {"train.tsv": 70, "dev.tsv": 16, "test.tsv": 14}
    # a quoted sentence of dev.tsv holds a TAB: BLURB writes it as a space
    pairs = {e.id: e for s in data.splits.values() for e in s.examples}
    assert not any("\t" in e.text + e.text_pair for e in pairs.values())
    assert "GATA2lox/lox" in pairs["79"].text_pair
    assert sum(s.counts["sentences_whitespace_normalised"] for s in data.splits.values()) >= 1


@pytest.mark.real_data
def test_pubmedqa_real_files_rebuild_fold0_of_the_official_split():
    folder = shared_data_path("qa", "PubMedQA", "data")
    data = read_task(PUBMEDQA, folder)
    train, valid, test = (data.splits[s] for s in ("train", "valid", "test"))
    assert (len(train.examples), len(valid.examples), len(test.examples)) == (450, 50, 500)
    assert check_split_sizes(BLURB["pubmedqa"], data) is None
    truth = json.loads((folder / "test_ground_truth.json").read_text())
    assert ids(test) == list(truth)
    assert ids(valid)[:5] == PQAL_FOLD0_DEV_FIRST
    assert not set(ids(train)) & set(ids(valid))
    assert len(set(ids(train)) | set(ids(valid)) | set(truth)) == 1000
    # sizes measured in SOURCE.txt; the folds are stratified by label
    assert dict(test.label_counts) == {"yes": 276, "no": 169, "maybe": 55}
    totals = train.label_counts + valid.label_counts + test.label_counts
    assert dict(totals) == {"yes": 552, "no": 338, "maybe": 110}
    assert dict(valid.label_counts) == {"yes": 27, "no": 17, "maybe": 6}
    # context = the abstract without its conclusion (LONG_ANSWER)
    records = json.loads((folder / "ori_pqal.json").read_text())
    example = valid.examples[0]
    record = records[example.id]
    assert example.text == record["QUESTION"]
    assert example.text_pair == " ".join(c.strip() for c in record["CONTEXTS"])
    assert record["LONG_ANSWER"] not in example.text_pair


@pytest.mark.real_data
def test_pubmedqa_other_test_membership_cannot_rebuild_the_split(tmp_path):
    folder = shared_data_path("qa", "PubMedQA", "data")
    shutil.copy(folder / "ori_pqal.json", tmp_path / "ori_pqal.json")
    records = json.loads((folder / "ori_pqal.json").read_text())
    truth = json.loads((folder / "test_ground_truth.json").read_text())
    outside = next(p for p in records if p not in truth)
    answer = records[outside]["final_decision"]
    inside = next(p for p in truth if records[p]["final_decision"] == answer)
    del truth[inside]
    truth[outside] = records[outside]["final_decision"]
    (tmp_path / "test_ground_truth.json").write_text(json.dumps(truth))
    with fails(r"test half differs from test_ground_truth.json in 2 PMIDs"):
        read_task(PUBMEDQA, tmp_path)


@pytest.mark.real_data
def test_gad_blurb_split_is_biobert_fold1_cut_at_row_4261():
    spec = get_task("gad-blurb")
    assert spec.folds is None and spec.max_positions == 128 and spec.metric == "binary_f1"
    folder = shared_data_path("re", "GAD")
    data = read_task(spec, folder)
    assert [len(data.splits[s].examples) for s in ("train", "valid", "test")] == [4261, 535, 534]
    assert check_split_sizes(BLURB["gad-blurb"], data) is None
    assert data.splits["valid"].examples[0].id == "train.tsv:4262"
    fold1 = read_task(get_task("gad"), folder, fold=1)

    def sentences(splits, names):
        return sorted(e.text for n in names for e in splits[n].examples)

    assert sentences(data.splits, ("train", "valid")) == sentences(fold1.splits, ("train", "valid"))
    assert ids(data.splits["test"]) == ids(fold1.splits["test"])


@pytest.mark.real_data
@pytest.mark.parametrize(
    "task, folder", [("bc5cdr-chem", "ner/BC5CDR-Chemical"), ("ncbi-disease", "ner/NCBI-disease")]
)
def test_biobert_ner_files_hold_blurbs_splits(task, folder):
    """Their entity mentions per split equal Table 3's."""
    data = read_task(get_task(task), shared_data_path(*folder.split("/")))
    assert check_split_sizes(BLURB[task], data) is None


@pytest.mark.real_data
def test_blue_hoc_and_ddi_are_not_blurbs_splits():
    hoc = read_task(get_task("hoc-blurb"), shared_data_path("cls", "HOC"))
    message = check_split_sizes(BLURB["hoc-blurb"], hoc)
    assert message.startswith(
        "HoC: train/dev/test abstracts 1108/157/315, BLURB's split has 1295/186/371"
    )
    ddi = read_task(get_task("ddi"), shared_data_path("re", "DDI-2013", "DDICorpus"))
    assert len(ddi.splits["test"].examples) == BLURB["ddi"].split_sizes[2]  # the same test set
    assert check_split_sizes(BLURB["ddi"], ddi) is not None  # but not BLURB's train/dev


# ---------------------------------------------------------------- BIOSSES, files we write

SENTENCES = [
    "Aspirin reduced platelet aggregation in patients with stable angina.",
    "Loss of TP53 function promotes genomic instability in colorectal tumours.",
    "Metformin lowered fasting glucose in adults with type 2 diabetes.",
    "KRAS mutations were detected in 40% of pancreatic adenocarcinomas.",
    "Statin therapy was associated with fewer cardiovascular events.",
]


def write_biosses(folder: Path, sizes=(70, 16, 14), edit=None) -> Path:
    """BLUE-style rowdata files over 100 synthetic pairs; edit(rows) may change the rows first."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        [
            str(i),
            "GENRE",
            "BIOSSES",
            "1997",
            str(i),
            "BIOSSES",
            "BIOSSES",
            SENTENCES[i % 5],
            SENTENCES[(i + 1) % 5],
            f"{(i % 9) / 2:.1f}",
        ]
        for i in range(100)
    ]
    if edit:
        edit(rows)
    start = 0
    for name, size in zip(("train.tsv", "dev.tsv", "test.tsv"), sizes):
        lines = ["\t".join(BIOSSES_HEADER)] + ["\t".join(row) for row in rows[start : start + size]]
        (folder / name).write_text("\n".join(lines) + "\n")
        start += size
    return folder


@pytest.mark.parametrize("sizes", [(70, 16, 14), (1, 1, 98)])
def test_biosses_any_split_of_the_100_pairs_gives_blurbs(tmp_path, sizes):
    data = read_task(BIOSSES, write_biosses(tmp_path, sizes))
    assert [ids(data.splits[s]) for s in ("train", "valid", "test")] == [
        [str(n) for n in BIOSSES_BLURB_SPLIT[s]] for s in ("train", "valid", "test")
    ]
    pair = data.splits["valid"].examples[0]  # pair 2 = old_index 1
    assert (pair.text, pair.text_pair, pair.labels) == (SENTENCES[1], SENTENCES[2], ("0.5",))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda rows: rows.pop(), r"pairs \[100\] \(old_index \+ 1\) are in none of"),
        (
            lambda rows: rows[75].__setitem__(4, "7"),
            r"dev.tsv: pair 8 \(old_index 7\) also in .*train.tsv",
        ),
        (
            lambda rows: rows[3].__setitem__(9, "4.2"),
            r"train.tsv:5: score '4.2' is not a number in 0-4",
        ),
        (lambda rows: rows[3].__setitem__(9, "high"), r"train.tsv:5: score 'high' is not a number"),
        (
            lambda rows: rows[3].__setitem__(4, "100"),
            r"train.tsv:5: old_index '100' is not a pair index 0-99",
        ),
        (lambda rows: rows[3].pop(), r"train.tsv:5: expected 10 TAB-separated columns"),
        (lambda rows: rows[3].__setitem__(8, "  "), r"train.tsv:5: empty sentence"),
    ],
)
def test_biosses_errors(tmp_path, edit, message):
    write_biosses(tmp_path, sizes=(70, 16, 13) if "none of" in message else (70, 16, 14), edit=edit)
    with fails(message):
        read_task(BIOSSES, tmp_path)


def test_biosses_header_and_missing_file(tmp_path):
    write_biosses(tmp_path)
    text = (tmp_path / "dev.tsv").read_text().replace("old_index", "index", 1)
    (tmp_path / "dev.tsv").write_text(text)
    with fails(r"dev.tsv:1: expected BLUE's BIOSSES header"):
        read_task(BIOSSES, tmp_path)
    (tmp_path / "dev.tsv").unlink()
    with fails(r"dev.tsv: missing \(BLUE's BIOSSES rowdata tsv\)"):
        read_task(BIOSSES, tmp_path)


# ---------------------------------------------------------------- PubMedQA, files we write


def write_pubmedqa(folder: Path, records: dict, truth: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ori_pqal.json").write_text(json.dumps(records))
    (folder / "test_ground_truth.json").write_text(json.dumps(truth))
    return folder


def pqal_record(answer="yes", **changes):
    record = {
        "QUESTION": "Does metformin lower fasting glucose?",
        "CONTEXTS": ["Metformin is first-line therapy.", "We randomised 120 adults."],
        "LABELS": ["BACKGROUND", "METHODS"],
        "MESHES": ["Humans"],
        "YEAR": "2010",
        "reasoning_required_pred": answer,
        "reasoning_free_pred": answer,
        "final_decision": answer,
        "LONG_ANSWER": "Metformin lowers glucose.",
    }
    record.update(changes)
    return record


@pytest.mark.parametrize(
    "records, truth, message",
    [
        ([1, 2], {}, r"ori_pqal.json: expected a JSON object keyed by PMID, found list"),
        (
            {"123": pqal_record(CONTEXTS="text")},
            {},
            r"PMID 123: CONTEXTS missing or not a list of text",
        ),
        ({"123": pqal_record(CONTEXTS=["  "])}, {}, r"PMID 123: CONTEXTS holds no text"),
        (
            {"123": pqal_record(final_decision="probably")},
            {},
            r"PMID 123: unknown label 'probably' for pubmedqa",
        ),
        (
            {"123": pqal_record(QUESTION="")},
            {},
            r"PMID 123: field 'QUESTION' missing, empty or not text",
        ),
        ({"abc": pqal_record()}, {}, r"PMID abc: expected a PMID key holding an object"),
        (
            {"123": pqal_record()},
            {"124": "yes"},
            r"test_ground_truth.json: PMID 124 is not in ori_pqal.json",
        ),
        ({"123": pqal_record()}, {"123": "no"}, r"PMID 123 answers 'no', ori_pqal.json says 'yes'"),
    ],
)
def test_pubmedqa_errors(tmp_path, records, truth, message):
    with fails(message):
        read_task(PUBMEDQA, write_pubmedqa(tmp_path, records, truth))


def test_pubmedqa_not_json(tmp_path):
    write_pubmedqa(tmp_path, {}, {})
    (tmp_path / "ori_pqal.json").write_text('{\n  "123": {\n')
    with fails(r"ori_pqal.json:\d+: not JSON"):
        read_task(PUBMEDQA, tmp_path)


# ---------------------------------------------------------------- BioASQ, files we write

QUESTIONS = [
    ("Is metformin a first-line treatment of type 2 diabetes?", "yes"),
    ("Is TP53 an oncogene?", "no"),
    ("Does aspirin inhibit cyclooxygenase?", "yes"),
    ("Is Huntington's disease caused by a recessive mutation?", "no"),
]


def jsonl_record(i):
    question, answer = QUESTIONS[i % len(QUESTIONS)]
    return {
        "id": f"5a{i:022x}",
        "question": question,
        "context": f"Snippet {i} from a PubMed abstract. A second sentence of snippet {i}.",
        "label": answer,
    }


def write_jsonl(path: Path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def write_bioasq_jsonl(folder: Path, sizes=(6, 2, 3)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for name, size in zip(("train", "dev", "test"), sizes):
        write_jsonl(folder / f"{name}.jsonl", [jsonl_record(i) for i in range(start, start + size)])
        start += size
    return folder


def test_bioasq_blurb_json_lines(tmp_path):
    write_bioasq_jsonl(tmp_path)
    with (tmp_path / "dev.jsonl").open("a") as f:
        f.write("\n")
    data = read_task(BIOASQ, tmp_path)
    assert [len(data.splits[s].examples) for s in ("train", "valid", "test")] == [6, 2, 3]
    example = data.splits["test"].examples[0]
    assert (example.id, example.text, example.labels) == (
        jsonl_record(8)["id"],
        QUESTIONS[0][0],
        ("yes",),
    )
    assert example.text_pair.startswith("Snippet 8")
    assert data.splits["valid"].counts["skipped_blank_lines"] == 1
    assert dict(data.splits["train"].label_counts) == {"yes": 3, "no": 3}


@pytest.mark.parametrize(
    "line, message",
    [
        (
            '{"id": "q1", "question": "Is X?", "context": "c", "label": "maybe"}',
            r"unknown label 'maybe' for bioasq",
        ),
        (
            '{"id": "q1", "question": "Is X?", "label": "yes"}',
            r"field 'context' missing, empty or not text",
        ),
        (
            '{"id": "", "question": "Is X?", "context": "c", "label": "yes"}',
            r"field 'id' missing, empty or not text",
        ),
        (
            '["q1", "Is X?", "c", "yes"]',
            r"expected one object with id, question, context, label a line, found a JSON list",
        ),
        (
            "q1\tIs X?\tc\tyes",
            r"not JSON .*expected one object with id, question, context, label a line",
        ),
    ],
)
def test_bioasq_json_lines_errors(tmp_path, line, message):
    write_bioasq_jsonl(tmp_path)
    write_jsonl(tmp_path / "train.jsonl", [jsonl_record(0), line])
    with fails(r"train.jsonl:2: " + message):
        read_task(BIOASQ, tmp_path)


def test_bioasq_layout_errors(tmp_path):
    write_bioasq_jsonl(tmp_path)
    write_jsonl(tmp_path / "train.jsonl", [jsonl_record(0), jsonl_record(0)])
    with fails(r"train.jsonl:2: id '5a0+' already on line 1"):
        read_task(BIOASQ, tmp_path)
    (tmp_path / "train.jsonl").unlink()
    with fails(r"no BioASQ files in a known layout.*found only dev.jsonl, test.jsonl"):
        read_task(BIOASQ, tmp_path)
    (tmp_path / "train.json").write_text(json.dumps({"questions": []}, indent=2))
    with fails(r"train.json:1: not JSON"):
        read_task(BIOASQ, tmp_path)
    (tmp_path / "train.jsonl").write_text("")
    with fails(r"both train.jsonl and train.json; keep one"):
        read_task(BIOASQ, tmp_path)
    (tmp_path / "train.json").unlink()
    (tmp_path / "BioASQ-training7b").mkdir()
    with fails(r"holds both BLURB's JSON lines .* and the challenge folders"):
        read_task(BIOASQ, tmp_path)


def challenge_question(i, qtype="yesno", answer=None, snippets=None, body=None):
    question, default = QUESTIONS[i % len(QUESTIONS)]
    record = {
        "id": f"55{i:022x}",
        "body": body or question,
        "type": qtype,
        "documents": [f"http://www.ncbi.nlm.nih.gov/pubmed/{20000000 + i}"],
        "snippets": snippets
        if snippets is not None
        else [
            {"text": f"Snippet {i}a reports\nthe finding.", "document": "x"},
            {"text": f"Snippet {i}b confirms it.", "document": "y"},
        ],
    }
    if qtype == "yesno":
        record["exact_answer"] = default if answer is None else answer
    elif qtype in ("factoid", "list"):
        record["exact_answer"] = [["TP53"]]
    return record


def write_challenge(folder: Path, training: list, golden: list) -> Path:
    (folder / "BioASQ-training7b").mkdir(parents=True, exist_ok=True)
    (folder / "Task7BGoldenEnriched").mkdir(parents=True, exist_ok=True)
    half = len(training) // 2
    parts = (("trainining7b.json", training[:half]), ("trainining7b_part2.json", training[half:]))
    for name, questions in parts:
        (folder / "BioASQ-training7b" / name).write_text(
            json.dumps({"questions": questions}, indent=2)
        )
    for batch, questions in enumerate((golden[: len(golden) // 2], golden[len(golden) // 2 :]), 1):
        path = folder / "Task7BGoldenEnriched" / f"7B{batch}_golden.json"
        path.write_text(json.dumps({"questions": questions}))
    return folder


def test_bioasq_challenge_json_keeps_yes_no_questions_and_counts_the_rest(tmp_path):
    training = [challenge_question(i) for i in range(40)]
    training += [
        challenge_question(100, "factoid"),
        challenge_question(101, "list"),
        challenge_question(102, "summary"),
        challenge_question(103, answer="Yes"),
        challenge_question(104, snippets=[]),
        challenge_question(3),
    ]  # 3 again: a duplicate
    golden = [challenge_question(i) for i in range(200, 206)]
    golden.append(challenge_question(5))  # also in training
    data = read_task(BIOASQ, write_challenge(tmp_path, training, golden))
    train, valid, test = (data.splits[s] for s in ("train", "valid", "test"))
    pool = [challenge_question(i)["id"] for i in [*range(40), 103] if i != 5]
    assert ids(valid) == [q for q in pool if in_valid_slice(q, VALID_ONE_IN)] != []
    assert ids(train) == [q for q in pool if not in_valid_slice(q, VALID_ONE_IN)]
    assert ids(test) == [challenge_question(i)["id"] for i in [*range(200, 206), 5]]
    assert train.counts["questions_read"] == 46 and test.counts["questions_read"] == 7
    for kind in ("factoid", "list", "summary"):
        assert train.counts[f"skipped_type_{kind}"] == 1
    assert train.counts["skipped_without_snippets"] == 1
    assert train.counts["skipped_duplicate_questions"] == 1
    assert train.counts["skipped_questions_also_in_test"] == 1
    assert "not BLURB's dev" in valid.derivation
    # the reader knows it is not BLURB's split, whatever the sizes
    assert check_split(BLURB["bioasq"], data) == (
        "BioASQ: train is BioASQ-training7b yes/no questions less our dev, not BLURB's (BLURB's "
        "id lists (train_id.tsv, dev_id.tsv, test_id.tsv) not given beside the data); valid is "
        "ours, 1 in 10 of BioASQ-training7b yes/no questions by id hash (BLURB's id lists "
        "(train_id.tsv, dev_id.tsv, test_id.tsv) not given beside the data)"
    )
    question_103 = challenge_question(103)["id"]
    example = next(e for e in train.examples + valid.examples if e.id == question_103)
    assert example.labels == ("yes",)
    assert example.text_pair == "Snippet 103a reports the finding. Snippet 103b confirms it."
    assert {p.name for p in test.sources} == {"7B1_golden.json", "7B2_golden.json"}


def write_blurb_id_lists(folder: Path, kind: str, lists: dict) -> None:
    """BLURB's indexing/<task>/{train,dev,test}_<kind>.tsv: one line of comma-separated ids."""
    for name, listed in lists.items():
        (folder / f"{name}_{kind}.tsv").write_text(",".join(map(str, listed)) + "\n")


def test_bioasq_challenge_with_blurbs_id_lists(tmp_path):
    training = [challenge_question(i) for i in range(10)]
    golden = [challenge_question(i) for i in range(20, 24)]
    write_challenge(tmp_path, training, golden)
    lists = {"train": [0, 1, 2, 3, 4, 5], "dev": [6, 7], "test": [20, 21, 22, 23]}
    write_blurb_id_lists(
        tmp_path,
        "id",
        {name: [challenge_question(i)["id"] for i in numbers] for name, numbers in lists.items()},
    )
    data = read_task(BIOASQ, tmp_path)
    for split, name in (("train", "train"), ("valid", "dev"), ("test", "test")):
        assert ids(data.splits[split]) == [challenge_question(i)["id"] for i in lists[name]]
        assert data.splits[split].derivation == f"BLURB's {name}_id.tsv"
        # placed by the lists given, which only BLURB's own lists (none at hand) could confirm
        assert data.splits[split].blurb is None
    # BioASQ's sizes are countable: the toy lists are BLURB's, its sizes are not
    assert check_split(BLURB["bioasq"], data).startswith("BioASQ: train/dev/test examples 6/2/4")
    assert data.splits["train"].counts["skipped_questions_not_listed"] == 2
    (tmp_path / "dev_id.tsv").write_text(challenge_question(6)["id"] + ",55nothere")
    with fails(r"bioasq valid lists questions 55nothere, which the files do not hold"):
        read_task(BIOASQ, tmp_path)
    (tmp_path / "dev_id.tsv").write_text(challenge_question(0)["id"])
    with fails(r"dev_id.tsv:1: id 55.* already listed in train_id.tsv:1"):
        read_task(BIOASQ, tmp_path)
    (tmp_path / "dev_id.tsv").unlink()
    with fails(r"come as three files; dev_id.tsv missing"):
        read_task(BIOASQ, tmp_path)


@pytest.mark.parametrize(
    "question, message",
    [
        (
            challenge_question(1, answer=["yes"]),
            r"exact_answer of a yes/no question must be yes or no, found \['yes'\]",
        ),
        (challenge_question(1, answer="maybe"), r"unknown label 'maybe' for bioasq"),
        (
            challenge_question(1, snippets=[{"offset": 3}]),
            r"snippets must be a list of objects with a 'text'",
        ),
        (challenge_question(1, body=" "), r"field 'body' missing, empty or not text"),
        ({"id": "x", "body": "Is X?"}, r"expected a question object with a 'type'"),
        (
            {**challenge_question(0), "body": "Is it another question?"},
            r"id 55.* also in .* with another question",
        ),
    ],
)
def test_bioasq_challenge_errors(tmp_path, question, message):
    write_challenge(tmp_path, [challenge_question(0), question], [challenge_question(9)])
    with fails(r"trainining7b_part2.json: questions\[0\].*" + message):
        read_task(BIOASQ, tmp_path)


def test_bioasq_challenge_file_and_folder_errors(tmp_path):
    write_challenge(tmp_path, [challenge_question(0)], [challenge_question(9)])
    batch = tmp_path / "Task7BGoldenEnriched" / "7B3_golden.json"
    batch.write_text(json.dumps([challenge_question(1)]))
    with fails(r"7B3_golden.json: not BioASQ challenge JSON"):
        read_task(BIOASQ, tmp_path)
    shutil.rmtree(tmp_path / "Task7BGoldenEnriched")
    with fails(r"Task7BGoldenEnriched: missing; the challenge layout has"):
        read_task(BIOASQ, tmp_path)


# ---------------------------------------------------------------- EBM-PICO, files we write

SCIBERT_DOCUMENT = """-DOCSTART- ({pmid})

Metformin NN O I-INT
in NN O O
adults NN O I-PAR
with NN O I-PAR
type NN O I-PAR
2 NN O I-PAR
diabetes NN O I-PAR
. NN O O

HbA1c NN O I-OUT
fell NN O O
. NN O O


"""


def write_scibert(folder: Path, pmids=((1001, 1002), (1003,), (1004,))) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, numbers in zip(("train.txt", "dev.txt", "test.txt"), pmids):
        (folder / name).write_text("".join(SCIBERT_DOCUMENT.format(pmid=p) for p in numbers))
    return folder


def test_ebm_pico_scibert_release(tmp_path):
    data = read_task(EBM_PICO, write_scibert(tmp_path))
    train = data.splits["train"]
    assert train.counts["documents"] == 2 and len(train.examples) == 4
    first = train.examples[0]
    assert first.id == "train.txt:3" and first.words[:3] == ("Metformin", "in", "adults")
    assert first.tags == ("I-INT", "O", "I-PAR", "I-PAR", "I-PAR", "I-PAR", "I-PAR", "O")
    assert dict(train.label_counts) == {"I-INT": 2, "O": 8, "I-PAR": 10, "I-OUT": 2}
    assert data.splits["test"].derivation == "SciBERT's test.txt"


@pytest.mark.parametrize(
    "edit, message",
    [
        (("HbA1c NN O I-OUT", "HbA1c NN O I-COM"), r"train.txt:12: unknown label 'I-COM'"),
        (("fell NN O O", "fell O"), r"train.txt:13: expected 4 space-separated columns"),
        (("fell NN O O", "fell\tNN\tO\tO"), r"train.txt:13: expected 4 space-separated"),
        (
            ("-DOCSTART- (1001)", "-DOCSTART- -X- O O"),
            r"train.txt:1: expected '-DOCSTART- \(PMID\)'",
        ),
        (("-DOCSTART- (1001)\n", ""), r"train.txt:2: a token before the first '-DOCSTART-"),
        (("(1002)", "(1001)"), r"train.txt:\d+: abstract 1001 appears twice in train.txt"),
    ],
)
def test_ebm_pico_scibert_errors(tmp_path, edit, message):
    write_scibert(tmp_path)
    path = tmp_path / "train.txt"
    path.write_text(path.read_text().replace(*edit, 1))
    with fails(message):
        read_task(EBM_PICO, tmp_path)


# An abstract of 14 tokens; the participant span contains the intervention span "metformin".
EBM_TOKENS = "Effect of metformin in obese adults taking metformin . Weight and HbA1c fell ."
EBM_SPANS = {
    "participants": "0 0 0 0 1 1 1 1 0 0 0 0 0 0",
    "interventions": "0 0 1 0 0 0 0 1 0 0 0 0 0 0",
    "outcomes": "0 0 0 0 0 0 0 0 0 1 0 1 0 0",
}


def write_ebm_nlp(folder: Path, train=range(1, 31), gold=(50, 51), skip=()) -> Path:
    """EBM-NLP 2.0's layout with the same small abstract under every PMID."""
    (folder / "documents").mkdir(parents=True, exist_ok=True)
    for pmid in [*train, *gold]:
        (folder / "documents" / f"{pmid}.tokens").write_text(EBM_TOKENS.replace(" ", "\n") + "\n")
        (folder / "documents" / f"{pmid}.text").write_text(EBM_TOKENS)
    for element, labels in EBM_SPANS.items():
        for part, pmids in (("train", train), ("test/gold", gold)):
            target = folder / "annotations" / "aggregated" / "starting_spans" / element / part
            target.mkdir(parents=True, exist_ok=True)
            for pmid in pmids:
                if (element, pmid) not in skip:
                    (target / f"{pmid}.AGGREGATED.ann").write_text(labels)
    return folder


def test_ebm_pico_original_layout_keeps_overlapping_elements(tmp_path):
    data = read_task(EBM_PICO, write_ebm_nlp(tmp_path, skip={("outcomes", 3)}))
    train, valid, test = (data.splits[s] for s in ("train", "valid", "test"))
    documents = [str(p) for p in range(1, 31)]
    assert train.counts["documents"] + valid.counts["documents"] == 30
    in_valid = {p for p in documents if in_valid_slice(p, VALID_ONE_IN)}
    assert {e.id.split(":")[0] for e in valid.examples} == in_valid
    assert test.counts["documents"] == 2 and ids(test) == ["50:1", "50:10", "51:1", "51:10"]
    sentence = test.examples[0]
    assert sentence.words == tuple(EBM_TOKENS.split()[:9])
    assert sentence.tags == ("O", "O", "I-INT", "O", "I-PAR", "I-PAR", "I-PAR", "I-PAR+I-INT", "O")
    assert pico_elements(sentence.tags[7]) == {"I-PAR", "I-INT"}
    assert test.examples[1].tags == ("I-OUT", "O", "I-OUT", "O", "O")
    assert test.counts["words_in_several_elements"] == 2
    assert train.counts["documents_without_I-OUT"] == 1
    doc3 = [e for e in train.examples + valid.examples if e.id.startswith("3:")]
    assert "I-OUT" not in {t for e in doc3 for t in e.tags}
    assert {p.name for p in test.sources} >= {"50.tokens", "50.AGGREGATED.ann"}
    assert "not BLURB's dev" in valid.derivation


def test_ebm_pico_original_layout_with_blurbs_pmid_lists(tmp_path):
    write_ebm_nlp(tmp_path, train=range(1, 8), gold=(50, 51))
    write_blurb_id_lists(tmp_path, "pmid", {"train": [1, 2, 3, 4], "dev": [5, 6], "test": [50, 51]})
    data = read_task(EBM_PICO, tmp_path)
    assert [data.splits[s].counts["documents"] for s in ("train", "valid", "test")] == [4, 2, 2]
    assert data.splits["train"].counts["skipped_documents_not_listed"] == 1  # PMID 7
    (tmp_path / "test_pmid.tsv").write_text("50,52")
    with fails(r"ebm-pico test lists documents 52, which the files do not hold"):
        read_task(EBM_PICO, tmp_path)


def test_ebm_pico_original_layout_errors(tmp_path):
    write_ebm_nlp(tmp_path, train=(1, 2), gold=(50,))
    ann = tmp_path / "annotations/aggregated/starting_spans/outcomes/train/2.AGGREGATED.ann"
    ann.write_text("0 1 0")
    with fails(r"2.AGGREGATED.ann: 3 labels for the document's 14 tokens"):
        read_task(EBM_PICO, tmp_path)
    ann.write_text(EBM_SPANS["outcomes"].replace("1", "4", 1))
    with fails(r"2.AGGREGATED.ann: token 10: label '4'; starting_spans hold 0 or 1"):
        read_task(EBM_PICO, tmp_path)
    ann.write_text(EBM_SPANS["outcomes"])
    (tmp_path / "documents" / "2.tokens").unlink()
    with fails(r"2.tokens: missing \(the tokens of annotated document 2\)"):
        read_task(EBM_PICO, tmp_path)
    (tmp_path / "documents" / "2.tokens").write_text(EBM_TOKENS)
    shutil.rmtree(tmp_path / "annotations/aggregated/starting_spans/interventions/test")
    with fails(r"interventions/test/gold: missing; EBM-NLP holds"):
        read_task(EBM_PICO, tmp_path)
    write_scibert(tmp_path)
    with fails(r"holds both SciBERT's .* and EBM-NLP's"):
        read_task(EBM_PICO, tmp_path)


def test_ebm_pico_no_known_layout(tmp_path):
    (tmp_path / "train.txt").write_text("")
    with fails(
        r"no EBM-PICO files in a known layout: expected SciBERT's "
        r"train.txt/dev.txt/test.txt"
    ):
        read_task(EBM_PICO, tmp_path)


def test_blurb_tasks_are_read_through_the_one_readers_table(tmp_path):
    with fails(r"not a directory; pass the folder holding biosses's files"):
        read_task(BIOSSES, tmp_path / "absent")
