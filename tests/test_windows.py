"""Sliding windows over inputs longer than the positions (bio_roberta/tasks/truncation.py): the
split covers every word or token, consecutive windows overlap by the stride's complement, the merge
takes each word exactly once from the window where it has the most context, and the pooling is
the stated mean or max. End to end through a tiny fine-tuned model: tests/test_predict.py."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest
import torch

from bio_roberta.tasks.truncation import window_spans
from bio_roberta_core.windows import (
    WindowsFileError,
    best_window_of_words,
    document_rows,
    pool_logits,
    read_windows,
)


def subword_lengths(words: int, seed: int = 0) -> list[int]:
    """Token lengths of a synthetic document's words: 1 to 4 subwords, as BPE gives."""
    generator = random.Random(seed)
    return [generator.choice((1, 1, 1, 2, 2, 3, 4)) for _ in range(words)]


def context(word: int, first: int, count: int, words: int) -> float:
    """The rule as docs/long_documents.md states it, written out again for the check."""
    left = word - first if first > 0 else math.inf
    right = first + count - 1 - word if first + count < words else math.inf
    return min(left, right)


def test_a_3000_token_document_is_tagged_word_by_word_none_lost_or_doubled():
    lengths = subword_lengths(1600)
    assert sum(lengths) >= 3000
    width, stride = 62, 31  # 64 positions less <s> and </s>; half a window apart
    spans = window_spans(lengths, width, stride)
    assert spans[0][0] == 0 and spans[-1][1] == len(lengths)
    for start, end in spans:
        assert sum(lengths[start:end]) <= width
        assert end == len(lengths) or sum(lengths[start : end + 1]) > width  # as many as fit
    for (start, end), (following, _) in zip(spans, spans[1:]):
        assert start < following <= end  # progress, and no word skipped
        # the next window starts at the first word at least `stride` tokens on
        assert sum(lengths[start:following]) >= stride or following == end
        assert sum(lengths[start : following - 1]) < stride
    windows = [(start, end - start) for start, end in spans]
    chosen = best_window_of_words(windows, len(lengths))
    assert len(chosen) == len(lengths)  # one window per word: none lost, none doubled
    for word, window in enumerate(chosen):
        first, count = windows[window]
        assert first <= word < first + count
        holding = [i for i, (f, c) in enumerate(windows) if f <= word < f + c]
        best = max(context(word, *windows[i], len(lengths)) for i in holding)
        assert context(word, first, count, len(lengths)) == best
        assert window == min(i for i in holding if context(word, *windows[i], len(lengths)) == best)
    # away from the document's edges a word is predicted with at least a quarter window each side
    middle = [w for w in range(len(lengths)) if windows[chosen[w]][0] > 0]
    middle = [w for w in middle if sum(windows[chosen[w]]) < len(lengths)]
    assert middle
    assert min(context(w, *windows[chosen[w]], len(lengths)) for w in middle) >= 5


def test_stride_equal_to_the_window_gives_consecutive_pieces():
    lengths = subword_lengths(300, seed=1)
    spans = window_spans(lengths, 20, 20)
    assert [end for _, end in spans[:-1]] == [start for start, _ in spans[1:]]
    # the greedy packing convert-task has always made: each piece as many words as fit
    start = 0
    for piece_start, piece_end in spans:
        assert piece_start == start
        end, used = start, 0
        while end < len(lengths) and used + lengths[end] <= 20:
            used, end = used + lengths[end], end + 1
        assert piece_end == end
        start = end


def test_tokens_windows_cover_a_long_text_with_the_stated_overlap():
    spans = window_spans([1] * 100, 30, 10)
    assert spans == [(0, 30), (10, 40), (20, 50), (30, 60), (40, 70), (50, 80), (60, 90), (70, 100)]
    assert window_spans([1] * 10, 30, 10) == [(0, 10)]


@pytest.mark.parametrize("stride", [0, 31])
def test_a_stride_outside_the_window_is_refused(stride):
    with pytest.raises(ValueError, match="between 1 and"):
        window_spans([1] * 100, 30, stride)


def test_a_word_no_window_holds_is_an_error():
    with pytest.raises(ValueError, match="word 5 of 12 is in no window"):
        best_window_of_words([(0, 5), (6, 6)], 12)


def test_documents_of_a_windows_file_run_in_order():
    assert document_rows([(0, 0, 5), (0, 3, 5), (2, 0, 2)]) == [[0, 1], [2]]
    with pytest.raises(WindowsFileError, match="run in order"):
        document_rows([(0, 0, 5), (1, 0, 2), (0, 3, 5)])


def test_pooling_is_the_mean_or_the_max_of_the_windows_logits():
    windows = [torch.tensor([1.0, -2.0, 0.5]), torch.tensor([3.0, 0.0, -0.5])]
    assert pool_logits(windows, "mean").tolist() == [2.0, -1.0, 0.0]
    assert pool_logits(windows, "max").tolist() == [3.0, 0.0, 0.5]
    with pytest.raises(ValueError, match="mean, max"):
        pool_logits(windows, "sum")


def test_the_report_says_which_route_each_tasks_runs_took():
    from bio_roberta.finetuning.results import ResultRecord
    from bio_roberta.report.markdown import long_inputs_text

    def record(task, seed, long_inputs):
        return ResultRecord(
            task=task, seed=seed, metric="accuracy", status="ok", data={"long_inputs": long_inputs}
        )

    windows = {"route": "windows", "stride": 128, "pooling": "max"}
    text = long_inputs_text(
        [
            record("pubmedqa", 1, windows),
            record("pubmedqa", 2, windows),
            record("ncbi-disease", 1, {"route": "pieces", "stride": None, "pooling": None}),
            record("chemprot", 1, None),
        ]
    )
    assert text == (
        "pubmedqa: windows (stride 128 tokens, max of the windows' logits); "
        "ncbi-disease: pieces; chemprot: not recorded"
    )


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    from tiny_finetune import tiny_vocab

    return tiny_vocab(tmp_path_factory.mktemp("windows_vocab"), QUESTION + " " + CONTEXT)


QUESTION = "Does aspirin reduce the risk of stroke in adults?"
CONTEXT = " ".join(f"In cohort {n} aspirin lowered stroke incidence." for n in range(40))


def encoder_of(task: str, vocab, positions: int, **options):
    from bio_roberta.conversion.encoder import TaskEncoder
    from bio_roberta.tasks.registry import get_task
    from bio_roberta.tasks.truncation import WINDOWS, LongInputs
    from preprocess.vocab_dir import read_vocab_dir

    return TaskEncoder(
        get_task(task), read_vocab_dir(vocab), "BIO", positions, LongInputs(WINDOWS, **options)
    )


def test_a_pair_keeps_its_question_whole_in_every_window_of_its_context(vocab):
    from bio_roberta.conversion.encoder import EncodedSplit
    from bio_roberta.readers.source_files import TextExample

    encoder = encoder_of("pubmedqa", vocab, 64, stride=20)
    assert encoder.long_inputs.pooling == "mean"  # the default
    out = EncodedSplit()
    encoder.add_text(TextExample("q1", QUESTION, ("yes",), CONTEXT), out)
    eos = encoder.dictionary.eos()
    question = encoder.token_ids(QUESTION, out.counts)
    context = encoder.token_ids(CONTEXT, out.counts)
    assert len(question) + len(context) > 60 and out.counts["windowed"] == 1
    assert all(row == question + [eos] for row in out.input0)
    width = 60 - len(question)  # 64 positions less <s> a </s></s> b </s>
    assert [row[:-1] for row in out.input1] == [
        context[start:end] for start, end in window_spans([1] * len(context), width, 20)
    ]
    assert [w[1:] for w in out.windows] == [
        (start, end - start) for start, end in window_spans([1] * len(context), width, 20)
    ]
    assert {w[0] for w in out.windows} == {0} and set(out.ids) == {"q1"}
    assert len(out.labels) == len(out.input0)  # every window trains with the example's label


@pytest.mark.parametrize(
    "task, options, error",
    [
        ("ncbi-disease", {"pooling": "max"}, "--window-pooling is for classification"),
        ("chemprot", {"stride": 31}, "--window-stride 31 must be between 1 and the window's 30"),
        ("chemprot", {"pooling": "sum"}, "--window-pooling sum: one of mean, max"),
    ],
)
def test_window_options_a_route_cannot_take_are_refused(vocab, task, options, error):
    from bio_roberta.conversion.encoder import ConversionError

    with pytest.raises(ConversionError, match=re.escape(error)):
        encoder_of(task, vocab, 32, **options)


def test_a_route_of_another_kind_is_refused(vocab):
    from bio_roberta.conversion.encoder import ConversionError, TaskEncoder
    from bio_roberta.tasks.registry import get_task
    from bio_roberta.tasks.truncation import PIECES, LongInputs
    from preprocess.vocab_dir import read_vocab_dir

    with pytest.raises(ConversionError, match="a relation task takes truncate or windows"):
        TaskEncoder(get_task("chemprot"), read_vocab_dir(vocab), "BIO", 32, LongInputs(PIECES))
    with pytest.raises(ConversionError, match="need --long-inputs windows"):
        TaskEncoder(
            get_task("chemprot"), read_vocab_dir(vocab), "BIO", 32, LongInputs("truncate", 8)
        )


def test_blurb_suite_converts_again_a_dir_converted_with_windows(vocab, tmp_path):
    """blurb-suite keeps a conversion only if it took the kinds' own routes (BLURB's)."""
    import json

    from bio_roberta.blurb_run.run import converted_before
    from bio_roberta.conversion.finetune_bin import vocab_record
    from preprocess.vocab_dir import read_vocab_dir

    vocabulary = read_vocab_dir(vocab)
    options = {"data_dir": str(tmp_path.resolve()), "max_positions": 512, "long_inputs": None}
    manifest = {"options": options, "vocab": vocab_record(vocabulary), "inputs": []}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert converted_before(tmp_path, tmp_path, vocabulary, 512)
    options["long_inputs"] = {"route": "windows", "stride": 255, "pooling": None}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert not converted_before(tmp_path, tmp_path, vocabulary, 512)


def test_the_prediction_file_merges_a_documents_windows_word_by_word(tmp_path):
    """finetune-bin files as convert-task writes them for one 10-word document in 4 windows of 4
    words, 2 apart, and a short one: each word once, from the window the rule picks (worked out
    by hand: a word 1 from one window's edge and 0 from the other's goes to the first)."""
    from bio_roberta.tasks.prediction_files import TAGGED_WORDS, PredictionFileError, document_ids

    words = [f"w{i}" for i in range(10)]
    windows = [(0, 0, 4), (0, 2, 4), (0, 4, 4), (0, 6, 4), (1, 0, 2)]
    blocks = [[(words[i], "O") for i in range(first, first + count)] for _, first, count in windows]
    blocks[-1] = [("short", "O"), ("one", "B-Disease")]
    (tmp_path / "test.ids").write_text("doc:1\n" * 4 + "doc:12\n")
    (tmp_path / "test.windows").write_text("".join("\t".join(map(str, w)) + "\n" for w in windows))
    (tmp_path / "test.conll").write_text(
        "\n".join("".join(f"{w}\t{t}\n" for w, t in block) for block in blocks)
    )
    # each window predicts its own letter for every word it holds
    outputs = {
        index: ([t for _, t in block], ["ABCDE"[index]] * len(block))
        for index, block in enumerate(blocks)
    }
    (long, short) = TAGGED_WORDS.sentences(tmp_path, "test", outputs)
    assert long == ("doc:1", [[w, "O"] for w in words], list("AAABBCCDDD"))
    assert short == ("doc:12", [["short", "O"], ["one", "B-Disease"]], ["E", "E"])
    assert document_ids(tmp_path, "test", 2) == [("doc:1", "doc:1"), ("doc:12", "doc:12")]
    with pytest.raises(PredictionFileError, match="holds 2 documents, the predictions 5"):
        document_ids(tmp_path, "test", 5)


# --- validation over documents (user_dir/criterions/_document_validation.py) ------------------


def validation_stats(criterion_class, logging_outputs: list[dict]) -> dict:
    """What fairseq's validate() logs for these batches' logging outputs: each reduced as
    trainer.valid_step does (in an aggregator of its own batch as well, whose values are read),
    the whole set in validate's new root."""
    from fairseq import metrics

    with metrics.aggregate(new_root=True) as validation:
        for logging_output in logging_outputs:
            with metrics.aggregate() as batch:
                criterion_class.reduce_metrics([logging_output])
                batch.get_smoothed_values()
    return validation.get_smoothed_values()


TAGS = ("O", "B-Disease", "I-Disease")  # ncbi-disease's in BIO, class ids in this order


def random_windowed_split(tmp_path, documents: int, width: int, stride: int, seed: int = 0):
    """A tagged validation split as convert-task writes it with windows (valid.ids, .windows,
    .conll) over random documents of random BIO entities; (windows, gold tags per window)."""
    generator = random.Random(seed)
    windows, gold_windows, ids, blocks = [], [], [], []
    for document in range(documents):
        tags: list[str] = []
        while len(tags) < generator.randint(3, 30):
            if generator.random() < 0.25:
                tags += ["B-Disease"] + ["I-Disease"] * generator.randint(0, 3)
            else:
                tags.append("O")
        for start, end in window_spans([1] * len(tags), width, stride):
            windows.append((document, start, end - start))
            gold_windows.append(tags[start:end])
            ids.append(f"doc{document}")
            blocks.append("".join(f"w{document}.{i}\t{tags[i]}\n" for i in range(start, end)))
    (tmp_path / "valid.ids").write_text("".join(f"{i}\n" for i in ids))
    (tmp_path / "valid.windows").write_text("".join("%d\t%d\t%d\n" % w for w in windows))
    (tmp_path / "valid.conll").write_text("\n".join(blocks))
    return windows, gold_windows


def batches_of(windows, outputs, labels=None, seed: int = 0) -> list[dict]:
    """Validation logging outputs of the windows in shuffled batches of 5, as a criterion writes
    them (labels: a tagger's, else the outputs are logits pooled by their mean), the first batch
    twice (fairseq's dummy batch)."""
    from user_dir.criterions._document_validation import ValidationWindows, window_logging_output

    pooling = None if labels else "mean"
    places = ValidationWindows(Path("valid.windows"), windows, pooling)
    order = list(range(len(windows)))
    random.Random(seed).shuffle(order)
    batches = []
    for start in range(0, len(order), 5):
        ids = order[start : start + 5]
        entries = window_logging_output(
            places, {"id": torch.tensor(ids)}, [outputs[i] for i in ids], labels
        )
        batches.append(
            {"loss": torch.tensor(1.0), "sample_size": 1, "ntokens": 1, "nsentences": 1, **entries}
        )
    return [batches[0]] + batches


def test_validation_scores_tagged_documents_as_their_prediction_file_scores(tmp_path):
    """Noisy predictions of each window of 40 windowed documents, in shuffled batches: the
    criterion's entity_f1 is the score of the prediction file the test-time merge writes from
    the same predictions, not the windows' own; an entity whose words come from two windows
    counts once, as the document holds it."""
    from bio_roberta.tasks.prediction_files import TAGGED_WORDS
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.metrics import entity_f1
    from user_dir.criterions.sequence_labeling import SequenceLabelingCriterion

    windows, gold = random_windowed_split(tmp_path, 40, width=6, stride=2)
    generator = random.Random(1)
    # each window right on 3 words in 4, else a guess
    predicted = [
        [t if generator.random() < 0.75 else generator.choice(TAGS) for t in window]
        for window in gold
    ]
    stats = validation_stats(
        SequenceLabelingCriterion,
        batches_of(
            windows,
            [
                ([TAGS.index(t) for t in g], [TAGS.index(t) for t in p])
                for g, p in zip(gold, predicted)
            ],
            TAGS,
        ),
    )
    outputs = dict(enumerate(zip(gold, predicted)))
    TAGGED_WORDS.write(tmp_path, "valid", outputs, tmp_path / "valid.conll.predicted")
    document_score = get_task("ncbi-disease").score(
        *TAGGED_WORDS.read(tmp_path / "valid.conll.predicted")
    )
    assert stats["documents"] == 40
    assert stats["entity_f1"] == pytest.approx(100 * document_score)
    assert stats["entity_f1"] != pytest.approx(100 * entity_f1(gold, predicted))  # the windows'
    merged = TAGGED_WORDS.sentences(tmp_path, "valid", outputs)
    words = sum(len(rows) for _, rows, _ in merged)
    right = sum(g == p for _, rows, tags in merged for (_, g), p in zip(rows, tags))
    assert stats["tag_accuracy"] == pytest.approx(100 * right / words)


def test_validation_classifies_a_document_from_its_windows_pooled_logits(tmp_path):
    """Random logits of each window of 30 windowed texts: the criterion's accuracy and F1s are
    those of the documents, each decided from its windows' mean logits, not of the windows."""
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.metrics import accuracy
    from user_dir.criterions.single_label_classification import (
        SCORED_CLASSES,
        SingleLabelClassificationCriterion,
    )

    spec = get_task("chemprot")
    generator = torch.Generator().manual_seed(0)
    windows = [
        (document, start, end - start)
        for document in range(30)
        for start, end in window_spans([1] * (5 + (7 * document) % 23), 8, 4)
    ]
    targets = torch.randint(len(spec.labels), (30,), generator=generator).tolist()
    logits = torch.randn(len(windows), len(spec.labels), generator=generator)
    outputs = [(row, targets[document]) for row, (document, _, _) in zip(logits, windows)]
    batches = batches_of(windows, outputs)
    scored = [k for k, label in enumerate(spec.labels) if label in spec.labels_in_score]
    for batch in batches:
        batch[SCORED_CLASSES] = scored
    stats = validation_stats(SingleLabelClassificationCriterion, batches)

    def score(gold, predicted):
        names = [spec.labels[k] for k in gold], [spec.labels[k] for k in predicted]
        return 100 * spec.score(*names), 100 * accuracy(*names)

    rows = document_rows(windows)
    pooled = [pool_logits([logits[i] for i in indices], "mean").argmax() for indices in rows]
    documents = score(targets, [int(p) for p in pooled])
    per_window = score([targets[d] for d, _, _ in windows], logits.argmax(-1).tolist())
    assert stats["documents"] == 30 and len(windows) > 60
    assert (stats["macro_f1"], stats["accuracy"]) == pytest.approx(documents)
    assert documents != pytest.approx(per_window)


def test_each_criterion_logs_its_metrics_over_documents():
    """Windowed logging outputs of every fine-tuning criterion give every metric it logs
    without windows (the registry's --best-checkpoint-metric), and the documents counted."""
    from fairseq.criterions import CRITERION_REGISTRY

    import user_dir  # noqa: F401  (registers the criteria)
    from bio_roberta_core.metrics import METRICS
    from user_dir.criterions._document_validation import ValidationWindows, window_logging_output
    from user_dir.criterions.multi_element_tagging import SET_TAGS

    tagged = [([1, 2, 0], [1, 0, 0])] * 2  # (gold, predicted) ids of each window's 3 words
    logits = [(torch.tensor([0.2, 1.0]), 1), (torch.tensor([2.0, 0.0]), 0)]
    windows = {  # criterion: (labels or pooling, outputs of a window of each of 2 documents)
        "sequence_labeling": (TAGS, tagged),
        "multi_element_tagging": (SET_TAGS, [([1, 0, 6], [1, 2, 0])] * 2),
        "single_label_classification": ("max", logits),
        "regression": ("mean", [(torch.tensor([0.5]), 1.0), (torch.tensor([2.0]), 3.0)]),
        "multilabel_classification": (
            "mean",
            [(torch.tensor([1.0, -1.0]), torch.tensor([True, False]), 0)] * 2,
        ),
    }
    for criterion, (labels_or_pooling, outputs) in windows.items():
        labels = labels_or_pooling if isinstance(labels_or_pooling, tuple) else None
        pooling = None if labels else labels_or_pooling
        places = ValidationWindows(Path("valid.windows"), [(0, 0, 3), (1, 0, 3)], pooling)
        logging_output = {
            "loss": torch.tensor(1.0),
            "sample_size": 2,
            "ntokens": 4,
            "nsentences": 2,
            **window_logging_output(places, {"id": torch.tensor([0, 1])}, outputs, labels),
            "scored_classes": [1],
        }
        logged = validation_stats(CRITERION_REGISTRY[criterion], [logging_output])
        assert logged["documents"] == 2, criterion
        names = {name for name, metric in METRICS.items() if metric.criterion == criterion}
        assert names <= set(logged), (criterion, sorted(logged))


# --- end to end: tiny fine-tuning runs on windows (real fairseq, CPU) ---------------------------

WINDOWED_TASKS = ("ncbi-disease", "chemprot")


@pytest.fixture(scope="module")
def windowed_runs(tmp_path_factory) -> dict[str, dict]:
    """The sample's NER and ChemProt converted at 32 positions with windows half a window apart
    (the default stride; every dev sentence is two windows or more), each fine-tuned one epoch by
    bio_roberta.finetuning.job with validation every 8 updates; the result record of each."""
    from bio_roberta.tasks.truncation import WINDOWS, LongInputs
    from conftest import SAMPLE_DIR
    from test_predict import sample_words
    from tiny_finetune import fine_tune, tiny_vocab

    records = {}
    for task in WINDOWED_TASKS:
        root = tmp_path_factory.mktemp(f"windowed_{task}")
        pooling = {} if task == "ncbi-disease" else {"pooling": "mean"}
        _, records[task] = fine_tune(
            root,
            task,
            SAMPLE_DIR / "tasks" / task,
            tiny_vocab(root, sample_words(task)),
            LongInputs(WINDOWS, **pooling),
            ("hparams.max_epoch=1", "hparams.validate_interval_updates=8"),
        )
    return records


def logged_validations(record: dict) -> list[dict[str, str]]:
    """The fields of each validation line of a run's train.log ("valid on 'valid' subset")."""
    lines = Path(record["log"]).read_text().splitlines()
    return [
        dict(field.strip().split(" ", 1) for field in line.split("|")[5:] if " " in field.strip())
        for line in lines
        if "valid on 'valid' subset |" in line
    ]


@pytest.mark.slow
@pytest.mark.parametrize("task", WINDOWED_TASKS)
def test_training_selects_its_checkpoint_by_the_dev_score_over_documents(
    windowed_runs, task, tmp_path
):
    """Each validation logs the task's metric over the dev documents (all of them); the checkpoint
    kept as best, and the record's valid_score, is the best of those; the test-time scorer
    (`predict` on dev, the windows merged as for test) computes that same score from the
    checkpoint's predictions, and the windows' own score of those predictions (what validation
    logged before) is another number."""
    from bio_roberta.prediction.predictions import load_finetuned, model_outputs, predict
    from bio_roberta.tasks.registry import get_task

    record, spec = windowed_runs[task], get_task(task)
    data = Path(record["data"]["dir"])
    assert record["data"]["long_inputs"]["route"] == "windows"
    windows = read_windows(data, "valid")
    documents = len(document_rows(windows))
    assert len(windows) > 2 * documents  # the dev documents are windows
    validations = logged_validations(record)
    assert len(validations) >= 3
    assert {int(v["documents"]) for v in validations} == {documents}
    scores = [float(v[spec.metric]) for v in validations]
    assert 100 * record["valid_score"] == pytest.approx(max(scores), rel=1e-5)  # logs: 6 digits

    checkpoint = Path(record["checkpoint"]["path"])
    suffix = spec.task_kind.predictions.suffix
    result = predict(checkpoint, data, tmp_path / f"valid.{suffix}", split="valid", spec=spec)
    assert result.examples == documents
    assert result.score == pytest.approx(record["valid_score"])
    model, fairseq_task = load_finetuned(checkpoint, data)
    rows = model_outputs(model, fairseq_task, spec.task_kind.predictions, "valid")
    gold, predicted = zip(*(rows[index] for index in range(len(windows))))
    per_window = spec.score(list(gold), list(predicted))
    assert round(100 * per_window, 2) != round(100 * result.score, 2)


def fairseq_validation(checkpoint: Path, data: Path) -> dict:
    """What fairseq's validate() logs for `checkpoint` on data's valid split: its task and
    criterion built from the checkpoint's config (data replaced), batches of 8 through
    task.valid_step and the criterion's reduce_metrics as trainer.valid_step runs them."""
    from fairseq import checkpoint_utils

    import user_dir

    overrides = {"data": str(data), "user_dir": str(Path(user_dir.__file__).parent)}
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides=overrides
    )
    model, criterion = models[0].eval(), task.build_criterion(cfg.criterion)
    task.load_dataset("valid")
    batches = task.get_batch_iterator(task.dataset("valid"), max_sentences=8)
    logging_outputs = []
    with torch.no_grad():
        for sample in batches.next_epoch_itr(shuffle=False):
            logging_outputs.append(task.valid_step(sample, model, criterion)[2])
    return validation_stats(type(criterion), logging_outputs)


@pytest.mark.slow
@pytest.mark.parametrize("task", WINDOWED_TASKS)
def test_a_split_without_windows_validates_over_its_examples_as_before(
    windowed_runs, task, tmp_path
):
    """The same task converted by its kind's own route (NER cut into pieces, ChemProt truncated):
    the checkpoint's validation logs no documents and the scores over the examples, the numbers
    fairseq logged before windows had a route of their own (entity counts summed over pieces;
    sentence_prediction's accuracy to 0.1)."""
    from bio_roberta.conversion.finetune_bin import convert_task
    from bio_roberta.prediction.predictions import load_finetuned, model_outputs
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.metrics import accuracy
    from conftest import SAMPLE_DIR

    record, spec = windowed_runs[task], get_task(task)
    windowed = json.loads((Path(record["data"]["dir"]) / "manifest.json").read_text())
    data = tmp_path / task
    (manifest,) = convert_task(
        spec, SAMPLE_DIR / "tasks" / task, windowed["vocab"]["path"], data, max_positions=32
    )
    assert manifest["long_inputs"]["route"] == spec.task_kind.long_inputs
    checkpoint = Path(record["checkpoint"]["path"])
    stats = fairseq_validation(checkpoint, data)
    assert "documents" not in stats
    model, fairseq_task = load_finetuned(checkpoint, data)
    rows = model_outputs(model, fairseq_task, spec.task_kind.predictions, "valid")
    gold, predicted = map(list, zip(*rows.values()))
    assert stats[spec.metric] == pytest.approx(100 * spec.score(gold, predicted))
    if task == "chemprot":
        assert stats["accuracy"] == round(100 * accuracy(gold, predicted), 1)
    else:
        words = [(g, p) for sentence in zip(gold, predicted) for g, p in zip(*sentence)]
        assert stats["tag_accuracy"] == round(100 * sum(g == p for g, p in words) / len(words), 2)


def test_validation_windows_that_do_not_fit_the_run_are_refused(tmp_path):
    """A windows file beside a manifest of another route, a classification's without its pooling,
    several validation subsets, or a batch example beyond the file: each an error naming the file
    and what to do."""
    from user_dir.criterions._document_validation import ValidationWindows

    assert ValidationWindows.of(str(tmp_path), "valid") is None  # no windows: as before
    (tmp_path / "valid.windows").write_text("0\t0\t4\n0\t2\t4\n1\t0\t3\n")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"long_inputs": {"route": "truncate"}}))
    with pytest.raises(ValueError, match="records long inputs 'truncate', yet valid.windows"):
        ValidationWindows.of(str(tmp_path), "valid")
    manifest.write_text(json.dumps({"long_inputs": {"route": "windows", "stride": 2}}))
    with pytest.raises(ValueError, match="pooling None of a classification's windows"):
        ValidationWindows.of(str(tmp_path), "valid", pooled=True)
    with pytest.raises(ValueError, match="--valid-subset valid,test: .* pass one"):
        ValidationWindows.of(str(tmp_path), "valid,test")
    windows = ValidationWindows.of(str(tmp_path), "valid")
    assert windows.places == [(0, 0, 4, 2), (0, 2, 4, 2), (1, 0, 3, 1)]
    with pytest.raises(ValueError, match="has 3 lines but validation reads example 7"):
        windows.of_sample({"id": torch.tensor([1, 7])})
