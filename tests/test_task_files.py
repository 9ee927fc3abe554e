"""Tasks of the user's own declared in task files (`--task-file`, docs/own_tasks.md): read, checked
with one-line errors naming the file and field (or line), and taken by convert-task, sweep,
report, predict and export-hf as a registry task is (issue 28, item 1)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from task_file_data import (
    DOCSTART,
    SPLIT_SIZES,
    conll_ner,
    csv_classification,
    save_to_disk,
    write_task_file,
)

BIN = Path(sys.executable).parent


def bio_roberta(*args):
    return subprocess.run(
        [str(BIN / "bio-roberta"), *map(str, args)], capture_output=True, text=True
    )


@pytest.fixture(autouse=True)
def no_declared_tasks(monkeypatch):
    """Each test starts with no task declared by a task file, and leaves none (the lookup's
    table and the environment variable for subprocesses are the process's)."""
    from bio_roberta.tasks.registry import DECLARED
    from bio_roberta.tasks.task_file import TASK_FILES_ENV

    monkeypatch.setenv(TASK_FILES_ENV, "")
    saved = dict(DECLARED)
    DECLARED.clear()
    yield
    DECLARED.clear()
    DECLARED.update(saved)


def declared(path: Path):
    from bio_roberta.tasks.task_file import declare_task_files

    (spec,) = declare_task_files([path])
    return spec


def test_each_format_is_read_with_what_went_in_and_what_was_skipped(tmp_path):
    from bio_roberta.readers import read_task

    ner, cls, hf = (
        declared(make(tmp_path / name))
        for make, name in ((conll_ner, "ner"), (csv_classification, "cls"), (save_to_disk, "hf"))
    )
    conll = read_task(ner, ner.declaration.data_dir)
    # "infer": the train split's tags, O first then each type's B and I in sorted order
    assert conll.spec.labels == ("O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease")
    text = (tmp_path / "ner" / "data" / "train.conll").read_text()
    assert conll.splits["train"].counts["skipped_docstart_lines"] == text.count(DOCSTART) == 20
    assert conll.splits["train"].counts["examples"] == SPLIT_SIZES["train"]
    assert all("-DOCSTART-" not in s.words for s in conll.splits["train"].examples)

    rows = read_task(cls, cls.declaration.data_dir)
    assert rows.spec.labels == ("none", "chemical")  # as declared, not sorted
    first = rows.splits["train"].examples[0]
    assert first.id == "train.csv:2" and first.labels[0] in ("none", "chemical")
    assert rows.splits["test"].counts == {"rows": 12, "examples": 12}

    saved = read_task(hf, hf.declaration.data_dir)
    assert hf.hparams.lr == 5e-5 and hf.hparams.batch_size == 32  # the rest are the kind's
    train = saved.splits["train"].examples
    # ClassLabel ids read by their names in dataset_info.json
    assert {tag for s in train for tag in s.tags} <= set(saved.spec.labels)
    assert "B-Chemical" in {tag for s in train for tag in s.tags}


def error_of(path: Path) -> str:
    from bio_roberta_core.errors import BioRobertaError

    with pytest.raises(BioRobertaError) as error:
        declared(path)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_bad_declaration_is_one_line_naming_the_file_and_field(tmp_path):
    good = json.loads(csv_classification(tmp_path).read_text())

    def with_(**change):
        fields = {k: v for k, v in {**good, **change}.items() if v is not None}
        return write_task_file(tmp_path / "t.json", fields)

    where = str(tmp_path / "t.json")
    assert error_of(with_(colour="red")).startswith(f"{where}: field 'colour': unknown field")
    assert error_of(with_(kind=None)) == f"{where}: field 'kind': missing"
    assert "field 'kind': 'tagging' is not one of ner, relation" in error_of(with_(kind="tagging"))
    assert "field 'metric': 'f2' is not one of" in error_of(with_(metric="f2"))
    assert "field 'metric'" in error_of(with_(metric="pearson"))  # not logged by the kind's
    missing = error_of(with_(files={**good["files"], "dev": "nowhere.csv"}))
    assert missing == f"{where}: field 'files.dev': {tmp_path / 'nowhere.csv'} does not exist"
    assert "field 'files': expected train, dev (or valid, validation) and test" in error_of(
        with_(files={"train": "train.csv"})
    )
    # fairseq's and the datasets library's name of the dev split (issue 43), one of them
    for dev in ("valid", "validation"):
        files = {"train": "train.csv", dev: "dev.csv", "test": "test.csv"}
        spec = declared(with_(name=f"my-{dev}", files=files))
        assert spec.declaration.files["valid"] == "dev.csv"
    assert "field 'files': dev and valid both name the dev split" in error_of(
        with_(files={**good["files"], "valid": "dev.csv"})
    )
    assert "field 'hparams': learning_rate not among lr, " in error_of(
        with_(hparams={"learning_rate": 1})
    )
    assert "field 'negative_label': 'false' is not among" in error_of(with_(negative_label="false"))
    assert "field 'negative_label': binary_f1 scores the one label of two" in error_of(
        with_(kind="binary_relation", metric=None, negative_label=None)
    )
    assert "field 'format': a csv cell holds no word list" in error_of(
        with_(kind="ner", labels=None, negative_label=None, metric=None)
    )
    assert f"{where}: field 'domain': 'oncology': pubmed or clinical" == error_of(
        with_(domain="oncology")
    )
    assert declared(with_(name="my-clinical", domain="clinical")).domain == "clinical"
    assert declared(with_(name="my-undeclared-domain")).domain == ""
    (tmp_path / "t.yaml").write_text("name: [unclosed\n")
    assert error_of(tmp_path / "t.yaml").startswith(f"{tmp_path / 't.yaml'}:2: not YAML")
    # a latin-1 byte (issue 43: a UnicodeDecodeError traceback): the file, line and byte
    (tmp_path / "t.yaml").write_bytes(b"name: my-ner\ndisplay: Caf\xe9 NER\n")
    assert error_of(tmp_path / "t.yaml") == (
        f"{tmp_path / 't.yaml'}:2: not UTF-8 (invalid continuation byte at byte 13 of the line, "
        "b'\\xe9'); save it as UTF-8 text (e.g. iconv -f latin1 -t utf-8 FILE > NEW)"
    )
    run = bio_roberta(
        "convert-task", "my-ner", "--task-file", tmp_path / "t.yaml", "--vocab", ".", "--out", "x"
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"bio-roberta convert-task: error: {error_of(tmp_path / 't.yaml')}"
    ]
    write_task_file(tmp_path / "taken.json", {**good, "name": "ncbi-disease"})
    assert "task 'ncbi-disease' is already declared by the registry" in error_of(
        tmp_path / "taken.json"
    )


def test_a_label_outside_the_set_names_its_file_and_line(tmp_path):
    from bio_roberta.readers import TaskFormatError, read_task

    ner = declared(conll_ner(tmp_path))
    test = tmp_path / "data" / "test.conll"
    lines = test.read_text().splitlines()
    lines[2] = "aspirin NN B-Gene"  # a type train does not have
    test.write_text("\n".join(lines))
    with pytest.raises(TaskFormatError) as error:
        read_task(ner, tmp_path)
    assert str(error.value) == (
        f"{test}:3: label 'B-Gene' is not one of my-ner's: its train split has "
        "O, B-Chemical, I-Chemical, B-Disease, I-Disease"
    )
    # a line of one column in train (issue 43: its word was taken for its tag, and the inferred
    # labels refused without a line)
    train = tmp_path / "data" / "train.conll"
    lines = train.read_text().splitlines()
    lines[2] = "aspirin"
    train.write_text("\n".join(lines))
    with pytest.raises(TaskFormatError) as error:
        read_task(ner, tmp_path)
    assert str(error.value) == (
        f"{train}:3: 1 column(s), but the task file's columns name word 0 and tag -1 "
        f"({ner.declaration.path})"
    )

    cls = declared(csv_classification(tmp_path / "cls"))
    train = tmp_path / "cls" / "train.csv"
    train.write_text(train.read_text().replace(",none", ",None", 1))
    with pytest.raises(TaskFormatError, match=rf"^{train}:\d+: label 'None' is not one of"):
        read_task(cls, tmp_path / "cls")


def test_convert_records_the_inferred_labels_and_later_commands_read_them(tmp_path):
    """The conversion's manifest holds the declaration and the labels it inferred; the task as
    the converted data has it takes those, and an edit that changes them is refused."""
    from bio_roberta.tasks.converted_task import task_spec_of
    from bio_roberta.tasks.task_file import TaskFileError, as_converted

    ner = declared(conll_ner(tmp_path))
    manifest = {
        "task": "my-ner",
        "kind": "ner",
        "task_declaration": ner.declaration.record(("O", "B-X", "I-X")),
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert task_spec_of(tmp_path).labels == ("O", "B-X", "I-X")
    with pytest.raises(TaskFileError, match="not converted from the task file"):
        as_converted(ner, {**manifest, "kind": "relation"}, tmp_path / "manifest.json")


def test_own_tasks_convert_fine_tune_report_predict_and_export(tmp_path):
    """The three task files, converted, fine-tuned in one tiny sweep (real fairseq, one run each),
    reported, predicted on and exported with the `bio-roberta` commands, nothing else."""
    from tiny_finetune import TINY, tiny_vocab
    from tiny_training import TINY_WORDS, pretrain_tiny_roberta

    task_files = [
        conll_ner(tmp_path / "ner"),
        csv_classification(tmp_path / "cls"),
        save_to_disk(tmp_path / "hf"),
    ]
    given = [option for path in task_files for option in ("--task-file", path)]
    vocab = tiny_vocab(tmp_path, " ".join(TINY_WORDS))
    root = tmp_path / "finetune-bin"
    for task in ("my-ner", "my-cls", "my-hf-ner"):
        positions = ["--max-positions", "32"] if task != "my-ner" else []  # my-ner: 512
        run = bio_roberta(
            "convert-task", task, *given, "--vocab", vocab, "--out", root / task, *positions
        )
        assert run.returncode == 0, run.stderr[-2000:]
    manifest = json.loads((root / "my-ner" / "manifest.json").read_text())
    assert manifest["task_declaration"]["labels_inferred"] is True
    assert manifest["labels"] == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    assert manifest["split_details"]["train"]["read"]["counts"]["skipped_docstart_lines"] == 20

    pretrained = pretrain_tiny_roberta(
        root / "my-ner" / "input0", tmp_path / "pretrained", max_update=3
    )
    results = tmp_path / "results"
    sweep_command = [
        "sweep", "--tasks", "my-ner,my-cls,my-hf-ner", *given, "--seed-list", "1",
        "--pretrained", pretrained, "--data-root", root, "--results", results,
        *(o for o in TINY if not o.startswith("hparams.max_epoch=")), "hparams.max_epoch=1",
    ]  # fmt: skip
    # my-ner converted for 512 positions, the model has 32: refused before any run, with the
    # command that converts it again, which pastes as it is (issue 43: it lacked --task-file)
    sweep = bio_roberta(*sweep_command)
    assert sweep.returncode == 2 and not results.exists(), sweep.stderr[-3000:]
    refusal = sweep.stderr.strip().splitlines()[-1]
    assert f"{root / 'my-ner'} was converted for 512 positions but {pretrained} has 32" in refusal
    again = shlex.split(refusal.split("convert it again for the model's: ")[1])
    assert again[:5] == ["bio-roberta", "convert-task", "my-ner", "--task-file", str(task_files[0])]
    assert again[-2:] == ["--pretrained", str(pretrained)]
    assert bio_roberta(*again[1:]).returncode == 0
    assert json.loads((root / "my-ner" / "manifest.json").read_text())["max_positions"] == 32
    sweep = bio_roberta(*sweep_command)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    records = {
        r["task"]: r for r in (json.loads(p.read_text()) for p in results.rglob("result.json"))
    }
    assert {task: r["status"] for task, r in records.items()} == {
        "my-ner": "ok",
        "my-cls": "ok",
        "my-hf-ner": "ok",
    }
    assert records["my-cls"]["metric"] == "micro_f1"

    report = bio_roberta("report", results, "--out", tmp_path / "report", *given)
    assert report.returncode == 0, report.stderr[-2000:]
    table = (tmp_path / "report" / "report.md").read_text()
    assert all(f"| {task} |" in table for task in records), table

    sentences = tmp_path / "new.txt"
    sentences.write_text("the patient was given aspirin for chest pain\nmice with diabetes\n")
    for task, records_key in (("my-ner", "entities"), ("my-cls", "label")):
        run_dir = Path(records[task]["checkpoint"]["path"]).parent.parent
        predicted = bio_roberta("predict", run_dir, "--input", sentences, *given)
        assert predicted.returncode == 0, predicted.stderr[-2000:]
        lines = [json.loads(line) for line in predicted.stdout.splitlines()]
        assert len(lines) == 2 and all(records_key in line for line in lines)
    # the task's test split read from the task file's folder, or from the folder holding its
    # files (issue 43: data/data/test.conll was looked for)
    ner_run = Path(records["my-ner"]["checkpoint"]["path"]).parent.parent
    by_folder = [
        bio_roberta("predict", ner_run, "--input", folder, *given)
        for folder in (tmp_path / "ner", tmp_path / "ner" / "data")
    ]
    assert [run.returncode for run in by_folder] == [0, 0], by_folder[1].stderr[-2000:]
    assert by_folder[0].stdout == by_folder[1].stdout
    assert len(by_folder[0].stdout.splitlines()) == SPLIT_SIZES["test"]
    texts = sentences.read_text().splitlines()
    for text, line in zip(texts, lines):
        assert line["label"] in ("none", "chemical")
    import bio_roberta as api
    from bio_roberta.tasks.registry import DECLARED
    from bio_roberta.tasks.task_file import declare_task_files

    declare_task_files(task_files)  # the Python route of --task-file (docs/own_tasks.md)
    (record,) = api.load(run_dir).predict(texts[:1])
    assert record["label"] == lines[0]["label"]
    # the declaration is read from the converted data: no task file to pass again (issue 43),
    # not even one that is gone
    task_files[1].rename(task_files[1].with_suffix(".moved"))
    without = bio_roberta("predict", run_dir, "--input", sentences)
    assert without.returncode == 0, without.stderr[-2000:]
    assert [json.loads(line) for line in without.stdout.splitlines()] == lines
    DECLARED.clear()
    assert api.load(run_dir).predict(texts[:1]) == [record]

    checkpoint = Path(records["my-hf-ner"]["checkpoint"]["path"])
    export = bio_roberta("export-hf", checkpoint, tmp_path / "hf-model", "--vocab", vocab)
    assert export.returncode == 0, export.stderr[-2000:]
    config = json.loads((tmp_path / "hf-model" / "config.json").read_text())
    assert set(config["id2label"].values()) == set(manifest["labels"])


def test_pairs_and_scores_in_json_lines_tsv_and_parquet(tmp_path):
    """An NLI set in JSON lines (blank lines counted), the same as TSV, and scores in Parquet."""
    import pyarrow
    import pyarrow.parquet

    from bio_roberta.readers import TaskFormatError, read_task

    rows = [
        {"premise": "the patient was given aspirin", "hypothesis": "aspirin", "gold": "yes"},
        {"premise": "mice with diabetes", "hypothesis": "no mice", "gold": "no"},
    ]
    for split in ("train", "dev", "test"):
        lines = [json.dumps(row) for row in rows] + [""]
        (tmp_path / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
        tsv = ["premise\thypothesis\tgold"] + ["\t".join(row.values()) for row in rows]
        (tmp_path / f"{split}.tsv").write_text("\n".join(tsv) + "\n")
        scored = [{**row, "gold": float(i) + 0.5} for i, row in enumerate(rows)]
        pyarrow.parquet.write_table(pyarrow.Table.from_pylist(scored), tmp_path / f"{split}.pq")
    columns = {"text": "premise", "text_pair": "hypothesis", "label": "gold"}
    for data_format, suffix, kind in (
        ("jsonl", "jsonl", "nli"),
        ("tsv", "tsv", "nli"),
        ("parquet", "pq", "regression"),
    ):
        spec = declared(
            write_task_file(
                tmp_path / f"{data_format}.yaml",
                {
                    "name": f"pairs-{data_format}",
                    "kind": kind,
                    "format": data_format,
                    "files": {split: f"{split}.{suffix}" for split in ("train", "dev", "test")},
                    "columns": columns,
                },
            )
        )
        data = read_task(spec, tmp_path)
        (first, second) = data.splits["test"].examples
        assert (first.text, first.text_pair) == ("the patient was given aspirin", "aspirin")
        if kind == "nli":
            assert data.spec.labels == ("no", "yes") and first.labels == ("yes",)
        else:
            assert data.spec.labels == () and second.labels == ("1.5",)
        if data_format == "jsonl":
            assert data.splits["train"].counts["skipped_blank_lines"] == 1
    assert spec.metric == "pearson"  # the kind's
    (tmp_path / "test.tsv").write_text("premise\thypothesis\tgold\nonly one\tfield\n")
    tsv = declared(tmp_path / "tsv.yaml")
    with pytest.raises(TaskFormatError, match=rf"^{tmp_path / 'test.tsv'}:2: 2 fields, the header"):
        read_task(tsv, tmp_path)


def relative(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path, start)


def test_the_real_ncbi_disease_release_read_as_task_files(tmp_path, shared_data):
    """Crichton et al.'s typed token<TAB>tag files as format conll, and LinkBERT's BLURB JSON lines
    as format jsonl, give the sentences the registry's ncbi-disease reader gives (BioBERT's
    untyped release of the same corpus), their tags with the inferred types."""
    from bio_roberta.readers import read_task
    from bio_roberta.tasks.registry import get_task

    registry = read_task(get_task("ncbi-disease"), shared_data("ner", "NCBI-disease"))
    crichton = shared_data("ner_crichton", "NCBI-disease-IOB")
    linkbert = shared_data("blurb_linkbert", "tokcls", "NCBI-disease_hf")
    conll = declared(
        write_task_file(
            tmp_path / "crichton.yaml",
            {
                "name": "ncbi-crichton",
                "kind": "ner",
                "format": "conll",
                "files": {
                    split: relative(crichton / f"{name}.tsv", tmp_path)
                    for split, name in (("train", "train"), ("dev", "devel"), ("test", "test"))
                },
            },
        )
    )
    jsonl = declared(
        write_task_file(
            tmp_path / "linkbert.yaml",
            {
                "name": "ncbi-linkbert",
                "kind": "ner",
                "format": "jsonl",
                "files": {s: relative(linkbert / f"{s}.json", tmp_path) for s in SPLIT_SIZES},
                "columns": {"words": "tokens", "tags": "ner_tags"},
            },
        )
    )
    typed, untyped = read_task(conll, tmp_path), read_task(jsonl, tmp_path)
    assert typed.spec.labels == ("O", "B-Disease", "I-Disease")
    assert untyped.spec.labels == ("O", "B", "I")
    for split, ours in registry.splits.items():
        words = [s.words for s in ours.examples]
        tags = [s.tags for s in ours.examples]
        assert len(words) == {"train": 5424, "valid": 923, "test": 940}[split]
        assert [s.words for s in typed.splits[split].examples] == words
        assert [tuple(t[:1] for t in s.tags) for s in typed.splits[split].examples] == tags
        assert [s.words for s in untyped.splits[split].examples] == words
        assert [s.tags for s in untyped.splits[split].examples] == tags


def test_a_task_file_edited_after_conversion_is_one_line_before_any_run(tmp_path):
    """Issue 43: the edit was found inside the Hydra job, the console saying HYDRA_FULL_ERROR=1
    and the reason only in a log; finetune (and sweep) now check it before any run."""
    task_file = csv_classification(tmp_path / "cls")
    spec = declared(task_file)
    converted = tmp_path / "finetune-bin" / "my-cls"
    converted.mkdir(parents=True)
    manifest = {
        "task": "my-cls",
        "kind": "relation",
        "task_declaration": spec.declaration.record(("none", "chemical")),
    }
    (converted / "manifest.json").write_text(json.dumps(manifest))
    fields = json.loads(task_file.read_text())
    task_file.write_text(json.dumps({**fields, "labels": ["chemical", "none"]}))
    run = bio_roberta(
        "finetune", "--task", "my-cls", "--task-file", task_file, "--pretrained", "m.pt",
        "--data-root", tmp_path / "finetune-bin", "--results", tmp_path / "results",
    )  # fmt: skip
    assert run.returncode == 2 and "HYDRA_FULL_ERROR" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        (
            f"bio-roberta finetune: error: {converted / 'manifest.json'}: converted with labels "
            f"none, chemical, {task_file} declares chemical, none: convert it again"
        )
    ]
