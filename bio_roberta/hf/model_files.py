"""The weights of a transformers model dir, checked against what import-hf maps before anything is
written or any model is built (docs/import.md, "What an import guarantees").

transformers loads whatever it can and fills the rest with random values; import-hf instead reads
the tensor names, shapes and dtypes from the files' headers (a safetensors header, a sharded
model's index, a pytorch_model.bin memory-mapped under torch's weights_only allowlist) and compares
them with the weights its family's mapping reads (``expected_weights``), sized by config.json:

- a weight the mapping reads that no file holds would start from random values: refused, except
  the MLM head of a model that has none (fairseq's starts fresh; the manifest lists it);
- a weight a file holds that the mapping leaves unread would be lost: refused, except the
  family's ``left_out`` (family.py; the manifest lists them);
- names that fit another family than config.json's model_type: refused as that contradiction;
- config.json's num_hidden_layers against the layers the files hold, then every size against the
  shapes, so an absurd size is refused before anything of that size exists;
- the tensors read are then checked finite.
"""

from __future__ import annotations

import json
import pickle
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bio_roberta.hf.families import FAMILIES
from bio_roberta.hf.family import Family
from bio_roberta_core.errors import BioRobertaError


class HFImportError(BioRobertaError):
    """A transformers directory that cannot be imported; the message names the file or field."""


# transformers' weights files in its order of preference
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
SIZE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)
SHOWN = 3  # names shown of a longer list
# LayerNorm parameters of old (TensorFlow-converted) BERT files, renamed as transformers does
LEGACY_NAMES = ((".gamma", ".weight"), (".beta", ".bias"))
GIT_LFS_POINTER = b"version https://git-lfs"
# transformers' task heads (BertFor/RobertaFor/ModernBertForSequenceClassification, ...For
# TokenClassification: classifier; ...ForQuestionAnswering: qa_outputs): a fine-tuned model's
TASK_HEADS = ("classifier.", "qa_outputs.")


@dataclass(frozen=True)
class StoredTensor:
    """One tensor of a weights file, as its header describes it."""

    file: Path
    name: str  # as the file names it
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class CheckedWeights:
    """The weights the mapping reads (by their names without the base model's prefix), and the
    file's weights it leaves out (the family's left_out, by the file's names)."""

    read: dict[str, StoredTensor]
    has_mlm_head: bool
    left_out: list[str]


def shown(names) -> str:
    names = list(names)
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def check_sizes(config_json: Path, raw: dict[str, Any], family: Family) -> dict[str, int]:
    """The model sizes of config.json, each a positive whole number, and those the family's
    weight shapes derive from them."""
    sizes = {}
    for field in SIZE_FIELDS:
        value = raw.get(field)
        if type(value) is not int or value <= 0:
            raise HFImportError(
                f"{config_json}: {field} {value!r}: a transformers encoder's config needs a "
                "positive whole number there"
            )
        sizes[field] = value
    sizes.update(family.derived_sizes(sizes))
    type_vocab_size = raw.get("type_vocab_size", 2)
    if type(type_vocab_size) is not int or type_vocab_size <= 0:
        raise HFImportError(f"{config_json}: type_vocab_size {type_vocab_size!r}: not a size")
    sizes["type_vocab_size"] = type_vocab_size
    if sizes["hidden_size"] % sizes["num_attention_heads"]:
        raise HFImportError(
            f"{config_json}: hidden_size {sizes['hidden_size']} is not a multiple of "
            f"num_attention_heads {sizes['num_attention_heads']}"
        )
    return sizes


def safetensors_header(path: Path) -> dict[str, StoredTensor]:
    """The tensors of a safetensors file from its header; one whose data the file does not hold
    all of (a copy cut short) is refused."""
    size = path.stat().st_size
    with open(path, "rb") as file:
        head = file.read(8)
        if head.startswith(GIT_LFS_POINTER[:8]) and (head + file.read(16)) == GIT_LFS_POINTER:
            raise HFImportError(
                f"{path}: a Git LFS pointer, not the weights: fetch them (git lfs pull)"
            )
        length = struct.unpack("<Q", head)[0] if len(head) == 8 else size
        if 8 + length > size:
            raise HFImportError(
                f"{path}: truncated or not a safetensors file ({size:,} bytes cannot hold its "
                "header); fetch it again"
            )
        try:
            header = json.loads(file.read(length))
            data_size = size - 8 - length
            tensors = {}
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                end = info["data_offsets"][1]
                if end > data_size:
                    raise HFImportError(
                        f"{path}: truncated: tensor {name} ends at byte {end:,} of the data, "
                        f"which holds {data_size:,}; fetch the file again"
                    )
                tensors[name] = StoredTensor(path, name, tuple(info["shape"]), info["dtype"])
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
            raise HFImportError(
                f"{path}: not a safetensors file (its header: {type(error).__name__} {error})"
            ) from None
    return tensors


def pytorch_state(path: Path) -> dict[str, Any]:
    """A pytorch_model.bin's state dict, memory-mapped, under torch's weights_only allowlist: a
    file that needs anything else to unpickle (which could run code) is refused."""
    import zipfile

    import torch

    from bio_roberta_core.checkpoints import CheckpointError

    try:
        state = torch.load(path, map_location="cpu", mmap=zipfile.is_zipfile(path))
    except pickle.UnpicklingError as error:
        refused = re.search(r"GLOBAL (\S+)", str(error))
        what = refused.group(1) if refused else "objects other than tensors"
        raise HFImportError(
            f"{path}: refused to load: unpickling it needs {what}, which torch's weights_only "
            "loader does not allow (a plain state dict never does; such a file can run code); "
            "use the model's model.safetensors, or convert a copy you trust"
        ) from None
    except Exception as error:  # noqa: BLE001 - whatever torch raises, the file is unreadable
        raise HFImportError(str(CheckpointError.unreadable(path, error))) from None
    if not isinstance(state, dict) or not all(torch.is_tensor(v) for v in state.values()):
        raise HFImportError(f"{path}: not a state dict of tensors (a transformers weights file)")
    return state


def pytorch_header(path: Path) -> dict[str, StoredTensor]:
    return {
        name: StoredTensor(path, name, tuple(tensor.shape), str(tensor.dtype))
        for name, tensor in pytorch_state(path).items()
    }


def sharded_header(index: Path, read_header) -> dict[str, StoredTensor]:
    """The tensors of a sharded model: each shard its index names, holding what the index says."""
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise HFImportError(
            f"{index}: not a transformers weights index ({type(error).__name__} {error})"
        ) from None
    tensors = {}
    for shard in shards:
        path = index.parent / shard
        held = [name for name, file in weight_map.items() if file == shard]
        if not path.is_file():
            raise HFImportError(
                f"{index}: its shard {shard} is missing ({len(held)} weights, e.g. "
                f"{shown(held)}); fetch it"
            )
        header = read_header(path)
        absent = [name for name in held if name not in header]
        if absent:
            raise HFImportError(f"{path}: lacks {shown(absent)}, which {index.name} puts there")
        tensors.update(header)
    return tensors


def stored_tensors(hf_dir: Path) -> dict[str, StoredTensor]:
    """The tensors of the dir's weights file(s), by the files' names."""
    readers = {
        "model.safetensors": safetensors_header,
        "model.safetensors.index.json": lambda p: sharded_header(p, safetensors_header),
        "pytorch_model.bin": pytorch_header,
        "pytorch_model.bin.index.json": lambda p: sharded_header(p, pytorch_header),
    }
    for name in WEIGHT_FILES:
        if (hf_dir / name).is_file():
            return readers[name](hf_dir / name)
    raise HFImportError(
        f"{hf_dir}: no weights file (looked for {', '.join(WEIGHT_FILES)}); fetch the model's "
        "weights into it"
    )


def mapped_name(family: Family, name: str) -> str:
    """A file's weight name as the mapping names it: without the base model's prefix, legacy
    LayerNorm names as transformers renames them."""
    if name.startswith(family.base_prefix):
        name = name[len(family.base_prefix) :]
    if "LayerNorm" in name:
        for old, new in LEGACY_NAMES:
            if name.endswith(old):
                name = name[: -len(old)] + new
    return name


@dataclass(frozen=True)
class NameFit:
    """How a file's names fit one family's mapping."""

    mapped: dict[str, StoredTensor]
    layers: list[int]
    missing: list[str]  # read by the mapping, in no file
    unread: list[str]  # in a file, read by nothing (file names)
    left_out: list[str]  # the family's left_out (file names)
    has_mlm_head: bool


def fit_names(family: Family, stored: dict[str, StoredTensor], raw: dict) -> NameFit:
    mapped: dict[str, StoredTensor] = {}
    for name, tensor in stored.items():
        key = mapped_name(family, name)
        if key in mapped:
            raise HFImportError(
                f"{tensor.file}: holds both {mapped[key].name} and {name}, the same weight"
            )
        mapped[key] = tensor
    layer = re.compile(re.escape(family.layer_prefix) + r"(\d+)\.")
    layers = sorted({int(m.group(1)) for m in map(layer.match, mapped) if m})
    expected = family.expected_weights(raw, len(layers))
    head, optional = family.mlm_head_weights(raw)
    has_mlm_head = any(name in mapped for name in head if name not in optional)
    if has_mlm_head:
        expected.update(head)
    missing = [name for name in expected if name not in mapped and name not in optional]
    unread, left_out = [], []
    for name, tensor in mapped.items():
        if name not in expected:
            known = any(name.startswith(prefix) for prefix in family.left_out)
            (left_out if known else unread).append(tensor.name)
    return NameFit(mapped, layers, missing, sorted(unread), sorted(left_out), has_mlm_head)


def check_weights(
    hf_dir: Path, config_json: Path, raw: dict[str, Any], model_type: str
) -> CheckedWeights:
    """The weights the mapping reads, checked against config.json and the files (module
    docstring); one line naming what does not fit."""
    family = FAMILIES[model_type]
    sizes = check_sizes(config_json, raw, family)
    stored = stored_tensors(hf_dir)
    fit = fit_names(family, stored, raw)
    heads = [name for name in fit.unread if name.startswith(TASK_HEADS)]
    if heads:
        model = (raw.get("architectures") or ["task model"])[0]
        base = raw.get("_name_or_path")
        raise HFImportError(
            f"{config_json.parent}: a fine-tuned {model} (its {shown(heads)} are a task head, "
            "which import-hf has no place for): import-hf takes a pretrained model (a "
            "*ForMaskedLM or *Model dir); import the model it was fine-tuned from"
            + (f" ({base}, its config.json says)" if base else "")
            + " and fine-tune that with `bio-roberta finetune`, or use this one in transformers"
        )
    if fit.missing or fit.unread:
        others = [other for other in FAMILIES if other != model_type and fits(other, stored, raw)]
        files = ", ".join(sorted({str(t.file) for t in stored.values()}))
        if others:
            raise HFImportError(
                f"{config_json}: model_type {model_type!r} contradicts the weights: {files} "
                f"holds a {others[0]} model's names (a {model_type} model would read "
                f"{shown(fit.missing)}; they are not there); fix config.json's model_type"
            )
        if fit.missing:
            raise HFImportError(
                f"{files}: lacks {len(fit.missing)} weights of the {model_type} model of "
                f"{config_json.name}, which would start from random values: "
                f"{shown(fit.missing)}; fetch the complete weights"
            )
        raise HFImportError(
            f"{files}: holds {len(fit.unread)} weights the {model_type} model of "
            f"{config_json.name} does not read, which would be lost: {shown(fit.unread)}; "
            "is config.json this model's?"
        )
    layers = sizes["num_hidden_layers"]
    if fit.layers != list(range(layers)):
        held = f"layers 0-{fit.layers[-1]}" if fit.layers else "no layers"
        raise HFImportError(
            f"{config_json}: num_hidden_layers {layers}, but the weights hold {held}; "
            "fix config.json or fetch the complete weights"
        )
    expected = family.expected_weights(raw, layers)
    if fit.has_mlm_head:
        expected.update(family.mlm_head_weights(raw)[0])
    for name, fields in expected.items():
        tensor = fit.mapped.get(name)
        shape = tuple(sizes[field] for field in fields)
        if tensor is not None and tensor.shape != shape:
            raise HFImportError(
                f"{tensor.file}: {tensor.name} has shape {list(tensor.shape)}, but "
                f"{config_json.name}'s {', '.join(f'{f} {sizes[f]}' for f in fields)} make it "
                f"{list(shape)}; is config.json this model's?"
            )
    read = {name: fit.mapped[name] for name in expected if name in fit.mapped}
    return CheckedWeights(read, fit.has_mlm_head, fit.left_out)


def fits(model_type: str, stored: dict[str, StoredTensor], raw: dict) -> bool:
    """Whether the files' names are exactly those a family's mapping reads."""
    fit = fit_names(FAMILIES[model_type], stored, raw)
    return bool(fit.layers) and not fit.missing and not fit.unread


def load_weights(checked: CheckedWeights) -> dict[str, Any]:
    """The tensors the mapping reads, by its names; one holding NaN or Inf is refused naming it."""
    from safetensors import safe_open

    from bio_roberta_core.checkpoints import first_non_finite

    by_file: dict[Path, dict[str, str]] = {}
    for name, tensor in checked.read.items():
        by_file.setdefault(tensor.file, {})[name] = tensor.name
    weights = {}
    for path, names in by_file.items():
        if path.suffix == ".safetensors":
            with safe_open(str(path), "pt") as file:
                loaded = {name: file.get_tensor(stored) for name, stored in names.items()}
        else:
            state = pytorch_state(path)
            loaded = {name: state[stored] for name, stored in names.items()}
        found = first_non_finite({names[k]: v for k, v in loaded.items()})
        if found is not None:
            name, bad, total = found
            raise HFImportError(
                f"{path}: {name} holds {bad} NaN/Inf of {total} values; a model with such "
                "weights gives NaN outputs: fetch the weights again or use another model"
            )
        weights.update(loaded)
    return weights
