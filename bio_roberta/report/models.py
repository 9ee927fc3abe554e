"""The models a report compares, one per results dir: its name (the user's, from a NAME=DIR
argument, else the checkpoint its runs fine-tuned: model_name) and the paper model it is
(bio_roberta/tasks/paper_models.py), found by that name or by where its pretrained checkpoint
comes from: for a checkpoint `bio-roberta import-hf` wrote, the transformers dir named in the
manifest beside it (its hub id when it sits in the Hugging Face cache, its folder name, its
config's `_name_or_path`); else the checkpoint's own folder (bio-lm's released archives unpack
to folders named after the model, `RoBERTa-base-PM-fairseq`, `RoBERTa-base-PM-hf`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta.finetuning.results import ResultRecord, ResultRecordError, load_records
from bio_roberta.report.seed_results import model_name, pretrained_paths
from bio_roberta.report.settings import TaskSettings, picked_settings
from bio_roberta.tasks.paper_models import PaperModel, find_paper_model
from preprocess.vocab_dir import IMPORTED_CHECKPOINT, MANIFEST

# A transformers dir in the Hugging Face hub cache: .../models--<owner>--<name>/snapshots/<sha>.
HUB_CACHE_DIR = re.compile(r"^models--(?P<owner>[^-].*?)--(?P<name>.+)$")
# bio-lm's release archives: <model>-hf.tar.gz and <model>-fairseq.tar.gz.
RELEASE_SUFFIX = re.compile(r"-(hf|fairseq)$")


@dataclass(frozen=True)
class ReportedModel:
    name: str  # the report's name for it: the user's, else the checkpoint's (model_name)
    results_dir: Path
    records: list[ResultRecord]  # every run's (failed and unfinished runs, provenance)
    paper: Optional[PaperModel]  # the paper model it is, or None
    matched_by: str  # how `paper` was found ("" when None)
    scored: list[ResultRecord]  # the runs of each task's scored setting (settings.py)
    settings: dict[str, TaskSettings]  # each task's settings and the one scored


# A model's name heads table columns and a legend: one short line.
MAX_MODEL_NAME_CHARACTERS = 100


def results_argument(text: str) -> tuple[Optional[str], Path]:
    """A report's RESULTS argument: DIR, or NAME=DIR (a dir whose own name holds '=' is a DIR).
    NAME is one line of printable characters (no newline, tab, U+2028...), at most
    MAX_MODEL_NAME_CHARACTERS; a '|' in it is escaped in the markdown tables."""
    try:
        whole_is_dir = Path(text).is_dir()
    except OSError:  # a name too long for a path (ENAMETOOLONG) is no dir
        whole_is_dir = False
    if "=" not in text or whole_is_dir:
        return None, Path(text)
    name, _, path = text.partition("=")
    name = name.strip()
    shown = repr(text) if len(text) <= 200 else f"{text[:60]!r}... ({len(text):,} characters)"
    if not name or not path:
        raise ResultRecordError(f"{shown}: give a results dir, or NAME=DIR to name its model")
    if len(name) > MAX_MODEL_NAME_CHARACTERS:
        raise ResultRecordError(
            f"{shown}: the model name NAME is {len(name):,} characters; give one of at most "
            f"{MAX_MODEL_NAME_CHARACTERS} (it heads the report's columns)"
        )
    if not name.isprintable():
        raise ResultRecordError(
            f"{shown}: the model name NAME holds a newline, tab or other control character; "
            "give a one-line name of printable characters"
        )
    return name, Path(path)


def source_dir(checkpoint: Path) -> Path:
    """Where a pretrained checkpoint comes from: the transformers dir import-hf imported it from
    (its manifest's imported_from), else the checkpoint's own folder."""
    manifest = checkpoint.parent / MANIFEST
    if checkpoint.name != IMPORTED_CHECKPOINT or not manifest.is_file():
        return checkpoint.parent
    try:
        options = json.loads(manifest.read_text(encoding="utf-8")).get("options") or {}
    except (json.JSONDecodeError, AttributeError) as error:
        raise ResultRecordError(
            f"{manifest} (the import manifest of {checkpoint}): not a JSON object ({error}); "
            "re-run `bio-roberta import-hf` into that dir"
        ) from None
    imported = options.get("imported_from")
    return Path(imported) if imported else checkpoint.parent


def source_names(checkpoint: Path) -> list[str]:
    """The names a checkpoint's source dir may be known by, most telling first: a hub id from the
    cache's folder, the config's _name_or_path, the folder's name (each also without a release
    archive's suffix)."""
    folder = source_dir(checkpoint)
    names = [
        f"{match['owner']}/{match['name']}"
        for part in folder.parts
        if (match := HUB_CACHE_DIR.match(part))
    ]
    config = folder / "config.json"
    if config.is_file():
        try:
            name_or_path = json.loads(config.read_text(encoding="utf-8")).get("_name_or_path")
        except (json.JSONDecodeError, AttributeError):
            name_or_path = None  # a broken config names nothing; the folder's name still may
        if name_or_path:
            names.append(str(name_or_path))
    names.append(folder.name)
    return names + [RELEASE_SUFFIX.sub("", n) for n in names if RELEASE_SUFFIX.search(n)]


def paper_model_of(
    name: Optional[str], records: list[ResultRecord]
) -> tuple[Optional[PaperModel], str]:
    """The paper model a results dir's model is, and how that was found: by the user's name,
    else by its checkpoint's source."""
    if name is not None and (model := find_paper_model(name)):
        return model, f"named {name}"
    for checkpoint in pretrained_paths(records):
        for candidate in source_names(checkpoint):
            if model := find_paper_model(candidate):
                return model, f"{checkpoint} comes from {source_dir(checkpoint)}"
    return None, ""


def reported_models(arguments: list[str]) -> list[ReportedModel]:
    """The models of a report's RESULTS arguments, in their order; their names must differ."""
    models = []
    for argument in arguments:
        name, results_dir = results_argument(argument)
        records = load_records(results_dir)
        paper, matched_by = paper_model_of(name, records)
        scored, settings = picked_settings(records)
        models.append(
            ReportedModel(
                name or model_name(records),
                results_dir,
                records,
                paper,
                matched_by,
                scored,
                settings,
            )
        )
    names = [model.name for model in models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ResultRecordError(
            f"several results dirs report a model named {', '.join(twice)}: name each, "
            "NAME=DIR (e.g. BioBERT=results/biobert)"
        )
    return models
