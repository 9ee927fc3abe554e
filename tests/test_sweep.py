"""`bio-roberta sweep` end to end on tiny data: a NER and a classification task x 2 seeds through
Hydra multirun -> real fairseq fine-tuning from the tiny pretrained checkpoint -> result records ->
report; finished runs are skipped on re-run; a failing run is recorded as failed and makes the exit
status 1. The commands run without the parse stage's dependencies, as on a training machine."""

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from finetune_data import (
    build_ner,
    input_dictionary,
    label_dictionary,
    write_indexed,
    write_manifest,
)
from tiny_training import TINY_WORDS

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TINY = [
    "hparams.max_epoch=2",
    "hparams.batch_size=8",
    "hparams.validate_interval_updates=3",
    "hparams.patience=2",
    "max_update=8",
    "num_workers=0",
    "log_interval=1",
]
# chemprot's run dir under TINY: its hparams that differ from the registry's
TINY_SETTING = "bs8-ep2-vi3-pat2"
CUE_WORDS = ("aspirin", "insulin", "mice")


def build_relation(
    root: Path, dict_txt: Path, task: str = "chemprot", seed: int = 0, splits=None
) -> Path:
    """A single-label finetune-bin (chemprot labels): the label is told by a cue word."""
    from bio_roberta.tasks.kinds import label_symbols
    from bio_roberta.tasks.registry import get_task

    rng = random.Random(seed)
    vocab = input_dictionary(root, dict_txt)
    symbols = label_symbols(get_task(task))
    labels = label_dictionary(root, symbols)
    cue = dict(zip(symbols, CUE_WORDS))
    splits = splits or {"train": 48, "valid": 16, "test": 16}
    for split, n in splits.items():
        tokens, label_rows = [], []
        for _ in range(n):
            label = rng.choice(sorted(cue))
            words = [rng.choice(TINY_WORDS) for _ in range(rng.randint(3, 12))] + [cue[label]]
            tokens.append([vocab.index(w) for w in words] + [vocab.eos()])
            label_rows.append([labels.index(label), labels.eos()])
        write_indexed(root / "input0" / split, tokens, len(vocab))
        write_indexed(root / "label" / split, label_rows, len(labels))
        (root / f"{split}.ids").write_text("".join(f"{split}:{i}\n" for i in range(n)))
    write_manifest(root, task, labels.symbols[labels.nspecial :])
    return root


def build_ner_and_chemprot(root: Path, checkpoint: Path) -> Path:
    """A finetune-bin root of ncbi-disease and chemprot on the checkpoint's dictionary."""
    dict_txt = checkpoint.parent / "dict.txt"
    build_ner(root / "ncbi-disease", dict_txt)
    build_relation(root / "chemprot", dict_txt)
    return root


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, tiny_roberta_checkpoint):
    return build_ner_and_chemprot(tmp_path_factory.mktemp("finetune-bin"), tiny_roberta_checkpoint)


def bio_roberta(env, *args):
    run = subprocess.run(
        [str(BIN / "bio-roberta"), *map(str, args)], capture_output=True, text=True, env=env
    )
    return run, run.stdout + run.stderr


def sweep_chemprot_seed_7(env, pretrained, data_root, results):
    """`bio-roberta sweep` of one run: chemprot, seed 7, tiny settings."""
    return bio_roberta(
        env,
        "sweep",
        "--tasks",
        "chemprot",
        "--seed-list",
        "7",
        "--pretrained",
        pretrained,
        "--data-root",
        data_root,
        "--results",
        results,
        *TINY,
    )


def records(results: Path) -> dict:
    return {
        (r["task"], r["seed"], r["fold"]): r
        for r in (json.loads(p.read_text()) for p in sorted(results.rglob("result.json")))
    }


def test_sweep_records_reruns_failures_and_report(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    def sweep(*args):
        return bio_roberta(without_parse_dependencies, "sweep", *args)

    results = tmp_path / "results"
    common = [
        "--pretrained",
        tiny_roberta_checkpoint,
        "--data-root",
        data_root,
        "--results",
        results,
        *TINY,
    ]
    run, log = sweep(
        "--tasks",
        "ncbi-disease,chemprot",
        "--seed-list",
        "10,42",
        *common,
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    )
    assert run.returncode == 0, log[-4000:]
    # Hydra's and the jobs' own lines go to a file under results/hydra, fairseq's to train.log
    (hydra_output,) = (results / "hydra").glob("sweep-*.log")
    assert "Joblib.Parallel" in hydra_output.read_text() and "Joblib" not in log, log[-2000:]
    assert "| INFO |" not in log and "fairseq" not in log, log[-2000:]
    found = records(results)
    assert set(found) == {(t, s, None) for t in ("ncbi-disease", "chemprot") for s in (10, 42)}, (
        log[-4000:]
    )
    for (task, seed, _), record in found.items():
        assert record["status"] == "ok", record.get("error")
        assert record["metric"] == {"ncbi-disease": "entity_f1", "chemprot": "macro_f1"}[task]
        assert 0.0 <= record["test_score"] <= 1.0 and 0.0 <= record["valid_score"] <= 1.0
        assert record["checkpoint"]["sha256"] and record["pretrained"]["sha256"]
        assert record["data"]["manifest_hash"] and record["git_revision"] is not None
        assert record["package_versions"]["torch"].startswith("2.13")
        assert record["config"]["hparams"]["max_epoch"] == 2 and record["config"]["seed"] == seed
        args = record["config"]["fairseq_args"]
        assert args[args.index("--best-checkpoint-metric") + 1] == record["metric"]
        assert args[args.index("--lr") + 1] == {"ncbi-disease": "1e-05", "chemprot": "2e-05"}[task]
        assert "--restore-file" in args and "--reset-lr-scheduler" in args
        # no --arch given: the pretrained checkpoint's own architecture, shape and positions
        assert args[args.index("--arch") + 1] == "roberta_tiny" and "--encoder-embed-dim" in args
        assert (
            args[args.index("--max-positions") + 1]
            == "32"
            == str(record["config"]["max_positions"])
        )
        assert Path(record["predictions"]["path"]).exists() and Path(record["log"]).exists()
        # its two validation passes (one an epoch) timed apart from the updates
        assert 0 < record["timings"]["valid_seconds"] < record["timings"]["train_seconds"]
    # each run as it starts (run i/4, with its log) and ends (its dev and test score), then the
    # table of all four
    from bio_roberta.finetuning.results import run_name, setting_name

    lines = run.stderr.splitlines()
    assert f"bio-roberta sweep: Hydra's and its jobs' output: {hydra_output}" in log
    for (task, seed, _), record in found.items():
        name = run_name(task, setting_name(record["setting"]), seed, None)
        ended = next(
            line for line in lines if line.endswith(f"log {record['log']}") and "ok in" in line
        )
        assert ended.startswith("bio-roberta sweep: run ") and f"/4 {name}: ok in " in ended, ended
        metric = record["metric"]
        assert (
            f"dev {metric} {100 * record['valid_score']:.2f}, "
            f"test {metric} {100 * record['test_score']:.2f}; " in ended
        )
    assert sorted(line.split()[3] for line in lines if ": started, log " in line) == [
        f"{i}/4" for i in range(1, 5)
    ]
    table = lines[
        lines.index("bio-roberta sweep: scores x100 of each run (dev: the selected checkpoint's)")
        + 1 :
    ]
    assert table[0].split() == [
        "task",
        "seed",
        "setting",
        "fold",
        "metric",
        "dev",
        "test",
        "time",
        "status",
    ]
    assert sorted(row.split()[:2] + row.split()[-1:] for row in table[1:]) == sorted(
        [task, str(seed), "ok"] for task, seed, _ in found
    )
    ner_args = found[("ncbi-disease", 10, None)]["config"]["fairseq_args"]
    assert "--patience" in ner_args  # the tiny override; NER has no patience in the registry
    assert (
        found[("chemprot", 10, None)]["checkpoint"]["sha256"]
        != found[("chemprot", 42, None)]["checkpoint"]["sha256"]
    )

    rerun, log = sweep("--tasks", "ncbi-disease,chemprot", "--seed-list", "10,42", *common)
    assert rerun.returncode == 0, log[-4000:]
    assert records(results) == found
    assert "4 run(s), 4 finished before" in log and ": started, log " not in log, log[-2000:]
    assert [row.split()[-1] for row in rerun.stderr.splitlines()[-4:]] == ["kept"] * 4

    failing, log = sweep(
        "--tasks", "chemprot", "--seed-list", "7", *common, "extra_args=[--no-such-option]"
    )
    failed = records(results)[("chemprot", 7, None)]
    assert failed["status"] == "failed" and "fairseq-train exited with status 2" in failed["error"]
    assert Path(failed["log"]).exists() and failed["test_score"] is None
    assert failing.returncode == 1, log[-4000:]
    assert (
        f"bio-roberta sweep: run 1/1 chemprot {TINY_SETTING} seed 7: failed in " in failing.stderr
    ) and f"{failed['error'].splitlines()[0]}; log {failed['log']}" in failing.stderr
    assert failing.stderr.strip().splitlines()[-2:] == [
        "bio-roberta: 1 run(s) failed:",
        f"  chemprot {TINY_SETTING} seed 7: {failed['error']} (log: {failed['log']})",
    ]

    out = tmp_path / "report"
    report, _ = bio_roberta(without_parse_dependencies, "report", results, "--out", out)
    assert report.returncode == 0, report.stderr[-3000:]
    markdown = (out / "report.md").read_text()
    assert "NCBI-disease" in markdown and "ChemProt" in markdown and "2/5" in markdown
    assert "chemprot" in markdown.split("Failed runs")[1] and "seed 7" in markdown
    assert (out / "report.csv").exists() and (out / "scores.png").stat().st_size > 0


def test_the_sweep_module_leaves_fairseqs_hydra_working_in_the_same_process():
    """Importing bio_roberta.finetuning.sweep and composing a job's config keep Hydra's process-wide
    version base, under which fairseq's own Hydra use (hydra.experimental) still composes its
    config."""
    import importlib

    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.options import get_training_parser, parse_args_and_arch

    import bio_roberta.finetuning.sweep

    importlib.reload(bio_roberta.finetuning.sweep)
    bio_roberta.finetuning.sweep.compose_config(
        ["task_name=ncbi-disease", "pretrained=x", "data_root=y", "results_dir=z"]
    )
    args = parse_args_and_arch(
        get_training_parser(), ["data", "--task", "masked_lm", "--arch", "roberta_base"]
    )
    assert convert_namespace_to_omegaconf(args).task._name == "masked_lm"


def test_cross_validation_fold_one_sets_the_updates_of_the_other_folds(
    tmp_path, tiny_roberta_checkpoint, monkeypatch
):
    """GAD-style: the model-selection fold trains with validation; its best update count stops the
    evaluation folds, whose median is the seed's score in the report."""
    import dataclasses

    from bio_roberta.finetuning import job as finetune
    from bio_roberta.finetuning.sweep import compose_config
    from bio_roberta.tasks.registry import get_task

    three_folds = dataclasses.replace(get_task("gad"), folds=3, model_selection_fold=2)
    monkeypatch.setattr(finetune, "get_task", lambda name: three_folds)
    data_root = tmp_path / "finetune-bin"
    for fold in (1, 2, 3):  # fold 2 selects, folds 1 and 3 are scored
        build_relation(
            data_root / "gad" / f"fold{fold}",
            tiny_roberta_checkpoint.parent / "dict.txt",
            task="gad",
            seed=fold,
            splits={"train": 24, "valid": 8, "test": 8},
        )
    cfg = compose_config(
        [
            "task_name=gad",
            "seed=3",
            f"pretrained={tiny_roberta_checkpoint}",
            f"data_root={data_root}",
            f"results_dir={tmp_path / 'results'}",
            "arch=roberta_tiny",
            "hparams.max_epoch=2",
            "hparams.batch_size=8",
            "hparams.validate_interval_updates=2",
            "num_workers=0",
            "log_interval=1",
        ]
    )
    selection, *evaluation = finetune.run_task_seed(cfg)
    assert selection["role"] == "model_selection" and selection["status"] == "ok", selection.get(
        "error"
    )
    assert selection["fold"] == 2 and [r["fold"] for r in evaluation] == [1, 3]
    for record in evaluation:
        assert record["status"] == "ok", record.get("error")
        assert record["num_updates"] == selection["num_updates"]
        args = record["config"]["fairseq_args"]
        assert args[args.index("--max-update") + 1] == str(selection["num_updates"])
        assert (
            args[args.index("--total-num-update") + 1] == "6"
        )  # the selection fold's schedule: 2 epochs x 3 updates
        assert "--patience" not in args and record["checkpoint_selection"].startswith("last after")

    from bio_roberta.finetuning.results import load_records
    from bio_roberta.report.seed_results import task_results
    from bio_roberta.tasks.registry import TASKS

    results = tmp_path / "results"
    assert task_results(load_records(results))["gad"].short_folds == {3: "2/9 folds"}
    monkeypatch.setitem(TASKS, "gad", three_folds)
    gad = task_results(load_records(results))["gad"]
    assert gad.seed_scores == {3: (evaluation[0]["test_score"] + evaluation[1]["test_score"]) / 2}
    assert gad.short_folds == {}


def test_data_converted_for_more_positions_than_the_model_has_stops_before_training(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    """The model has 32 positions; chemprot was converted for the registry's 512."""
    longer = tmp_path / "finetune-bin"
    shutil.copytree(data_root / "chemprot", longer / "chemprot")
    manifest = json.loads((longer / "chemprot" / "manifest.json").read_text())
    (longer / "chemprot" / "manifest.json").write_text(
        json.dumps({**manifest, "max_positions": 512})
    )
    results = tmp_path / "results"
    run, log = sweep_chemprot_seed_7(
        without_parse_dependencies, tiny_roberta_checkpoint, longer, results
    )
    # before any run (issue 43: a failed record per run), with the command that converts it
    # again for the model (this hand-built manifest records no source dir: a placeholder)
    assert run.returncode == 2 and not results.exists(), log[-4000:]
    assert run.stderr.strip() == (
        f"bio-roberta sweep: error: {longer / 'chemprot'} was converted for 512 positions but "
        f"{tiny_roberta_checkpoint} has 32: convert it again for the model's: bio-roberta "
        "convert-task chemprot --data <its source files> --vocab <the model's vocabulary dir> "
        f"--out {longer / 'chemprot'} --pretrained {tiny_roberta_checkpoint}"
    )


def test_an_unreadable_pretrained_checkpoint_is_a_one_line_error(data_root, tmp_path):
    empty = tmp_path / "checkpoint_best.pt"
    empty.write_bytes(b"")
    run, log = sweep_chemprot_seed_7(None, empty, data_root, tmp_path / "results")
    assert run.returncode == 2 and "Traceback" not in log, log[-3000:]
    assert run.stderr.strip() == (
        f"bio-roberta sweep: error: --pretrained {empty}: empty (0 bytes), a write that was "
        "cut short; use another checkpoint"
    )


def test_a_pretrained_checkpoint_with_nan_weights_is_refused_before_any_run(
    data_root, tiny_roberta_checkpoint, tmp_path
):
    from test_export_hf import diverged_copy

    diverged = tmp_path / "diverged.pt"
    name = diverged_copy(tiny_roberta_checkpoint, diverged)
    run, log = sweep_chemprot_seed_7(None, diverged, data_root, tmp_path / "results")
    assert run.returncode == 2 and "Traceback" not in log, log[-3000:]
    assert run.stderr.strip().startswith(
        f"bio-roberta sweep: error: --pretrained {diverged}: weights not finite: {name} holds 1 "
        "NaN/Inf of "
    )
    assert not (tmp_path / "results").exists()


def converted_with(root: Path, task: str, lines: list[str]) -> Path:
    """finetune-bin/<task> whose input0/dict.txt has these lines (what the dictionary check
    reads)."""
    dict_txt = root / task / "input0" / "dict.txt"
    dict_txt.parent.mkdir(parents=True)
    dict_txt.write_text("".join(f"{line}\n" for line in lines))
    return dict_txt


def test_data_of_another_dictionary_is_refused_before_any_run(tiny_roberta_checkpoint, tmp_path):
    """An uncased import fine-tuned on data converted with a cased vocabulary of the same size
    trained (exit 0, ok record) with every token on another token's embedding; a dictionary of
    another size failed 20 s into fairseq. Now both are refused from the checkpoint's record of its
    dict.txt (sha256) and its embedding rows; the same entries with other counts pass."""
    from bio_roberta.errors import FinetuneError
    from bio_roberta.finetuning.pretrained_model import check_pretrained

    trained = (tiny_roberta_checkpoint.parent / "dict.txt").read_text().splitlines()
    recounted = [f"{line.rsplit(' ', 1)[0]} 1" for line in trained]
    converted_with(tmp_path / "a", "chemprot", recounted)
    check_pretrained(tiny_roberta_checkpoint, tmp_path / "a", ["chemprot"])

    swapped = [trained[1], trained[0], *trained[2:]]  # the same size, other ids
    dict_txt = converted_with(tmp_path / "b", "chemprot", swapped)
    with pytest.raises(FinetuneError) as error:
        check_pretrained(tiny_roberta_checkpoint, tmp_path / "b", ["chemprot"])
    assert str(error.value).startswith(
        f"{dict_txt} is not the dictionary {tiny_roberta_checkpoint} was trained with (the same "
        f"size, but not the dict.txt it records: "
    ), error.value
    assert "the same size, but not the dict.txt it records" in str(error.value)
    assert str(error.value).endswith(f"--out {tmp_path / 'b' / 'chemprot'}")

    dict_txt = converted_with(tmp_path / "c", "chemprot", trained[:-8])
    rows = len(trained) + 5  # fairseq's 4 specials and <mask>
    with pytest.raises(
        FinetuneError, match=f"{rows - 8} model rows for its entries, the checkpoint has {rows}"
    ):
        check_pretrained(tiny_roberta_checkpoint, tmp_path / "c", ["chemprot"])


def test_an_arch_fairseq_does_not_know_or_of_another_family_is_refused_before_any_run(
    tiny_roberta_checkpoint, tmp_path
):
    """`sweep --arch no_such_arch` and a BERT architecture for a RoBERTa checkpoint failed inside
    each run after fairseq started."""
    from bio_roberta.errors import FinetuneError
    from bio_roberta.finetuning.pretrained_model import check_pretrained

    trained = (tiny_roberta_checkpoint.parent / "dict.txt").read_text().splitlines()
    converted_with(tmp_path, "chemprot", trained)
    check_pretrained(tiny_roberta_checkpoint, tmp_path, ["chemprot"], "roberta_base")
    with pytest.raises(FinetuneError) as error:
        check_pretrained(tiny_roberta_checkpoint, tmp_path, ["chemprot"], "no_such_arch")
    assert str(error.value) == (
        "--arch no_such_arch: not a fairseq architecture; leave --arch out to fine-tune "
        f"{tiny_roberta_checkpoint}'s own (roberta_tiny)"
    )
    with pytest.raises(FinetuneError) as error:
        check_pretrained(tiny_roberta_checkpoint, tmp_path, ["chemprot"], "bert_encoder")
    assert str(error.value) == (
        f"--arch bert_encoder: a bert_encoder architecture, but {tiny_roberta_checkpoint} is a "
        "roberta model (roberta_tiny); leave --arch out or choose a roberta architecture"
    )


def test_a_run_dir_is_held_for_the_whole_command(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    """Two `finetune --task ncbi-disease --seed 10 --results res` 3 s apart both trained into the
    same checkpoints and exited 0, the first result.json replaced; the same for a finetune during a
    sweep. Every command that writes a run dir holds its lock (output_dir.output_lock) from start to
    end; a second writer is refused before anything runs, naming the holder."""
    import os
    import socket

    from bio_roberta.finetuning.results import grid_settings, run_dir
    from bio_roberta.finetuning.sweep import hparams_grid
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.output_dir import output_lock

    results = tmp_path / "results"
    common = ["--pretrained", tiny_roberta_checkpoint, "--data-root", data_root, *TINY]
    # the dir of the setting TINY's hparams give chemprot (results.run_dir names it)
    (setting,) = grid_settings(get_task("chemprot").hparams, hparams_grid(TINY)).values()
    held = run_dir(results, "chemprot", 7, None, setting).resolve()
    assert held.parent.name != "chemprot"  # a setting dir, not the registry's
    with output_lock(held):  # as a running finetune or sweep of chemprot seed 7 holds it
        for command in (
            ["finetune", "--task", "chemprot", "--seed", "7", "--results", results],
            ["sweep", "--tasks", "chemprot,ncbi-disease", "--seed-list", "7", "--results", results],
        ):
            run, log = bio_roberta(without_parse_dependencies, *command, *common)
            assert run.returncode == 2 and "Traceback" not in log, log[-3000:]
            (line,) = run.stderr.strip().splitlines()
            assert line.startswith(
                f"bio-roberta {command[0]}: error: {held}: another run is writing it: pid "
                f"{os.getpid()} on {socket.gethostname()}, started "
            ), line
    assert not list(results.rglob("result.json")) and not list(results.rglob("train.log"))


def command_line_of(pid: int | str) -> str:
    """The command line of process pid ("" once it ended)."""
    try:
        line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # ended
        return ""
    return line.replace(b"\0", b" ").decode(errors="replace")


def processes_mentioning(text: str) -> list[str]:
    """The command lines of the running processes that hold `text`."""
    lines = (command_line_of(path.parent.name) for path in Path("/proc").glob("[0-9]*/cmdline"))
    return [line for line in lines if text in line]


def test_a_killed_sweep_takes_its_runs_with_it_and_the_report_lists_them_unfinished(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    """kill -9 of `bio-roberta sweep` once fairseq-train runs (the kill-point hook kills the command
    that owns the job; under Hydra's basic launcher the job runs in the command's own process):
    its Hydra job and fairseq-train went on running, racing the next sweep in the same run dirs,
    and the report showed "Failed runs (0)" without the task."""
    results = tmp_path / "results"
    kill_at = "fine_tune:training-started:command"
    env = {**without_parse_dependencies, "BIO_ROBERTA_KILL_AT": kill_at}
    run, log = sweep_chemprot_seed_7(env, tiny_roberta_checkpoint, data_root, results)
    assert run.returncode == -signal.SIGKILL, log[-3000:]
    deadline = time.monotonic() + 60  # the kernel kills them at once; an orphan would train on
    while (left := processes_mentioning(str(results))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left
    record = records(results)[("chemprot", 7, None)]
    assert record["status"] == "started" and record["test_score"] is None

    report, log = bio_roberta(None, "report", results, "--out", tmp_path / "report")
    assert report.returncode == 0, log[-3000:]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## Failed runs (0)" in markdown
    assert (
        f"## Unfinished runs (1)\n\n- chemprot {TINY_SETTING} seed 7: unfinished: started "
        f"{record['timings']['started']} and never recorded a result (killed, or still running; "
        f"log: {results.resolve()}/chemprot/{TINY_SETTING}/seed7/train.log)"
    ) in markdown


def run_statuses(results: Path) -> list[str]:
    """The status of each run record under results (one being written meanwhile: left out)."""
    statuses = []
    for path in results.rglob("result.json"):
        try:
            statuses.append(json.loads(path.read_text())["status"])
        except (OSError, ValueError):
            continue
    return statuses


def process_tree(root: int) -> set[tuple[int, str]]:
    """(pid, start time) of root's running descendants, from /proc's parent links."""
    from bio_roberta_core.processes import _start_time

    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.add((pid, _start_time(pid)))
        todo += children.get(pid, [])
    return found


def tree_once_a_run_started(sweep: subprocess.Popen, results: Path) -> set[tuple[int, str]]:
    """The process tree of a running sweep once one of its runs records itself started."""
    deadline = time.monotonic() + 300
    while sweep.poll() is None and time.monotonic() < deadline:
        if any(status == "started" for status in run_statuses(results)):
            break
        time.sleep(0.2)
    return process_tree(sweep.pid)


def kill_and_check_every_run_ends(
    sweep: subprocess.Popen, tree: set[tuple[int, str]], results: Path
) -> None:
    """kill -9 the sweep: each process of its tree ends within 30 s (the watchdogs poll every
    0.1 s), as does any other process naming its results dir, and no run turns ok after."""
    from bio_roberta_core.processes import _start_time

    sweep.kill()
    sweep.wait()
    killed_at = time.time()
    assert sweep.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = [pid for pid, started in tree if _start_time(pid) == started]
        left += processes_mentioning(str(results))
        if not left:
            break
        time.sleep(0.2)
    assert not left
    finished = {p: json.loads(p.read_text())["status"] for p in results.rglob("result.json")}
    assert not [
        p for p, status in finished.items() if status == "ok" and p.stat().st_mtime > killed_at
    ]


def test_kill_9_of_a_joblib_sweep_leaves_no_worker_and_frees_its_run_dirs(
    data_root, tiny_roberta_checkpoint, tmp_path, without_parse_dependencies
):
    """kill -9 of `bio-roberta sweep ... hydra/launcher=joblib hydra.launcher.n_jobs=2` (3 jobs)
    once a run trains (its record says started): joblib's loky workers and their fairseq-train
    went on training, took the third job and wrote ok records after the kill; the identical next
    sweep then ran into the same run dirs. Now every process of the sweep ends with it
    (processes.end_with_owner) and the next sweep is the only writer."""

    results = tmp_path / "results"
    arguments = ["sweep", "--tasks", "chemprot", "--seed-list", "1,2,3", "--results", results]
    arguments += ["--pretrained", tiny_roberta_checkpoint, "--data-root", data_root, *TINY]
    arguments += ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    sweep = subprocess.Popen(
        [str(BIN / "bio-roberta"), *map(str, arguments)],
        env=without_parse_dependencies,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tree = tree_once_a_run_started(sweep, results)
    # joblib's loky workers, started by the command itself, each training a run (beside them
    # loky's and multiprocessing's resource trackers)
    workers = [pid for pid, _ in tree if "LokyProcess" in command_line_of(pid)]
    assert len(workers) == 2, tree
    kill_and_check_every_run_ends(sweep, tree, results)

    rerun, log = bio_roberta(without_parse_dependencies, *arguments)
    assert rerun.returncode == 0, log[-3000:]
    assert {key: r["status"] for key, r in records(results).items()} == {
        ("chemprot", seed, None): "ok" for seed in (1, 2, 3)
    }


def sweep_args(tmp_path, tasks, seeds=None, seed_list=None):
    import argparse

    from bio_roberta.tasks.registry import get_task

    for task in tasks.split(","):  # converted, as far as the sweep's check before any run reads
        fold = get_task(task).run_folds[0]
        data = tmp_path / "finetune-bin" / task / (f"fold{fold}" if fold is not None else "")
        data.mkdir(parents=True, exist_ok=True)
        (data / "manifest.json").write_text("{}")
    return argparse.Namespace(
        tasks=tasks,
        seeds=seeds,
        seed_list=seed_list,
        pretrained=str(tmp_path / "checkpoint.pt"),
        data_root=str(tmp_path / "finetune-bin"),
        results=str(tmp_path / "results"),
        arch=None,
        overrides=[],
        cfg=None,
        task_files=[],
        quiet=False,
        verbose=False,
        runs_per_device=None,
        devices=None,
        device_memory_gb=None,
    )


@pytest.fixture
def fake_multirun(monkeypatch):
    """`bio-roberta sweep` with each multirun of the Hydra app replaced by one that writes an ok
    record for every (task, seed) of its command line (or a failed one for the pairs in `fail`);
    returns the (task, seed) pairs each multirun got."""
    from bio_roberta.commands import sweep as command
    from bio_roberta.finetuning import pretrained_model
    from bio_roberta.finetuning import sweep as sweep_app
    from bio_roberta.finetuning.results import RESULT_SCHEMA, run_dir
    from bio_roberta_core.provenance import atomic_write_json

    multiruns, fail = [], set()

    def multirun(arguments):
        assert arguments[0] == "--multirun"
        options = dict(arg.split("=", 1) for arg in arguments if "=" in arg)
        pairs = [
            (task, int(seed))
            for task in options["task_name"].split(",")
            for seed in options["seed"].split(",")
        ]
        multiruns.append(pairs)
        for task, seed in pairs:
            status = "failed" if (task, seed) in fail else "ok"
            record = {"schema": RESULT_SCHEMA, "status": status, "error": "boom", "log": None}
            atomic_write_json(run_dir(options["results_dir"], task, seed) / "result.json", record)
        return 0

    monkeypatch.setattr(pretrained_model, "check_pretrained", lambda *checked: None)
    monkeypatch.setattr(sweep_app, "run_app", multirun)
    return command, multiruns, fail


def test_each_task_runs_its_own_seeds_and_no_other(fake_multirun, tmp_path, monkeypatch, capsys):
    """A ten-seed task beside five-seed ones: one multirun per seed list, every (task, seed) of
    each task's seeds run once, none outside them."""
    import dataclasses

    from bio_roberta.tasks.registry import TASKS
    from bio_roberta.tasks.spec import DEFAULT_SEEDS, TEN_SEEDS

    command, multiruns, _ = fake_multirun
    monkeypatch.setitem(TASKS, "bc2gm", dataclasses.replace(TASKS["bc2gm"], seeds=TEN_SEEDS))
    tasks = "ncbi-disease,bc2gm,chemprot"
    assert command.run(sweep_args(tmp_path, tasks)) == 0
    assert multiruns == [
        [(t, s) for t in ("ncbi-disease", "chemprot") for s in DEFAULT_SEEDS],
        [("bc2gm", s) for s in TEN_SEEDS],
    ]
    assert "multirun 2/2: bc2gm x seeds 10,42,1234,12345,666,1,2,3,4,5 (10 jobs)" in (
        capsys.readouterr().err
    )

    multiruns.clear()
    assert command.run(sweep_args(tmp_path, tasks, seeds=3)) == 0
    assert multiruns == [[(t, s) for t in tasks.split(",") for s in DEFAULT_SEEDS[:3]]]
    multiruns.clear()
    assert command.run(sweep_args(tmp_path, tasks, seed_list="7,8")) == 0
    assert multiruns == [[(t, s) for t in tasks.split(",") for s in (7, 8)]]

    from bio_roberta.cli import UsageError

    with pytest.raises(UsageError, match="--seeds 6: .*ncbi-disease has 5; chemprot has 5"):
        command.run(sweep_args(tmp_path, tasks, seeds=6))
    with pytest.raises(UsageError, match="--seeds 0"):
        command.run(sweep_args(tmp_path, tasks, seeds=0))


def test_failed_runs_of_every_seed_list_set_the_exit_status(
    fake_multirun, tmp_path, monkeypatch, capsys
):
    import dataclasses

    from bio_roberta.tasks.registry import TASKS
    from bio_roberta.tasks.spec import TEN_SEEDS

    command, multiruns, fail = fake_multirun
    monkeypatch.setitem(TASKS, "bc2gm", dataclasses.replace(TASKS["bc2gm"], seeds=TEN_SEEDS))
    fail.add(("bc2gm", 5))  # the tenth seed, in the second multirun
    assert command.run(sweep_args(tmp_path, "ncbi-disease,bc2gm")) == 1
    assert capsys.readouterr().err.strip().splitlines()[-2:] == [
        "bio-roberta: 1 run(s) failed:",
        "  bc2gm seed 5: boom (stopped before training, no log)",
    ]


def test_a_grid_multiplies_the_jobs_and_each_settings_runs_are_checked(
    fake_multirun, tmp_path, capsys
):
    """hparams.lr=1e-5,3e-5: two settings of each job; the fake multirun writes only the
    registry's setting (ncbi-disease's lr is 1e-5), so lr 3e-5's runs are missing, each named."""
    command, multiruns, _ = fake_multirun
    args = sweep_args(tmp_path, "ncbi-disease", seed_list="10,42")
    args.overrides = ["hparams.lr=1e-5,3e-5"]
    assert command.run(args) == 1
    err = capsys.readouterr().err
    assert "ncbi-disease x seeds 10,42 x 2 hparams settings (4 jobs)" in err
    assert err.strip().splitlines()[-3:] == [
        "bio-roberta: 2 run(s) failed:",
        *(
            f"  ncbi-disease lr3e-05 seed {seed}: no result record {tmp_path}/results/"
            f"ncbi-disease/lr3e-05/seed{seed}/result.json (the job's log is under "
            f"{tmp_path}/results/hydra)"
            for seed in (10, 42)
        ),
    ]


def test_cfg_job_prints_each_tasks_config_with_its_resolved_hyperparameters(
    fake_multirun, tmp_path, capsys
):
    """`sweep --cfg job` as Hydra's --cfg job: the composed config of each task's job (a sweep
    override at its first value), plus the hyperparameters its runs train with (the registry's,
    overridden by hparams), and nothing run or written."""
    import yaml

    from bio_roberta.tasks.registry import TASKS

    command, multiruns, _ = fake_multirun
    args = sweep_args(tmp_path, "ncbi-disease,biosses", seeds=2)
    args.cfg, args.overrides = "job", ["hparams.max_epoch=2", "hparams.lr=1e-5,2e-5"]
    assert command.run(args) == 0
    assert multiruns == [] and not (tmp_path / "results").exists()
    jobs = [yaml.safe_load(doc) for doc in capsys.readouterr().out.split("\n\n")]
    assert [job["task_name"] for job in jobs] == ["ncbi-disease", "biosses"]
    for job in jobs:
        registry = TASKS[job["task_name"]].hparams
        assert job["seed"] == TASKS[job["task_name"]].seeds[0]
        assert job["hparams"]["max_epoch"] == 2 and job["hparams"]["batch_size"] is None
        assert job["resolved_hparams"] == {
            **vars(registry),
            "max_epoch": 2,
            "lr": 1e-5,
        }
    assert jobs[0]["resolved_hparams"]["batch_size"] != jobs[1]["resolved_hparams"]["batch_size"]


@pytest.mark.parametrize(
    "override, why",
    [
        ("hparams.max_epochs=1", "Key 'max_epochs' not in 'HparamsOverrides'"),
        ("hydra/launcher=jobib", "Could not find 'hydra/launcher/jobib'"),
        ("max_update=abc", "could not be converted to Integer"),
    ],
)
def test_a_mistyped_override_is_one_line_naming_it_before_any_run(override, why, tmp_path):
    """Not "N run(s) failed, log under RESULTS/hydra" (a dir Hydra never created): Hydra composes
    the job first, in the command, and its refusal names the override."""
    for command in ("sweep --tasks", "finetune --task"):
        run = subprocess.run(
            [str(BIN / "bio-roberta"), *command.split(), "ncbi-disease", "--pretrained", "x.pt"]
            + ["--data-root", str(tmp_path), "--results", str(tmp_path / "results")]
            + ["hparams.lr=1e-5", override],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert f"Hydra override {override!r} does not apply: " in run.stderr and why in run.stderr
        assert not (tmp_path / "results").exists()


def test_suites_select_registry_tasks():
    from bio_roberta.commands.sweep import selected_tasks
    from bio_roberta.tasks.registry import TASKS

    lewis = selected_tasks("lewis")
    assert len(lewis) == 18 and selected_tasks("all") == lewis
    assert selected_tasks("public") == [t for t in lewis if TASKS[t].public]
    assert all(TASKS[t].paper for t in lewis)


def test_blurb_suite_tasks():
    """All 13 BLURB datasets (issue 21: ChemProt, DDI and HoC follow BLURB's protocol with
    LinkBERT's or BLURB's files); ChemProt and HoC as BLURB's tasks, scored by its metric."""
    from bio_roberta.commands.sweep import selected_tasks

    blurb = selected_tasks("blurb")
    assert set(blurb) == {
        "bc5cdr-chem",
        "bc5cdr-disease",
        "ncbi-disease",
        "bc2gm",
        "jnlpba",
        "ebm-pico",
        "gad-blurb",
        "biosses",
        "pubmedqa",
        "bioasq",
        "chemprot-blurb",
        "ddi",
        "hoc-blurb",
    }
    both = selected_tasks("both")
    assert set(both) == set(blurb) | set(selected_tasks("lewis")) and len(both) == 18 + 7
