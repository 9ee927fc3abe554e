"""A fairseq RoBERTa checkpoint as a Hugging Face transformers model directory.

The checkpoint may be pretrained or distilled (-> RobertaForMaskedLM) or fine-tuned with a
sentence classification head (-> RobertaForSequenceClassification) or a token classification
head (-> RobertaForTokenClassification); an imported model, or one fine-tuned from it, becomes
the classes of its family (BertFor*, MegatronBertFor*, ModernBertFor*: families.py).
weights.py builds the model (each family's module maps the weights), tokenizer.py writes
tokenizer files that give the ids fairseq gives. Here: the checkpoint and the dictionary it was
trained with, the label names of a fine-tuned head, and the manifest. What a fine-tuned head's
outputs mean (classes, a score, one decision per element) is its task kind's
(``TaskKind.hf_export``), the task being the one finetune-bin/<task>/manifest.json names.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from bio_roberta.audit.lineage import given_corpora, training_data
from bio_roberta.errors import ExportError
from bio_roberta.hf.export_audit import check_audit
from bio_roberta.hf.families import exported_family
from bio_roberta.hf.model_card import CARD_FILE, model_card
from bio_roberta.hf.tokenizer import open_vocabulary
from bio_roberta.hf.weights import build_hf_model, head_of
from bio_roberta.tasks.kinds import HFExport, TaskKind, kind_trained_by
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.checkpoints import check_finite_weights
from bio_roberta_core.fairseq_keys import MASKED_LM, TOKEN_CLASSIFICATION, option
from bio_roberta_core.model_dictionary import (
    load_model_dictionary,
    recorded_dictionary,
    training_dictionary,
)
from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import (
    NO_ROOM,
    atomic_write_json,
    atomic_write_text,
    environment_record,
    file_record,
    kill_point,
    sha256_file,
)

logger = logging.getLogger(__name__)

# What an export dir may hold (transformers' model and tokenizer files, the manifest): export-hf
# replaces such a dir whole, so it holds exactly what the export wrote.
EXPORT_FILE = re.compile(
    r"^(manifest\.json|README\.md|(generation_)?config\.json|model.*\.safetensors(\.index\.json)?|"
    r"pytorch_model.*\.bin(\.index\.json)?|tokenizer(_config)?\.json|special_tokens_map\.json|"
    r"added_tokens\.json|vocab\.(json|txt)|merges\.txt|[^/]*\.model)$"
)


def load_checkpoint(
    path: str | os.PathLike,
) -> tuple[dict[str, Any], Any, Optional[str], Optional[dict], Optional[TaskKind]]:
    """The model state dict, model options, training data dir, training dictionary record
    (user_dir/checkpointing.py; None in checkpoints written before it) and the task kind its fairseq
    task and criterion were (None: not a kind's, or not recorded) of a fairseq checkpoint file."""
    path = Path(path)
    if not path.is_file():  # before the seconds of importing fairseq
        raise ExportError(f"checkpoint {path} does not exist")
    from fairseq import checkpoint_utils

    import user_dir  # noqa: F401  (allowlist for torch's weights_only load; unreadable files as CheckpointError)

    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    check_finite_weights(path, state.get("model") or {})
    cfg = state.get("cfg") or {}
    model_cfg = cfg["model"] if "model" in cfg else state.get("args")
    if model_cfg is None:
        raise ExportError(
            f"{path} holds no model options (cfg.model / args); not a fairseq checkpoint?"
        )
    task_cfg = cfg["task"] if "task" in cfg and cfg["task"] is not None else model_cfg
    criterion_cfg = cfg["criterion"] if "criterion" in cfg and cfg["criterion"] else None
    trained_by = (
        option(task_cfg, "_name"),
        option(criterion_cfg, "_name") if criterion_cfg is not None else None,
    )
    return (
        state["model"],
        model_cfg,
        option(task_cfg, "data"),
        recorded_dictionary(state),
        kind_trained_by(*trained_by) if None not in trained_by else None,
    )


def check_dictionary(
    dict_txt: Path, checkpoint, recorded: Optional[dict], data_dir: Optional[str]
) -> None:
    """Refuse a dict.txt other than the one the checkpoint was trained with: one of the same size
    gives the exported tokenizer wrong ids. The reference is the dictionary recorded in the
    checkpoint, else its data dir's; a copy with other counts but the same entries
    (fairseq-preprocess rewrites dict.txt) passes."""
    if recorded is None and data_dir is not None and training_dictionary(data_dir).is_file():
        reference = training_dictionary(data_dir)
        recorded = {"path": str(reference), "sha256": sha256_file(reference)}
    if recorded is None:
        logger.warning(
            "%s records no dictionary and its training data (%s) is not here: %s is checked by its "
            "size only",
            checkpoint,
            data_dir,
            dict_txt,
        )
        return
    if sha256_file(dict_txt) == recorded["sha256"]:
        return
    reference = Path(recorded["path"])
    if (
        reference.is_file()
        and sha256_file(reference) == recorded["sha256"]
        and load_model_dictionary(reference).symbols == load_model_dictionary(dict_txt).symbols
    ):
        return
    gone = "" if reference.is_file() else ", which is gone"
    raise ExportError(
        f"{dict_txt} is not the dictionary {checkpoint} was trained with ({reference}{gone}): "
        "its ids would be wrong; pass --vocab/--dict of the vocabulary "
        "that data was binarized with"
    )


def label_names(label_dict: Path) -> list[str]:
    """Class index -> label: fairseq offsets label-dictionary ids by its 4 specials; the padding
    entries fairseq-preprocess appends (madeupword...) are no classes."""
    from fairseq.data import Dictionary

    from preprocess.vocab_dir import MADEUP_WORD_PREFIX

    dictionary = Dictionary.load(str(label_dict))
    return [
        s for s in dictionary.symbols[dictionary.nspecial :] if not s.startswith(MADEUP_WORD_PREFIX)
    ]


def finetuned_task(task_dir: Optional[Path]) -> tuple[Optional[TaskSpec], str]:
    """(the registry task of finetune-bin/<task>/manifest.json in task_dir, why there is none):
    data binarised by hand has no manifest; its head is exported as classes of label/dict.txt."""
    from bio_roberta.tasks.converted_task import task_spec_of
    from bio_roberta.tasks.prediction_files import PredictionFileError

    if task_dir is None:
        return None, "the checkpoint does not name its data dir"
    try:
        return task_spec_of(task_dir), ""
    except (OSError, ValueError, PredictionFileError) as error:  # ValueError: not UTF-8
        return None, str(error)


def entity_label_names(tags: list[str], spec: Optional[TaskSpec], no_task: str) -> list[str]:
    """Tags named with their entity type: BioBERT's untyped B/I/O files give B/I tags, which
    transformers' token-classification pipeline takes for two entity types named "B" and "I"; the
    registry's entity type of the task (finetune-bin/<task>/manifest.json beside label/) makes them
    B-<Type>/I-<Type>, which it groups into entities. Typed tags are kept."""
    from bio_roberta_core.tagging import entity_types, typed_tags

    if entity_types(tags) != ("",):
        return tags
    if spec is None:
        logger.warning(
            "labels %s stay untyped: no task to take their entity type from (%s)", tags, no_task
        )
        return tags
    if spec.entity_type is None:
        logger.warning(
            "labels %s stay untyped: the registry gives %s no entity type", tags, spec.name
        )
        return tags
    return list(typed_tags(tags, spec.entity_type))


def export(
    checkpoint: str | os.PathLike,
    out_dir: str | os.PathLike,
    vocab_dir: str | os.PathLike,
    dict_txt: Optional[str | os.PathLike] = None,
    label_dict: Optional[str | os.PathLike] = None,
    head: Optional[str] = None,
    audit: Optional[str | os.PathLike] = None,
    allow_unaudited: bool = False,
    given_training_data: Sequence[str | os.PathLike] = (),
) -> dict[str, Any]:
    """Write the transformers model + tokenizer + model card (README.md) + manifest.json to
    out_dir; returns the manifest. A checkpoint trained on MIMIC-III notes needs a passing audit
    record (audit, else CHECKPOINT.audit.json) or allow_unaudited (bio_roberta/hf/export_audit.py);
    given_training_data: the data-bins it was trained on, where its own options no longer lead to
    them (the card says so).
    The output dir's lock is held for the whole run: a second export into it is refused at once."""
    from preprocess.vocab_dir import read_vocab_dir

    with new_output_dir(out_dir, EXPORT_FILE) as build:
        vocab = open_vocabulary(vocab_dir, dict_txt)
        state, model_cfg, data_dir, dictionary, trained_kind = load_checkpoint(checkpoint)
        tokenizer = vocab.hf_tokenizer(
            model_max_length=exported_family(model_cfg).max_length(state, model_cfg)
        )
        check_dictionary(vocab.dict_txt, checkpoint, dictionary, data_dir)
        kind, head = head_of(state, head)
        checkpoint_record = file_record(checkpoint)
        if given_training_data:
            try:
                training = given_corpora([str(d) for d in given_training_data])
            except FileNotFoundError as error:
                raise ExportError(str(error)) from None
        else:
            training = training_data(Path(checkpoint), kind, data_dir, checkpoint_record["sha256"])
        gate = check_audit(
            Path(checkpoint),
            checkpoint_record["sha256"],
            Path(vocab_dir),
            training,
            Path(audit) if audit is not None else None,
            allow_unaudited,
        )
        labels, hf_export, spec = None, HFExport(), None
        if kind != MASKED_LM:
            label_dict = Path(label_dict) if label_dict else None
            task_dir = label_dict.parent.parent if label_dict else first_data_dir(data_dir)
            spec, no_task = finetuned_task(task_dir)
            # the task's kind; without its finetune-bin manifest, the kind its fairseq task and
            # criterion train
            task_kind = spec.task_kind if spec is not None else trained_kind
            if task_kind is not None:
                hf_export = task_kind.hf_export
            if hf_export.output_names is not None:
                labels = list(hf_export.output_names)
            elif task_kind is None or task_kind.has_label_dictionary:
                label_dict = label_dict or default_label_dict(data_dir, checkpoint)
                labels = label_names(label_dict)
                if kind == TOKEN_CLASSIFICATION:
                    labels = entity_label_names(labels, spec, no_task)
        read_label_dict = labels is not None and hf_export.output_names is None
        model = build_hf_model(
            state,
            model_cfg,
            len(load_model_dictionary(vocab.dict_txt)),
            kind,
            head,
            labels,
            problem_type=hf_export.problem_type,
            decoding=hf_export.decoding,
            original_ids=vocab.original,
        )
        with out_of_room_as_os_error(build.path):
            model.save_pretrained(build.path)
            kill_point("export_hf:weights-written")
            vocab.save_tokenizer(tokenizer, build.path)
        manifest = {
            "kind": kind,
            "hf_model_class": type(model).__name__,
            "head": head,
            "labels": labels,
            "vocab_size": model.config.vocab_size,
            # an import's own ids (bio_roberta/hf/original_ids.py), else fairseq's dictionary's
            "token_ids": "imported" if vocab.original else "fairseq",
            "checkpoint": checkpoint_record,
            # the weight files written, by their hashes: `predict` of the export dir checks them
            "weights": {
                path.name: {"size": path.stat().st_size, "sha256": sha256_file(path)}
                for path in sorted(build.path.iterdir())
                if WEIGHT_FILE.match(path.name)
            },
            "vocabulary": {name: file_record(path) for name, path in vocab.files().items()},
            "label_dict": file_record(label_dict) if read_label_dict else None,
            "audit": gate.manifest(),
            **environment_record(),
        }
        card = model_card(
            build.target,
            Path(checkpoint),
            model.config,
            tokenizer.model_max_length,
            kind,
            spec,
            training,
            read_vocab_dir(vocab_dir).manifest,
            manifest,
            warning=gate.card_warning(),
            audit_section=gate.card_section(),
        )
        atomic_write_text(build.path / CARD_FILE, card)
        atomic_write_json(build.path / "manifest.json", manifest)  # last
    return manifest


# transformers' weight files (save_pretrained: one file, or shards)
WEIGHT_FILE = re.compile(r"^(model.*\.safetensors|pytorch_model.*\.bin)$")


# How safetensors and tokenizers (Rust) report an OS error: "... (os error 28)" in the message
RUST_OS_ERROR = re.compile(r"\(os error (\d+)\)")


@contextlib.contextmanager
def out_of_room_as_os_error(directory: Path) -> Iterator[None]:
    """Running out of room inside transformers' writers (safetensors, tokenizers raise their own
    exception types, with the errno in the message) as the OSError it is, which new_output_dir
    turns into its one line (DiskFullError) after removing the partial dir."""
    try:
        yield
    except OSError:
        raise
    except Exception as error:  # noqa: BLE001 - re-raised unless it is an OS error of no room
        code = RUST_OS_ERROR.search(str(error))
        if code is None or int(code.group(1)) not in NO_ROOM:
            raise
        errno = int(code.group(1))
        raise OSError(errno, os.strerror(errno), str(directory)) from None


def first_data_dir(data_dir: Optional[str]) -> Optional[Path]:
    """The fine-tuning run's data dir (the first of fairseq's os.pathsep-separated list)."""
    return None if data_dir is None else Path(str(data_dir).split(os.pathsep)[0])


def default_label_dict(data_dir: Optional[str], checkpoint) -> Path:
    """<task data>/label/dict.txt of the fine-tuning run, where the checkpoint's options name it."""
    hint = f"pass --label-dict (the label/dict.txt of the data {checkpoint} was fine-tuned on)"
    if data_dir is None:
        raise ExportError(f"the checkpoint does not name its data dir; {hint}")
    path = first_data_dir(data_dir) / "label" / "dict.txt"
    if not path.exists():
        raise ExportError(f"{path} does not exist; {hint}")
    return path
