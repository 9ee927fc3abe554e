"""A split is BLURB's only when its content proves it (issue 26 items 2 and 3): BLURB's id lists
(bio_roberta/readers/blurb_ids) or a digest of BLURB's files. PubMedQA fold 1 of
split_dataset.py, a HoC with abstracts swapped between train and test and a re-split BIOSSES are
never BLURB's; equal sizes alone are unknown; DDI's release sizes (25296/2496/5716) are BLURB's
sizes. No training."""

from __future__ import annotations

import json

from bio_roberta.blurb.suite import (
    BLURB,
    BY_IDS,
    BY_NOTHING,
    BY_READER,
    BY_SIZES,
    NOT_BLURBS,
    UNKNOWN,
    SplitCheck,
    check_blurb_split,
    id_list_gap,
    split_status,
)
from bio_roberta.readers import read_task
from bio_roberta.readers.blurb_ids import blurb_id_lists
from bio_roberta.readers.formats.pubmedqa_pqal import fold_split, split_dataset_pqal
from bio_roberta.readers.source_files import SPLITS, Split, TaskData, TextExample
from bio_roberta.tasks.registry import get_task
from conftest import shared_data_path

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
    # sizes other than BLURB's decide before the ids
    assert check_blurb_split(pubmedqa, data).checked_by == BY_SIZES


def test_pubmedqa_release_lists_are_fold_0_and_fold_1_is_not_blurbs():
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
    folder = shared_data_path("qa/PubMedQA/data")
    data = read_task(get_task("pubmedqa"), folder)
    assert check_blurb_split(BLURB["pubmedqa"], data) == SplitCheck(None, BY_IDS)
    records = json.loads((folder / "ori_pqal.json").read_text())
    _test, folds = split_dataset_pqal({p: r["final_decision"] for p, r in records.items()})
    test = [e.id for e in data.splits["test"].examples]
    fold1 = {**fold_split(folds, 1), "test": test}
    assert len(set(fold1["train"]) & set(blurb_id_lists("pubmedqa")["train"])) == 400
    check = check_blurb_split(BLURB["pubmedqa"], task_data("pubmedqa", fold1))
    assert check.checked_by == BY_IDS and check.reason.startswith(
        "PubMedQA: train lacks 50 of BLURB's 450 ids and holds 50 others"
    )


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


def test_hoc_with_abstracts_swapped_is_never_blurbs():
    """BLURB's HoC PMID lists (its indexing/HoC/*_pmid.tsv) are in no public repository at hand:
    BLURB's sizes with abstracts swapped are unknown, never BLURB's."""
    pmids = [str(10_000_000 + i) for i in range(1852)]
    blurb_sizes = {"train": pmids[:1295], "valid": pmids[1295:1481], "test": pmids[1481:]}
    hoc = BLURB["hoc-blurb"]
    check = check_blurb_split(
        hoc, task_data("hoc-blurb", swapped(blurb_sizes, "train", "test", 50), True)
    )
    assert check.checked_by == BY_NOTHING and check.reason.startswith(
        "HoC: split unknown (sizes equal BLURB's, which cannot prove it"
    )
    assert split_status(hoc, check.reason, check.checked_by).outcome == UNKNOWN


def test_ddi_release_sizes_are_blurbs_sizes_and_table_3s_are_not():
    ddi = BLURB["ddi"]
    pairs = [f"DDI-DrugBank.d{i // 10}.s0.p{i % 10}" for i in range(25296 + 2496 + 5716)]
    release = {"train": pairs[:25296], "valid": pairs[25296:27792], "test": pairs[27792:]}
    check = check_blurb_split(ddi, task_data("ddi", release))
    assert check.checked_by == BY_NOTHING and "sizes equal BLURB's" in check.reason
    table3 = {"train": pairs[:22233], "valid": pairs[22233:27792], "test": pairs[27792:]}
    assert check_blurb_split(ddi, task_data("ddi", table3)).checked_by == BY_SIZES


def test_the_ddi_corpus_read_by_ddi_xml_is_not_blurbs_its_dev_being_ours():
    data = read_task(get_task("ddi"), shared_data_path("re/DDI-2013/DDICorpus"))
    train, valid, test = (data.splits[name].counts for name in SPLITS)
    # BLURB's 25296 + 2496: every pair of the Train files (one has ddi=true and no type, skipped)
    assert train["pairs"] + valid["pairs"] == 27792 and test["examples"] == 5716
    assert train["skipped_true_pair_without_type"] + valid["skipped_true_pair_without_type"] == 1
    check = check_blurb_split(BLURB["ddi"], data)
    assert check.checked_by == BY_READER and "not BLURB's dev documents" in check.reason
