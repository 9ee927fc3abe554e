"""`bio-roberta finetune` as docs/finetune.md shows it, on a tiny pretrained RoBERTa (roberta_tiny,
not the default roberta_base) and a tiny ncbi-disease finetune-bin: it fine-tunes the checkpoint's
own architecture with the registry's hyperparameters (its encoder unpadded, as on any CPU), writes
an ok result record and exits 0, in one process that imports torch once and never torch._dynamo."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from doc_commands import find_command
from finetune_data import build_ner

pytestmark = pytest.mark.slow


def test_finetune_runs_as_documented(tmp_path, tiny_roberta_checkpoint):
    build_ner(
        tmp_path / "finetune-bin" / "ncbi-disease", tiny_roberta_checkpoint.parent / "dict.txt"
    )
    command = find_command("docs/finetune.md", "bio-roberta finetune ")
    # CKPT is the page's placeholder for the pretrained checkpoint
    argv = [arg.replace("CKPT", str(tiny_roberta_checkpoint)) for arg in shlex.split(command)]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHONPROFILEIMPORTTIME"] = "1"  # each import of each process, on its stderr
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    (path,) = (tmp_path / "results").rglob("result.json")
    record = json.loads(path.read_text())
    # the command's stderr, its Hydra app's and the run's own output (where each went meanwhile)
    (hydra_log,) = (tmp_path / "results" / "hydra").glob("finetune-*.log")
    output = run.stderr + hydra_log.read_text() + Path(record["log"]).read_text()
    imported = [
        line.rsplit("|", 1)[1].strip()
        for line in output.splitlines()
        if line.startswith("import time:")
    ]
    assert imported.count("torch") == 1 and imported.count("fairseq") == 1, imported.count("torch")
    assert "torch._dynamo" not in imported
    assert "scipy.stats" not in imported and "sklearn" not in imported  # deferred_imports.py
    # on the CPU a RoBERTa fine-tunes with the GEMMs on its real tokens only (auto)
    assert "RoBERTa encoder: unpadded implementation" in Path(record["log"]).read_text()
    assert record["status"] == "ok" and (record["task"], record["seed"]) == ("ncbi-disease", 10)
    args = record["config"]["fairseq_args"]
    assert args[args.index("--arch") + 1] == "roberta_tiny"
    assert args[args.index("--lr") + 1] == "1e-05"  # the registry's, no override
    assert 0.0 <= record["test_score"] <= 1.0
