"""Which checkpoint and converted data a fine-tuned model given to `bio-roberta predict` or
``bio_roberta.load`` is, each checked by the sha256 its record holds, never taken by its path:

  a run dir        (RESULTS/<task>/[<setting>/]seed<s>[/fold<k>], its result.json) the checkpoint
                   the record selected and scored, the run dir's own checkpoints/<file>, whose
                   sha256 must be the record's; and the finetune-bin dir it trained on, whose
                   manifest.json's sha256 must be the record's
  a checkpoint     of a run dir (RUN/checkpoints/<file>): the record's data; the record's own
                   checkpoint is checked by its sha256, another file of the run (checkpoint_last.pt
                   beside checkpoint_best.pt) by what it is: a model of the data's task kind whose
                   head has the data's classes; elsewhere: the data dir its fairseq options name
  an export-hf dir the checkpoint its manifest.json names, whose sha256 must be the manifest's, and
                   the export's weight files theirs

A record holds absolute paths. A results dir moved or copied (with its data and vocabulary, the
same layout around it) is found where the same relative path from the run dir leads: the run's
checkpoint in its own checkpoints/, the data and its vocabulary at their recorded place or at
their place relative to the run dir (and to the data dir); either is taken only if its hash is
the recorded one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bio_roberta_core.errors import BioRobertaError
from bio_roberta_core.provenance import sha256_file

RESULT_FILE = "result.json"
CHECKPOINTS = "checkpoints"
EXPORT_MANIFEST = "manifest.json"


class PredictError(BioRobertaError):
    """A model that cannot be loaded for prediction, or an input it cannot take (names which)."""


@dataclass(frozen=True)
class FinetunedModel:
    """A fine-tuned checkpoint, the finetune-bin dir of its task and the vocabulary dir that
    encodes its text (None: the one the data's manifest names, where it is)."""

    checkpoint: Path
    data_dir: Path
    vocab_dir: Optional[Path] = None


def short(sha256: Optional[str]) -> str:
    return f"{sha256[:12]}…" if sha256 else "none recorded"


def relocated(recorded: str, old_anchor: Path, new_anchor: Path) -> list[Path]:
    """Where a recorded path may be now: where it was, then at its place relative to an anchor
    (the run dir, the data dir) that moved from old_anchor to new_anchor."""
    moved = new_anchor / os.path.relpath(recorded, old_anchor)
    return list(dict.fromkeys([Path(recorded), Path(os.path.normpath(moved))]))


def run_record(path: Path) -> dict:
    """A fine-tuning run's result.json, which must be of a finished run."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PredictError(f"{path}: not JSON ({error}); not a run's result record?") from None
    if not isinstance(record, dict) or record.get("status") != "ok":
        status = record.get("status") if isinstance(record, dict) else None
        error = record.get("error") if isinstance(record, dict) else None
        raise PredictError(
            f"{path}: the run did not finish (status {status!r}: {error}); predict with a "
            "finished run"
        )
    return record


def recorded_checkpoint(run: Path, record: dict, given: Optional[Path] = None) -> Path:
    """The checkpoint a run's record scored, as this run dir holds it (given: the file asked for,
    if it is that one), its sha256 the record's."""
    result = run / RESULT_FILE
    scored = record.get("checkpoint") or {}
    if not scored.get("path") or not scored.get("sha256"):
        raise PredictError(
            f"{result}: records no checkpoint with its sha256; predict needs the one the run scored"
        )
    name = Path(scored["path"]).name
    own = given or run / CHECKPOINTS / name
    # the run dir's own file; the recorded path only where the run dir lacks it (copied without
    # its checkpoints): either is taken by its hash
    candidates = [own] if own.exists() else [own, Path(scored["path"])]
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        raise PredictError(
            f"{own} is missing: {result} scored the checkpoint {name} (sha256 "
            f"{short(scored['sha256'])}), not at {scored['path']} either; copy it back into the "
            "run dir, or fine-tune again"
        )
    actual = sha256_file(found)
    if actual != scored["sha256"]:
        raise PredictError(
            f"{found}: sha256 {short(actual)}, not the checkpoint {result} scored "
            f"({short(scored['sha256'])}): it was replaced after the run (another run's or "
            "another task's?); restore the run's own checkpoint, or predict with the run dir that "
            "scored this one"
        )
    return found


def recorded_data(run: Path, record: dict) -> tuple[Path, Optional[Path]]:
    """(finetune-bin dir, vocabulary dir) a run's record trained on: at its recorded place or at
    the same place relative to the run dir, its manifest.json's sha256 the record's; its
    vocabulary likewise (recorded_vocabulary)."""
    result = run / RESULT_FILE
    data = record.get("data") or {}
    recorded_dir = data.get("dir")
    wanted = (data.get("manifest") or {}).get("sha256")
    if not recorded_dir or not wanted:
        raise PredictError(
            f"{result}: records no finetune-bin dir with its manifest's sha256; predict needs the "
            "converted task the model was fine-tuned on (its vocabulary and labels)"
        )
    # the run dir the record was written in: its checkpoint's recorded path is <run>/checkpoints/
    written_in = Path((record.get("checkpoint") or {}).get("path") or run / CHECKPOINTS / "-")
    places = relocated(recorded_dir, written_in.parent.parent, run)
    present = [place for place in places if (place / "manifest.json").is_file()]
    for place in present:
        if sha256_file(place / "manifest.json") == wanted:
            return place, recorded_vocabulary(place, Path(recorded_dir))
    if present:
        manifest = present[0] / "manifest.json"
        raise PredictError(
            f"{manifest}: not the converted data {result} trained on (sha256 "
            f"{short(sha256_file(manifest))}, recorded {short(wanted)}): converted again since? "
            "predict needs the data the model was fine-tuned on (its vocabulary and labels)"
        )
    raise PredictError(
        f"{result}: the finetune-bin dir it trained on is not at {recorded_dir}"
        + (f" nor at {places[-1]}" if len(places) > 1 else "")
        + "; predict needs the converted task the model was fine-tuned on (its vocabulary and "
        "labels): put it back where it was beside the results"
    )


def recorded_vocabulary(data_dir: Path, converted_in: Path) -> Path:
    """The vocabulary dir a finetune-bin dir was converted with (its manifest's vocab): at its
    recorded place or at the same place relative to the data dir, which was converted in
    `converted_in`; its dict.txt's sha256 the manifest's."""
    manifest = data_dir / "manifest.json"
    vocab = json.loads(manifest.read_text(encoding="utf-8")).get("vocab") or {}
    if not vocab.get("path"):
        raise PredictError(f"{manifest}: names no vocabulary dir; convert the task again")
    places = relocated(vocab["path"], converted_in, data_dir)
    for place in places:
        if (place / "dict.txt").is_file() and (
            not vocab.get("sha256") or sha256_file(place / "dict.txt") == vocab["sha256"]
        ):
            return place
    raise PredictError(
        f"{manifest}: the vocabulary dir it was converted with is not at {vocab['path']}"
        + (f" nor at {places[-1]}" if len(places) > 1 else "")
        + f" with its dict.txt (sha256 {short(vocab.get('sha256'))}); predict encodes text with it"
    )


def checkpoint_and_data(path: Path) -> FinetunedModel:
    """The checkpoint, data and vocabulary of a run dir, checkpoint file or export dir."""
    if path.is_dir() and not (path / RESULT_FILE).is_file():
        return checkpoint_and_data(exported_from(path))
    if path.is_dir():
        record = run_record(path / RESULT_FILE)
        data_dir, vocab_dir = recorded_data(path, record)
        return FinetunedModel(recorded_checkpoint(path, record), data_dir, vocab_dir)
    if not path.is_file():
        raise PredictError(
            f"{path} does not exist: pass a fine-tuning run dir, its checkpoint or an export-hf dir"
        )
    run = path.parent.parent
    if path.parent.name == CHECKPOINTS and (run / RESULT_FILE).is_file():  # a run's checkpoint
        record = run_record(run / RESULT_FILE)
        data_dir, vocab_dir = recorded_data(run, record)
        if path.name == Path((record.get("checkpoint") or {}).get("path") or "").name:
            recorded_checkpoint(run, record, path)
        else:
            check_fits(path, data_dir)
        return FinetunedModel(path, data_dir, vocab_dir)
    from bio_roberta.hf.export_hf import first_data_dir, load_checkpoint

    data = first_data_dir(load_checkpoint(path)[2])
    if data is None or not (Path(data) / "manifest.json").is_file():
        raise PredictError(
            f"{path}: its finetune-bin dir ({data}) has no manifest.json; predict needs the "
            "converted task the model was fine-tuned on (its vocabulary and labels): pass the "
            "checkpoint's run dir"
        )
    check_fits(path, Path(data))
    return FinetunedModel(path, Path(data))


def exported_from(export_dir: Path) -> Path:
    """The checkpoint an export-hf dir was written from: the file its manifest.json names, with
    the sha256 it records; the export's weight files with theirs."""
    manifest_path = export_dir / EXPORT_MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or "hf_model_class" not in manifest:
        raise PredictError(
            f"{export_dir} is neither a fine-tuning run dir (no {RESULT_FILE}) nor an export-hf "
            f"dir (no {EXPORT_MANIFEST} of export-hf); pass one of those or a checkpoint"
        )
    for name, written in (manifest.get("weights") or {}).items():
        weights = export_dir / name
        if not weights.is_file() or sha256_file(weights) != written.get("sha256"):
            raise PredictError(
                f"{weights}: not the weights {manifest_path} records (sha256 "
                f"{short(written.get('sha256'))}); export the checkpoint again"
            )
    source = manifest.get("checkpoint") or {}
    checkpoint = source.get("path")
    if checkpoint is None or not Path(checkpoint).is_file():
        raise PredictError(
            f"{manifest_path}: the checkpoint it was exported from ({checkpoint}) is not here; "
            "pass that checkpoint or its run dir"
        )
    actual = sha256_file(checkpoint)
    if actual != source.get("sha256"):
        raise PredictError(
            f"{manifest_path}: names {checkpoint}, whose sha256 {short(actual)} is not that of the "
            f"checkpoint it was exported from ({short(source.get('sha256'))}); pass that "
            "checkpoint or its run dir"
        )
    return Path(checkpoint)


def check_fits(checkpoint: Path, data_dir: Path) -> None:
    """A checkpoint without a record to check its hash against is a model of the data's task:
    fine-tuned as the data's kind (its fairseq task and criterion), its head giving one output per
    class of the data; else one line saying what it is."""
    from bio_roberta.tasks.converted_task import task_spec_of
    from bio_roberta.tasks.kinds import kind_trained_by
    from bio_roberta_core.checkpoints import read_checkpoint

    spec = task_spec_of(data_dir)
    state = read_checkpoint(checkpoint, mmap=True)
    cfg = state.get("cfg") or {}
    trained_by = [((cfg.get(section) or {}).get("_name")) for section in ("task", "criterion")]
    kind = kind_trained_by(*trained_by) if None not in trained_by else None
    wanted = spec.task_kind
    if kind is None or (kind.fairseq_task, kind.criterion) != (
        wanted.fairseq_task,
        wanted.criterion,
    ):
        raise PredictError(
            f"{checkpoint}: fine-tuned with fairseq's {trained_by[0]} task and {trained_by[1]} "
            f"criterion, not as {data_dir}'s task {spec.name} ({spec.kind}: {wanted.fairseq_task}, "
            f"{wanted.criterion}); predict with a {spec.name} model's run dir or checkpoint"
        )
    heads = {
        name: tuple(tensor.shape)
        for name, tensor in (state.get("model") or {}).items()
        if "classification_heads." in name and name.endswith(".out_proj.weight")
    }
    classes = expected_outputs(spec, data_dir)
    if classes is not None and heads and all(shape[0] != classes for shape in heads.values()):
        rows = ", ".join(str(shape[0]) for shape in heads.values())
        raise PredictError(
            f"{checkpoint}: its head gives {rows} outputs, {data_dir}'s task {spec.name} has "
            f"{classes} classes: a model of another task; predict with a {spec.name} model's "
            "run dir or checkpoint"
        )


def expected_outputs(spec, data_dir: Path) -> Optional[int]:
    """The outputs a model of the converted task's head gives: its label dictionary's classes (a
    tag each for tagging), the task's labels, 1 for a score; None where the kind decides
    otherwise (element sets)."""
    from bio_roberta.tasks.kinds import ELEMENT_SETS, REGRESSION

    if spec.kind == REGRESSION:
        return 1
    if spec.task_kind.label_encoding == ELEMENT_SETS:
        return None
    if spec.is_sequence_labelling:
        label_dict = data_dir / "label" / "dict.txt"
        return sum(1 for line in label_dict.read_text(encoding="utf-8").splitlines() if line)
    return len(spec.labels)
