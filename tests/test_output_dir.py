"""Every stage writes its output whole or not at all (bio_roberta_core/output_dir.py): one run per
output, a killed re-run leaves the previous output whole, and a full disk is one line naming the
file, with nothing half-written left behind."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from bio_roberta_core.output_dir import OutputBusyError, output_lock
from conftest import SAMPLE_DIR
from preprocess.binarize import binarize
from preprocess.learn_vocab import learn_vocabulary
from preprocess.text_shards import MAX_LEARN_LINE_CHARS, ShardOptions, line_pieces
from test_text_shards import tree_bytes
from test_vocab import write_synthetic_shards

BIO_ROBERTA = str(Path(sys.executable).parent / "bio-roberta")
PUBMED_SAMPLE = SAMPLE_DIR / "corpus" / "pubmed"
CHEMPROT_SAMPLE = SAMPLE_DIR / "tasks" / "chemprot"


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory) -> Path:
    text = write_synthetic_shards(tmp_path_factory.mktemp("text"), {"train": 200, "valid": 15})
    (text / "manifest.json").write_text(json.dumps({"kind": "text_shards"}))
    return text


@pytest.fixture(scope="module")
def vocab(text_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vocab") / "gpt2"
    learn_vocabulary("gpt2", [text_dir], out, vocab_size=400)
    return out


def bio_roberta(*args, env=None, preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BIO_ROBERTA, *map(str, args)],
        capture_output=True,
        text=True,
        env=None if env is None else dict(os.environ, **env),
        preexec_fn=preexec_fn,
    )


def test_a_second_run_on_the_same_out_is_refused_naming_the_first(text_dir, vocab, tmp_path):
    import torch

    checkpoint, data_root = tmp_path / "model.pt", tmp_path / "finetune-bin"
    torch.save({"model": {}}, checkpoint)
    (data_root / "chemprot" / "input0").mkdir(parents=True)
    (data_root / "chemprot" / "input0" / "dict.txt").write_text("")  # no dictionary to check
    (data_root / "chemprot" / "manifest.json").write_text("{}")  # converted, as far as read
    runs = {
        "parse-pubmed": [PUBMED_SAMPLE, "--workers", "1", "--out"],
        "learn-vocab": [text_dir, "--vocab-size", "300", "--out"],
        "binarize": [text_dir, "--vocab", vocab, "--out"],
        "convert-task": ["chemprot", "--data", CHEMPROT_SAMPLE, "--vocab", vocab, "--out"],
        "sweep": [
            "--tasks",
            "chemprot",
            "--seed-list",
            "1",
            "--pretrained",
            checkpoint,
            "--data-root",
            data_root,
            "--results",
        ],
    }
    for command, args in runs.items():
        out = tmp_path / command
        with output_lock(out):  # this process is the first run
            run = bio_roberta(command, *args, out)
            with pytest.raises(OutputBusyError):  # in-process too
                with output_lock(out):
                    pass
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
        assert re.fullmatch(
            rf"bio-roberta {command}: error: {re.escape(str(out.resolve()))}: another run is "
            rf"writing it: pid {os.getpid()} on {re.escape(socket.gethostname())}, started "
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 \(`.*`\); wait for it to end or stop it "
            r"\(one run per output\)",
            run.stderr.strip().splitlines()[-1],
        ), run.stderr
        assert not out.exists()
        assert not (tmp_path / f".{command}.lock").exists()  # removed when the first run ended


def test_learn_vocab_killed_during_a_rerun_leaves_the_old_vocabulary_whole(
    text_dir, vocab, tmp_path
):
    out = tmp_path / "vocab"
    first = bio_roberta("learn-vocab", text_dir, "--vocab-size", "300", "--out", out)
    assert first.returncode == 0, first.stderr[-3000:]
    old = tree_bytes(out)
    rerun = ["learn-vocab", text_dir, "--vocab-size", "400", "--out", out]
    # killed with the new BPE files and dict.txt written, before the padding and the manifest
    killed = bio_roberta(*rerun, env={"BIO_ROBERTA_KILL_AT": "learn_vocab:learned"})
    assert killed.returncode == -signal.SIGKILL
    assert tree_bytes(out) == old
    # the old vocabulary is whole, so what binarize writes is the old vocabulary's ids
    data_bin = binarize(text_dir, out, tmp_path / "bin", progress=False)
    assert data_bin["vocab"]["sha256"] == hashlib.sha256(old["dict.txt"]).hexdigest()
    # the killed run holds no lock: the next run goes ahead and leaves nothing beside the dir
    assert (tmp_path / ".vocab.lock").exists()
    done = bio_roberta(*rerun)
    assert done.returncode == 0, done.stderr[-3000:]
    learned = {name: data for name, data in tree_bytes(out).items() if name != "manifest.json"}
    assert learned == {
        name: data for name, data in tree_bytes(vocab).items() if name != "manifest.json"
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "vocab"]


def limit_file_size(limit: int):
    """preexec_fn: a child whose files cannot grow past `limit` bytes (EFBIG, as a full disk's
    ENOSPC, and no SIGXFSZ)."""

    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def assert_one_line_naming_the_file(run, command: str, file: str) -> None:
    """The run ended with one line naming `file` (a regex) as where the room ran out."""
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    line = run.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"bio-roberta {command}: error: {file}: File too large: the output needed more than "
        r"the [\d,]+ bytes written under \S+ \([\d,]+ bytes free on that file system\); the "
        r"run's partial files are removed .* and re-run",
        line,
    ), line


def test_parse_out_of_room_is_one_line_and_leaves_no_temporary_files(tmp_path):
    out = tmp_path / "pubmed"
    parse = ["parse-pubmed", PUBMED_SAMPLE, "--workers", "1", "--out", out]
    # an input's parsed text (.work/*.docs.txt) is 1.8 to 3.4 kB
    full = bio_roberta(*parse, preexec_fn=limit_file_size(2000))
    assert_one_line_naming_the_file(
        full, "parse-pubmed", re.escape(f"{out.resolve()}/.work/") + r"\S+\.docs\.txt"
    )
    assert not list(out.rglob("*.tmp")) and not (out / "manifest.json").exists()
    # with room, the re-run ends as an uninterrupted run does
    assert bio_roberta(*parse).returncode == 0
    assert bio_roberta(*[*parse[:-1], tmp_path / "fresh"]).returncode == 0
    assert {k: v for k, v in tree_bytes(out).items() if k != "manifest.json"} == {
        k: v for k, v in tree_bytes(tmp_path / "fresh").items() if k != "manifest.json"
    }


def test_binarize_out_of_room_is_one_line_and_keeps_the_old_data_bin(text_dir, vocab, tmp_path):
    out = tmp_path / "bin"
    binarize(text_dir, vocab, out, progress=False)
    old = tree_bytes(out)
    limit = (out / "dict.txt").stat().st_size + 100
    assert len(old["train.bin"]) > limit
    full = bio_roberta(
        "binarize",
        text_dir,
        "--vocab",
        vocab,
        "--out",
        out,
        "--workers",
        "2",
        "--chunk-mb",
        "1",
        preexec_fn=limit_file_size(limit),
    )
    assert_one_line_naming_the_file(
        full, "binarize", re.escape(f"{tmp_path.resolve()}/.bin.new/.binarize-tmp/") + r"\S+"
    )
    assert tree_bytes(out) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


def test_an_out_that_is_a_file_is_one_line(text_dir, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    run = bio_roberta("learn-vocab", text_dir, "--out", a_file)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stderr.strip().splitlines()[-1] == (
        f"bio-roberta learn-vocab: error: {a_file.resolve()}: exists and is not a directory; "
        "pass a directory for --out"
    )
    assert a_file.read_text() == "mine\n"


def test_over_long_lines_reach_the_learner_in_bounded_pieces(tmp_path):
    words = [f"w{i % 997}" for i in range(3 * MAX_LEARN_LINE_CHARS // 4)]
    line = " ".join(words)
    pieces = list(line_pieces(line))
    assert len(pieces) > 1 and max(map(len, pieces)) <= MAX_LEARN_LINE_CHARS
    assert " ".join(pieces) == line  # cut at spaces: no word is split
    unbroken = "x" * (2 * MAX_LEARN_LINE_CHARS + 5)
    assert list(line_pieces(unbroken)) == [
        "x" * MAX_LEARN_LINE_CHARS,
        "x" * MAX_LEARN_LINE_CHARS,
        "xxxxx",
    ]
    corpus = tmp_path / "one-line.txt"
    corpus.write_text(line + "\nshort line\n")
    manifest = learn_vocabulary("gpt2", [corpus], tmp_path / "vocab", vocab_size=300)
    assert manifest["counts"]["lines"] == 2 and manifest["counts"]["long_lines_split"] == 1


def test_a_pmc_article_over_the_size_limit_is_skipped_and_reported(tmp_path):
    from preprocess.pmc import parse_pmc

    package = tmp_path / "in" / "package.tar.gz"
    package.parent.mkdir()
    large = tmp_path / "large.nxml"
    large.write_bytes(b"<article>" + b" " * (2 << 20) + b"</article>")
    with tarfile.open(package, "w:gz") as tar:
        for article in sorted((SAMPLE_DIR / "corpus" / "pmc").glob("PMC*.nxml")):
            tar.add(article, arcname=f"articles/{article.name}")
        tar.add(large, arcname="articles/large.nxml")
    options = ShardOptions(valid_fraction=0.0, workers=1)
    manifest = parse_pmc([package], tmp_path / "out", options, max_article_mb=1)
    counts = manifest["counts"]
    assert counts["documents_skipped"] == {"article_too_large": 1}
    assert counts["documents_written"]["train"] == 2
    [problem] = manifest["problems"]
    assert problem["position"] == "member 3 'articles/large.nxml'"
    assert problem["reason"] == (
        "article of 2,097,171 bytes is over --max-article-mb 1: skipped (raise the limit to "
        "read it)"
    )


def test_a_vocabulary_dir_mixing_two_vocabularies_is_refused(text_dir, vocab, tmp_path):
    """What a learn-vocab killed before the swap left (encoder.json and vocab.bpe of the new run,
    dict.txt and manifest of the old) is refused by binarize and convert-task."""
    other = tmp_path / "other"
    learn_vocabulary("gpt2", [text_dir], other, vocab_size=300)
    mixed = tmp_path / "mixed"
    shutil.copytree(vocab, mixed)
    for name in ("encoder.json", "vocab.bpe"):
        shutil.copyfile(other / name, mixed / name)
    expected = (
        f"{mixed / 'encoder.json'}: not the file {mixed / 'manifest.json'} lists (another "
        "sha256): the dir mixes two vocabularies; re-run `bio-roberta learn-vocab` into it"
    )
    for command in (
        ["binarize", text_dir, "--vocab", mixed, "--out", tmp_path / "bin"],
        ["convert-task", "chemprot", "--data", CHEMPROT_SAMPLE, "--vocab", mixed, "--out"]
        + [tmp_path / "chemprot"],
    ):
        run = bio_roberta(*command)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
        assert run.stderr.strip().splitlines()[-1] == f"bio-roberta {command[0]}: error: {expected}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixed", "other"]
