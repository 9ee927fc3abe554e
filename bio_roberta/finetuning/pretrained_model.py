"""What the fine-tuning runs take from the pretrained checkpoint (PretrainedModel: its file
record, --arch options and positions), checked against the task's converted data before any run
starts (check_pretrained): its architecture, its dictionary against the data's, the positions the
data was converted for."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

from bio_roberta.errors import FinetuneError
from bio_roberta.finetuning.converted_data import (
    convert_again_command,
    positions_problem,
    task_data_dir,
)
from bio_roberta.finetuning.sweep_config import SweepConfig
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.architecture_fields import FLAG_FIELDS, MODERNBERT_FIELDS, SHAPE_FIELDS
from bio_roberta_core.model_dictionary import MASK, recorded_dictionary
from bio_roberta_core.provenance import sha256_file

# The model options of a checkpoint's config passed on as fairseq-train options (those it has)
ARCHITECTURE_FIELDS = SHAPE_FIELDS + MODERNBERT_FIELDS + FLAG_FIELDS


def architecture_options(field: Callable[[str], Any]) -> list[str]:
    """fairseq-train options of the checkpoint's ARCHITECTURE_FIELDS (field: name -> its value,
    None where it has none); a flag only where it is set."""
    options = []
    for name in ARCHITECTURE_FIELDS:
        value, option = field(name), f"--{name.replace('_', '-')}"
        if name in FLAG_FIELDS:
            options += [option] if value else []
        elif value is not None:
            options += [option, str(value)]
    return options


@dataclasses.dataclass(frozen=True)
class PretrainedModel:
    """What the runs take from the pretrained checkpoint: its file record (result records'
    "pretrained"), the --arch options to fine-tune it and its positions, which its position
    embeddings fix."""

    record: dict[str, Any]
    architecture: list[str]
    max_positions: int

    @classmethod
    def read(cls, cfg: SweepConfig) -> "PretrainedModel":
        """The sweep's `arch` if set, else the checkpoint's own architecture (its name and its
        layer/width/head overrides), so a distilled or resized model needs no flags to match its
        weights."""
        from bio_roberta_core.checkpoints import model_option, read_checkpoint

        path = Path(cfg.pretrained)
        if not path.is_file():
            raise FinetuneError(f"pretrained checkpoint {path} does not exist")
        field = model_option(read_checkpoint(path, mmap=True))
        if not field("max_positions"):
            raise FinetuneError(
                f"{path} records no model max_positions; is it a fairseq RoBERTa checkpoint?"
            )
        if cfg.arch:
            architecture = ["--arch", cfg.arch]
        elif field("_name") or field("arch"):
            architecture = ["--arch", field("_name") or field("arch"), *architecture_options(field)]
        else:
            raise FinetuneError(f"{path} records no architecture; set arch=<name> in the sweep")
        record = {
            "path": str(path.resolve()),
            "sha256": sha256_file(path),
            "size": path.stat().st_size,
        }
        return cls(record, architecture, int(field("max_positions")))


def check_arch(checkpoint: str | os.PathLike, state: dict[str, Any], arch: str) -> None:
    """Refuse, before any run, an --arch fairseq does not know or of another model family than the
    checkpoint's own (its weights would not load): fairseq would fail in every run."""
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    import user_dir  # noqa: F401  (registers our architectures)
    from bio_roberta_core.checkpoints import model_option

    own = model_option(state)("_name") or model_option(state)("arch")
    if arch not in ARCH_MODEL_NAME_REGISTRY:
        raise FinetuneError(
            f"--arch {arch}: not a fairseq architecture; leave --arch out to fine-tune "
            f"{checkpoint}'s own ({own})"
        )
    if own in ARCH_MODEL_NAME_REGISTRY and (
        ARCH_MODEL_NAME_REGISTRY[arch] != ARCH_MODEL_NAME_REGISTRY[own]
    ):
        raise FinetuneError(
            f"--arch {arch}: a {ARCH_MODEL_NAME_REGISTRY[arch]} architecture, but {checkpoint} "
            f"is a {ARCH_MODEL_NAME_REGISTRY[own]} model ({own}); leave --arch out or choose a "
            f"{ARCH_MODEL_NAME_REGISTRY[own]} architecture"
        )


def embedding_rows(state: dict[str, Any]) -> Optional[int]:
    """Rows of the checkpoint's token embedding (one per dictionary entry, specials and <mask>
    included)."""
    model = state.get("model") or {}
    name = next((n for n in model if n.endswith("sentence_encoder.embed_tokens.weight")), None)
    return None if name is None else int(model[name].shape[0])


def trained_vocabulary(recorded: dict[str, str]) -> str:
    """The vocabulary dir of the dict.txt a checkpoint records, as far as that file's dir tells:
    a vocabulary dir itself (learn-vocab, import-hf), or a data-bin naming its vocabulary."""
    where = Path(recorded["path"]).parent
    try:
        manifest = json.loads((where / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    if isinstance(manifest.get("vocab"), dict) and manifest["vocab"].get("path"):
        return manifest["vocab"]["path"]
    if "kind" in manifest:
        return str(where)
    return f"<the vocabulary dir whose dict.txt has sha256 {recorded['sha256']}>"


def check_data_dictionary(
    checkpoint: str | os.PathLike, state: dict[str, Any], spec: TaskSpec, data_root: str
) -> None:
    """Refuse, before any run, data converted with another dictionary than the checkpoint was
    trained with: by size (its embedding rows), and by the sha256 of the dict.txt it records
    (extra_state["dictionary"]; a copy with other counts but the same entries passes), for a
    vocabulary of the same size gives every token a wrong embedding without any error."""
    from preprocess.gpt2_encoder import read_dictionary_indices

    rows, recorded = embedding_rows(state), recorded_dictionary(state)
    for fold in spec.run_folds:
        dict_txt = task_data_dir(data_root, spec, fold) / "input0" / "dict.txt"
        if not dict_txt.is_file():
            raise FinetuneError(
                f"{dict_txt} not found: is {task_data_dir(data_root, spec, None)} a converted "
                "finetune-bin/<task> directory? run bio-roberta convert-task first"
            )
        indices, size = read_dictionary_indices(dict_txt)
        size += MASK not in indices  # the tasks add <mask>, as load_model_dictionary does
        if rows is not None and rows != size:
            problem = f"{size:,} model rows for its entries, the checkpoint has {rows:,}"
        elif recorded and sha256_file(dict_txt) != recorded["sha256"]:
            reference = Path(recorded["path"])
            if (
                reference.is_file()
                and sha256_file(reference) == recorded["sha256"]
                and read_dictionary_indices(reference)[0] == indices
            ):
                continue
            problem = f"the same size, but not the dict.txt it records: {reference}, sha256 "
            problem += recorded["sha256"][:12]
        else:
            continue
        vocabulary = trained_vocabulary(recorded) if recorded else "<the model's vocabulary dir>"
        again = convert_again_command(spec, task_data_dir(data_root, spec, None), vocabulary)
        raise FinetuneError(
            f"{dict_txt} is not the dictionary {checkpoint} was trained with ({problem}): its "
            f"tokens would get other tokens' embeddings; convert again with the model's "
            f"vocabulary: {again}"
        )


def check_pretrained(
    path: str, data_root: str, tasks: list[str], arch: Optional[str] = None
) -> None:
    """Before any run, in seconds (the checkpoint mmapped, fairseq not started unless --arch is
    given): the checkpoint to fine-tune from loads and its weights are finite, --arch is one fairseq
    knows of the checkpoint's model family, and each task's converted data has the dictionary the
    checkpoint was trained with; else a one-line error."""
    from bio_roberta.tasks.registry import get_task
    from bio_roberta_core.checkpoints import (
        CheckpointError,
        check_finite_weights,
        model_option,
        read_checkpoint,
    )

    try:
        state = read_checkpoint(path, mmap=True)
        check_finite_weights(path, state.get("model") or {})
    except CheckpointError as error:
        raise FinetuneError(f"--pretrained {error}") from None
    if arch:
        check_arch(path, state, arch)
    positions = model_option(state)("max_positions")
    for task in tasks:
        spec = get_task(task)
        check_data_dictionary(path, state, spec, data_root)
        problem = positions and positions_problem(
            spec, task_data_dir(data_root, spec, None), path, int(positions)
        )
        if problem:
            raise FinetuneError(problem)


def check_converted_positions(
    cfg: SweepConfig, spec: TaskSpec, data_dir: Path, pretrained: PretrainedModel
) -> None:
    """Stop before training a model on examples longer than its positions (convert-task's
    --max-positions, or its --pretrained)."""
    problem = positions_problem(
        spec, task_data_dir(cfg.data_root, spec, None), cfg.pretrained, pretrained.max_positions
    )
    if problem:
        raise FinetuneError(problem)
