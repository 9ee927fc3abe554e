"""`make demo`'s pipeline (scripts/demo.sh) runs end to end on the bundled sample, leaves every
stage's output in one directory with training curves, reports the training stages' progress, is
timed by scripts/benchmark_demo.py, README.md's first screen runs as written on its outputs, and a
second run reuses what is done."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from doc_commands import page_commands

pytestmark = pytest.mark.slow
PNG = b"\x89PNG\r\n\x1a\n"


def run_demo(*command) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        SEEDS="10,42",
        PROGRESS_SECONDS="1",
    )
    return subprocess.run(command, env=env, capture_output=True, text=True)


def readme_after_the_demo() -> list[str]:
    """README.md's block after `make demo`: from activating .venv to the next block's end."""
    commands = page_commands(REPO_ROOT / "README.md")
    start = commands.index("source .venv/bin/activate")
    return commands[start : commands.index("make venv")]


def test_demo_runs_every_stage_and_reuses_them(tmp_path):
    """The first run goes through scripts/benchmark_demo.py, which times it."""
    out = tmp_path / "demo-out"  # make demo's default, which the README's first screen names
    first = run_demo(sys.executable, REPO_ROOT / "scripts" / "benchmark_demo.py", "--out", out)
    assert first.returncode == 0, first.stderr[-4000:]
    timing = json.loads(first.stdout)
    assert [stage["stage"] for stage in timing["stages"]] == [f"{k}/9" for k in range(1, 10)]
    assert timing["total_seconds"] >= sum(stage["seconds"] for stage in timing["stages"]) - 1
    # the training and fine-tuning stages say how far they are, how long is left, where the log is
    for model, updates in (("teacher", 300), ("student", 200), ("distilled", 100)):
        progress = re.findall(
            rf"update (\d+)/{updates}, ETA \d+ s \(log: {out}/checkpoints/{model}\.log\)",
            first.stderr,
        )
        assert progress, (model, first.stderr[-4000:])
    # the fine-tuning stage: the sweep's own account, one counter (issue 43: the demo's watcher
    # interleaved with it, and every validation was a line: 187 lines in two minutes)
    assert re.search(r"bio-roberta sweep: run \d/4 .* seed \d+: \d+/\d+ updates", first.stderr)
    assert not re.search(r"\] run \d/4, ", first.stderr)
    stage = first.stderr.split("] 8/9 ")[1].split("] 9/9 ")[0]
    assert len(stage.splitlines()) < 80, stage
    assert (out / "training-curves.png").read_bytes()[:8] == PNG
    assert (out / "report" / "training_curves.png").read_bytes()[:8] == PNG
    for stage in (
        "text/pubmed",
        "text/pmc",
        "text/mimic",
        "vocab",
        "data-bin/pm",
        "data-bin/m3",
        "finetune-bin/ncbi-disease",
        "finetune-bin/chemprot",
    ):
        assert (out / stage / "manifest.json").is_file(), stage
    for model in ("teacher", "student", "distilled"):
        assert (out / "checkpoints" / model / "checkpoint_last.pt").is_file(), model
    records = [json.loads(p.read_text()) for p in sorted((out / "results").rglob("result.json"))]
    assert sorted((r["task"], r["seed"], r["status"]) for r in records) == [
        ("chemprot", 10, "ok"),
        ("chemprot", 42, "ok"),
        ("ncbi-disease", 10, "ok"),
        ("ncbi-disease", 42, "ok"),
    ]
    report = (out / "report" / "report.md").read_text()
    assert "| NCBI-disease | entity_f1 |" in report and "| ChemProt | macro_f1 |" in report
    assert (out / "report" / "scores.png").stat().st_size > 0 and (
        out / "report" / "report.csv"
    ).is_file()
    assert (out / "hf" / "distilled" / "config.json").is_file()
    assert json.loads((out / "hf" / "ncbi-disease" / "config.json").read_text())["id2label"]

    # README.md's first screen after the demo, as written, in a checkout laid out as after
    # `make demo` (issue 43: convert-task's 512 positions stopped the finetune on the demo's 128)
    (tmp_path / "sample").symlink_to(REPO_ROOT / "sample")
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    script = readme_after_the_demo()
    assert any(c.startswith("bio-roberta finetune --task my-ner") for c in script), script
    readme = subprocess.run(
        ["bash", "-e", "-c", "\n".join(script)], cwd=tmp_path, capture_output=True, text=True
    )
    assert readme.returncode == 0, readme.stderr[-4000:]
    predicted = [json.loads(line) for line in readme.stdout.splitlines() if line.startswith("{")]
    new_text = (REPO_ROOT / "sample" / "tasks" / "new-sentences.txt").read_text().splitlines()
    assert [record["line"] for record in predicted] == list(range(1, len(new_text) + 1))
    assert all(record["words"] and "entities" in record for record in predicted)
    (record,) = [json.loads(p.read_text()) for p in (out / "my-results").rglob("result.json")]
    assert (record["task"], record["status"]) == ("my-ner", "ok")
    assert (
        json.loads((out / "finetune-bin" / "my-ner" / "manifest.json").read_text())["max_positions"]
        == 128
    )

    second = run_demo("bash", REPO_ROOT / "scripts" / "demo.sh", out)
    assert second.returncode == 0, second.stderr[-4000:]
    log = second.stdout + second.stderr
    assert log.count("    reusing ") == 3
    # the sweep kept its four finished runs: said as it begins and in its table
    assert "bio-roberta sweep: 4 run(s), 4 finished before" in log
    assert sum(line.split()[-1:] == ["kept"] for line in log.splitlines()) == 4
