"""BLURB from the files researchers have (issue 21): LinkBERT's BLURB release for all 13 datasets,
Crichton et al.'s typed-tag NER files, split checks by content, and a complete BLURB suite."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bio_roberta.blurb.split_check import (
    BLURBS,
    BY_CONTENT,
    BY_CONTENT_AND_IDS,
    BY_IDS,
    BY_NOTHING,
    BY_READER,
    BY_SIZES,
    NOT_BLURBS,
    UNKNOWN,
    SplitCheck,
    SplitStatus,
    check_blurb_split,
    check_split,
    combined_status,
    identical_splits,
    split_digest,
    split_gap,
    split_status,
)
from bio_roberta.blurb.split_evidence import BLURB_DIGESTS, BLURB_ID_DIGESTS
from bio_roberta.blurb.suite import BLURB, BLURB_DATASETS
from bio_roberta.readers import TaskFormatError, read_task
from bio_roberta.tasks.blurb_entries import HOC_HALLMARKS
from bio_roberta.tasks.registry import get_task
from blurb_toy import (
    LINKBERT_FOLDERS,
    linkbert_records,
    source_label_counts,
    write_blurb_toy,
    write_linkbert,
)
from conftest import shared_data_path
from test_blurb_readers import write_scibert


def contents(data):
    return {name: sorted(map(repr, split.examples)) for name, split in data.splits.items()}


def fails(pattern):
    return pytest.raises(TaskFormatError, match=pattern)


# ---------------------------------------------------------------- (1) layouts


# task: (its folder's name in LinkBERT's and Crichton's layouts, in BioBERT's; sentences and
# B tags of train, valid, test)
NER_LAYOUTS = {
    "ncbi-disease": ("NCBI-disease", "NCBI-disease", (5424, 923, 940), (5134, 787, 960)),
    "bc5cdr-chem": ("BC5CDR-chem", "BC5CDR-Chemical", (4560, 4581, 4797), (5203, 5347, 5385)),
}


@pytest.mark.real_data
@pytest.mark.parametrize("task", NER_LAYOUTS)
def test_linkbert_and_crichton_files_read_as_the_biobert_files(task):
    """The three layouts of one dataset give the same sentences and untyped tags (the sizes are
    those measured in the folders' SOURCE.txt)."""
    name, biobert_name, sentences, mentions = NER_LAYOUTS[task]
    linkbert, crichton = f"blurb_linkbert/tokcls/{name}_hf", f"ner_crichton/{name}-IOB"
    biobert = f"ner/{biobert_name}"
    spec = get_task(task)
    read = {f: read_task(spec, shared_data_path(*f.split("/"))) for f in (linkbert, crichton)}
    reference = read_task(spec, shared_data_path(*biobert.split("/")))
    for folder, data in read.items():
        words_tags = {
            n: sorted((e.words, e.tags) for e in s.examples) for n, s in data.splits.items()
        }
        assert words_tags == {
            n: sorted((e.words, e.tags) for e in s.examples) for n, s in reference.splits.items()
        }, folder
        assert tuple(data.splits[n].counts["examples"] for n in ("train", "valid", "test")) == (
            sentences
        )
    typed = read[crichton].splits["train"]
    entity_type = "Disease" if task == "ncbi-disease" else "Chemical"
    assert typed.counts[f"typed_tags_{entity_type}"] > 0
    assert f"typed tags of {entity_type} read as untyped B/I" in typed.derivation
    assert read[linkbert].splits["valid"].sources[0].name == "dev.json"
    assert sum(typed.label_counts[t] for t in ("B",)) == mentions[0]


@pytest.mark.real_data
def test_the_toy_ner_files_are_written_as_linkberts_real_ones(tmp_path):
    """The ported process_blurb_NER (tests/blurb_toy.py) against LinkBERT's real NCBI-disease_hf:
    the same keys in the same order, ids numbered per file from "0", untyped B/I/O tags."""
    real = shared_data_path("blurb_linkbert", "tokcls", "NCBI-disease_hf")
    for folder in (real, write_linkbert(tmp_path, "ncbi-disease")):
        for stem in ("train", "dev", "test"):
            lines = (folder / f"{stem}.json").read_text().splitlines()
            records = [json.loads(line) for line in lines]
            assert lines == [json.dumps(record) for record in records], folder
            assert {tuple(record) for record in records} == {("tokens", "ner_tags", "id")}
            assert [r["id"] for r in records] == [str(i) for i in range(len(records))], folder
            assert {tag for r in records for tag in r["ner_tags"]} == {"O", "B", "I"}, folder


@pytest.mark.parametrize("task", list(LINKBERT_FOLDERS))
def test_every_blurb_dataset_reads_linkberts_layout(tmp_path, task):
    folder = write_linkbert(tmp_path, task)
    data = read_task(get_task(task), folder)
    assert [data.splits[n].counts["examples"] for n in ("train", "valid", "test")] == [6, 2, 3]
    first = data.splits["train"].examples[0]
    assert first.id == ("100" if task == "hoc-blurb" else "0")
    if task in ("pubmedqa", "bioasq"):
        assert first.text.endswith("(case 0)?") and first.text_pair.endswith(".")
    if task == "hoc-blurb":  # one record per abstract, its id the bare PMID (preprocess_blurb.py)
        assert first.labels == (HOC_HALLMARKS[0],) and first.group == "100"
        assert data.splits["train"].counts["abstracts"] == 6
        second = data.splits["train"].examples[1]
        assert second.text.count("(case 1).") == 2 and second.labels == (HOC_HALLMARKS[1],)
    if task == "biosses":
        assert first.labels == ("0.0",) and data.splits["train"].examples[1].labels == ("0.8",)


def test_the_toy_root_holds_all_13_with_their_labels_and_never_passes_blurbs_split_check(tmp_path):
    """tests/blurb_toy.py: every dataset in its LinkBERT folder, each class of the dataset among
    its records (HoC: hallmarks, two at once and none), no two splits alike, and the split check
    says not BLURB's (by content, sizes) or unknown (EBM PICO: none possible), never a pass."""
    assert write_blurb_toy(tmp_path, sizes=(8, 4, 6)) == list(LINKBERT_FOLDERS)
    for dataset in BLURB_DATASETS:
        spec = get_task(dataset.task)
        data = read_task(spec, tmp_path / dataset.linkbert_dir)
        examples = [e for split in data.splits.values() for e in split.examples]
        if spec.is_sequence_labelling:
            labels = {tag for e in examples for tag in e.tags}
        else:
            labels = {label for e in examples for label in e.labels}
        if dataset.task == "biosses":
            assert {float(label) for label in labels} == {0.0, 0.8, 1.6, 2.4, 3.2}
        elif dataset.task == "hoc-blurb":
            assert labels == set(HOC_HALLMARKS)
            counts = {len(e.labels) for e in examples}
            assert counts == {0, 1, 2}
        else:
            assert labels == set(spec.labels), dataset.task
        assert identical_splits(data) == []
        check = check_blurb_split(dataset, data)
        assert check.reason, dataset.task  # never BLURB's split
        expected = BY_CONTENT if dataset.task in BLURB_DIGESTS else BY_SIZES
        if dataset.task in BLURB_ID_DIGESTS:
            expected = BY_CONTENT_AND_IDS
        if dataset.task == "ebm-pico":
            expected = BY_NOTHING
        assert check.checked_by == expected, dataset.task
    other = tmp_path / "eleven"
    assert write_blurb_toy(other, leave_out=("ddi", "bioasq")) == [
        task for task in LINKBERT_FOLDERS if task not in ("ddi", "bioasq")
    ]
    assert not (other / "seqcls" / "DDI_hf").exists()


def test_bioasq_linkbert_layout_is_not_mistaken_for_blurbs_question_context_files(tmp_path):
    """Both are train/dev/test.json JSON lines: the keys decide (the old reader refused this file
    with "field 'question' missing")."""
    folder = write_linkbert(tmp_path, "bioasq")
    data = read_task(get_task("bioasq"), folder)
    assert data.splits["test"].examples[0].text.endswith("(case 8)?")


def test_crichton_typed_tags_are_read_for_a_task_with_untyped_tags(tmp_path):
    for name in ("train.tsv", "devel.tsv", "test.tsv"):
        (tmp_path / name).write_text("Familial\tB-Disease\ncancer\tI-Disease\nhere\tO\n\n")
    data = read_task(get_task("ncbi-disease"), tmp_path)
    assert data.splits["train"].examples[0].tags == ("B", "I", "O")
    assert data.splits["test"].counts["typed_tags_Disease"] == 2
    # a task whose tags are typed keeps checking them
    with fails(r"train.tsv:1: unknown label 'B-Disease' for i2b2-2010"):
        read_task(get_task("i2b2-2010"), tmp_path)


@pytest.mark.parametrize(
    "task, record, message",
    [
        ("ncbi-disease", {"tokens": ["a"], "ner_tags": ["O", "O"], "id": "x"}, "1 tokens but 2"),
        ("ncbi-disease", {"tokens": ["a"], "ner_tags": ["X"], "id": "x"}, "unknown label 'X'"),
        ("chemprot-blurb", {"sentence": "s", "label": "CPR:7", "id": "0"}, "unknown label"),
        ("hoc-blurb", {"sentence": "s", "label": [1, 0], "id": "1_s1"}, "10 0/1 flags"),
        ("biosses", {"sentence1": "a", "sentence2": "b", "label": "x", "id": 0}, "a number"),
        ("pubmedqa", {"sentence1": "q", "sentence2": "", "label": "yes", "id": 0}, "sentence2"),
        ("ddi", {"sentence": "s", "id": "0", "label": None}, "not a class name"),
        ("ddi", {"sentence": "s", "id": "x", "label": "false"}, "LinkBERT's release writes 0 "),
        ("ebm-pico", {"tokens": ["a"], "ner_tags": ["B-P"], "id": "x"}, "unknown label 'B-P'"),
    ],
)
def test_linkbert_layout_errors_name_file_and_line(tmp_path, task, record, message):
    folder = write_linkbert(tmp_path, task)
    with (folder / "dev.json").open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    with fails(rf"dev.json:3: .*{message}"):
        read_task(get_task(task), folder)


@pytest.mark.parametrize(
    "task, theirs",
    [("chemprot-blurb", {"0"}), ("ddi", {"0"}), ("ebm-pico", {"B-PAR", "B-INT", "B-OUT"})],
)
def test_the_labels_linkbert_writes_read_as_ours(tmp_path, task, theirs):
    """Issue 26 (1): preprocess_blurb.py writes "0" for a class named with "false" and B- for
    EBM-PICO's I- tags; those files (tests/blurb_toy.py runs its code) read with the labels of
    BLURB's source files they came from, each renamed label counted."""
    folder = write_linkbert(tmp_path, task)
    written = {
        label
        for line in (folder / "train.json").read_text().splitlines()
        for label in json.loads(line).get("ner_tags", [json.loads(line).get("label")])
    }
    assert theirs <= written and not written & {"false", "DDI-false", "I-PAR", "I-INT", "I-OUT"}
    data = read_task(get_task(task), folder)
    sources = source_label_counts(task)
    for split, stem in (("train", "train"), ("valid", "dev"), ("test", "test")):
        read = data.splits[split]
        assert read.label_counts == sources[stem], split
        renamed = {k: v for k, v in read.counts.items() if k.startswith("linkbert_label_")}
        spec = get_task(task)
        assert renamed == {
            f"linkbert_label_{label}": sources[stem][ours]
            for label, ours in spec.linkbert_labels.items()
            if sources[stem][ours]
        }, split


def test_a_linkbert_label_read_as_none_of_ours_is_refused_by_the_registry():
    with pytest.raises(ValueError, match="task ddi: linkbert_labels reads LinkBERT's labels as "):
        dataclasses.replace(get_task("ddi"), linkbert_labels={"0": "false"})


def test_a_linkbert_folder_without_train_json_names_it(tmp_path):
    """Issue 26 (6): the error named train.tsv (the task's own layout) first."""
    folder = write_linkbert(tmp_path, "chemprot-blurb")
    (folder / "train.json").unlink()
    with fails(rf"^{folder / 'train.json'}: missing \(chemprot-blurb train split, JSON lines"):
        read_task(get_task("chemprot-blurb"), folder)


def test_an_empty_linkbert_train_json_is_named_as_empty(tmp_path):
    """Issue 43: an empty train.json made the folder look like no LinkBERT one, and the error
    said train.tsv was missing; now the conversion names train.json's empty split."""
    from bio_roberta.conversion.encoder import ConversionError
    from bio_roberta.conversion.finetune_bin import check_splits_not_empty

    folder = write_linkbert(tmp_path, "chemprot-blurb")
    (folder / "train.json").write_text("")
    data = read_task(get_task("chemprot-blurb"), folder)
    with pytest.raises(
        ConversionError, match=rf"the train split has no examples \(from {folder}/train\.json"
    ):
        check_splits_not_empty(data)


def test_linkberts_hoc_given_to_hoc_says_to_use_hoc_blurb(tmp_path):
    """hoc (BLUE's split, Lewis et al.'s metric) does not read LinkBERT's release; hoc-blurb,
    of the same kind and labels, does."""
    folder = write_linkbert(tmp_path, "hoc-blurb")
    with fails(r"train.tsv: missing .*, which hoc does not read: convert it as hoc-blurb\)$"):
        read_task(get_task("hoc"), folder)


def test_no_known_layout_names_the_layouts_expected(tmp_path):
    with fails(r"train.tsv: missing .*or ncbi-disease's other layout: LinkBERT's BLURB release"):
        read_task(get_task("ncbi-disease"), tmp_path)
    with fails(r"train.tsv: missing .*LinkBERT's BLURB release"):
        read_task(get_task("chemprot-blurb"), tmp_path)


def test_linkbert_duplicate_ids_are_refused(tmp_path):
    folder = write_linkbert(tmp_path, "gad-blurb")
    with (folder / "test.json").open("a") as handle:
        handle.write(json.dumps(linkbert_records("gad-blurb")["test"][0]) + "\n")
    with fails(r"test.json:4: id '8' already on line 1"):
        read_task(get_task("gad-blurb"), folder)


# ---------------------------------------------------------------- (2) split checks by content


def write_crichton_ner(folder: Path, entity_type: str, mentions) -> Path:
    """Crichton's layout: one sentence per mention, typed tags, sentence i of a split unique."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, count in zip(("train.tsv", "devel.tsv", "test.tsv"), mentions):
        sentence = "{name}{i}\tO\nof\tO\nthe\tB-{t}\nkind\tI-{t}\n\n"
        text = "".join(sentence.format(name=name[:2], i=i, t=entity_type) for i in range(count))
        (folder / name).write_text(text)
    return folder


@pytest.mark.real_data
@pytest.mark.parametrize(
    "task, folders",
    [
        (
            "ncbi-disease",
            ("blurb_linkbert/tokcls/NCBI-disease_hf", "ner_crichton/NCBI-disease-IOB"),
        ),
        ("bc5cdr-chem", ("blurb_linkbert/tokcls/BC5CDR-chem_hf", "ner/BC5CDR-Chemical")),
    ],
)
def test_blurbs_own_files_pass_by_their_content_in_every_layout(task, folders):
    for folder in folders:
        data = read_task(get_task(task), shared_data_path(*folder.split("/")))
        assert check_blurb_split(BLURB[task], data) == SplitCheck(None, BY_CONTENT), folder


@pytest.mark.real_data
def test_same_sizes_other_sentences_are_not_blurbs_split(tmp_path):
    """The digest tells what sizes cannot: one sentence of dev changed, its mentions kept."""
    source = shared_data_path("ner_crichton", "NCBI-disease-IOB")
    for name in ("train.tsv", "devel.tsv", "test.tsv"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    devel = (tmp_path / "devel.tsv").read_text()
    (tmp_path / "devel.tsv").write_text(devel.replace("Identification\tO", "Finding\tO", 1))
    data = read_task(get_task("ncbi-disease"), tmp_path)
    check = check_blurb_split(BLURB["ncbi-disease"], data)
    assert check.reason == "NCBI-disease: valid hold other examples than BLURB's (same sizes)"
    assert check.checked_by == BY_CONTENT


def test_bc5cdr_disease_with_blurbs_sizes_but_other_sentences_is_not_blurbs(tmp_path):
    """Crichton's BC5CDR-disease has 4182/4246/4424 mentions (Table 3 prints 4244 for dev, which
    an older check required) and its typed tags read; equal sizes never prove BLURB's split
    (issue 26), and since the digests of BLURB's files are recorded (issue 42) these sentences,
    ours, are not BLURB's."""
    folder = write_crichton_ner(tmp_path / "BC5CDR-disease-IOB", "Disease", (4182, 4246, 4424))
    data = read_task(get_task("bc5cdr-disease"), folder)
    check = check_blurb_split(BLURB["bc5cdr-disease"], data)
    assert check == SplitCheck(
        "BC5-disease: train/valid/test hold other examples than BLURB's (same sizes)", BY_CONTENT
    )


def test_jnlpba_from_biobert_files_is_not_blurbs_split_and_no_check_is_not_a_pass(tmp_path):
    folder = write_crichton_ner(tmp_path / "JNLPBA", "protein", (32178, 8575, 6241))
    data = read_task(get_task("jnlpba"), folder)
    check = check_blurb_split(BLURB["jnlpba"], data)
    assert check.checked_by == BY_CONTENT  # its dev and test digests differ (issue 42), as sizes
    assert check.reason.startswith(
        "JNLPBA: train/dev/test mentions 32178/8575/6241, BLURB's split has 46750/4551/8662"
    )
    # runs without a data manifest: unknown, never BLURB's (split_gap returned None before)
    assert split_gap(BLURB["jnlpba"]).startswith("split unchecked: no data manifest")


def test_ebm_pico_by_file_names_alone_is_unknown_and_a_copied_split_is_refused(tmp_path):
    folder = write_linkbert(tmp_path, "ebm-pico")
    data = read_task(get_task("ebm-pico"), folder)
    check = check_blurb_split(BLURB["ebm-pico"], data)
    assert check.checked_by == BY_NOTHING
    assert check.reason.startswith("EBM PICO: split unknown (no sizes to compare, no id lists")
    (folder / "train.json").write_bytes((folder / "dev.json").read_bytes())
    data = read_task(get_task("ebm-pico"), folder)
    assert identical_splits(data) == [("train", "valid")]
    assert check_blurb_split(BLURB["ebm-pico"], data) == SplitCheck(
        "EBM PICO: train and valid hold the same examples", BY_CONTENT
    )
    # SciBERT's layout likewise: its file names were taken as BLURB's split before
    scibert = write_scibert(tmp_path / "scibert", pmids=((1001,), (1001,), (1002,)))
    (scibert / "test.txt").write_text((scibert / "test.txt").read_text().replace("fell", "rose"))
    assert check_split(BLURB["ebm-pico"], read_task(get_task("ebm-pico"), scibert)) == (
        "EBM PICO: train and valid hold the same examples"
    )


def test_the_digest_ignores_ids_and_order_not_content(tmp_path):
    first = read_task(get_task("chemprot-blurb"), write_linkbert(tmp_path / "a", "chemprot-blurb"))
    folder = write_linkbert(tmp_path / "b", "chemprot-blurb")
    lines = (folder / "train.json").read_text().splitlines()
    renumbered = [json.dumps({**json.loads(line), "id": f"x{i}"}) for i, line in enumerate(lines)]
    (folder / "train.json").write_text("\n".join(reversed(renumbered)) + "\n")
    second = read_task(get_task("chemprot-blurb"), folder)
    assert split_digest(first.splits["train"]) == split_digest(second.splits["train"])
    assert split_digest(first.splits["train"]) != split_digest(first.splits["test"])


# ---------------------------------------------------------------- (1c) Parquet


def write_parquet(folder: Path, split_records: dict, schema_metadata=None, shards=1) -> Path:
    """split file stem -> records as Parquet files in folder (sharded as the hub names them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for stem, records in split_records.items():
        table = pa.Table.from_pylist(records)
        if schema_metadata:
            table = table.replace_schema_metadata(schema_metadata)
        if shards == 1:
            pq.write_table(table, folder / f"{stem}.parquet")
            continue
        step = -(-len(records) // shards)
        for shard in range(shards):
            name = f"{stem}-{shard:05d}-of-{shards:05d}.parquet"
            pq.write_table(table.slice(shard * step, step), folder / name)
    return folder


@pytest.mark.parametrize("task", list(LINKBERT_FOLDERS))
def test_every_blurb_dataset_reads_the_same_from_parquet(tmp_path, task):
    """The JSON lines of LinkBERT's layout and the same records as Parquet read the same."""
    pytest.importorskip("pyarrow")
    spec = get_task(task)
    from_json = read_task(spec, write_linkbert(tmp_path / "json", task))
    from_parquet = read_task(spec, write_parquet(tmp_path / "parquet", linkbert_records(task)))
    assert contents(from_parquet) == contents(from_json)
    assert from_parquet.splits["valid"].sources[0].name == "dev.parquet"


def test_hub_parquet_shards_with_class_label_ids_read_as_names(tmp_path):
    """The hub's layout: data/<split>-0000N-of-0000M.parquet, dev named validation, ner_tags as
    ClassLabel ids whose names the file's `huggingface` metadata holds."""
    pytest.importorskip("pyarrow")
    names = ["O", "B", "I"]
    features = {
        "id": {"dtype": "string", "_type": "Value"},
        "tokens": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"},
        "ner_tags": {"feature": {"names": names, "_type": "ClassLabel"}, "_type": "Sequence"},
    }
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    records = {
        split: [
            {"id": str(i), "tokens": ["aspirin", "induced", "asthma"], "ner_tags": [0, 0, 1]}
            for i in range(size)
        ]
        for split, size in (("train", 5), ("validation", 2), ("test", 3))
    }
    write_parquet(tmp_path / "data", records, metadata, shards=2)
    data = read_task(get_task("ncbi-disease"), tmp_path)
    assert [data.splits[n].counts["examples"] for n in ("train", "valid", "test")] == [5, 2, 3]
    assert data.splits["train"].examples[0].tags == ("O", "O", "B")
    assert [p.name for p in data.splits["train"].sources] == [
        "train-00000-of-00002.parquet",
        "train-00001-of-00002.parquet",
    ]
    records["test"][1]["ner_tags"] = [0, 7, 0]
    write_parquet(tmp_path / "data", records, metadata, shards=2)
    with fails(r"test-00000-of-00002\.parquet: row 2: ner_tags 7 is not a class id 0\.\.2"):
        read_task(get_task("ncbi-disease"), tmp_path)


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    folder = write_parquet(tmp_path, linkbert_records("gad-blurb", sizes=(2, 2, 1)))
    monkeypatch.setitem(__import__("sys").modules, "pyarrow.parquet", None)
    with fails(r"train\.parquet: reading Parquet needs pyarrow; install it"):
        read_task(get_task("gad-blurb"), folder)


# ---------------------------------------------------------------- (2b) a split's status


def test_split_status_is_blurbs_only_when_a_check_found_it():
    """The manifest's blurb_split_check and blurb_split_checked_by as the report reads them: no
    check possible, no manifest, or a check not recorded is unknown, never BLURB's."""
    ncbi = BLURB["ncbi-disease"]
    assert split_status(ncbi, None, BY_CONTENT) == SplitStatus("content hash", BLURBS, None)
    assert split_status(ncbi, None, BY_IDS) == SplitStatus("ids", BLURBS, None)
    # sizes and the reader can only find a split not BLURB's (issue 26): nothing found is unknown
    for negative_only in (BY_SIZES, BY_READER):
        status = split_status(ncbi, None, negative_only)
        assert status.outcome == UNKNOWN and "can only find a split not BLURB's" in status.reason
    # a manifest of an older bio-roberta that called equal sizes BLURB's: unknown, convert again
    older_sizes = "sizes: BLURB's, each number's source named in bio_roberta/blurb/suite.py"
    assert split_status(ncbi, None, older_sizes).outcome == UNKNOWN
    sizes = split_status(ncbi, "NCBI-disease: train/dev/test mentions 1/2/3, ...", BY_SIZES)
    assert (sizes.text, sizes.reason) == ("sizes: not BLURB's", sizes.reason)
    # none possible: unknown even if a manifest were to say null
    for check in (None, "EBM PICO: split unchecked"):
        status = split_status(BLURB["ebm-pico"], check, BY_NOTHING)
        assert status.text == "none possible: unknown" and not status.is_blurbs and status.reason
    no_manifest = split_status(ncbi)
    assert no_manifest.text == "not recorded: unknown"
    assert no_manifest.reason.startswith("split unchecked: no data manifest")
    older = split_status(ncbi, None, None)
    assert older.text == "not recorded: unknown" and "convert the dataset again" in older.reason
    odd = split_status(ncbi, None, "by looking")
    assert odd.text == "not recorded: unknown" and "'by looking' is no check" in odd.reason
    # runs of one dataset on two conversions
    passed = split_status(ncbi, None, BY_CONTENT)
    assert combined_status([passed, passed]) == passed and combined_status([]) is None
    assert combined_status([passed, no_manifest]).outcome == UNKNOWN
    mixed = combined_status([passed, sizes, no_manifest])
    assert mixed.outcome == NOT_BLURBS and mixed.checked_by == "content hash + sizes + not recorded"
