"""Binarization: the one-pass encoder+binarizer writes what the standard route
(multiprocessing_bpe_encoder + fairseq-preprocess) writes, and its manifest counts what the .idx
holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fairseq.data.indexed_dataset import MMapIndexedDataset

from bio_roberta.cli import main as cli_main
from bio_roberta_core.output_dir import OutputDirError
from bio_roberta_core.provenance import sha256_file
from conftest import SAMPLE_DIR, write_text_manifest
from preprocess.binarize import BinarizeError, binarize
from preprocess.bpe import load_dictionary, open_bpe
from preprocess.learn_vocab import learn_vocabulary
from preprocess.text_shards import TextDirError
from preprocess.vocab_dir import read_vocab_dir
from test_text_shards import tree_bytes
from test_vocab import write_synthetic_shards

BIO_ROBERTA = str(Path(sys.executable).parent / "bio-roberta")
PUBMED_SAMPLE = SAMPLE_DIR / "corpus" / "pubmed"


def standard_route_encoder() -> Path:
    import fairseq

    script = (
        Path(fairseq.__file__).parent / "examples" / "roberta" / "multiprocessing_bpe_encoder.py"
    )
    if not script.is_file():
        pytest.skip(f"this fairseq build does not ship {script}")
    return script


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory) -> Path:
    return write_synthetic_shards(
        tmp_path_factory.mktemp("text"), {"train": 200, "valid": 15}, seed=1
    )


@pytest.fixture(scope="module")
def gpt2_vocab(text_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vocab") / "gpt2"
    learn_vocabulary("gpt2", [text_dir], out, vocab_size=500)
    return out


@pytest.fixture(scope="module")
def data_bin(text_dir, gpt2_vocab, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bin") / "pm"
    # a small chunk size: several chunks per shard, merged in order
    return out, binarize(text_dir, gpt2_vocab, out, workers=2, chunk_bytes=4096, progress=False)


@pytest.mark.slow
def test_same_bytes_as_multiprocessing_bpe_encoder_plus_fairseq_preprocess(
    text_dir, gpt2_vocab, data_bin, tmp_path
):
    out, _ = data_bin
    encoder_script = standard_route_encoder()
    standard = tmp_path / "standard"
    for split in ("train", "valid"):
        joined = tmp_path / f"{split}.raw"
        joined.write_bytes(b"".join(p.read_bytes() for p in sorted(text_dir.glob(f"{split}.*"))))
        subprocess.run(
            [
                sys.executable,
                str(encoder_script),
                "--encoder-json",
                str(gpt2_vocab / "encoder.json"),
                "--vocab-bpe",
                str(gpt2_vocab / "vocab.bpe"),
                "--inputs",
                str(joined),
                "--outputs",
                str(tmp_path / f"{split}.bpe"),
                "--keep-empty",
                "--workers",
                "2",
            ],
            check=True,
            capture_output=True,
        )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fairseq_cli.preprocess",
            "--only-source",
            "--srcdict",
            str(gpt2_vocab / "dict.txt"),
            "--trainpref",
            str(tmp_path / "train.bpe"),
            "--validpref",
            str(tmp_path / "valid.bpe"),
            "--destdir",
            str(standard),
            "--workers",
            "2",
        ],
        check=True,
        capture_output=True,
    )
    for name in ("train.bin", "train.idx", "valid.bin", "valid.idx", "dict.txt"):
        assert (out / name).read_bytes() == (standard / name).read_bytes(), name


def test_manifest_counts_equal_the_index(data_bin, text_dir):
    out, manifest = data_bin
    for split in ("train", "valid"):
        dataset = MMapIndexedDataset(str(out / split))
        record = manifest["splits"][split]
        assert len(dataset) == record["sequences"] == record["sentences"] + record["empty_lines"]
        assert int(dataset.sizes.sum()) == record["tokens"]
        assert record["unk_tokens"] == 0
        raw_lines = sum(
            p.read_text(encoding="utf-8").count("\n") for p in text_dir.glob(f"{split}.*")
        )
        assert record["sequences"] == raw_lines
        assert [Path(r["path"]).name for r in record["inputs"]] == sorted(
            p.name for p in text_dir.glob(f"{split}.*")
        )
    assert (out / "dict.txt").is_file() and manifest["vocab"]["kind"] == "gpt2"
    assert manifest["vocab"]["sha256"] == sha256_file(out / "dict.txt")
    assert {Path(r["path"]).name for r in manifest["outputs"]} == {
        "train.bin",
        "train.idx",
        "valid.bin",
        "valid.idx",
    }


def test_one_worker_writes_the_same_dataset(data_bin, text_dir, gpt2_vocab, tmp_path):
    out, _ = data_bin
    binarize(text_dir, gpt2_vocab, tmp_path / "one", workers=1, progress=False)
    for name in ("train.bin", "train.idx"):
        assert (tmp_path / "one" / name).read_bytes() == (out / name).read_bytes()


def test_sentencepiece_vocabulary_binarizes_with_fairseqs_encoder(text_dir, tmp_path):
    learn_vocabulary("sentencepiece", [text_dir], tmp_path / "spm", vocab_size=300)
    manifest = binarize(
        text_dir, tmp_path / "spm", tmp_path / "bin", workers=2, chunk_bytes=8192, progress=False
    )
    vocab = read_vocab_dir(tmp_path / "spm")
    bpe, dictionary = open_bpe(vocab), load_dictionary(vocab)
    lines = [
        line
        for p in sorted(text_dir.glob("valid.*"))
        for line in p.read_text(encoding="utf-8").splitlines()
    ]
    dataset = MMapIndexedDataset(str(tmp_path / "bin" / "valid"))
    assert len(dataset) == len(lines) == manifest["splits"]["valid"]["sequences"]
    for i, line in enumerate(lines):
        expected = dictionary.encode_line(
            bpe.encode(line.strip()) if line.strip() else "", add_if_not_exist=False
        )
        assert np.array_equal(dataset[i].numpy(), expected.numpy())


def test_fairseq_masked_lm_loads_corpora_joined_with_colon(
    data_bin, text_dir, gpt2_vocab, tmp_path
):
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.options import get_training_parser, parse_args_and_arch

    out, _ = data_bin
    second = tmp_path / "m3"
    second_text = write_synthetic_shards(tmp_path / "m3-text", {"train": 30}, seed=2)
    binarize(second_text, gpt2_vocab, second, splits=["train"], progress=False)
    parser = get_training_parser()
    args = parse_args_and_arch(
        parser,
        [
            f"{out}:{second}",
            "--task",
            "masked_lm",
            "--arch",
            "roberta_base",
            "--tokens-per-sample",
            "64",
            "--sample-break-mode",
            "complete",
        ],
    )
    task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
    # fairseq reads one ':'-joined dir per epoch, round robin
    blocks = []
    for epoch in (1, 2, 3):
        task.load_dataset("train", epoch=epoch)
        blocks.append(len(task.dataset("train")))
    assert blocks[0] == blocks[2] > blocks[1] > 0
    task.load_dataset("valid")
    assert len(task.dataset("valid")) > 0


def test_bad_inputs_are_reported(gpt2_vocab, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    write_text_manifest(tmp_path / "empty")
    with pytest.raises(BinarizeError, match="no shards named train.*, valid.*"):
        binarize(tmp_path / "empty", gpt2_vocab, tmp_path / "out")
    assert (
        cli_main(
            [
                "binarize",
                str(tmp_path / "empty"),
                "--vocab",
                str(gpt2_vocab),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "no shards named" in capsys.readouterr().err
    assert (
        cli_main(
            [
                "binarize",
                str(tmp_path / "empty"),
                "--vocab",
                str(tmp_path),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "no vocabulary manifest" in capsys.readouterr().err


def test_a_vocab_file_instead_of_its_dir_says_vocab_takes_the_dir(
    text_dir, gpt2_vocab, tmp_path, capsys
):
    command = ["binarize", str(text_dir), "--vocab", str(gpt2_vocab / "dict.txt")]
    assert cli_main([*command, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"bio-roberta binarize: error: --vocab {gpt2_vocab / 'dict.txt'} is a file; it takes the "
        f"vocabulary directory ({gpt2_vocab}) that `bio-roberta learn-vocab` wrote (manifest.json, "
        "dict.txt and the BPE files)"
    )


def test_several_text_dirs_make_one_corpus_in_order(data_bin, text_dir, gpt2_vocab, tmp_path):
    out, _ = data_bin
    pmc_text = write_synthetic_shards(tmp_path / "pmc-text", {"train": 20, "valid": 3}, seed=3)
    binarize(pmc_text, gpt2_vocab, tmp_path / "pmc", progress=False)
    manifest = binarize(
        [text_dir, pmc_text], gpt2_vocab, tmp_path / "pm", workers=2, progress=False
    )
    assert [Path(d["path"]) for d in manifest["text_dirs"]] == [
        text_dir.resolve(),
        pmc_text.resolve(),
    ]
    for split in ("train", "valid"):
        joined, first, second = (
            MMapIndexedDataset(str(d / split)) for d in (tmp_path / "pm", out, tmp_path / "pmc")
        )
        assert len(joined) == len(first) + len(second) == manifest["splits"][split]["sequences"]
        assert np.array_equal(joined.sizes, np.concatenate([first.sizes, second.sizes]))
        assert np.array_equal(joined[len(first)].numpy(), second[0].numpy())


def _binarize_command(text_dir: Path, vocab: Path, out: Path) -> list[str]:
    return [
        BIO_ROBERTA,
        "binarize",
        str(text_dir),
        "--vocab",
        str(vocab),
        "--out",
        str(out),
        "--workers",
        "1",
    ]


def test_killed_binarize_leaves_the_previous_data_bin_whole_or_none(text_dir, gpt2_vocab, tmp_path):
    other_vocab = tmp_path / "vocab-400"
    learn_vocabulary("gpt2", [text_dir], other_vocab, vocab_size=400)
    out = tmp_path / "pm"
    binarize(text_dir, gpt2_vocab, out, progress=False)
    before = tree_bytes(out)
    # killed right after the new train.bin/.idx are written: the data-bin is still the old one,
    # whole
    killed = subprocess.run(
        _binarize_command(text_dir, other_vocab, out),
        capture_output=True,
        env=dict(os.environ, BIO_ROBERTA_KILL_AT="binarize:split-written"),
    )
    assert killed.returncode == -signal.SIGKILL
    assert tree_bytes(out) == before
    # killed between moving the old dir aside and moving the new one in: no data-bin at all
    killed = subprocess.run(
        _binarize_command(text_dir, other_vocab, out),
        capture_output=True,
        env=dict(os.environ, BIO_ROBERTA_KILL_AT="replace_dir:old-moved-aside"),
    )
    assert killed.returncode == -signal.SIGKILL
    assert not out.exists()
    done = subprocess.run(
        _binarize_command(text_dir, other_vocab, out), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "pm",
        "vocab-400",
    ]  # nothing left beside it
    assert (out / "dict.txt").read_bytes() == (other_vocab / "dict.txt").read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    names = ("train.bin", "train.idx", "valid.bin", "valid.idx")
    assert [(Path(r["path"]), r["sha256"]) for r in manifest["outputs"]] == [
        (out.resolve() / name, sha256_file(out / name)) for name in names
    ]


def test_out_dir_holding_other_files_or_a_file_is_refused(text_dir, gpt2_vocab, tmp_path):
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "notes.md").write_text("mine\n")
    with pytest.raises(
        OutputDirError, match="mixed: holds 'notes.md', which is not of this output"
    ):
        binarize(text_dir, gpt2_vocab, tmp_path / "mixed", progress=False)
    with pytest.raises(OutputDirError, match="notes.md: exists and is not a directory"):
        binarize(text_dir, gpt2_vocab, tmp_path / "mixed" / "notes.md", progress=False)
    assert sorted(p.name for p in (tmp_path / "mixed").iterdir()) == ["notes.md"]


def test_text_dir_of_a_killed_parse_is_refused_by_binarize_and_learn_vocab(
    gpt2_vocab, tmp_path, capsys
):
    text = tmp_path / "pubmed"
    parse = [BIO_ROBERTA, "parse-pubmed", str(PUBMED_SAMPLE), "--out", str(text), "--workers", "1"]
    killed = subprocess.run(
        parse,
        capture_output=True,
        env=dict(os.environ, BIO_ROBERTA_KILL_AT="text_shards:shards-written"),
    )
    assert killed.returncode == -signal.SIGKILL
    assert (text / "train.00000.txt").is_file() and not (text / "manifest.json").exists()
    with pytest.raises(
        TextDirError, match="pubmed: no manifest.json: the parse writing it did not finish"
    ):
        binarize(text, gpt2_vocab, tmp_path / "bin", progress=False)
    assert (
        cli_main(
            ["binarize", str(text), "--vocab", str(gpt2_vocab), "--out", str(tmp_path / "bin")]
        )
        == 2
    )
    error = capsys.readouterr().err
    assert f"finish it by re-running the same `bio-roberta parse-pubmed ... --out {text}`" in error
    assert not (tmp_path / "bin").exists()
    learn = ["learn-vocab", str(text), "--out", str(tmp_path / "vocab"), "--vocab-size", "300"]
    assert cli_main(learn) == 2
    assert capsys.readouterr().err.strip() == (
        f"bio-roberta learn-vocab: error: {text}: no manifest.json: the parse writing it did not "
        f"finish (killed or still running); finish it by re-running the same `bio-roberta "
        f"parse-pubmed ... --out {text}` (parsed inputs are reused)"
    )
    assert not (tmp_path / "vocab").exists()
    subprocess.run(parse, check=True, capture_output=True)
    assert (
        binarize(text, gpt2_vocab, tmp_path / "bin", progress=False)["splits"]["train"]["sequences"]
        > 0
    )


def death_signal(_) -> int:
    """This process' PR_GET_PDEATHSIG: the signal the kernel sends it when its parent dies."""
    import ctypes

    value = ctypes.c_int()
    ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(value))  # PR_GET_PDEATHSIG
    return value.value


def test_binarize_workers_end_with_binarize(gpt2_vocab):
    """Binarize's pool workers encoded on for ~9 s after a kill -9 of binarize; now the kernel
    SIGKILLs each when binarize dies (processes.end_with_parent in the pool's initializer)."""
    import multiprocessing

    from preprocess.binarize import _init_worker

    initargs = (read_vocab_dir(gpt2_vocab), 2)
    with multiprocessing.get_context("fork").Pool(2, _init_worker, initargs) as pool:
        assert pool.map(death_signal, range(4)) == [signal.SIGKILL] * 4
