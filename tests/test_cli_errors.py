"""What the user must fix is one BioRobertaError: every error class of our packages derives from it,
and raised anywhere inside a command it reaches the user as one line, `bio-roberta <command>:
error: <message>`, exit status 2, without the command catching it."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys

import pytest

from bio_roberta.cli import OUR_PACKAGES
from bio_roberta_core.errors import BioRobertaError
from conftest import REPO_ROOT


def is_error_class(node: ast.AST) -> bool:
    """A class named, or deriving from a class named, *Error or *Exception."""
    if not isinstance(node, ast.ClassDef):
        return False
    names = [node.name, *(ast.unparse(base).rpartition(".")[2] for base in node.bases)]
    return any(name.endswith(("Error", "Exception")) for name in names)


def error_classes() -> dict[str, list[str]]:
    """Module -> the error classes it defines, over every module of our packages."""
    found = {}
    for package in OUR_PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = [node.name for node in ast.walk(tree) if is_error_class(node)]
            if names:
                module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
                found[module.removesuffix(".__init__")] = names
    return found


def test_every_error_class_derives_from_the_base():
    classes = {
        name: getattr(importlib.import_module(module), name)
        for module, names in error_classes().items()
        for name in names
    }
    assert {"UsageError", "CheckpointError", "VocabDirError", "OutputBusyError"} <= set(classes)
    without = [name for name, cls in classes.items() if not issubclass(cls, BioRobertaError)]
    assert not without, f"error classes not deriving from BioRobertaError: {without}"


def bad_ner_dir(root):
    """A BioBERT NER dir whose train.tsv has a tag without its token on line 2."""
    root.mkdir()
    for split in ("train", "devel", "test"):
        (root / f"{split}.tsv").write_text("x\tO\n\tB\n")
    return root


def albert_dir(root):
    root.mkdir()
    (root / "config.json").write_text(
        json.dumps({"model_type": "albert", "embedding_size": 128, "hidden_size": 768})
    )
    return root


# command -> (its arguments, {tmp} for the test's dir; what that dir needs; the message after
# "error: "). Each error used to be translated into a UsageError by its command.
CASES = {
    "report": (
        "{tmp}/empty --out {tmp}/out",
        lambda tmp: (tmp / "empty").mkdir(),
        "{tmp}/empty: no result.json records; run `bio-roberta sweep` first",
    ),
    "convert-task": (
        "linnaeus --data {tmp}/ner --vocab {tmp}/vocab --out {tmp}/out",
        lambda tmp: bad_ner_dir(tmp / "ner"),
        "{tmp}/ner/train.tsv:2: empty token before the tag 'B'",
    ),
    "export-hf": (
        "{tmp}/nope.pt {tmp}/out --vocab {tmp}/vocab",
        lambda tmp: None,
        (
            "{tmp}/vocab/manifest.json: no vocabulary manifest; create the dir with "
            "`bio-roberta learn-vocab`"
        ),
    ),
    "import-hf": (
        "{tmp}/albert {tmp}/out",
        lambda tmp: albert_dir(tmp / "albert"),
        (
            "{tmp}/albert/config.json: model_type 'albert': ALBERT shares its layers and projects "
            "its embedding_size to hidden_size, which fairseq's RoBERTa has no place for"
        ),
    ),
    "vocab-stats": (
        "--vocab {tmp}/vocab --ner linnaeus={tmp}/ner",
        lambda tmp: bad_ner_dir(tmp / "ner"),
        "{tmp}/ner/train.tsv:2: empty token before the tag 'B'",
    ),
    "curves": (
        "{tmp}/run --out {tmp}/out",
        lambda tmp: (tmp / "run").mkdir(),
        (
            "{tmp}/run: no TensorBoard events in {tmp}/run/train_inner; train with "
            "common.tensorboard_logdir set (configs/pretrain/base.yaml sets <save dir>/tensorboard)"
        ),
    ),
}


@pytest.mark.parametrize("command", sorted(CASES))
def test_an_error_inside_a_command_is_one_line_exit_2(command, tmp_path):
    arguments, prepare, message = CASES[command]
    prepare(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "bio_roberta", command, *arguments.format(tmp=tmp_path).split()],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 2 and run.stderr.splitlines() == [
        f"bio-roberta {command}: error: {message.format(tmp=tmp_path)}"
    ], run.stderr[-3000:]
    assert not (tmp_path / "out").exists()


def test_finetune_option_mistakes_say_what_to_give(tmp_path):
    """Issue 43's frictions: --pretrained given a run's dir, a hyperparameter given as an option
    (--lr), and --data-root given the parent of finetune-bin, each one line saying what to give."""
    from bio_roberta.commands._finetune_runs import check_converted
    from bio_roberta.errors import UsageError
    from bio_roberta_core.checkpoints import CheckpointError, read_checkpoint

    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "checkpoint_best.pt").write_bytes(b"")
    with pytest.raises(CheckpointError) as error:
        read_checkpoint(tmp_path / "ckpt")
    assert str(error.value) == (
        f"{tmp_path / 'ckpt'}: a directory, not a checkpoint file; give the file (here: "
        "checkpoint_best.pt; checkpoint_best.pt is the run's best, checkpoint_last.pt its last)"
    )

    run = subprocess.run(
        [sys.executable, "-m", "bio_roberta", "finetune", "--task", "ncbi-disease",
         "--pretrained", "m.pt", "--data-root", "d", "--results", "r", "--lr", "3e-5"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == (
        "bio-roberta: error: unrecognized arguments: --lr; a hyperparameter is a Hydra override "
        "after the options: hparams.lr=3e-5"
    )

    converted = tmp_path / "finetune-bin" / "ncbi-disease"
    converted.mkdir(parents=True)
    (converted / "manifest.json").write_text(json.dumps({"task": "ncbi-disease", "kind": "ner"}))
    with pytest.raises(UsageError) as error:
        check_converted(str(tmp_path), ["ncbi-disease"])
    assert str(error.value) == (
        f"no converted data for ncbi-disease: {tmp_path / 'ncbi-disease' / 'manifest.json'} not "
        "found (--data-root is the dir holding <task>/, as convert-task --out "
        f"DATA_ROOT/ncbi-disease wrote it); --data-root {tmp_path / 'finetune-bin'} holds it"
    )
    check_converted(str(tmp_path / "finetune-bin"), ["ncbi-disease"])
