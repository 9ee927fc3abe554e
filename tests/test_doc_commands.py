"""Every command README.md and docs/*.md show (tests/doc_commands.py extracts them) is accounted
for here, and most of them run exactly as written:

- RUN (every command not listed below): test_documented_commands_run_as_written runs it,
  unchanged, with bash, at its stage of the pipeline (STAGES) in a
  workspace laid out with the paths the docs name (data/downloads/..., data/text/...,
  data/vocab/pm-50k, data/bin/pm, ckpt/pm-base, BioBERT/..., DDICorpus, finetune-bin, results, hf).
  Only the data is small: the bundled sample (sample/) as the PubMed, PMC and MIMIC-III downloads,
  the sample's NCBI-disease files as BioBERT's BC5CDR-chem folder (the same format), and small
  synthetic GAD folds and DDI corpus XML (tests/test_readers.py's writers). The options are the
  docs' own (a 50k vocabulary learned on the sample stops where its merges run out). What the
  docs take from an earlier stage that runs at real scale only is made small here:
  ckpt/pm-base/checkpoint_best.pt is a roberta_tiny trained 3 updates on data/bin/pm (the
  pretraining command itself is NOT_RUN), RoBERTa's files to import are this vocabulary's and
  checkpoint, and results/bc5cdr-chem/seed10 comes from `bio-roberta finetune`.
- SYNOPSIS: lines with PLACEHOLDERS and [optional] parts run in the form given beside each, the
  placeholders filled in from the workspace.
- ELSEWHERE: run as written by another test (named).
- NOT_RUN: needs the network, GPUs and days of training, licensed data or tens of fine-tuning
  runs (the reason is given, and which test runs the same code small). Their `bio-roberta`
  options are parsed by the real parser, their scripts and fairseq commands must exist.
A command added to the docs without an entry fails test_every_documented_command_is_accounted_for.
"""

from __future__ import annotations

import gzip
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SAMPLE_DIR
from doc_commands import documented_commands
from tiny_training import pretrain_tiny_roberta

BIN = Path(sys.executable).parent

SYNOPSIS = {
    "bio-roberta parse-mimic NOTEEVENTS.csv.gz --out data/text/mimic [--category NAME ...] "
    "[--all-categories] [--placeholders keep|type]": "bio-roberta parse-mimic NOTEEVENTS.csv.gz "
    "--out data/text/mimic-all --all-categories --placeholders type",
    "bio-roberta vocab-stats --vocab data/vocab/pm-50k data/vocab/roberta --ner "
    "bc5cdr-chem=BC5CDR-chem --text data/text/pubmed [--max-lines N] [--out stats.json]": (
        "bio-roberta vocab-stats --vocab data/vocab/pm-50k data/vocab/roberta --ner "
        "bc5cdr-chem=BC5CDR-chem --text data/text/pubmed --max-lines 100 --out stats.json"
    ),
    "bio-roberta convert-task TASK --data SOURCE_DIR --vocab VOCAB_DIR --out finetune-bin/TASK "
    "[--scheme BIO|IO|BIOUL] [--max-positions N] [--pretrained CHECKPOINT] "
    "[--max-unknown-rate R] [--long-inputs truncate|pieces|windows] [--window-stride N] "
    "[--window-pooling mean|max]": (
        "bio-roberta convert-task ncbi-disease --data BioBERT/NERdata/BC5CDR-chem --vocab "
        "data/vocab/pm-50k --out finetune-bin/ncbi-disease --scheme BIOUL --max-positions 128 "
        "--pretrained ckpt/pm-base/checkpoint_best.pt --max-unknown-rate 0.05 --long-inputs "
        "windows --window-stride 60"
    ),
    "bio-roberta report results --out results/report [--suite lewis|blurb|both] "
    "[--expected-seeds N] [--score-any-split]": "bio-roberta report results --out "
    "results/report-1 --suite both --expected-seeds 1 --score-any-split",
    "bio-roberta export-hf CHECKPOINT OUT_DIR --vocab VOCAB_DIR [--dict DICT] "
    "[--label-dict LABEL_DICT] [--head NAME] [--audit FILE] [--allow-unaudited] "
    "[--training-data DATA_BIN]": "bio-roberta "
    "export-hf "
    "results/bc5cdr-chem/seed10/checkpoints/checkpoint_best.pt hf/bc5cdr-chem-2 --vocab "
    "data/vocab/pm-50k --dict data/vocab/pm-50k/dict.txt --label-dict "
    "finetune-bin/bc5cdr-chem/label/dict.txt",
}
ELSEWHERE = {
    "bio-roberta report BioBERT=results/biobert results/roberta-base ours=results/pm-base --out "
    "results/compare --suite both": "tests/test_report_side_by_side.py, the same form (NAME=DIR, a "
    "DIR named by its checkpoint, --suite both) over toy sweeps of an imported BERT, an imported "
    "RoBERTa and a model of ours (three sweeps' results dirs, which the docs' workspace lacks)",
    "make demo": "tests/test_demo.py (scripts/demo.sh)",
    "make test": "the suite itself",
    "make venv": "make test and make demo, which set .venv up first",
    "source /path/to/env/bin/activate && scripts/install.sh --extras hf,tensorboard,slurm": (
        "tests/test_install.py runs scripts/install.sh through make install into a fresh venv"
    ),
    "make install PYTHON=/path/to/env/bin/python EXTRAS=hf,tensorboard,slurm": (
        "tests/test_install.py, with the fresh venv's python and EXTRAS=hf"
    ),
    "bio-roberta finetune --task ncbi-disease --seed 10 --pretrained CKPT --data-root "
    "finetune-bin --results results": "tests/test_finetune_command.py",
    "bio-roberta sweep --tasks ncbi-disease,biosses --pretrained CKPT --data-root finetune-bin "
    "--results results --cfg job hparams.max_epoch=3": "tests/test_sweep.py "
    "(test_cfg_job_prints_each_tasks_config_with_its_resolved_hyperparameters): the same two "
    "tasks, --cfg job and hparams overrides",
    "bio-roberta rescore blurb-run/submission --data data/blurb": "tests/test_blurb_toy_suite.py "
    "on blurb-suite's submission of toy files of all 13 datasets (the docs' workspace has no BLURB "
    "root); tests/test_submission.py its errors",
    "bio-roberta import-hf HF_DIR OUT": "tests/test_import_hf.py, on small models of each family",
    **dict.fromkeys(
        [
            (
                "bio-roberta convert-task my-ner --task-file my-ner.yaml --vocab data/vocab/pm-50k "
                "--out finetune-bin/my-ner"
            ),
            (
                "bio-roberta finetune --task my-ner --task-file my-ner.yaml --pretrained "
                "ckpt/pm-base/checkpoint_best.pt --data-root finetune-bin --results results"
            ),
            (
                "bio-roberta sweep --tasks my-ner,my-cls --task-file my-ner.yaml --task-file "
                "my-cls.json --pretrained ckpt/pm-base/checkpoint_best.pt --data-root finetune-bin "
                "--results results"
            ),
            (
                "bio-roberta report results --task-file my-ner.yaml --task-file my-cls.json --out "
                "results/report"
            ),
            "bio-roberta predict results/my-ner/seed10 --task-file my-ner.yaml --input new.txt",
            (
                "bio-roberta export-hf results/my-ner/seed10/checkpoints/checkpoint_best.pt "
                "hf/my-ner --vocab data/vocab/pm-50k --task-file my-ner.yaml"
            ),
        ],
        "tests/test_task_files.py (test_own_tasks_convert_fine_tune_report_predict_and_export): "
        "the same commands with --task-file over three task files (CoNLL with -DOCSTART-, CSV, "
        "save_to_disk), a tiny vocabulary and model, the sweep one tiny run of each (finetune "
        "is that sweep's single run; the docs' workspace has no task files)",
    ),
    **dict.fromkeys(
        [
            (
                "bio-roberta convert-task my-ner --task-file sample/tasks/my-ner.yaml --vocab "
                "demo-out/vocab --pretrained demo-out/checkpoints/distilled/checkpoint_last.pt "
                "--out demo-out/finetune-bin/my-ner"
            ),
            (
                "bio-roberta finetune --task my-ner --task-file sample/tasks/my-ner.yaml "
                "--pretrained demo-out/checkpoints/distilled/checkpoint_last.pt --data-root "
                "demo-out/finetune-bin --results demo-out/my-results"
            ),
            (
                "bio-roberta predict demo-out/my-results/my-ner/seed10 --input "
                "sample/tasks/new-sentences.txt"
            ),
        ],
        "tests/test_demo.py (test_demo_runs_every_stage_and_reuses_them): README.md's block "
        "after `make demo`, as written, on the demo's own outputs (demo-out)",
    ),
    "bio-roberta import-hf hf/biobert-v1.1 data/vocab/biobert": "tests/test_import_hf.py, on a "
    "small BERT built from BertConfig (BioBERT's own weights are a download)",
    **dict.fromkeys(
        [
            (
                "bio-roberta import-hf hf/BioClinical-ModernBERT-base "
                "data/vocab/bioclinical-modernbert"
            ),
            (
                "bio-roberta binarize data/text/pubmed data/text/pmc --vocab "
                "data/vocab/bioclinical-modernbert --out data/bin/pm-bcmb"
            ),
            (
                "bio-roberta binarize data/text/mimic --vocab data/vocab/bioclinical-modernbert "
                "--out data/bin/m3-bcmb"
            ),
        ],
        "tests/test_modernbert_pretrain.py (imported_modernbert and "
        "test_continue_modernbert_starts_from_the_import_on_its_vocabulary_and_refuses_another): "
        "import-hf of a tiny ModernBertForMaskedLM made with transformers, then `bio-roberta "
        "binarize TEXT --vocab IMPORT --out BIN` (BioClinical ModernBERT's weights are a download)",
    ),
}
# (command prefix, why it does not run here)
NOT_RUN = [
    (
        "source .venv/bin/activate",
        "the checkout's .venv; here each command runs with bin/ first on PATH, as activating does",
    ),
    ("bio-roberta download", "fetches from NCBI; tests/test_download.py runs it on a local server"),
    (
        "GPUS=8 scripts/pretrain.sh data/bin/pm ckpt/modernbert-base",
        (
            "GPUs and weeks; tests/test_modernbert_pretrain.py runs +recipe=[modernbert,"
            "modernbert_tiny] (killed and resumed), tests/test_configs.py composes "
            "modernbert_long"
        ),
    ),
    (
        "GPUS=8 scripts/pretrain.sh data/bin/pm-bcmb",
        (
            "GPUs and days; tests/test_modernbert_pretrain.py continues an imported tiny "
            "ModernBERT with +recipe=[continue_modernbert,modernbert_tiny]"
        ),
    ),
    ("GPUS=8 scripts/pretrain.sh", "GPUs and days; the tiny recipe runs in tests/test_pretrain.py"),
    (
        "bio-roberta pretrain data/bin/lab",
        (
            "GPUs and days; tests/test_parse_text.py continues a tiny model on parse-text's "
            "output with +recipe=[tiny,continue_roberta]"
        ),
    ),
    ("NNODES=4", "several nodes; tests/test_distributed.py launches on CPU"),
    ("GPUS=8 scripts/distill.sh", "GPUs and days; the tiny recipe runs in tests/test_distill.py"),
    ("fairseq-hydra-train", "GPUs and days; tests/test_configs.py composes these configs"),
    ("fairseq-train", "GPUs and days (--fp16, 500k updates); tests/test_pretrain.py"),
    (
        ".venv/bin/python scripts/gpu_measure.py",
        "a GPU, minutes; tests/test_gpu_measure.py runs every part of it with --tiny on the CPU",
    ),
    (
        "WANDB_MODE=offline bio-roberta pretrain data/bin/pm",
        (
            "GPUs and days; tests/test_wandb.py runs the tiny recipe with common.wandb_project, "
            "WANDB_MODE=offline, and reads the run's .wandb file"
        ),
    ),
    (
        "scripts/install.sh --extras wandb",
        (
            "installs into the environment it runs in; tests/test_install.py runs "
            "scripts/install.sh into a fresh venv (EXTRAS=hf), and make venv installs the "
            "extra's wandb==0.31.* into .wandb-site for tests/test_wandb.py"
        ),
    ),
    (
        (
            "bio-roberta sweep --tasks blurb --pretrained CKPT --data-root finetune-bin "
            "--results results --runs-per-device"
        ),
        (
            "GPUs and BLURB's tens of runs; tests/test_packing.py packs four tiny runs on the CPU "
            "(--runs-per-device 3 --devices cpu), plans auto, and composes the SLURM launcher's "
            "config of packs with --cfg job"
        ),
    ),
    (
        "bio-roberta sweep ... --runs-per-device",
        "GPUs; tests/test_packing.py packs four tiny runs on the CPU",
    ),
    ("bio-roberta sweep", "tens to hundreds of runs; tests/test_sweep.py runs two tiny tasks"),
    (
        "bio-roberta blurb-suite",
        (
            "tens of runs; tests/test_blurb_suite_command.py runs it on three datasets, one seed, "
            "tests/test_blurb_toy_suite.py on toy files of all 13 with --score-any-split, and on "
            "three with --tune over two settings; --tune-epochs's grid: tests/test_settings.py"
        ),
    ),
    ("scripts/finetune_sweep.sh", "a SLURM cluster"),
    (
        "bio-roberta parse-mimic NOTEEVENTS.csv.gz --out data/text/mimic --canaries",
        (
            "the bundled sample has 6 training notes, fewer than a canary repeated 16 times "
            "needs; tests/test_canaries.py inserts canaries into 100 synthetic notes"
        ),
    ),
    (
        "bio-roberta audit ckpt/pm-m3-base",
        (
            "the PM+M3 model is pretrained on GPUs (NOT_RUN above); tests/test_audit.py audits "
            "tiny models trained on synthetic notes with canaries, against a reference model"
        ),
    ),
    (
        "bio-roberta export-hf ckpt/pm-m3-base",
        (
            "the PM+M3 model is pretrained on GPUs (NOT_RUN above); tests/test_export_hf.py "
            "exports a tiny checkpoint whose manifests record MIMIC-III notes, refused without a "
            "passing audit record and exported with one"
        ),
    ),
    (
        ".venv/bin/python scripts/benchmark_",
        (
            "minutes, or a GPU; tests/test_benchmark_train.py, tests/test_predict.py, "
            "tests/test_benchmark_finetune.py, tests/test_packing.py (benchmark_packing.py), "
            "tests/test_modernbert_long.py, tests/test_benchmark_distill.py"
        ),
    ),
]


def not_run_reason(command: str) -> str | None:
    return next((why for prefix, why in NOT_RUN if command.startswith(prefix)), None)


def runnable(command: str) -> str | None:
    """The form of a documented command that runs in the workspace: itself, or its synopsis
    filled in; None when it runs elsewhere or not at all."""
    if command in ELSEWHERE or not_run_reason(command):
        return None
    return SYNOPSIS.get(command, command)


def stage_of(command: str) -> int | None:
    """The stage whose text is the longest that `command` starts with."""
    matching = [
        i for i, stage in enumerate(STAGES) if isinstance(stage, str) and command.startswith(stage)
    ]
    return max(matching, key=lambda i: len(STAGES[i]), default=None)


def test_every_documented_command_is_accounted_for():
    unaccounted = [
        f"{page}: {command}"
        for page, commands in documented_commands().items()
        for command in commands
        if runnable(command) is not None and stage_of(runnable(command)) is None
    ]
    assert not unaccounted, "run these in this test or say why not:\n" + "\n".join(unaccounted)


def test_commands_not_run_name_real_options_and_files():
    """What cannot run here still names options the parser has and files that exist."""
    from bio_roberta.cli import build_parser

    for commands in documented_commands().values():
        for command in (c for c in commands if not_run_reason(c)):
            argv = shlex.split(command.replace("$i", "0"))
            while "=" in argv[0]:  # GPUS=8 ...
                argv.pop(0)
            program = argv[0]
            if program == "bio-roberta" and "..." not in argv:
                build_parser(argv[1]).parse_args(argv[1:])  # SystemExit on a wrong option
            elif program == "source":
                assert (BIN / "activate").is_file()  # a virtual environment's bin/
            elif program.startswith(("scripts/", ".venv/bin/python")):
                script = REPO_ROOT / (argv[1] if program.endswith("python") else program)
                assert script.is_file(), command
            else:
                assert (BIN / program).is_file(), command


def bash(workspace: Path, command: str) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(
        ["bash", "-c", command], cwd=workspace, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, f"{command}\n{(run.stdout + run.stderr)[-3000:]}"
    return run.stdout


def lay_out_downloads(workspace: Path) -> None:
    """The docs' inputs: the sample as the corpora's downloads and BioBERT's, GAD's and the DDI
    corpus' folders and LinkBERT's BLURB ChemProt with small files of their formats."""
    from blurb_toy import write_linkbert
    from test_readers import write_ddi_corpus, write_euadr_folds

    downloads = workspace / "data" / "downloads"
    shutil.copytree(SAMPLE_DIR / "corpus" / "pubmed", downloads / "pubmed")
    shutil.copytree(SAMPLE_DIR / "corpus" / "pmc", downloads / "pmc")
    notes = (SAMPLE_DIR / "corpus" / "mimic" / "NOTEEVENTS.csv").read_bytes()
    (workspace / "NOTEEVENTS.csv.gz").write_bytes(gzip.compress(notes))
    shutil.copytree(SAMPLE_DIR / "tasks" / "ncbi-disease", workspace / "BC5CDR-chem")
    shutil.copytree(
        SAMPLE_DIR / "tasks" / "ncbi-disease", workspace / "BioBERT" / "NERdata" / "BC5CDR-chem"
    )
    write_euadr_folds(workspace / "BioBERT" / "REdata" / "GAD")
    write_ddi_corpus(workspace / "DDICorpus")
    write_linkbert(workspace / "data" / "blurb", "chemprot-blurb")
    write_lab_corpus(workspace)


def write_lab_corpus(workspace: Path) -> None:
    """A lab's own corpus for parse-text: notes as .txt files (one gzipped, one in a subfolder),
    abstracts as datasets' JSON lines and Parquet (tests/test_parse_text.py's writers)."""
    from test_parse_text import write_datasets_json_lines, write_parquet

    notes = workspace / "lab-notes"
    (notes / "ward-2").mkdir(parents=True)
    (notes / "2024-01-03.txt").write_text(
        "Patient seen for follow-up. Blood pressure is controlled.\n\nPlan: continue therapy.\n"
    )
    (notes / "ward-2" / "2024-01-04.txt.gz").write_bytes(
        gzip.compress(b"New admission with fever. Cultures were taken.\n", mtime=0)
    )
    abstracts = [
        "Metformin lowers glucose. It is used in type 2 diabetes.",
        "Statins reduce LDL cholesterol. They lower cardiovascular risk.",
    ]
    write_datasets_json_lines(
        workspace / "abstracts.jsonl.gz", [{"id": 1, "abstract": abstracts[0]}]
    )
    write_parquet(workspace / "export.parquet", {"id": [2], "abstract": abstracts[1:]})


def make_pretrained(workspace: Path) -> None:
    """ckpt/pm-base/checkpoint_best.pt: a roberta_tiny on data/bin/pm (the real-scale pretraining
    is NOT_RUN), and RoBERTa's files to import taken from it and the vocabulary."""
    ckpt = workspace / "ckpt" / "pm-base"
    # 512 positions, as the tasks are converted by default
    checkpoint = pretrain_tiny_roberta(
        workspace / "data" / "bin" / "pm", ckpt, max_update=3, tokens_per_sample=512
    )
    shutil.copy(checkpoint, ckpt / "checkpoint_best.pt")
    vocab = workspace / "data" / "vocab" / "pm-50k"
    (workspace / "roberta.base").mkdir()
    shutil.copy(checkpoint, workspace / "roberta.base" / "model.pt")
    for name in ("encoder.json", "vocab.bpe", "dict.txt"):
        shutil.copy(vocab / name, workspace / name)


def finetune_bc5cdr_chem(workspace: Path) -> None:
    """results/bc5cdr-chem/seed10, which the docs' export and report commands read."""
    bash(
        workspace,
        "bio-roberta finetune --task bc5cdr-chem --seed 10 --pretrained "
        "ckpt/pm-base/checkpoint_best.pt --data-root finetune-bin --results results",
    )


# Pipeline order: documented commands starting with a stage's text run there, between set-ups.
STAGES = [
    "bio-roberta --version",
    "python -m bio_roberta --version",
    "bio-roberta config-dir",
    "bio-roberta parse-",
    "bio-roberta learn-vocab data/",
    "bio-roberta vocab-stats --vocab data/vocab/pm-50k --ner",
    "bio-roberta binarize",
    "bio-roberta pretrain",  # --dry-run: the plan for 8 GPUs
    make_pretrained,
    "bio-roberta convert-task",
    "bio-roberta export-hf ckpt/",
    "bio-roberta learn-vocab --encoder-json",
    "bio-roberta binarize data/text/lab",  # with data/vocab/roberta, imported just before
    "bio-roberta vocab-stats --vocab data/vocab/pm-50k data/vocab/roberta",
    finetune_bc5cdr_chem,
    "bio-roberta predict",
    "bio-roberta report",
    "bio-roberta export-hf",
]


@pytest.mark.slow
def test_documented_commands_run_as_written(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    lay_out_downloads(workspace)
    commands = {
        runnable(command): None
        for commands in documented_commands().values()
        for command in commands
        if runnable(command) is not None
    }
    for number, stage in enumerate(STAGES):
        if callable(stage):
            stage(workspace)
        for command in (c for c in commands if stage_of(c) == number):
            bash(workspace, command)
    assert (workspace / "hf" / "bc5cdr-chem" / "config.json").is_file()
    assert (workspace / "hf" / "bio-roberta-base" / "config.json").is_file()
    assert (workspace / "results" / "report" / "report.md").is_file()
    assert (workspace / "data" / "vocab" / "roberta" / "model.pt").is_file()
    assert len(list((workspace / "finetune-bin" / "gad").glob("fold*"))) == 10
