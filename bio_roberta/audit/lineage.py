"""What a checkpoint was trained on, as the manifests it reaches record it: the model card's
training data and the evidence export-hf's memorisation gate holds an audit record against.

The chain: a checkpoint's data dir (cfg.task.data) -> its data-bin manifest (binarize: each text
dir with its manifest's sha256, each training shard with its sha256) -> each text dir's manifest
(parse-*: its source, counts, canaries); and the checkpoints a masked LM started from or learnt from
(PARENTS), whose corpora it may give away too. A fine-tuned checkpoint's chain goes through its
run record (result.json beside checkpoints/) to the pretrained checkpoint.

Two ways a chain ends short, told apart because the gate treats them apart (docs/audit.md):
- unknown: a link that our stages never wrote (a data-bin fairseq-preprocess made, an imported
  model's vocabulary dir): nothing recorded says what the text was;
- broken: a link that IS recorded but is not here (a data-bin or text dir renamed or moved, a
  fine-tuned checkpoint copied out of its run dir, a pretrained checkpoint that is gone): the
  record says there was text, and cannot say which. The gate fails closed on these.

A relative data dir is the path as training was started; it is looked for from the current dir,
then from each dir above the checkpoint (a checkpoint under ckpt/NAME/ of the project it was
trained in finds data/bin/NAME again from anywhere).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from bio_roberta_core.fairseq_keys import MASKED_LM, option

MANIFEST = "manifest.json"
RESULT_FILE = "result.json"
# The options naming a checkpoint a masked LM's training started from or learnt from (section,
# option, what it is); fairseq's default restore file is the run's own checkpoint_last.pt.
PARENTS = (
    ("task", "teacher_path", "distillation teacher"),
    ("checkpoint", "finetune_from_model", "starting checkpoint"),
    ("checkpoint", "restore_file", "restored checkpoint"),
)
DEFAULT_RESTORE_FILE = "checkpoint_last.pt"


def read_json(path: Path) -> Optional[dict[str, Any]]:
    """The JSON object at path; None when it is missing or not a JSON object (said as unknown)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def recorded_path(path: str, checkpoint: Optional[Path]) -> Optional[Path]:
    """Where a path a checkpoint recorded is now: as written (from the current dir), else, when
    relative, below the first dir above the checkpoint that has it; None when nowhere."""
    given = Path(path)
    if given.exists():
        return given
    if given.is_absolute() or checkpoint is None:
        return None
    for above in Path(checkpoint).resolve().parents:
        if (above / given).exists():
            return above / given
    return None


@dataclass
class TrainingData:
    """What the manifests a checkpoint reaches say it was trained on: its corpora (for a fine-tuned
    model, the pretrained checkpoint's), why some are unknown, which recorded links are broken,
    and a fine-tuned run's record. given: the data-bins were named by the user (--training-data)
    rather than followed from the checkpoint."""

    corpora: list[dict[str, Any]]
    unknown: list[str]
    broken: list[str] = field(default_factory=list)
    record: Optional[dict[str, Any]] = None
    no_record: str = ""
    given: Sequence[str] = ()

    @property
    def mimic(self) -> list[dict[str, Any]]:
        """The corpora of MIMIC-III notes."""
        return [corpus for corpus in self.corpora if corpus["source"] == "mimic"]

    def train_shards(self) -> set[str]:
        """The sha256 of every training shard of every corpus."""
        return {sha for corpus in self.corpora for sha in corpus["train_shards"]}


def training_corpora(
    data_dir: Optional[str], checkpoint: Optional[Path] = None
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(corpus per text dir of the data-bins of a masked-LM data dir, why some are unknown, which
    recorded links are broken)."""
    if not data_dir:
        return [], ["the checkpoint names no training data dir"], []
    corpora, unknown, broken = [], [], []
    for recorded in str(data_dir).split(os.pathsep):
        databin = recorded_path(recorded, checkpoint)
        if databin is None:
            broken.append(f"its data dir {recorded} is not here (moved or renamed?)")
            continue
        manifest = read_json(databin / MANIFEST)
        if manifest is None or "text_dirs" not in manifest:
            what = "no manifest" if manifest is None else "a manifest that is not a data-bin's"
            unknown.append(f"{databin} has {what} (`bio-roberta binarize` writes one)")
            continue
        train = (manifest.get("splits") or {}).get("train") or {}
        for text_dir in manifest["text_dirs"]:
            text_path = Path(text_dir["path"])
            text = read_json(text_path / MANIFEST)
            if text is None:
                broken.append(
                    f"the text dir {text_path} (binarized into {databin}) is not here or has no "
                    "manifest (moved or renamed?)"
                )
                continue
            counts = text.get("counts") or {}
            corpora.append(
                {
                    "source": text.get("source"),
                    "text_dir": str(text_path),
                    "data_bin": str(databin),
                    "documents": counts.get("documents_written"),
                    "sentences": counts.get("sentences"),
                    "data_bin_train_tokens": train.get("tokens"),
                    # what the data-bin read, by content: the evidence an audit is held against
                    "text_manifest_sha256": (text_dir.get("manifest") or {}).get("sha256"),
                    "train_shards": sorted(
                        item["sha256"]
                        for item in train.get("inputs") or []
                        if Path(item.get("path", "")).parent == text_path and "sha256" in item
                    ),
                    "canaries_sha256": (text.get("canaries") or {}).get("sha256"),
                }
            )
    return corpora, unknown, broken


def checkpoint_options(path: Optional[str]) -> tuple[Optional[dict[str, Any]], str]:
    """(the options of the checkpoint at path by section (cfg; a checkpoint of fairseq before
    Hydra has one argparse Namespace for all), why there are none)."""
    from bio_roberta_core.checkpoints import CheckpointError, read_checkpoint

    if not path or not Path(path).is_file():
        return None, f"the checkpoint {path} is not here"
    try:
        state = read_checkpoint(path, mmap=True)
    except CheckpointError as error:
        return None, str(error)
    args = state.get("args")
    return state.get("cfg") or {"task": args, "checkpoint": args}, ""


def masked_lm_corpora(
    checkpoint: str,
    via: str = "",
    seen: Optional[set] = None,
    data_dir: Optional[str] = None,
    own_data: bool = True,
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(corpora, why some are unknown, broken links) of a masked LM: its data dir's (data_dir
    instead where given; none with own_data False: a fine-tuned model's data is its task's), and
    those of the checkpoints its training started from or learnt from (PARENTS: what they learnt,
    it may have too), each corpus saying through which one it came (via)."""
    cfg, why = checkpoint_options(checkpoint)
    if cfg is None:
        return [], [], [f"{via}: {why}" if via else why]
    seen = set() if seen is None else seen
    seen.add(os.path.realpath(checkpoint))
    corpora: list[dict[str, Any]] = []
    unknown: list[str] = []
    broken: list[str] = []
    if own_data:
        task = cfg.get("task")
        recorded = data_dir or (option(task, "data") if task is not None else None)
        corpora, unknown, broken = training_corpora(recorded, Path(checkpoint))
        corpora = [{**corpus, "via": via} for corpus in corpora]
    for section, name, what in PARENTS:
        parent = option(cfg[section], name) if cfg.get(section) is not None else None
        if not parent or parent == DEFAULT_RESTORE_FILE:
            continue
        found = recorded_path(parent, Path(checkpoint))
        if found is not None and os.path.realpath(found) in seen:
            continue
        more, more_unknown, more_broken = masked_lm_corpora(
            str(found or parent),
            f"{via}, whose {what} is `{parent}`" if via else f"the {what} `{parent}`",
            seen,
        )
        known = {(corpus["text_dir"], corpus["data_bin"]) for corpus in corpora}
        corpora += [c for c in more if (c["text_dir"], c["data_bin"]) not in known]
        unknown += more_unknown
        broken += more_broken
    return corpora, unknown, broken


def run_record(checkpoint: Path, sha256: str) -> tuple[Optional[dict[str, Any]], str]:
    """(the result.json of the fine-tuning run that wrote checkpoint, why there is none)."""
    path = checkpoint.parent.parent / RESULT_FILE
    record = read_json(path)
    if record is None:
        return None, f"no result record beside the checkpoint ({path})"
    if (record.get("checkpoint") or {}).get("sha256") != sha256:
        return None, f"{path} is the record of another checkpoint (another sha256)"
    return record, ""


def given_corpora(data_bins: Sequence[str]) -> TrainingData:
    """The training data of data-bins the user names (export-hf --training-data): their corpora,
    nothing followed from the checkpoint."""
    corpora, unknown, broken = [], [], []
    for databin in data_bins:
        if not Path(databin, MANIFEST).is_file():
            raise FileNotFoundError(f"--training-data {databin}: no data-bin manifest there")
        more, more_unknown, more_broken = training_corpora(str(databin))
        corpora += more
        unknown += more_unknown
        broken += more_broken
    return TrainingData(corpora, unknown, broken, given=tuple(map(str, data_bins)))


def training_data(
    checkpoint: Path, kind: str, data_dir: Optional[str], sha256: str
) -> TrainingData:
    """The training data of checkpoint (sha256: its file's) as its manifests record: a masked LM's
    (masked_lm_corpora); a fine-tuned model's run record (result.json beside checkpoints/) and the
    masked LM's of the pretrained checkpoint that record names, else of the checkpoint its
    fine-tuning restored (its own cfg)."""
    if kind == MASKED_LM:
        return TrainingData(*masked_lm_corpora(str(checkpoint), data_dir=data_dir))
    record, no_record = run_record(checkpoint, sha256)
    if record is None:
        corpora, unknown, broken = masked_lm_corpora(str(checkpoint), own_data=False)
        if not corpora and not unknown and not broken:
            broken = [
                f"the pretrained checkpoint is not known ({no_record}; its own options name none)"
            ]
        return TrainingData(corpora, unknown, broken, None, no_record)
    record = {**record, "path": str(checkpoint.parent.parent / RESULT_FILE)}
    pretrained = (record.get("pretrained") or {}).get("path")
    return TrainingData(*masked_lm_corpora(pretrained), record=record)
