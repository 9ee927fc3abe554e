"""A split is BLURB's only when its content proves it (issue 26 items 2 and 3): BLURB's id lists
(bio_roberta/readers/blurb_ids) or digests of BLURB's files (bio_roberta/blurb/split_evidence.py,
re-measured on the public files it names by tests/test_blurb_public_copies.py). PubMedQA fold 1
of split_dataset.py, a HoC with abstracts swapped between train and test and a re-split BIOSSES
are never BLURB's; HoC is digested by abstract, so BLURB's tsv and LinkBERT's release of it agree;
digests of some splits only leave the others unproven, and DDI's train is proven by its ids.
No training."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bio_roberta.blurb.split_check import (
    BY_CONTENT,
    BY_CONTENT_AND_IDS,
    BY_IDS,
    BY_NOTHING,
    BY_READER,
    CHECK_NAMES,
    NOT_BLURBS,
    SPLIT_ORDER,
    UNKNOWN,
    SplitCheck,
    check_blurb_split,
    id_digest,
    id_list_gap,
    split_digest,
    split_digests,
    split_status,
)
from bio_roberta.blurb.split_evidence import BLURB_DIGESTS, BLURB_ID_DIGESTS, UNPROVEN
from bio_roberta.blurb.suite import BLURB, BLURB_DATASETS
from bio_roberta.readers import read_task
from bio_roberta.readers.blurb_ids import blurb_id_lists
from bio_roberta.readers.formats.pubmedqa_pqal import fold_split, split_dataset_pqal
from bio_roberta.readers.source_files import (
    SPLITS,
    Split,
    TaggedSentence,
    TaskData,
    TextExample,
)
from bio_roberta.tasks.registry import get_task
from blurb_toy import preprocess, write_sources
from conftest import REPO_ROOT, shared_data_path

PUBMEDQA_LABELS = ("yes", "no", "maybe")


def synthetic_pqal() -> dict:
    """120 ori_pqal.json-shaped records of ours (PMID -> QUESTION, CONTEXTS, final_decision), 40
    yes / 41 no / 39 maybe: enough for split_dataset.py's 2 halves and 10 folds per label."""
    return {
        str(21000 + 7 * i): {
            "QUESTION": f"Question {i}?",
            "CONTEXTS": [f"Context {i}."],
            "final_decision": PUBMEDQA_LABELS[(i * i + i // 3) % 3],
        }
        for i in range(120)
    }


# The dev sets of pqal_fold0 and pqal_fold1 that PubMedQA's own preprocess/split_dataset.py
# (github.com/pubmedqa/pubmedqa at 1cbae8e92f72f20c8d3747cbb3bf5bc53554d997) wrote, in its order,
# when run on synthetic_pqal() as data/ori_pqal.json.
SPLIT_DATASET_DEV = {
    0: ["21301", "21308", "21770", "21077", "21476", "21231"],
    1: ["21812", "21819", "21336", "21266", "21791", "21350"],
}


def task_data(task: str, members: dict[str, list[str]], groups=None) -> TaskData:
    """TaskData of one TextExample per id (HoC: one per abstract, group = its PMID)."""
    splits = {}
    for name in SPLITS:
        split = Split(name)
        for item in members[name]:
            split.add(TextExample(item, f"text of {item}", ("yes",), group=groups and item))
        if groups:
            split.counts["abstracts"] = len(members[name])
        splits[name] = split
    return TaskData(get_task(task), None, splits)


def swapped(members: dict[str, list[str]], first: str, second: str, count: int) -> dict:
    """members with `count` ids moved each way between splits first and second: same sizes."""
    out = {name: list(ids) for name, ids in members.items()}
    out[first] = members[first][count:] + members[second][:count]
    out[second] = members[second][count:] + members[first][:count]
    return out


def test_the_split_dataset_replay_matches_pubmedqas_script_and_only_fold_0_passes(tmp_path):
    records = synthetic_pqal()
    test_half, folds = split_dataset_pqal({p: r["final_decision"] for p, r in records.items()})
    assert [fold_split(folds, k)["valid"] for k in (0, 1)] == list(SPLIT_DATASET_DEV.values())
    fold0 = {**fold_split(folds, 0), "test": test_half}
    fold1 = {**fold_split(folds, 1), "test": test_half}
    assert (len(fold0["train"]), len(fold0["valid"]), len(test_half)) == (54, 6, 60)
    assert len(set(fold0["train"]) & set(fold1["train"])) == 48  # as 400 of 450 on the real file
    pubmedqa = BLURB["pubmedqa"]
    assert id_list_gap(pubmedqa, task_data("pubmedqa", fold0), fold0) is None
    assert id_list_gap(pubmedqa, task_data("pubmedqa", fold1), fold0) == (
        "PubMedQA: train lacks 6 of BLURB's 54 ids and holds 6 others; valid lacks 6 of BLURB's "
        "6 ids and holds 6 others (BLURB's id lists, bio_roberta/readers/blurb_ids)"
    )
    # the reader replays fold 0 from the files
    (tmp_path / "ori_pqal.json").write_text(json.dumps(records))
    truth = {pmid: records[pmid]["final_decision"] for pmid in test_half}
    (tmp_path / "test_ground_truth.json").write_text(json.dumps(truth))
    data = read_task(get_task("pubmedqa"), tmp_path)
    assert [e.id for e in data.splits["valid"].examples] == SPLIT_DATASET_DEV[0]
    assert id_list_gap(pubmedqa, data, fold0) is None
    # the content decides before the ids: other examples (and sizes) than BLURB's
    check = check_blurb_split(pubmedqa, data)
    assert check.checked_by == BY_CONTENT and check.reason.startswith(
        "PubMedQA: train/dev/test examples 54/6/60, BLURB's split has 450/50/500"
    )


def test_pubmedqa_release_lists_are_fold_0_and_fold_1_is_not_blurbs(monkeypatch):
    """The ids route, as where no digest of BLURB's files is recorded (these texts are ours)."""
    monkeypatch.delitem(BLURB_DIGESTS, "pubmedqa")
    lists = blurb_id_lists("pubmedqa")
    assert tuple(map(len, lists.values())) == (450, 50, 500)
    fold1 = swapped(lists, "valid", "train", 50)  # fold 1's sizes, 400 of 450 train ids shared
    check = check_blurb_split(BLURB["pubmedqa"], task_data("pubmedqa", fold1))
    assert check.checked_by == BY_IDS and check.reason.startswith(
        "PubMedQA: train lacks 50 of BLURB's 450 ids and holds 50 others; valid lacks 50"
    )
    assert split_status(BLURB["pubmedqa"], check.reason, check.checked_by).outcome == NOT_BLURBS
    assert check_blurb_split(BLURB["pubmedqa"], task_data("pubmedqa", lists)) == SplitCheck(
        None, BY_IDS
    )


def test_the_real_pubmedqa_replays_blurbs_fold_0_and_its_fold_1_is_not_blurbs():
    """Our reader's replay of ori_pqal.json holds BLURB's examples by content (the digests
    measured on LinkBERT's release) and by ids; the same examples placed as fold 1 are not."""
    folder = shared_data_path("qa/PubMedQA/data")
    data = read_task(get_task("pubmedqa"), folder)
    pubmedqa = BLURB["pubmedqa"]
    assert check_blurb_split(pubmedqa, data) == SplitCheck(None, BY_CONTENT)
    assert id_list_gap(pubmedqa, data, blurb_id_lists("pubmedqa")) is None
    records = json.loads((folder / "ori_pqal.json").read_text())
    _test, folds = split_dataset_pqal({p: r["final_decision"] for p, r in records.items()})
    fold1 = {**fold_split(folds, 1), "test": [e.id for e in data.splits["test"].examples]}
    assert len(set(fold1["train"]) & set(blurb_id_lists("pubmedqa")["train"])) == 400
    check = check_blurb_split(pubmedqa, placed(data, fold1))
    assert check == SplitCheck(
        "PubMedQA: train/valid hold other examples than BLURB's (same sizes)", BY_CONTENT
    )
    assert id_list_gap(pubmedqa, placed(data, fold1), blurb_id_lists("pubmedqa")).startswith(
        "PubMedQA: train lacks 50 of BLURB's 450 ids and holds 50 others"
    )


def placed(data: TaskData, members: dict[str, list[str]]) -> TaskData:
    """data's examples placed in splits by id, as `members` lists them (HoC: their abstracts
    counted)."""
    examples = {e.id: e for split in data.splits.values() for e in split.examples}
    splits = {name: Split(name) for name in SPLITS}
    for name, ids in members.items():
        for example_id in ids:
            splits[name].add(examples[example_id])
        groups = {e.group for e in splits[name].examples if e.group is not None}
        if groups:
            splits[name].counts["abstracts"] = len(groups)
    return TaskData(data.spec, None, splits)


def biosses_linkbert(folder, members):
    """LinkBERT's seqcls/BIOSSES_hf layout (scripts/preprocess_blurb.py process_BIOSSES: the
    record's id is BLURB's pair_id, its label a float)."""
    folder.mkdir()
    for name, file_name in zip(SPLITS, ("train.json", "dev.json", "test.json")):
        lines = [
            json.dumps({"sentence1": f"A {n}.", "sentence2": f"B {n}.", "label": 2.0, "id": n})
            for n in members[name]
        ]
        (folder / file_name).write_text("\n".join(lines) + "\n")
    return folder


def test_biosses_is_blurbs_by_its_pair_ids_and_a_re_split_is_not(tmp_path):
    lists = blurb_id_lists("biosses")
    biosses = BLURB["biosses"]
    data = read_task(get_task("biosses"), biosses_linkbert(tmp_path / "blurb", lists))
    assert check_blurb_split(biosses, data) == SplitCheck(None, BY_IDS)
    resplit = biosses_linkbert(tmp_path / "resplit", swapped(lists, "train", "test", 5))
    check = check_blurb_split(biosses, read_task(get_task("biosses"), resplit))
    assert check.checked_by == BY_IDS and "test lacks 5 of BLURB's 20 ids" in check.reason
    assert split_status(biosses, check.reason, check.checked_by).outcome == NOT_BLURBS


def test_biosses_placed_by_our_reader_from_blues_files_is_unknown_never_blurbs():
    """The rowdata reader places BLUE's pairs by BLURB's own pair numbers: their ids then cannot
    fail the id check, so they prove nothing."""
    data = read_task(get_task("biosses"), shared_data_path("sts/BIOSSES"))
    check = check_blurb_split(BLURB["biosses"], data)
    assert check.checked_by == BY_NOTHING
    assert check.reason.startswith(
        "BIOSSES: split unknown (its reader placed the examples by BLURB's pair numbers "
        "(bio_roberta/readers/blurb_ids/biosses.json), so their ids cannot prove it"
    )
    assert split_status(BLURB["biosses"], check.reason, check.checked_by).outcome == UNKNOWN


def write_hoc_layouts(tmp_path: Path, sizes=(12, 4, 6)) -> tuple[Path, Path]:
    """BLURB's HoC tsv (sentence rows in BLUE's format) and LinkBERT's release made of it by its
    process_HOC (tests/blurb_toy.py, preprocess_blurb.py ported): the two folders."""
    source = tmp_path / "source"
    write_sources(source, "hoc-blurb", sizes)
    return source / "HoC", preprocess(source, tmp_path / "linkbert", "hoc-blurb")


def test_hoc_digests_count_abstracts_so_blurbs_tsv_and_linkberts_release_agree(tmp_path):
    """preprocess_blurb.py joins an abstract's sentences and ORs their flags: BLURB's tsv (one row
    a sentence) and LinkBERT's release (one record an abstract) hold the same split, and only a
    digest by abstract says so; a sentence moved to another abstract makes other abstracts."""
    tsv, linkbert = write_hoc_layouts(tmp_path)
    spec = get_task("hoc-blurb")
    sentences, abstracts = read_task(spec, tsv), read_task(spec, linkbert)
    assert [sentences.splits["train"].counts[k] for k in ("examples", "abstracts")] == [18, 12]
    assert abstracts.splits["train"].counts["examples"] == 12
    assert split_digests(sentences) == split_digests(abstracts)
    assert split_digest(sentences.splits["train"]) != split_digest(abstracts.splits["train"])
    train = (tsv / "train.tsv").read_text()
    (tsv / "train.tsv").write_text(train.replace("\t101_s1\n", "\t102_s1\n"))
    moved = split_digests(read_task(spec, tsv))
    assert moved["train"] != split_digests(abstracts)["train"]
    assert moved["test"] == split_digests(abstracts)["test"]


def test_a_hoc_with_abstracts_swapped_between_train_and_test_is_not_blurbs(tmp_path, monkeypatch):
    """Toy HoC files whose digests are registered as BLURB's (and their sizes as BLURB's) pass;
    two abstracts swapped each way between train and test, sizes kept, are not BLURB's. With
    the digests measured on LinkBERT's release, the toy is not BLURB's either."""
    _tsv, folder = write_hoc_layouts(tmp_path)
    spec = get_task("hoc-blurb")
    monkeypatch.setitem(
        BLURB_DIGESTS, "hoc-blurb", tuple(split_digests(read_task(spec, folder)).values())
    )
    toy = replace(BLURB["hoc-blurb"], split_sizes=(12, 4, 6))
    assert check_blurb_split(toy, read_task(spec, folder)) == SplitCheck(None, BY_CONTENT)
    train = (folder / "train.json").read_text().splitlines()
    test = (folder / "test.json").read_text().splitlines()
    (folder / "train.json").write_text("\n".join(test[:2] + train[2:]) + "\n")
    (folder / "test.json").write_text("\n".join(train[:2] + test[2:]) + "\n")
    check = check_blurb_split(toy, read_task(spec, folder))
    assert check == SplitCheck(
        "HoC: train/test hold other examples than BLURB's (same sizes)", BY_CONTENT
    )
    assert split_status(toy, check.reason, check.checked_by).outcome == NOT_BLURBS
    monkeypatch.undo()
    check = check_blurb_split(BLURB["hoc-blurb"], read_task(spec, folder))
    assert check.checked_by == BY_CONTENT
    assert check.reason.startswith("HoC: train/dev/test abstracts 12/4/6, BLURB's split has")


def test_digests_of_some_splits_prove_none_they_lack_and_disprove_one_they_hold(monkeypatch):
    """Digests of some splits (JNLPBA's dev and test; DDI's, before its train's ids were
    recorded) find a split not BLURB's, never BLURB's; each recorded split must match. DDI's train
    is proven by its ids (BLURB_ID_DIGESTS, issue 42): content of dev and test plus the train's
    ids make it BLURB's; other train ids, same size, do not. These texts are ours: the digests
    are registered for them."""
    ddi = BLURB["ddi"]
    pairs = [f"DDI-DrugBank.d{i // 10}.s0.p{i % 10}" for i in range(25296 + 2496 + 5716)]
    release = {"train": pairs[:25296], "valid": pairs[25296:27792], "test": pairs[27792:]}
    data = task_data("ddi", release)
    digests = split_digests(data)
    monkeypatch.setitem(BLURB_DIGESTS, "ddi", (None, digests["valid"], digests["test"]))
    monkeypatch.delitem(BLURB_ID_DIGESTS, "ddi")
    check = check_blurb_split(ddi, data)
    assert check.checked_by == BY_NOTHING and check.reason.startswith(
        "DDI: split unknown (valid/test hold BLURB's examples by content, but no public file at "
        "hand proves BLURB's train and sizes cannot); "
    )
    assert split_status(ddi, check.reason, check.checked_by).outcome == UNKNOWN
    monkeypatch.setitem(BLURB_ID_DIGESTS, "ddi", (id_digest(data.splits["train"]), None, None))
    assert check_blurb_split(ddi, data) == SplitCheck(None, BY_CONTENT_AND_IDS)
    check = check_blurb_split(ddi, task_data("ddi", swapped(release, "train", "valid", 3)))
    assert check == SplitCheck(
        "DDI: valid hold other examples than BLURB's (same sizes)", BY_CONTENT_AND_IDS
    )
    other_ids = {**release, "train": [f"DDI-MedLine.d{i}.s0.p0" for i in range(25296)]}
    check = check_blurb_split(ddi, task_data("ddi", other_ids))
    assert check.checked_by == BY_CONTENT_AND_IDS and check.reason.startswith(
        "DDI: train hold other example ids than BLURB's rule gives (same sizes; "
    )
    assert split_status(ddi, check.reason, check.checked_by).outcome == NOT_BLURBS
    # Table 3's 22233/5559: another partition of the train files, its dev other than BLURB's
    table3 = {"train": pairs[:22233], "valid": pairs[22233:27792], "test": pairs[27792:]}
    check = check_blurb_split(ddi, task_data("ddi", table3))
    assert check.checked_by == BY_CONTENT_AND_IDS and check.reason.startswith(
        "DDI: train/dev/test examples 22233/5559/5716"
    )
    # JNLPBA: dev and test digests, no train: unknown, naming the file that would settle it
    jnlpba = BLURB["jnlpba"]
    sentences = {name: [f"s{name}{i}" for i in range(3)] for name in SPLIT_ORDER}
    toy = replace(jnlpba, split_sizes=(3, 3, 3))
    tagged = tagged_data("jnlpba", sentences)
    found = split_digests(tagged)
    monkeypatch.setitem(BLURB_DIGESTS, "jnlpba", (None, found["valid"], found["test"]))
    check = check_blurb_split(toy, tagged)
    assert check.checked_by == BY_NOTHING and check.reason.startswith(
        "JNLPBA: split unknown (valid/test hold BLURB's examples by content, but no public file "
        f"at hand proves BLURB's train and sizes cannot; what would prove it: {UNPROVEN['jnlpba']}"
    )


def tagged_data(task: str, members: dict[str, list[str]]) -> TaskData:
    """TaskData of one one-mention sentence per id (its words the id and a mention)."""
    splits = {name: Split(name) for name in SPLITS}
    for name, ids in members.items():
        for item in ids:
            splits[name].add(TaggedSentence(item, (item, "IL-2"), ("O", "B")))
    return TaskData(get_task(task), None, splits)


def test_the_ddi_corpus_read_by_ddi_xml_is_not_blurbs_its_dev_being_ours():
    data = read_task(get_task("ddi"), shared_data_path("re/DDI-2013/DDICorpus"))
    train, valid, test = (data.splits[name].counts for name in SPLITS)
    # BLURB's 25296 + 2496: every pair of the Train files (one has ddi=true and no type, skipped)
    assert train["pairs"] + valid["pairs"] == 27792 and test["examples"] == 5716
    assert train["skipped_true_pair_without_type"] + valid["skipped_true_pair_without_type"] == 1
    check = check_blurb_split(BLURB["ddi"], data)
    assert check.checked_by == BY_READER and "not BLURB's dev documents" in check.reason


def test_the_docs_give_each_of_the_13_one_row_saying_how_its_split_is_proved():
    """docs/blurb_splits.md's "BLURB's 13 splits" table: one row per dataset (Table 6's name) whose
    last column is the check bio_roberta/blurb/split_evidence.py and the id lists make possible,
    or unknown for the three UNPROVEN names."""
    text = (REPO_ROOT / "docs" / "blurb_splits.md").read_text()
    table = text.split("### BLURB's 13 splits\n\n")[1].split("\n\n")[0].splitlines()[2:]
    rows = {
        row.split(" | ")[0].removeprefix("| "): row.split(" | ")[-1].removesuffix(" |")
        for row in table
    }
    expected = {}
    for dataset in BLURB_DATASETS:
        if dataset.task in UNPROVEN:
            check = "unknown"
        elif dataset.task in BLURB_ID_DIGESTS:
            check = CHECK_NAMES[BY_CONTENT_AND_IDS]
        elif dataset.task in BLURB_DIGESTS:
            check = CHECK_NAMES[BY_CONTENT]
        else:
            assert blurb_id_lists(dataset.task) is not None, dataset.task
            check = CHECK_NAMES[BY_IDS]
        expected[dataset.display] = check
    assert rows == expected and len(table) == 13
