"""Conversion of task files to finetune-bin/<task>: alignment, splitting, labels, folds, manifest,
CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bio_roberta.blurb.split_check import BY_CONTENT, BY_CONTENT_AND_IDS, BY_NOTHING, BY_SIZES
from bio_roberta.blurb.split_evidence import BLURB_DIGESTS, BLURB_ID_DIGESTS
from bio_roberta.cli import main as cli_main
from bio_roberta.conversion.encoder import ConversionError
from bio_roberta.conversion.finetune_bin import convert_task
from bio_roberta.readers import TaskFormatError, read_task
from bio_roberta.tasks.blurb_entries import HOC_HALLMARKS
from bio_roberta.tasks.kinds import label_symbols
from bio_roberta.tasks.registry import get_task
from bio_roberta_core.provenance import sha256_file
from bio_roberta_core.tagging import BIO, BIOUL, IO, convert_tags
from conftest import SAMPLE_DIR, shared_data_path
from test_blurb_readers import (
    jsonl_record,
    write_bioasq_jsonl,
    write_blurb_id_lists,
    write_ebm_nlp,
    write_jsonl,
    write_scibert,
)
from test_readers import hoc_dir, write, write_euadr_folds

NER_SAMPLE = SAMPLE_DIR / "tasks" / "ncbi-disease"
CHEMPROT_SAMPLE = SAMPLE_DIR / "tasks" / "chemprot"


def learn_vocab(root: Path, lines: list[str], vocab_size: int) -> Path:
    from preprocess.learn_vocab import learn_vocabulary

    corpus = write(root / "corpus.txt", "\n".join(lines) + "\n")
    learn_vocabulary("gpt2", [corpus], root / "vocab", vocab_size=vocab_size, min_frequency=2)
    return root / "vocab"


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory) -> Path:
    """A real byte-level BPE vocabulary dir learned on the sample task text (small, so words
    split)."""
    ner = read_task(get_task("ncbi-disease"), NER_SAMPLE).splits["train"].examples
    chemprot = read_task(get_task("chemprot"), CHEMPROT_SAMPLE).splits["train"].examples
    lines = [" ".join(sentence.words) for sentence in ner] + [example.text for example in chemprot]
    return learn_vocab(tmp_path_factory.mktemp("vocab"), lines, vocab_size=300)


def load(prefix: Path, dict_path: Path):
    from fairseq.data import Dictionary, data_utils

    dictionary = Dictionary.load(str(dict_path))
    return data_utils.load_indexed_dataset(str(prefix), dictionary, dataset_impl="mmap"), dictionary


def conll_examples(path: Path) -> list[list[tuple[str, str]]]:
    blocks = path.read_text().split("\n\n")
    return [
        [tuple(line.split("\t")) for line in block.splitlines()]
        for block in blocks
        if block.strip()
    ]


def check_ner_alignment(
    out: Path, split: str, vocab_dir: Path, scheme: str, max_tokens: int
) -> int:
    """Every word's first subword carries its tag, the rest <pad>; returns (examples, truncated
    words)."""
    from preprocess.bpe import open_bpe
    from preprocess.vocab_dir import read_vocab_dir

    bpe = open_bpe(read_vocab_dir(vocab_dir))
    tokens, dictionary = load(out / "input0" / split, out / "input0" / "dict.txt")
    labels, label_dictionary = load(out / "label" / split, out / "label" / "dict.txt")
    examples = conll_examples(out / f"{split}.conll")
    ids = (out / f"{split}.ids").read_text().splitlines()
    assert len(tokens) == len(labels) == len(examples) == len(ids)
    # A continuation piece of a split sentence keeps its words' in-sentence encoding (leading
    # space).
    continuations = [i > 0 and ids[i - 1] == ids[i] for i in range(len(ids))]
    joined: dict[str, tuple[list, list]] = {}
    truncated = 0
    for row_tokens, row_labels, example, continued, sentence_id in zip(
        tokens, labels, examples, continuations, ids
    ):
        row_tokens, row_labels = row_tokens.tolist(), row_labels.tolist()
        assert len(row_tokens) == len(row_labels) <= max_tokens + 1
        assert row_tokens[-1] == dictionary.eos() and row_labels[-1] == label_dictionary.eos()
        starts = [i for i, label in enumerate(row_labels[:-1]) if label != label_dictionary.pad()]
        words, gold = zip(*example)
        assert len(starts) == len(words) and starts[0] == 0
        for n, (start, end) in enumerate(zip(starts, starts[1:] + [len(row_tokens) - 1])):
            text = bpe.decode(dictionary.string(row_tokens[start:end]))
            expected = words[n] if n == 0 and not continued else " " + words[n]
            # A word longer than the whole budget keeps its first subwords (it still gets its tag).
            assert text == expected or (end - start == max_tokens and expected.startswith(text))
            truncated += text != expected
        tagged = joined.setdefault(sentence_id, ([], []))
        tagged[0].extend(gold)
        tagged[1].extend(label_dictionary[row_labels[i]] for i in starts)
    # Tags are converted per source sentence: a piece may start inside an entity.
    for gold, converted in joined.values():
        assert converted == convert_tags(gold, scheme)
    return len(examples), truncated


@pytest.mark.parametrize("scheme", [BIO, BIOUL, IO])
def test_ner_first_subword_carries_the_tag(tmp_path, vocab_dir, scheme):
    spec = get_task("ncbi-disease")
    (manifest,) = convert_task(spec, NER_SAMPLE, vocab_dir, tmp_path / "ncbi", scheme=scheme)
    out = tmp_path / "ncbi"
    assert (out / "label" / "dict.txt").read_text().split()[::2] == list(
        label_symbols(spec, scheme)
    )
    assert check_ner_alignment(out, "test", vocab_dir, scheme, spec.max_positions - 2) == (20, 0)
    train = manifest["split_details"]["train"]["converted"]
    assert manifest["counts"] == {"train": 60, "valid": 20, "test": 20}
    assert train["words"] == manifest["split_details"]["train"]["read"]["counts"]["words"]
    assert train["tokens"] > train["words"]  # the small vocabulary splits words into subwords
    assert manifest["tagging_scheme"] == scheme and manifest["labels"] == list(
        label_symbols(spec, scheme)
    )


def test_long_sentences_split_at_word_boundaries(tmp_path, vocab_dir):
    spec = get_task("ncbi-disease")
    max_positions = 14
    (manifest,) = convert_task(
        spec, NER_SAMPLE, vocab_dir, tmp_path / "ncbi", max_positions=max_positions
    )
    out = tmp_path / "ncbi"
    _, truncated = check_ner_alignment(out, "valid", vocab_dir, BIO, max_positions - 2)
    converted = manifest["split_details"]["valid"]["converted"]
    assert truncated == converted.get("words_truncated", 0)
    assert converted["sentences"] == 20 and converted["sentences_split"] > 0
    assert manifest["counts"]["valid"] == converted["examples"] > 20
    # Pieces share their sentence's id, in order, and together hold every word exactly once.
    source = {s.id: s for s in read_task(spec, NER_SAMPLE).splits["valid"].examples}
    joined: dict[str, list] = {}
    for sentence_id, example in zip(
        (out / "valid.ids").read_text().splitlines(), conll_examples(out / "valid.conll")
    ):
        joined.setdefault(sentence_id, []).extend(example)
    assert list(joined) == list(source)
    for sentence_id, pairs in joined.items():
        assert pairs == list(zip(source[sentence_id].words, source[sentence_id].tags))


def test_relation_labels_placeholders_and_fairseq_sentence_prediction(tmp_path, vocab_dir):
    from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

    from preprocess.bpe import open_bpe
    from preprocess.vocab_dir import read_vocab_dir

    spec = get_task("chemprot")
    (manifest,) = convert_task(spec, CHEMPROT_SAMPLE, vocab_dir, tmp_path / "chemprot")
    out = tmp_path / "chemprot"
    task = SentencePredictionTask.setup_task(
        SentencePredictionConfig(
            data=str(out),
            num_classes=len(spec.labels),
            init_token=0,
            separator_token=2,
            seed=1,
            regression_target=False,
            no_shuffle=True,
        )
    )
    task.load_dataset("test")
    dataset = task.dataset("test")
    source = read_task(spec, CHEMPROT_SAMPLE).splits["test"].examples
    bpe = open_bpe(read_vocab_dir(vocab_dir))
    assert (out / "test.ids").read_text().splitlines() == [e.id for e in source]
    for i, example in enumerate(source):
        item = dataset[i]
        assert spec.labels[int(item["target"])] == example.labels[0]
        tokens = item["net_input.src_tokens"]
        assert bpe.decode(task.source_dictionary.string(tokens[1:-1])) == example.text
    assert manifest["vocab"]["sha256"] == sha256_file(vocab_dir / "dict.txt")
    assert {r["path"] for r in manifest["inputs"]} == {
        str(p.resolve()) for p in CHEMPROT_SAMPLE.glob("*.tsv")
    }
    assert "git_revision" in manifest and "package_versions" in manifest


def test_hoc_multilabel_rows_and_abstract_ids(tmp_path, vocab_dir):
    spec = get_task("hoc")
    data = hoc_dir(
        tmp_path / "hoc", "0_0,1_0,2_0,3_0,4_0,5_0,6_0,7_0,8_0,9_0\tNo hallmark here .\t123_s1\n"
    )
    convert_task(spec, data, vocab_dir, tmp_path / "out")
    labels, label_dictionary = load(
        tmp_path / "out" / "label" / "train", tmp_path / "out" / "label" / "dict.txt"
    )
    assert label_dictionary.symbols[label_dictionary.nspecial :] == [
        h.replace(" ", "_") for h in HOC_HALLMARKS
    ]
    assert label_dictionary.string(labels[0][:-1]).split() == [
        "avoiding_immune_destruction",
        "tumor_promoting_inflammation",
    ]
    assert labels[1].tolist() == [label_dictionary.eos()]
    assert (tmp_path / "out" / "train.ids").read_text() == "123_s0\t123\n123_s1\t123\n"


def test_nli_pairs_truncated_longest_first(tmp_path, vocab_dir):
    spec = get_task("mednli")
    record = {
        "sentence1": "The patient was given aspirin for chest pain and showed "
        "improvement in renal function .",
        "sentence2": "Aspirin given .",
        "gold_label": "neutral",
    }
    for name in ("mli_train_v1.jsonl", "mli_dev_v1.jsonl", "mli_test_v1.jsonl"):
        write(tmp_path / "mednli" / name, json.dumps(record) + "\n")
    (manifest,) = convert_task(
        spec, tmp_path / "mednli", vocab_dir, tmp_path / "out", max_positions=16
    )
    first, _ = load(tmp_path / "out" / "input0" / "test", tmp_path / "out" / "input0" / "dict.txt")
    second, _ = load(tmp_path / "out" / "input1" / "test", tmp_path / "out" / "input1" / "dict.txt")
    assert len(first[0]) - 1 + len(second[0]) - 1 == 16 - 4
    assert len(first[0]) >= len(second[0])
    assert manifest["split_details"]["test"]["converted"]["truncated"] == 1


def test_qa_pairs_keep_the_question_and_cut_the_context_from_its_end(tmp_path, vocab_dir, capsys):
    """BioASQ in BLURB's JSON lines: <s> Q </s></s> C </s> fits the positions by cutting C only."""
    from preprocess.bpe import load_dictionary, open_bpe
    from preprocess.vocab_dir import read_vocab_dir

    data = write_bioasq_jsonl(tmp_path / "bioasq")
    short, long = jsonl_record(20), jsonl_record(21)
    short["context"] = "Aspirin was given."
    long["question"] = "Does aspirin, given with metformin to adults with diabetes, reduce pain?"
    long["context"] = " ".join(
        f"Snippet sentence {i} on aspirin and renal function." for i in range(9)
    )
    write_jsonl(data / "test.jsonl", [short, long])
    max_positions = 96
    (manifest,) = convert_task(
        get_task("bioasq"), data, vocab_dir, tmp_path / "out", max_positions=max_positions
    )

    vocab = read_vocab_dir(vocab_dir)
    bpe, dictionary = open_bpe(vocab), load_dictionary(vocab)

    def ids(text):
        return [dictionary.index(piece) for piece in bpe.encode(text).split()]

    out = tmp_path / "out"
    questions, _ = load(out / "input0" / "test", out / "input0" / "dict.txt")
    contexts, _ = load(out / "input1" / "test", out / "input1" / "dict.txt")
    eos = [dictionary.eos()]
    assert questions[0].tolist() == ids(short["question"]) + eos
    assert contexts[0].tolist() == ids(short["context"]) + eos  # fits: kept whole
    question, context = ids(long["question"]), ids(long["context"])
    budget = max_positions - 4  # <s> Q </s></s> C </s>
    # longer than half the budget: cutting the longer text first would cut the question too
    assert budget < 2 * len(question) and len(question) < budget < len(question) + len(context)
    assert questions[1].tolist() == question + eos
    assert contexts[1].tolist() == context[: budget - len(question)] + eos
    converted = manifest["split_details"]["test"]["converted"]
    assert converted["truncated"] == 1
    assert converted["tokens_cut"] == len(question) + len(context) - budget

    # a question that leaves no room for its context is an error naming its file and the example
    too_long = jsonl_record(22)
    too_long["question"] = "Is " + " and ".join(["aspirin"] * 60) + " safe?"
    write_jsonl(data / "test.jsonl", [short, too_long])
    assert len(ids(too_long["question"])) >= budget
    argv = ["convert-task", "bioasq", "--data", str(data), "--vocab", str(vocab_dir)]
    argv += ["--out", str(tmp_path / "refused"), "--max-positions", str(max_positions)]
    assert cli_main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        f"bio-roberta convert-task: error: {data / 'test.jsonl'}: {too_long['id']}: the question "
        "alone has "
    ) and error.endswith(
        f"the budget is {budget}: no room for its context; convert with more --max-positions\n"
    )
    assert error.count("\n") == 1
    assert not (tmp_path / "refused" / "manifest.json").exists()


def test_ebm_pico_manifest_says_why_its_split_is_not_or_unknown(tmp_path, vocab_dir):
    """Table 3's EBM-PICO sizes count nothing we can count: the reader says whether the split is
    BLURB's (EBM-NLP with BLURB's PMID lists) or why not (EBM-NLP alone); SciBERT's file names
    alone tell nothing (issue 21), so its files are never called BLURB's."""

    def split_check(data):
        (manifest,) = convert_task(get_task("ebm-pico"), data, vocab_dir, data.parent / "out")
        return manifest["blurb_split_check"]

    assert split_check(write_scibert(tmp_path / "scibert" / "data")) is not None
    # (an abstract without outcomes in test: the same abstract everywhere would make dev and test
    # the same examples, which is refused)
    listed = write_ebm_nlp(
        tmp_path / "listed" / "data", train=range(1, 8), gold=(50, 51), skip={("outcomes", 50)}
    )
    write_blurb_id_lists(listed, "pmid", {"train": [1, 2, 3, 4], "dev": [5, 6], "test": [50, 51]})
    # placed by the lists given: only BLURB's own lists could confirm them (issue 26), none at hand
    assert split_check(listed).startswith("EBM PICO: split unknown (no sizes to compare")
    unlisted = write_ebm_nlp(tmp_path / "unlisted" / "data", train=range(1, 41))
    not_given = (
        "BLURB's id lists (train_pmid.tsv, dev_pmid.tsv, test_pmid.tsv) not given beside the data"
    )
    assert split_check(unlisted) == (
        "EBM PICO: train is starting_spans train documents less our dev, not BLURB's "
        f"({not_given}); valid is ours, 1 in 10 of starting_spans train documents by id hash "
        f"({not_given})"
    )


def test_folds_converted_into_fold_dirs_and_missing_fold_writes_nothing(tmp_path, vocab_dir):
    spec = get_task("euadr")
    manifests = convert_task(
        spec, write_euadr_folds(tmp_path / "euadr", rows=40), vocab_dir, tmp_path / "out"
    )
    assert [m["fold"] for m in manifests] == list(range(1, 11))
    for fold in range(1, 11):
        manifest = json.loads((tmp_path / "out" / f"fold{fold}" / "manifest.json").read_text())
        assert (
            sum(manifest["counts"][s] for s in ("train", "valid")) == 40
            and manifest["counts"]["test"] == 5
        )
    gappy = write_euadr_folds(tmp_path / "gappy", folds=[1, 2, 3, 5, 6, 7, 8, 9, 10], rows=4)
    with pytest.raises(TaskFormatError, match="fold missing"):
        convert_task(spec, gappy, vocab_dir, tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_a_ten_fold_conversion_reads_the_vocabulary_dir_once(tmp_path, vocab_dir, monkeypatch):
    import preprocess.vocab_dir

    read_vocab_dir, reads = preprocess.vocab_dir.read_vocab_dir, []

    def counted(path):
        reads.append(path)
        return read_vocab_dir(path)

    # every module holding read_vocab_dir, and the one that defines it for modules imported later
    for module in list(sys.modules.values()):
        if getattr(module, "read_vocab_dir", None) is read_vocab_dir:
            monkeypatch.setattr(module, "read_vocab_dir", counted)
    folds = write_euadr_folds(tmp_path / "euadr", rows=40)
    assert len(convert_task(get_task("euadr"), folds, vocab_dir, tmp_path / "out")) == 10
    assert reads == [vocab_dir]


def test_empty_split_is_an_error_and_nothing_is_written(tmp_path, vocab_dir, capsys):
    # 12 rows: no row of fold 6's train.tsv hashes into its valid slice
    folds = write_euadr_folds(tmp_path / "euadr", rows=12)
    with pytest.raises(
        ConversionError,
        match=r"^euadr fold 6: the valid split has no examples "
        r"\(from \S+/6/train\.tsv: train\.tsv rows whose sentence's sha256",
    ):
        convert_task(get_task("euadr"), folds, vocab_dir, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    ner = tmp_path / "ner"
    for name in ("devel.tsv", "test.tsv"):
        write(ner / name, "Pain\tO\n")
    write(ner / "train.tsv", "\n")
    assert (
        cli_main(
            [
                "convert-task",
                "ncbi-disease",
                "--data",
                str(ner),
                "--vocab",
                str(vocab_dir),
                "--out",
                str(tmp_path / "ner-out"),
            ]
        )
        == 2
    )
    error = capsys.readouterr().err.strip()
    assert error == (
        f"bio-roberta convert-task: error: ncbi-disease: the train split has no examples (from "
        f"{ner / 'train.tsv'}: train.tsv); a task needs train, valid and test examples: "
        f"check those files"
    )


def test_byte_order_mark_is_not_part_of_the_first_token(tmp_path):
    rows = "index\tsentence\tlabel\n0\t@CHEMICAL$ inhibits @GENE$ .\tCPR:4\n"
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        write(tmp_path / "blue" / name, "\ufeff" + rows)
    assert read_task(get_task("chemprot"), tmp_path / "blue").splits["train"].examples[0].id == "0"
    for name in ("train.tsv", "devel.tsv", "test.tsv"):
        write(tmp_path / "ner" / name, "\ufeffFever\tB\nresolved\tO\n")
    sentence = read_task(get_task("ncbi-disease"), tmp_path / "ner").splits["train"].examples[0]
    assert sentence.words == ("Fever", "resolved")


def chemprot_arguments(vocab_dir: Path, out: Path) -> list[str]:
    """The arguments of `bio-roberta convert-task chemprot` of the bundled sample into out."""
    return [
        "convert-task",
        "chemprot",
        "--data",
        str(CHEMPROT_SAMPLE),
        "--vocab",
        str(vocab_dir),
        "--out",
        str(out),
    ]


def test_out_naming_a_file_is_a_one_line_error(tmp_path, vocab_dir, capsys):
    taken = write(tmp_path / "taken", "a file\n")
    assert cli_main(chemprot_arguments(vocab_dir, taken)) == 2
    error = capsys.readouterr().err
    assert (
        error == f"bio-roberta convert-task: error: {taken}: exists and is not a directory; "
        "pass a directory for --out\n"
    )
    assert taken.read_text() == "a file\n"


def test_scheme_is_for_ner_only(tmp_path, vocab_dir):
    with pytest.raises(ConversionError, match="--scheme applies to NER only"):
        convert_task(get_task("chemprot"), CHEMPROT_SAMPLE, vocab_dir, tmp_path / "x", scheme=BIOUL)


def test_convert_task_command(tmp_path, vocab_dir, capsys):
    out = tmp_path / "finetune-bin" / "chemprot"
    status = cli_main(chemprot_arguments(vocab_dir, out))
    assert status == 0 and (out / "manifest.json").is_file()
    assert '"train": 80' in capsys.readouterr().out
    bad = write(
        tmp_path / "bad" / "train.tsv", "index\tsentence\tlabel\n0\t@CHEMICAL$ x @GENE$\tCPR:8\n"
    ).parent
    write(bad / "dev.tsv", "index\tsentence\tlabel\n")
    write(bad / "test.tsv", "index\tsentence\tlabel\n")
    status = cli_main(
        [
            "convert-task",
            "chemprot",
            "--data",
            str(bad),
            "--vocab",
            str(vocab_dir),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert status == 2
    assert "train.tsv:2: unknown label 'CPR:8'" in capsys.readouterr().err


def test_sequence_labeling_task_reads_converted_ner(tmp_path, vocab_dir):
    from user_dir.tasks.sequence_labeling import SequenceLabelingConfig, SequenceLabelingTask

    spec = get_task("ncbi-disease")
    convert_task(spec, NER_SAMPLE, vocab_dir, tmp_path / "ncbi", scheme=BIOUL, max_positions=20)
    task = SequenceLabelingTask.setup_task(
        SequenceLabelingConfig(
            data=str(tmp_path / "ncbi"), seed=1, no_shuffle=True, max_positions=20
        )
    )
    dataset = task.load_dataset("valid")
    ids = (tmp_path / "ncbi" / "valid.ids").read_text().splitlines()
    assert len(ids) == len(dataset) > 20  # sentences split into pieces at 20 positions
    tags = {}
    for i, sentence_id in enumerate(ids):
        tags.setdefault(sentence_id, []).extend(
            task.tags[t] for t in dataset[i]["target"].tolist() if t >= 0
        )
    source = read_task(spec, NER_SAMPLE).splits["valid"].examples
    assert {s.id: convert_tags(s.tags, BIOUL) for s in source} == tags


@pytest.mark.real_data
def test_real_ncbi_disease_converts_every_word(tmp_path):
    data = shared_data_path("ner/NCBI-disease")
    spec = get_task("ncbi-disease")
    splits = read_task(spec, data).splits
    vocab = learn_vocab(
        tmp_path, [" ".join(s.words) for s in splits["train"].examples], vocab_size=2000
    )
    (manifest,) = convert_task(spec, data, vocab, tmp_path / "ncbi")
    for split in ("train", "valid", "test"):
        converted = manifest["split_details"][split]["converted"]
        assert converted["words"] == splits[split].counts["words"]
        assert converted["sentences"] == splits[split].counts["examples"]
        assert converted.get("unknown_tokens", 0) == 0
    checked = check_ner_alignment(tmp_path / "ncbi", "test", vocab, BIO, spec.max_positions - 2)
    assert checked == (splits["test"].counts["examples"], 0)


@pytest.mark.parametrize("kind, size", [("sentencepiece", 200), ("fastbpe", 300)])
def test_other_vocabulary_kinds_tag_every_word_once(tmp_path, kind, size):
    from preprocess.learn_vocab import learn_vocabulary

    spec = get_task("ncbi-disease")
    sentences = read_task(spec, NER_SAMPLE).splits["test"].examples
    corpus = write(tmp_path / "corpus.txt", "\n".join(" ".join(s.words) for s in sentences) + "\n")
    learn_vocabulary(kind, [corpus], tmp_path / "vocab", vocab_size=size)
    (manifest,) = convert_task(spec, NER_SAMPLE, tmp_path / "vocab", tmp_path / "out")
    labels, label_dictionary = load(
        tmp_path / "out" / "label" / "test", tmp_path / "out" / "label" / "dict.txt"
    )
    tokens, _ = load(tmp_path / "out" / "input0" / "test", tmp_path / "out" / "input0" / "dict.txt")
    for row_labels, row_tokens, sentence in zip(labels, tokens, sentences):
        tagged = [
            label_dictionary[i] for i in row_labels.tolist()[:-1] if i != label_dictionary.pad()
        ]
        assert tagged == list(sentence.tags) and len(row_tokens) == len(row_labels)
    assert manifest["split_details"]["test"]["converted"]["unknown_tokens"] == 0


def test_identical_dev_and_test_files_warn_and_are_not_blurbs_split(tmp_path, vocab_dir, caplog):
    """A copied file converted silently before (issue 21): now a warning, recorded in the
    manifest, and for a BLURB dataset a split that is not BLURB's."""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train.tsv", "devel.tsv"):
        (data / name).write_bytes((NER_SAMPLE / name).read_bytes())
    (data / "test.tsv").write_bytes((NER_SAMPLE / "devel.tsv").read_bytes())
    (species,) = convert_task(get_task("species-800"), data, vocab_dir, tmp_path / "s800")
    assert species["identical_splits"] == [["valid", "test"]]
    assert "blurb_split_check" not in species
    assert "species-800: the valid and test splits hold the same examples" in caplog.text
    (ncbi,) = convert_task(get_task("ncbi-disease"), data, vocab_dir, tmp_path / "ncbi")
    assert ncbi["blurb_split_check"] == "NCBI-disease: valid and test hold the same examples"
    assert ncbi["blurb_split_checked_by"].startswith("content:")


def test_chemprot_ddi_hoc_pico_convert_from_linkberts_release(tmp_path, vocab_dir):
    """Issue 21 (3) and 26 (1): the datasets that could not follow BLURB's protocol convert from
    LinkBERT's files as its preprocess_blurb.py writes them ("0" for ChemProt's and DDI's negative
    class, B-PAR/B-INT/B-OUT: tests/blurb_toy.py runs its code), with the labels of BLURB's
    source files they came from, and their manifests say how the split was checked."""
    from blurb_toy import source_label_counts, write_linkbert

    for task in ("chemprot-blurb", "ddi", "hoc-blurb", "ebm-pico"):
        folder = write_linkbert(tmp_path / "linkbert", task)
        (manifest,) = convert_task(get_task(task), folder, vocab_dir, tmp_path / "out" / task)
        assert manifest["counts"] == {"train": 6, "valid": 2, "test": 3}, task
        read = manifest["split_details"]["train"]["read"]
        assert read["sources"][0].endswith("train.json")
        if task == "ebm-pico":  # no split check possible
            assert manifest["blurb_split_checked_by"] == BY_NOTHING
        else:
            # the digests of BLURB's files (DDI: dev and test), else the sizes, find it not BLURB's
            by = BY_CONTENT if task in BLURB_DIGESTS else BY_SIZES
            if task in BLURB_ID_DIGESTS:  # DDI's train: the ids only BLURB's rule gives
                by = BY_CONTENT_AND_IDS
            assert manifest["blurb_split_checked_by"] == by, task
            display = {"chemprot-blurb": "ChemProt", "ddi": "DDI", "hoc-blurb": "HoC"}[task]
            assert manifest["blurb_split_check"].startswith(f"{display}: train/dev/test ")
            assert "BLURB's split has" in manifest["blurb_split_check"]  # toy sizes aren't BLURB's
        if task == "hoc-blurb":
            continue
        source = source_label_counts(task)["train"]
        assert read["label_counts"] == dict(source), task
        dictionary = (tmp_path / "out" / task / "label" / "dict.txt").read_text().splitlines()
        converted = {label: int(n) for label, n in map(str.split, dictionary) if int(n)}
        assert converted == dict(source), task  # the label ids written, counted in train
        negative = {"chemprot-blurb": "false", "ddi": "DDI-false"}.get(task)
        if negative:
            assert read["counts"]["linkbert_label_0"] == read["label_counts"][negative] > 0
        else:
            assert {k: v for k, v in read["counts"].items() if k.startswith("linkbert_")} == {
                f"linkbert_label_B-{element}": read["label_counts"][f"I-{element}"]
                for element in ("PAR", "INT", "OUT")
            }


def test_linkbert_tokens_holding_whitespace_keep_one_conll_line_per_word(tmp_path, vocab_dir):
    """Issue 27: a LinkBERT token holding a newline broke train.conll. preprocess_blurb.py (ported
    in tests/blurb_toy.py) keeps a token's inner spaces and U+2028 (it splits lines on newlines
    and columns on tabs only); a tab or newline comes from a file edited since. Each whitespace
    run is written as '_', one line a word, and counted."""
    from bio_roberta.tasks.prediction_files import read_conll
    from blurb_toy import write_linkbert

    folder = write_linkbert(tmp_path / "linkbert", "ncbi-disease")
    train = folder / "train.json"
    records = [json.loads(line) for line in train.read_text().splitlines()]
    odd = ["10\n000", "a\tb", "x\u2028y", "p \u00a0q", "r\r\ns"]
    records[0]["tokens"][: len(odd)] = odd
    train.write_text("".join(json.dumps(record) + "\n" for record in records))
    (manifest,) = convert_task(get_task("ncbi-disease"), folder, vocab_dir, tmp_path / "out")
    blocks = read_conll(tmp_path / "out" / "train.conll", 2)
    assert [len(block) for block in blocks] == [len(record["tokens"]) for record in records]
    assert [word for word, _tag in blocks[0][: len(odd)]] == ["10_000", "a_b", "x_y", "p_q", "r_s"]
    assert [tag for _word, tag in blocks[0]] == records[0]["ner_tags"]
    converted = manifest["split_details"]["train"]["converted"]
    assert converted["words_with_whitespace_written_with_underscore"] == len(odd)
    assert (
        "words_with_whitespace_written_with_underscore"
        not in (manifest["split_details"]["test"]["converted"])
    )
