"""`bio-roberta predict` and bio_roberta.load: a fine-tuned model on new text gives what the
fine-tuning run's own test predictions (bio_roberta/prediction/predictions.py) gave on the same
examples, with entities whose character offsets slice the input to their text."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SAMPLE_DIR
from tiny_finetune import fine_tune, tiny_vocab

BIN = Path(sys.executable).parent


def sample_words(task: str) -> str:
    """The words of the sample's task files, for a vocabulary that covers them."""
    folder = SAMPLE_DIR / "tasks" / task
    return " ".join(
        line.split("\t")[0] for path in sorted(folder.iterdir()) for line in path.open()
    )


def run_dir(root: Path, task: str) -> Path:
    """A tiny model of `task` fine-tuned by bio_roberta.finetuning.job on the bundled sample's
    files."""
    _, record = fine_tune(
        root, task, SAMPLE_DIR / "tasks" / task, tiny_vocab(root, sample_words(task))
    )
    assert record["status"] == "ok"
    return Path(record["checkpoint"]["path"]).parent.parent  # <run dir>/checkpoints/<file>


@pytest.fixture(scope="module")
def ner_run(tmp_path_factory) -> Path:
    return run_dir(tmp_path_factory.mktemp("predict_ner"), "ncbi-disease")


@pytest.fixture(scope="module")
def chemprot_run(tmp_path_factory) -> Path:
    return run_dir(tmp_path_factory.mktemp("predict_chemprot"), "chemprot")


def predict_cli(*args):
    return subprocess.run(
        [str(BIN / "bio-roberta"), "predict", *map(str, args)], capture_output=True, text=True
    )


def entities_and_scores(record: dict, number=float) -> dict:
    """A record with its entities' scores compared as `number`s."""
    entities = [{**e, "score": number(e["score"])} for e in record["entities"]]
    return {**record, "entities": entities}


def test_words_keep_their_character_offsets():
    from bio_roberta.prediction.predictor import split_words

    text = "Wilms' tumour (WT1), 12.5 mg/kg  β-blocker."
    spans = split_words(text)
    assert [text[start:end] for start, end in spans] == [
        "Wilms", "'", "tumour", "(", "WT1", ")", ",", "12", ".", "5", "mg", "/", "kg", "β",
        "-", "blocker", ".",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "task, folder", [("ncbi-disease", "NCBI-disease"), ("bc5cdr-chem", "BC5CDR-Chemical")]
)
def test_raw_text_splits_into_the_releases_words(task, folder, shared_data):
    """On the real BioBERT releases' test sentences, joined by spaces, WORD gives back the
    release's words (checked: all 940 NCBI-disease and 4,797 BC5CDR-chem test sentences)."""
    from bio_roberta.prediction.predictor import split_words
    from bio_roberta.readers import read_task
    from bio_roberta.tasks.registry import get_task

    sentences = read_task(get_task(task), shared_data("ner", folder)).splits["test"].examples
    assert len(sentences) > 900
    for sentence in sentences:
        text = " ".join(sentence.words)
        assert [text[start:end] for start, end in split_words(text)] == list(sentence.words)


def test_ner_matches_the_runs_test_predictions_and_offsets_slice_the_input(ner_run, tmp_path):
    """The test split read in the task's layout gives the run's own predicted tags; the same
    sentences as raw text give entities whose offsets slice the text to the entity."""
    import bio_roberta
    from bio_roberta.prediction.input_files import read_inputs
    from bio_roberta.prediction.predictor import split_words
    from bio_roberta.tasks.prediction_files import TAGGED_WORDS

    predictor = bio_roberta.load(ner_run)
    inputs = read_inputs(SAMPLE_DIR / "tasks" / "ncbi-disease", predictor.spec)
    records = predictor.predict(inputs.inputs, batch_size=3)
    _gold, expected = TAGGED_WORDS.read(ner_run / "test.predictions.conll")
    assert [record["tags"] for record in records] == expected
    assert any(record["pieces"] > 1 for record in records)  # longer than the 32 positions

    texts = [" ".join(item["words"]) for item in inputs.inputs]
    raw = predictor.predict(texts, batch_size=4)
    entities = [entity for record in raw for entity in record["entities"]]
    assert entities  # the tiny model tags some words
    for text, record in zip(texts, raw):
        for entity in record["entities"]:
            assert text[entity["start"] : entity["end"]] == entity["text"]
            assert entity["type"] == "Disease" and 0 < entity["score"] <= 1
    # where the raw text splits into the release's words, the tags are the run's
    same_words = [
        i
        for i, (text, item) in enumerate(zip(texts, inputs.inputs))
        if [text[a:b] for a, b in split_words(text)] == item["words"]
    ]
    assert same_words
    assert all(raw[i]["tags"] == expected[i] for i in same_words)

    # the command: a text file in, one JSON line per line out, as the API gives them
    (tmp_path / "in.txt").write_text("".join(f"{text}\n" for text in texts[:3]))
    run = predict_cli(ner_run, "--input", tmp_path / "in.txt", "--out", tmp_path / "out.jsonl")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line.pop("line") for line in lines] == [1, 2, 3]
    # padded to other lengths in batches of 32: the same up to float rounding
    assert [entities_and_scores(line) for line in lines] == [
        entities_and_scores(record, pytest.approx) for record in raw[:3]
    ]


def test_classification_gives_the_runs_labels_and_probabilities(chemprot_run):
    import bio_roberta
    from bio_roberta.prediction.input_files import read_inputs
    from bio_roberta.tasks.classification_tables import SINGLE_LABELS

    predictor = bio_roberta.load(chemprot_run / "checkpoints" / "checkpoint_best.pt")
    inputs = read_inputs(SAMPLE_DIR / "tasks" / "chemprot", predictor.spec)
    records = predictor.predict(inputs.inputs, batch_size=4)
    rows = SINGLE_LABELS.table_rows(chemprot_run / "test.predictions.tsv")
    assert [key["id"] for key in inputs.keys] == [row[0] for row in rows]
    assert [record["label"] for record in records] == [row[3] for row in rows]
    for record in records:
        probabilities = record["probabilities"]
        assert list(probabilities) == list(predictor.spec.labels)
        assert math.isclose(sum(probabilities.values()), 1, rel_tol=1e-5)
        assert record["label"] == max(probabilities, key=probabilities.get)
    # 32 positions cut most ChemProt sentences, as convert-task cut them
    assert any(record["truncated"] for record in records)
    (short,) = predictor.predict(["@CHEMICAL$ binds @GENE$ ."])
    assert short["truncated"] is False


def recorded_command_line(run: Path, out: Path) -> tuple[dict, list[str]]:
    """(the run's record, its fairseq-train command line writing into `out` instead)."""
    record = json.loads((run / "result.json").read_text())
    args = list(record["config"]["fairseq_args"])
    for option, value in (("--save-dir", out / "checkpoints"), ("--tensorboard-logdir", out)):
        args[args.index(option) + 1] = str(value)
    return record, args


def best_checkpoint_predictions(record: dict, out: Path, loaded=None) -> tuple[bytes, float]:
    """(test prediction file bytes, score) of out/checkpoints/checkpoint_best.pt (its model and
    task `loaded` already, or read from the file)."""
    from bio_roberta.prediction.predictions import predict
    from bio_roberta.tasks.registry import get_task

    spec = get_task(record["task"])
    output = out / f"test.predictions.{spec.task_kind.predictions.suffix}"
    data = Path(record["data"]["dir"])
    checkpoint = out / "checkpoints" / "checkpoint_best.pt"
    result = predict(checkpoint, data, output, spec=spec, loaded=loaded)
    return output.read_bytes(), result.score


def test_a_run_trained_in_its_jobs_process_predicts_as_a_separate_fairseq_train_did(
    ner_run, chemprot_run, tmp_path
):
    """The runs train in their job's process (bio_roberta.finetuning.in_process_train.train), here
    one after the other in this one: each gives the test predictions and score of its command line
    run as a fairseq-train process of its own, the route of the runs before."""
    for out, run in ((tmp_path / "ner", ner_run), (tmp_path / "chemprot", chemprot_run)):
        record, args = recorded_command_line(run, out)
        train = subprocess.run(
            [sys.executable, "-m", "fairseq_cli.train", *args], capture_output=True, text=True
        )
        assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
        predictions, score = best_checkpoint_predictions(record, out)
        suffix = Path(record["predictions"]["path"]).suffix
        assert (run / f"test.predictions{suffix}").read_bytes() == predictions, run
        assert record["test_score"] == score


def test_a_run_keeps_its_own_best_checkpoint_after_another_in_the_same_process(ner_run, tmp_path):
    """fairseq keeps the best validation score in module state (checkpoint_utils.save_checkpoint,
    should_stop_early): left by an earlier run at a score none beats, the next run in the process
    wrote no checkpoint_best. finetune.train starts each run afresh: the run's own predictions."""
    from fairseq import checkpoint_utils
    from fairseq_cli import train as fairseq_train

    from bio_roberta.finetuning.in_process_train import train

    record, args = recorded_command_line(ner_run, tmp_path)
    checkpoint_utils.save_checkpoint.best = fairseq_train.should_stop_early.best = math.inf
    fairseq_train.should_stop_early.num_runs = 0
    trainer = train(args, tmp_path / "train.log")
    predictions, score = best_checkpoint_predictions(record, tmp_path)
    assert (ner_run / "test.predictions.conll").read_bytes() == predictions
    assert record["test_score"] == score
    assert not hasattr(checkpoint_utils.save_checkpoint, "best")  # nor for the next one

    # the trainer's own model, past the selected checkpoint (its weights changed since): the
    # checkpoint's weights are loaded into it, and it predicts as the file does
    import torch

    from bio_roberta.prediction.predictions import trained_model

    with torch.no_grad():
        for parameter in trainer.get_model().parameters():
            parameter.add_(1.0)
    trainer.set_num_updates(trainer.get_num_updates() + 1)
    checkpoint = tmp_path / "checkpoints" / "checkpoint_best.pt"
    loaded = trained_model(trainer, checkpoint, record["num_updates"])
    assert best_checkpoint_predictions(record, tmp_path, loaded) == (predictions, score)


def test_an_export_dir_predicts_with_the_checkpoint_it_was_exported_from(ner_run, tmp_path):
    import bio_roberta

    manifest = json.loads((ner_run / "result.json").read_text())
    vocab = json.loads((Path(manifest["data"]["dir"]) / "manifest.json").read_text())["vocab"]
    out = tmp_path / "hf"
    export = subprocess.run(
        [str(BIN / "bio-roberta"), "export-hf", ner_run / "checkpoints" / "checkpoint_best.pt",
         out, "--vocab", vocab["path"]],
        capture_output=True, text=True,
    )  # fmt: skip
    assert export.returncode == 0, export.stderr[-3000:]
    text = ["Mutations in BRCA1 cause breast cancer ."]
    assert bio_roberta.load(out).predict(text) == bio_roberta.load(ner_run).predict(text)

    # the manifest pointed at another checkpoint (issue 43: predict ran it unchecked)
    exported = json.loads((out / "manifest.json").read_text())
    other = altered_checkpoint(ner_run / "checkpoints" / "checkpoint_best.pt", tmp_path / "o.pt")
    (out / "manifest.json").write_text(
        json.dumps({**exported, "checkpoint": {**exported["checkpoint"], "path": str(other)}})
    )
    assert re.fullmatch(
        rf"{re.escape(str(out / 'manifest.json'))}: names {re.escape(str(other))}, whose sha256 "
        r"[0-9a-f]{12}… is not that of the checkpoint it was exported from .*",
        one_line_error(predict_cli(out, "--input", tmp_path / "none.txt")),
    )
    # its weights replaced
    (out / "manifest.json").write_text(json.dumps(exported))
    (weights,) = exported["weights"]
    (out / weights).write_bytes((out / weights).read_bytes() + b" ")
    assert one_line_error(predict_cli(out, "--input", tmp_path / "none.txt")).startswith(
        f"{out / weights}: not the weights {out / 'manifest.json'} records"
    )
    (out / "manifest.json").write_text(json.dumps({**exported, "weights": {}, "checkpoint": {}}))
    run = predict_cli(out, "--input", tmp_path / "none.txt")
    assert run.returncode == 2
    assert run.stderr.strip().endswith(
        f"error: {out / 'manifest.json'}: the checkpoint it was exported from (None) is not "
        "here; pass that checkpoint or its run dir"
    )


def altered_checkpoint(checkpoint: Path, out: Path) -> Path:
    """A checkpoint of the same model with its head's bias moved: another model of the task."""
    import torch

    from bio_roberta_core.checkpoints import read_checkpoint

    state = read_checkpoint(checkpoint)
    name = next(n for n in state["model"] if "classification_heads." in n and n.endswith("bias"))
    state["model"][name] = state["model"][name] + 1.0
    torch.save(state, out)
    return out


def one_line_error(run: subprocess.CompletedProcess) -> str:
    """The command's error line, after checking that it is its only line (no traceback)."""
    assert run.returncode == 2, (run.returncode, run.stderr[-3000:])
    lines = [line for line in run.stderr.splitlines() if " | INFO | " not in line]
    assert len(lines) == 1 and lines[0].startswith("bio-roberta predict: error: "), lines
    return lines[0].removeprefix("bio-roberta predict: error: ")


def test_a_run_dir_predicts_only_with_the_checkpoint_its_record_scored(
    ner_run, chemprot_run, tmp_path
):
    """Issue 43: another checkpoint copied over a run's (another seed's, another task's) was used
    without a word, or failed in a ValueError traceback; now its sha256 is compared with the
    record's, and a checkpoint without a record to compare is checked to be a model of the task."""
    import shutil

    (tmp_path / "in.txt").write_text("Mutations in BRCA1 cause breast cancer .\n")
    run = tmp_path / "run"
    shutil.copytree(ner_run, run)
    assert predict_cli(run, "--input", tmp_path / "in.txt").returncode == 0
    best = run / "checkpoints" / "checkpoint_best.pt"
    recorded = json.loads((run / "result.json").read_text())["checkpoint"]["sha256"]
    for other in (
        altered_checkpoint(ner_run / "checkpoints" / "checkpoint_best.pt", tmp_path / "other.pt"),
        chemprot_run / "checkpoints" / "checkpoint_best.pt",
    ):
        shutil.copy(other, best)
        for model in (run, best):
            assert re.fullmatch(
                rf"{re.escape(str(best))}: sha256 [0-9a-f]{{12}}…, not the checkpoint "
                rf"{re.escape(str(run / 'result.json'))} scored \({recorded[:12]}…\): it was "
                r"replaced after the run .*",
                one_line_error(predict_cli(model, "--input", tmp_path / "in.txt")),
            )
    # a checkpoint the record does not name: checked by what it is
    last = run / "checkpoints" / "checkpoint_last.pt"
    shutil.copy(chemprot_run / "checkpoints" / "checkpoint_best.pt", last)
    assert one_line_error(predict_cli(last, "--input", tmp_path / "in.txt")).startswith(
        f"{last}: fine-tuned with fairseq's sentence_classification task and "
        "single_label_classification criterion, not as "
    )


def test_a_moved_or_copied_results_dir_predicts_with_its_own_files(ner_run, tmp_path):
    """Issue 43: a results dir moved or copied (here the whole dir of data, vocabulary and results,
    the original gone) predicts as before; one copied without its checkpoints says the checkpoint
    is missing (it said the run looked unfinished)."""
    import shutil

    import bio_roberta

    text = ["Mutations in BRCA1 cause breast cancer ."]
    expected = bio_roberta.load(ner_run).predict(text)
    record = json.loads((ner_run / "result.json").read_text())
    root = Path(record["data"]["dir"]).parents[1]  # ROOT/finetune-bin/<task>
    inside = ner_run.relative_to(root)
    shutil.copytree(root, tmp_path / "moved")
    shutil.copytree(root, tmp_path / "bare", ignore=shutil.ignore_patterns("*.pt"))
    hidden = root.with_name(root.name + "-hidden")
    root.rename(hidden)
    try:
        assert bio_roberta.load(tmp_path / "moved" / inside).predict(text) == expected
        bare = tmp_path / "bare" / inside
        message = one_line_error(predict_cli(bare, "--input", tmp_path / "none.txt"))
    finally:
        hidden.rename(root)
    assert message.startswith(
        f"{bare / 'checkpoints' / 'checkpoint_best.pt'} is missing: {bare / 'result.json'} scored "
        f"the checkpoint checkpoint_best.pt (sha256 {record['checkpoint']['sha256'][:12]}…)"
    )
    assert "finished" not in message


def test_the_documented_python_example_runs(ner_run, tmp_path, monkeypatch, capsys):
    page = (REPO_ROOT / "docs" / "predict.md").read_text()
    snippet = page.split("```python\n")[1].split("```")[0]
    (tmp_path / "results" / "bc5cdr-chem").mkdir(parents=True)
    (tmp_path / "results" / "bc5cdr-chem" / "seed10").symlink_to(ner_run)
    monkeypatch.chdir(tmp_path)
    exec(snippet, {})
    printed = capsys.readouterr().out.splitlines()
    sentence = re.search(r'sentence = "([^"]*)"', snippet).group(1)
    assert printed
    for line in printed:  # TYPE START END TEXT SCORE
        _type, start, end, rest = line.split(" ", 3)
        text, score = rest.rsplit(" ", 1)
        assert sentence[int(start) : int(end)] == text and 0 < float(score) <= 1


def test_input_errors_name_the_file_and_line(tmp_path):
    from bio_roberta.prediction.finetuned_files import PredictError
    from bio_roberta.prediction.input_files import read_inputs
    from bio_roberta.tasks.registry import get_task

    spec = get_task("mednli")
    lines = tmp_path / "pairs.jsonl"
    lines.write_text('{"premise": "a", "hypothesis": "b"}\n')
    inputs = read_inputs(lines, spec, text_field="premise", text_pair_field="hypothesis")
    assert inputs.inputs == [{"text": "a", "text_pair": "b"}]
    lines.write_text('{"premise": "a"}\n{"premise": "c"\n')
    with pytest.raises(PredictError, match=rf"^{lines}:2: not JSON \(.*\); expected one object"):
        read_inputs(lines, spec, text_field="premise")
    with pytest.raises(PredictError, match=rf'^{lines}:1: no text field "text" \(a string\)'):
        read_inputs(lines, spec)
    # text that is not UTF-8 (issue 43: a UnicodeDecodeError traceback): FILE:LINE and the byte
    text = tmp_path / "notes.txt"
    text.write_bytes("Fine.\nCaf\u00e9 au lait.\n".encode("latin-1"))
    with pytest.raises(PredictError) as error:
        read_inputs(text, spec)
    assert str(error.value) == (
        f"{text}:2: not UTF-8 (invalid continuation byte at byte 4 of the line, b'\\xe9'); save "
        "it as UTF-8 text (e.g. iconv -f latin1 -t utf-8 FILE > NEW)"
    )
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"ok\n\x00\x01\x02\n")
    with pytest.raises(PredictError, match=rf"^{binary}:2: a NUL byte at byte 1 of the line"):
        read_inputs(binary, spec)


def test_command_errors_are_one_line(ner_run, tmp_path):
    run = predict_cli(tmp_path / "missing", "--input", tmp_path / "in.txt")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        (
            f"bio-roberta predict: error: {tmp_path / 'missing'} does not exist: pass a "
            "fine-tuning run dir, its checkpoint or an export-hf dir"
        )
    ]
    run = predict_cli(tmp_path, "--input", tmp_path / "in.txt")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        (
            f"bio-roberta predict: error: {tmp_path} is neither a fine-tuning run dir (no "
            "result.json) nor an export-hf dir (no manifest.json of export-hf); pass one of "
            "those or a checkpoint"
        )
    ]
    gzipped = tmp_path / "in.txt.gz"  # binary: not UTF-8 at its second byte
    gzipped.write_bytes(b"\x1f\x8b\x08\x00")
    assert one_line_error(predict_cli(ner_run, "--input", gzipped)) == (
        f"{gzipped}:1: not UTF-8 (invalid start byte at byte 2 of the line, b'\\x8b'); save it as "
        "UTF-8 text (e.g. iconv -f latin1 -t utf-8 FILE > NEW)"
    )
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"text": "fine"}\n{"text": ["not", "a", "string"]}\n')
    run = predict_cli(ner_run, "--input", lines)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == (
        f'bio-roberta predict: error: {lines}:2: no text field "text" (a string); name it with '
        "--text-field"
    )


@pytest.mark.slow
def test_the_benchmark_prints_both_routes_examples_per_second():
    """scripts/benchmark_predict.py at its smallest: one task, a few examples, one repeat; the
    pipeline on the inputs as given and on them sorted by length (like with like: ours sorts),
    each against ours."""
    done = subprocess.run(
        [sys.executable, REPO_ROOT / "scripts" / "benchmark_predict.py", "--tasks", "ncbi-disease",
         "--examples", "12", "--batch-size", "4", "--repeats", "1"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)["ncbi-disease"]
    assert report["examples"] == 12
    assert all(report["best"][route] > 0 for route in ("ours", "pipeline", "pipeline_sorted"))
    assert report["ours_over_pipeline_sorted_median"] == round(
        report["median"]["ours"] / report["median"]["pipeline_sorted"], 3
    )


def test_ebm_pico_words_become_overlapping_element_entities_with_offsets():
    """EBM-PICO (one sigmoid per element per word): a word is in each element >= 0.5, its tag
    that set as the prediction file writes it, and each run of words in an element is an entity
    whose offsets slice the text; a word in two elements is in two entities."""
    from bio_roberta.prediction.predictor import element_entities, split_words

    text = "Asthmatic children given inhaled steroids had fewer attacks."
    spans = split_words(text)
    # per word: (I-PAR, I-INT, I-OUT) sigmoids
    probabilities = [
        (0.9, 0.1, 0.0),  # Asthmatic
        (0.7, 0.6, 0.1),  # children: a participant inside an intervention span
        (0.2, 0.8, 0.0),  # given
        (0.1, 0.9, 0.0),  # inhaled
        (0.1, 0.5, 0.0),  # steroids: 0.5 is in
        (0.0, 0.1, 0.4),  # had
        (0.0, 0.0, 0.6),  # fewer
        (0.0, 0.0, 0.8),  # attacks
        (0.0, 0.0, 0.3),  # .
    ]
    tags, entities = element_entities(probabilities, spans, text)
    assert tags == ["I-PAR", "I-PAR+I-INT", "I-INT", "I-INT", "I-INT", "O", "I-OUT", "I-OUT", "O"]
    assert [{**e, "score": round(e["score"], 6)} for e in entities] == [
        {"text": "Asthmatic children", "start": 0, "end": 18, "type": "PAR", "score": 0.8},
        {
            "text": "children given inhaled steroids",
            "start": 10,
            "end": 41,
            "type": "INT",
            "score": 0.7,
        },
        {"text": "fewer attacks", "start": 46, "end": 59, "type": "OUT", "score": 0.7},
    ]
    assert all(text[e["start"] : e["end"]] == e["text"] for e in entities)
    assert element_entities([(0.1, 0.2, 0.3)], [(0, 4)], "None") == (["O"], [])


def windowed_copy(run: Path, task: str, data: Path, tmp_path: Path, **options) -> Path:
    """The run's task converted again from `data` with its vocabulary and positions, long inputs
    as overlapping windows (convert-task --long-inputs windows)."""
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.tasks.registry import get_task
    from bio_roberta.tasks.truncation import WINDOWS, LongInputs

    record = json.loads((run / "result.json").read_text())
    trained_on = json.loads((Path(record["data"]["dir"]) / "manifest.json").read_text())
    out = tmp_path / "finetune-bin" / task
    convert_task(
        get_task(task),
        data,
        trained_on["vocab"]["path"],
        out,
        max_positions=trained_on["max_positions"],
        long_inputs=LongInputs(WINDOWS, **options),
    )
    return out


def test_a_3000_token_document_is_tagged_through_windows_word_by_word(ner_run, tmp_path):
    """The sample's test words as one document of over 3,000 tokens: the prediction file has each
    of its words once, in order, with its gold tag; the tags are those `predict` gives the same
    words by the same rule (its own batches), and the run records the route it trained with."""
    import shutil

    from bio_roberta.prediction.predictions import predict
    from bio_roberta.prediction.predictor import Predictor
    from bio_roberta.tasks.prediction_files import TAGGED_WORDS

    source = SAMPLE_DIR / "tasks" / "ncbi-disease"
    data = tmp_path / "data"
    shutil.copytree(source, data)
    lines = [line for line in (source / "test.tsv").read_text().splitlines() if line.strip()]
    document = lines * 3
    (data / "test.tsv").write_text("\n".join(document) + "\n")
    windowed = windowed_copy(ner_run, "ncbi-disease", data, tmp_path, stride=10)
    manifest = json.loads((windowed / "manifest.json").read_text())
    converted = manifest["split_details"]["test"]["converted"]
    # BPE tokens of the document itself ("tokens" counts those written, overlaps included)
    assert converted["sentences"] == 1 and converted["encoded_tokens"] >= 3000
    assert manifest["long_inputs"] == {"route": "windows", "stride": 10, "pooling": None}
    windows = [line.split("\t") for line in (windowed / "test.windows").read_text().splitlines()]
    assert len(windows) == converted["sentence_pieces"]
    assert sum(int(count) for _, _, count in windows) > 1.5 * len(document)  # they overlap

    checkpoint = ner_run / "checkpoints" / "checkpoint_best.pt"
    result = predict(checkpoint, windowed, tmp_path / "test.conll")
    assert result.examples == 1
    (written,) = read_conll_rows(tmp_path / "test.conll")
    assert [(word, gold) for word, gold, _ in written] == [
        tuple(line.split("\t")) for line in document
    ]
    words = [line.split("\t")[0] for line in document]
    (record,) = Predictor(checkpoint, windowed).predict([{"words": words}], batch_size=7)
    assert record["pieces"] == len(windows)
    assert record["tags"] == [tag for _, _, tag in written]
    assert TAGGED_WORDS.read(tmp_path / "test.conll")[1] == [record["tags"]]

    trained = json.loads((ner_run / "result.json").read_text())["data"]["long_inputs"]
    assert trained == {"route": "pieces", "stride": None, "pooling": None}


def read_conll_rows(path: Path) -> list[list[tuple[str, ...]]]:
    from bio_roberta.tasks.prediction_files import read_conll

    return [[tuple(row) for row in block] for block in read_conll(path, 3)]


@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_a_long_text_is_classified_from_its_windows_pooled_logits(chemprot_run, tmp_path, pooling):
    """ChemProt's test sentences, the first made ten times longer: one prediction row per
    example, the long one from its windows' logits pooled, as `predict` pools them."""
    import shutil

    from bio_roberta.prediction.input_files import read_inputs
    from bio_roberta.prediction.predictions import predict
    from bio_roberta.prediction.predictor import Predictor
    from bio_roberta.tasks.classification_tables import SINGLE_LABELS

    source = SAMPLE_DIR / "tasks" / "chemprot"
    data = tmp_path / "data"
    shutil.copytree(source, data)
    header, first, *rest = (source / "test.tsv").read_text().splitlines()
    example_id, sentence, label = first.split("\t")
    long_first = "\t".join((example_id, " ".join([sentence] * 10), label))
    (data / "test.tsv").write_text("\n".join([header, long_first, *rest]) + "\n")
    windowed = windowed_copy(chemprot_run, "chemprot", data, tmp_path, stride=8, pooling=pooling)
    converted = json.loads((windowed / "manifest.json").read_text())["split_details"]["test"]
    assert converted["converted"]["windows"] > 10 and "truncated" not in converted["converted"]

    checkpoint = chemprot_run / "checkpoints" / "checkpoint_best.pt"
    result = predict(checkpoint, windowed, tmp_path / "test.tsv")
    rows = SINGLE_LABELS.table_rows(tmp_path / "test.tsv")
    assert result.examples == len(rows) == len(rest) + 1
    assert [row[0] for row in rows] == [line.split("\t")[0] for line in [long_first, *rest]]
    predictor = Predictor(checkpoint, windowed)
    inputs = read_inputs(data, predictor.spec)
    records = predictor.predict(inputs.inputs, batch_size=5)
    windows = [record.get("windows", 1) for record in records]
    assert sum(w for w in windows if w > 1) == converted["converted"]["windows"]
    assert windows[0] == max(windows) > 10  # the long one
    assert [record["label"] for record in records] == [row[3] for row in rows]
    by_id = json.loads((tmp_path / "test.json").read_text())
    assert len(by_id["predictions"]) == len(rows)
