"""Test predictions keyed by the release's example ids (bio_roberta/blurb/predictions_file.py), how
each task kind keys a run's outputs (prediction_files.py ``by_id``), which run stands for a dataset
(``chosen_run``) and `bio-roberta rescore` against a release (toy copies in LinkBERT's layout,
tests/blurb_toy.py): its scores, and its errors naming the file and line. The end-to-end evidence
(real runs' files re-score to their result.json and leaderboard numbers) is in
test_blurb_toy_suite.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.predictions_file import (
    SubmissionError,
    read_predictions_file,
    write_predictions_file,
)
from bio_roberta.blurb_run.rescore import rescore
from bio_roberta.blurb_run.submission import chosen_run, write_submission
from bio_roberta.finetuning.results import FAILED, OK, ResultRecord
from bio_roberta.readers import read_task
from bio_roberta.tasks.classification_tables import LABEL_SETS
from bio_roberta.tasks.kinds import label_symbols
from bio_roberta.tasks.prediction_files import TAGGED_WORDS, PredictionFileError
from bio_roberta.tasks.registry import get_task
from bio_roberta_core.provenance import file_record
from blurb_toy import write_linkbert
from conftest import shared_data_path

BIN = Path(sys.executable).parent


def test_a_predictions_file_reads_back_with_the_line_of_each_id(tmp_path):
    path = tmp_path / "NCBI-disease.json"
    write_predictions_file(path, "NCBI-disease", "m", {"7": ["O", "B"], "9": ["I"]})
    read = read_predictions_file(path)
    assert read.spec.name == "ncbi-disease" and read.model_name == "m"
    assert read.predictions == {"7": ["O", "B"], "9": ["I"]}
    assert json.loads(path.read_text())["dataset_name"] == "NCBI-disease"
    lines = path.read_text().splitlines()
    assert lines[read.id_lines["9"] - 1].strip() == '"9": ["I"]'
    assert read.where("9") == f"{path}:{read.id_lines['9']}"


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"dataset_name": "BC2GM", "predictions": {}}', ":1: expected an object of exactly"),
        ('{"dataset_name": "nope", "model_name": "m", "predictions": {}}', "neither a BLURB"),
        ('{"dataset_name": "BC2GM",\n"model_name": "m",\n"predictions": []}', ":3: predictions"),
        ('{"dataset_name": "BC2GM",\n"model_name": 1,', ":2: not JSON"),
        ('{"dataset_name": "BIOSSES", "model_name": "m", "predictions": {"1": NaN}}', "NaN is not"),
    ],
)
def test_a_file_not_in_the_form_is_an_error_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(SubmissionError) as error:
        read_predictions_file(path)
    assert str(error.value).startswith(str(path)) and message in str(error.value)


def record(seed, valid, status=OK, setting=None, task="bc2gm"):
    run = ResultRecord(task=task, seed=seed, metric="entity_f1", status=status, valid_score=valid)
    run.setting = setting  # what per-setting runs record (issue 26's tuning)
    return run


def test_the_chosen_run_has_the_best_valid_score_ties_to_the_lowest_seed():
    runs = [record(3, 0.5), record(2, 0.7), record(4, 0.7), record(1, 0.9, FAILED), record(5, None)]
    assert chosen_run(runs, "bc2gm").seed == 2
    assert chosen_run(runs, "jnlpba") is None
    assert chosen_run([record(5, None), record(6, 0.1)], "bc2gm").seed == 6
    assert chosen_run([record(8, None), record(5, None)], "bc2gm").seed == 5


def test_the_chosen_run_is_of_the_selected_setting():
    runs = [record(1, 0.9, setting={"lr": 1e-5}), record(2, 0.5, setting={"lr": 3e-5})]
    assert chosen_run(runs, "bc2gm").seed == 1  # no setting selected: every run of the dataset
    assert chosen_run(runs, "bc2gm", "lr3e-05").seed == 2
    assert chosen_run(runs, "bc2gm", "lr5e-05") is None
    assert chosen_run([*runs, record(3, 0.1)], "bc2gm", "").seed == 3  # the registry's


def test_the_manifest_names_the_setting_of_the_run_it_took(tmp_path):
    """Issue 42: a --tune run's submission manifest said setting null though its run was of a
    named setting (blurb-suite passes the records of the picked setting, no settings): the
    manifest names the chosen run's own setting and its hyperparameters, the registry's by its
    label."""
    tuned = run_with_predictions(tmp_path, 1, 0.8, ["B"])
    tuned.setting = {"lr": 3e-5, "batch_size": 32}
    manifest = write_submission([tuned], tmp_path / "out", "pm-base", ["bc2gm"])
    run = manifest["datasets"]["BC2GM"]["run"]
    assert (run["setting"], run["hparams"]) == ("lr3e-05-bs32", {"lr": 3e-5, "batch_size": 32})
    registry = run_with_predictions(tmp_path, 2, 0.9, ["O"], task="jnlpba")
    manifest = write_submission(
        [tuned, registry], tmp_path / "out", "m", ["jnlpba"], {"jnlpba": ""}
    )
    run = manifest["datasets"]["JNLPBA"]["run"]
    assert (run["setting"], run["hparams"]) == ("registry's setting", {})


def run_with_predictions(tmp_path, seed, valid, tags, task="bc2gm"):
    """A finished run of `task` whose test.predictions.json holds `tags` for sentence "0"."""
    run = record(seed, valid, task=task)
    run.path = tmp_path / task / f"seed{seed}" / "result.json"
    run.path.parent.mkdir(parents=True)
    path = run.path.parent / "test.predictions.json"
    write_predictions_file(path, "BC2GM", "checkpoint_best.pt", {"0": tags})
    run.predictions_by_id = file_record(path)
    return run


def test_the_submission_holds_each_datasets_chosen_run_and_names_the_others(tmp_path):
    runs = [
        run_with_predictions(tmp_path, 1, 0.5, ["O"]),
        run_with_predictions(tmp_path, 2, 0.8, ["B"]),
    ]
    manifest = write_submission(runs, tmp_path / "out", "pm-base", ["bc2gm", "jnlpba", "gad"])
    written = read_predictions_file(tmp_path / "out" / "BC2GM.json")
    assert (written.model_name, written.predictions) == ("pm-base", {"0": ["B"]})
    assert manifest["datasets"]["BC2GM"]["run"]["seed"] == 2
    assert manifest["without_predictions"] == {
        "JNLPBA": "no finished run",
        "gad": "cross-validated: no single test set",
    }
    assert json.loads((tmp_path / "out" / "manifest.json").read_text()) == manifest
    Path(runs[1].predictions_by_id["path"]).write_text("{}")  # changed since its record
    manifest = write_submission(runs, tmp_path / "out", "pm-base", ["bc2gm"])
    assert "changed since" in manifest["without_predictions"]["BC2GM"]
    assert not (tmp_path / "out" / "BC2GM.json").exists()


def finetune_ids(tmp_path, ids, conll_blocks):
    (tmp_path / "test.ids").write_text("".join(f"{i}\n" for i in ids))
    (tmp_path / "test.conll").write_text(
        "\n".join("".join(f"{w}\t{t}\n" for w, t in block) for block in conll_blocks)
    )
    return tmp_path


def test_ner_predictions_join_a_split_sentence_under_its_id_one_tag_per_token(tmp_path):
    data = finetune_ids(
        tmp_path, ["s1", "s1", "s2"], [[("a", "O"), ("b", "B")], [("c", "I")], [("d", "O")]]
    )
    outputs = {0: (["O", "B"], ["O", "B"]), 1: (["I"], ["I"]), 2: (["O"], ["I"])}
    by_id = TAGGED_WORDS.by_id(data, "test", outputs, {})
    assert by_id == {"s1": ["O", "B", "I"], "s2": ["B"]}  # predicted tags in BIO


def test_an_id_naming_two_examples_cannot_key_predictions(tmp_path):
    data = finetune_ids(tmp_path, ["s1", "s2", "s1"], [[("a", "O")], [("b", "O")], [("c", "O")]])
    outputs = {i: (["O"], ["O"]) for i in range(3)}
    with pytest.raises(PredictionFileError, match="'s1' names two examples"):
        TAGGED_WORDS.by_id(data, "test", outputs, {})


def test_multilabel_predictions_are_the_registrys_labels(tmp_path):
    (tmp_path / "test.ids").write_text("101_s0\t101\n101_s1\t101\n")
    outputs = {0: (set(), {"resisting_cell_death", "cellular_energetics"}), 1: (set(), set())}
    spec = get_task("hoc-blurb")
    by_id = LABEL_SETS.by_id(tmp_path, "test", outputs, dict(zip(label_symbols(spec), spec.labels)))
    assert by_id == {"101_s0": ["cellular energetics", "resisting cell death"], "101_s1": []}


def release_predictions(root, task, value_of):
    """{id: value_of(example)} over the toy release's test split of `task`."""
    test = read_task(get_task(task), write_linkbert(root, task)).splits["test"]
    return {example.id: value_of(example) for example in test.examples}


def submission(tmp_path, name, predictions):
    out = tmp_path / "submission"
    out.mkdir(parents=True, exist_ok=True)
    write_predictions_file(out / f"{name}.json", name, "toy", predictions)
    return out


def test_rescore_scores_each_file_with_its_tasks_metric(tmp_path):
    root = tmp_path / "blurb"
    gold_tags = release_predictions(root, "ncbi-disease", lambda e: list(e.tags))
    no_entities = {i: ["O"] * len(tags) for i, tags in gold_tags.items()}
    labels = release_predictions(root, "chemprot-blurb", lambda e: e.labels[0])
    hallmarks = release_predictions(root, "hoc-blurb", lambda e: sorted(e.labels))
    out = submission(tmp_path, "NCBI-disease", gold_tags)
    submission(tmp_path, "ChemProt", labels)
    submission(tmp_path, "HoC", hallmarks)
    record = rescore(out, root)
    scores = {name: entry["score"] for name, entry in record["datasets"].items()}
    assert scores == {"NCBI-disease": 1.0, "ChemProt": 1.0, "HoC": 1.0}
    assert record["datasets"]["NCBI-disease"]["scored"] == len(gold_tags) == 3
    assert json.loads((out / "rescore.json").read_text())["datasets"] == record["datasets"]
    write_predictions_file(out / "NCBI-disease.json", "NCBI-disease", "toy", no_entities)
    assert rescore(out, root)["datasets"]["NCBI-disease"]["score"] == 0.0


def rescore_error(*args):
    run = subprocess.run(
        [str(BIN / "bio-roberta"), "rescore", *map(str, args)], capture_output=True, text=True
    )
    (error,) = [line for line in run.stderr.splitlines() if " | INFO | " not in line]
    assert run.returncode == 2 and error.startswith("bio-roberta rescore: error: "), run.stderr
    return error


def test_rescore_errors_name_the_file_and_line_and_missing_ids_are_counted(tmp_path):
    root = tmp_path / "blurb"
    labels = release_predictions(root, "chemprot-blurb", lambda e: e.labels[0])
    first, *others = labels
    out = submission(tmp_path, "ChemProt", {**labels, "no-such-id": "false"})
    path = out / "ChemProt.json"
    line = read_predictions_file(path).id_lines["no-such-id"]
    error = rescore_error(out, "--data", root)
    assert f"error: {path}:{line}: id 'no-such-id' is not a test example of chemprot-blurb" in error
    submission(tmp_path, "ChemProt", {**labels, first: "CPR:99"})
    error = rescore_error(out, "--data", root)
    assert f"{path}:{read_predictions_file(path).id_lines[first]}: id {first!r}: 'CPR:99'" in error
    submission(tmp_path, "ChemProt", {i: labels[i] for i in others})
    error = rescore_error(out, "--data", root)
    assert f"{path}: 1 of the 3 test examples" in error and "--allow-missing" in error
    record = rescore(out, root, allow_missing=True)["datasets"]["ChemProt"]
    assert (record["scored"], record["missing"], record["missing_ids"]) == (2, 1, [first])
    tags = release_predictions(root, "bc2gm", lambda e: list(e.tags)[:-1])  # a tag short
    out = submission(tmp_path / "ner", "BC2GM", tags)
    error = rescore_error(out, "--data", root)
    assert "tags for the release's" in error and f"{out / 'BC2GM.json'}:" in error


def test_linkberts_real_release_keys_ncbi_disease_as_blurbs_schema_does(tmp_path):
    """LinkBERT's NCBI-disease test ids (../shared/data/blurb_linkbert, SOURCE.txt) are "0".."939",
    the keys BLURB's NER schema allows (^[0-9]+$); its gold tags re-score to 1."""
    root = shared_data_path("blurb_linkbert")
    test = read_task(get_task("ncbi-disease"), root / "tokcls" / "NCBI-disease_hf").splits["test"]
    assert [e.id for e in test.examples] == [str(i) for i in range(940)]
    assert all(re.fullmatch("[0-9]+", e.id) for e in test.examples)
    out = submission(tmp_path, "NCBI-disease", {e.id: list(e.tags) for e in test.examples})
    entry = rescore(out, root)["datasets"]["NCBI-disease"]
    assert (entry["score"], entry["scored"], entry["missing"]) == (1.0, 940, 0)
