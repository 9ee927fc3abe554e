"""BLURB's whole suite from one data root: find each dataset's folder (LinkBERT's release,
<root>/<kind>/<name>_hf, or one folder per registry task, <root>/<task>), convert what is there,
sweep it with each dataset's BLURB seeds (bio-roberta sweep), and report Table 6's layout, the
BLURB score and leaderboard.json (bio_roberta/blurb/leaderboard.py), and collect each dataset's
chosen run's test predictions into submission/ (bio_roberta/blurb/predictions_file.py).

--tune runs BLURB's grid (bio_roberta.tasks.spec.BLURB_GRID: every lr x batch size, each
setting in its own run dirs) and the report scores, per dataset, the setting whose dev score is
best (bio_roberta/report/settings.py); without it each dataset runs its registry setting alone
(untuned). Resumable: a dataset converted before from the same files, vocabulary and positions is
not converted again (its runs' data manifests stay valid), and the sweep skips finished runs.
What is missing is named on stderr and in the report's partial score, and, once, each dataset
whose split no check can prove BLURB's (bio_roberta/blurb/split_evidence.py UNPROVEN).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

from bio_roberta.blurb.leaderboard import leaderboard
from bio_roberta.blurb.split_check import BY_NOTHING, CHECK_NAMES
from bio_roberta.blurb.suite import BLURB as BLURB_TASKS
from bio_roberta.blurb.suite import BLURB_DATASETS
from bio_roberta.blurb.suites import BLURB
from bio_roberta.blurb_run.submission import write_submission
from bio_roberta.conversion.finetune_bin import convert_task, vocab_record
from bio_roberta.finetuning.pretrained_model import check_pretrained
from bio_roberta.finetuning.sweep import grid_overrides, hparams_grid
from bio_roberta.report import write_report
from bio_roberta.report.blurb import (
    NOT_COMPARABLE_SPLITS,
    blurb_rows,
    blurb_summary,
    complete_text,
)
from bio_roberta.report.models import reported_models
from bio_roberta.report.seed_results import task_results
from bio_roberta.report.settings import outside_blurb_grid, protocol, schedule_text
from bio_roberta.tasks.registry import get_task
from bio_roberta.tasks.spec import BLURB_GRID
from bio_roberta_core.checkpoints import check_max_positions
from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.processes import run_owned
from bio_roberta_core.provenance import atomic_write_json, sha256_file
from preprocess.vocab_dir import VocabularyDir, read_vocab_dir

FINETUNE_BIN, RESULTS, REPORT, LEADERBOARD = "finetune-bin", "results", "report", "leaderboard.json"
SUBMISSION = "submission"


class BlurbRunError(BioRobertaError):
    """A data root without BLURB's folders, or one dataset in two of them."""


def dataset_folders(root: Path) -> tuple[dict[str, Path], list[str]]:
    """({task: its folder}, [tasks without one]) of the BLURB datasets under root."""
    if not root.is_dir():
        raise BlurbRunError(f"{root}: not a directory; pass the BLURB data root")
    found, missing = {}, []
    for dataset in BLURB_DATASETS:
        folders = dataset.folders(root)
        if len(folders) > 1:
            raise BlurbRunError(
                f"{root}: {dataset.display} is in both {folders[0]} and {folders[1]}; keep one"
            )
        if folders:
            found[dataset.task] = folders[0]
        else:
            missing.append(dataset.task)
    if not found:
        raise BlurbRunError(
            f"{root}: no BLURB dataset folder; expected LinkBERT's release "
            f"(<root>/{BLURB_DATASETS[0].linkbert_dir}, ...) or one folder per task "
            f"(<root>/{BLURB_DATASETS[0].task}, ...)"
        )
    return found, missing


def converted_before(out: Path, data_dir: Path, vocab: VocabularyDir, max_positions: int) -> bool:
    """Whether out holds a conversion of data_dir's files, unchanged since, with this vocabulary
    and these positions, long inputs by their kind's route (BLURB's: no windows)."""
    path = out / "manifest.json"
    if not path.is_file():
        return False
    manifest = json.loads(path.read_text())
    options = manifest.get("options", {})
    inputs = manifest.get("inputs") or []
    return (
        options.get("data_dir") == str(data_dir.resolve())
        and options.get("max_positions") == max_positions
        and options.get("long_inputs") is None
        and manifest.get("vocab") == vocab_record(vocab)
        and all(Path(f["path"]).is_file() and sha256_file(f["path"]) == f["sha256"] for f in inputs)
    )


def convert_all(
    found: dict[str, Path], vocab_dir: Path, work: Path, max_positions: Optional[int]
) -> dict[str, dict]:
    """Convert each found dataset into work/finetune-bin/<task> unless converted before; each
    task's data manifest."""
    vocab = read_vocab_dir(vocab_dir)
    manifests = {}
    for task, folder in found.items():
        spec = get_task(task)
        out = work / FINETUNE_BIN / task
        if converted_before(out, folder, vocab, max_positions or spec.max_positions):
            print(f"bio-roberta blurb-suite: {task}: converted before, kept", file=sys.stderr)
            manifests[task] = json.loads((out / "manifest.json").read_text())
            continue
        (manifest,) = convert_task(spec, folder, vocab_dir, out, max_positions=max_positions)
        manifests[task] = manifest
        print(
            f"bio-roberta blurb-suite: {task}: {json.dumps(manifest['counts'])} "
            f"({split_text(manifest)})",
            file=sys.stderr,
        )
    return manifests


def split_text(manifest: dict) -> str:
    """What a data manifest's split check found, in a few words (an unknown one is named once,
    by unproven_line)."""
    checked_by = manifest.get("blurb_split_checked_by")
    if checked_by == BY_NOTHING:
        return "split unknown"
    return manifest.get("blurb_split_check") or f"BLURB's split: {CHECK_NAMES.get(checked_by)}"


def unproven_line(manifests: dict[str, dict], score_any_split: bool) -> Optional[str]:
    """One line naming each dataset whose split no check could prove BLURB's and why (what would
    prove it), and what the score does with it; None when there is none."""
    unknown = [
        manifest.get("blurb_split_check") or f"{BLURB_TASKS[task].display}: split unknown"
        for task, manifest in manifests.items()
        if manifest.get("blurb_split_checked_by") == BY_NOTHING
    ]
    if not unknown:
        return None
    treated = (
        "scored as --score-any-split asks, the score marked not comparable with Table 6"
        if score_any_split
        else "so left out of the BLURB score (--score-any-split scores them, marked not "
        "comparable with Table 6)"
    )
    return f"bio-roberta blurb-suite: split unknown, {treated}: {' | '.join(unknown)}"


def sweep_overrides(args) -> list[str]:
    """The sweep's Hydra overrides: with --tune BLURB's grid first (with --tune-epochs its epochs
    too; an axis the user's overrides set is theirs), then the user's."""
    if not args.tune:
        return list(args.overrides)
    epochs = {"max_epoch": args.tune_epochs} if args.tune_epochs else {}
    return [*grid_overrides({**BLURB_GRID, **epochs}, args.overrides), *args.overrides]


def sweep(tasks: list[str], args, work: Path) -> int:
    """bio-roberta sweep over tasks (each with its own BLURB seeds; with --tune, each setting of
    BLURB's grid); its exit status."""
    command = [sys.executable, "-m", "bio_roberta", *(["-v"] if args.verbose else []), "sweep"]
    command += ["--tasks", ",".join(tasks), *(["--quiet"] if args.quiet else [])]
    command += ["--pretrained", str(args.pretrained), "--data-root", str(work / FINETUNE_BIN)]
    command += ["--results", str(work / RESULTS)]
    command += ["--seeds", str(args.seeds)] if args.seeds else []
    command += ["--arch", args.arch] if args.arch else []
    for option in ("runs_per_device", "devices", "device_memory_gb"):
        value = getattr(args, option)
        command += [f"--{option.replace('_', '-')}", str(value)] if value is not None else []
    return run_owned([*command, *sweep_overrides(args)]).returncode  # killed, the suite takes it


def report(
    work: Path,
    model: str,
    expected_seeds: Optional[int],
    score_any_split: bool = False,
    grid: Optional[list[dict]] = None,
) -> dict:
    """Table 6's report in work/report and work/leaderboard.json; the leaderboard record.
    score_any_split: score datasets whose split is not BLURB's or unchecked (marked not
    comparable); grid: the hparams settings the sweep tuned over (None: untuned)."""
    write_report(work / RESULTS, work / REPORT, expected_seeds, BLURB, score_any_split)
    (reported,) = reported_models([str(work / RESULTS)])
    records = reported.scored  # each dataset's best-dev setting when tuned
    rows = blurb_rows(
        records, task_results(records), expected_seeds, score_any_split=score_any_split
    )
    datasets = {task: found for task, found in reported.settings.items() if task in BLURB_TASKS}
    summary = blurb_summary(rows)
    record = leaderboard(
        rows,
        summary,
        model,
        datasets,
        protocol(datasets),
        grid,
        score_any_split,
        schedule_text(datasets),
        outside_blurb_grid(datasets),
    )
    atomic_write_json(work / LEADERBOARD, record)
    # each dataset's test predictions of its chosen run, keyed by the release's example ids
    picked = {task: found.picked for task, found in reported.settings.items()}
    write_submission(records, work / SUBMISSION, model, [d.task for d in BLURB_DATASETS], picked)
    return record


def score_line(record: dict) -> str:
    """The BLURB score line of a leaderboard record: complete or partial (naming the datasets
    missing), and comparable with Table 6 or not (naming each scored dataset whose split is not
    BLURB's or unchecked, with its check; the reasons are in report.md and leaderboard.json): two
    separate statements."""
    score = record["blurb_score"]
    left_out = [
        name
        for name, entry in record["datasets"].items()
        if entry["runs"] and entry["score"] is None
    ]
    flag = "" if record["score_any_split"] else "; --score-any-split scores a split not BLURB's"
    why = (
        f"; left out, their split or metric not BLURB's: {', '.join(left_out)} (why: report.md, "
        f"leaderboard.json{flag})"
        if left_out
        else ""
    )
    if score is None:
        return f"BLURB score: none (no dataset scored{why})"
    done, types = len(record["datasets"]) - len(record["missing"]), record["task_types"]
    scored_types = sum(value is not None for value in types.values())
    if record["partial"]:
        complete = f"partial: {done}/{len(record['datasets'])} datasets, missing "
        complete += ", ".join(record["missing"]) + why
    else:
        complete = complete_text(scored_types)
    if record["comparable"]:
        comparable = "every scored split checked BLURB's"
    else:
        checks = {name: entry["split_check"] for name, entry in record["datasets"].items()}
        comparable = f"{NOT_COMPARABLE_SPLITS}: " + ", ".join(
            f"{name} ({checks[name]['checked_by']}: {checks[name]['outcome']})"
            for name in record["not_comparable"]
        )
        comparable += " (why: report.md, leaderboard.json)"
    outside = "".join(
        f"; {name} outside BLURB's grid ({values})"
        for name, values in record.get("outside_grid", {}).items()
    )
    protocol_line = f"{record['protocol']}; {record['schedule']}{outside}"
    return f"BLURB score: {score} ({complete}; {comparable}; {protocol_line})"


def run_suite(args) -> int:
    """Find, convert, sweep, report (the blurb-suite command); the sweep's exit status."""
    if args.max_positions:  # before converting anything for them
        check_max_positions(args.max_positions, args.pretrained)
    root, work = Path(args.data), Path(args.work)
    found, missing = dataset_folders(root)
    if missing:
        print(
            f"bio-roberta blurb-suite: not under {root}: {', '.join(missing)} "
            "(the BLURB score will be partial)",
            file=sys.stderr,
        )
    # the settings tuned over (refused before any work when Hydra refuses the overrides)
    grid = (
        [
            {key: value for key, value in setting.items() if value is not None}
            for setting in hparams_grid(sweep_overrides(args))
        ]
        if args.tune
        else None
    )
    manifests = convert_all(found, Path(args.vocab), work, args.max_positions)
    line = unproven_line(manifests, args.score_any_split)
    if line:
        print(line, file=sys.stderr)
    check_pretrained(str(args.pretrained), str(work / FINETUNE_BIN), list(found), args.arch)
    status = sweep(list(found), args, work)
    record = report(work, str(args.pretrained), args.seeds, args.score_any_split, grid)
    print(score_line(record))
    print(work / REPORT / "report.md")
    print(work / LEADERBOARD)
    print(work / SUBMISSION)
    return status
