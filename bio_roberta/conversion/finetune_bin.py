"""Convert a task's source files into finetune-bin/<task> with the model's vocabulary.

The layout is the finetune-bin contract of docs/task_dirs.md: input0/ (input1/ for the kinds of
sentence pairs) with the model's dict.txt, label/ with bio_roberta.tasks.kinds.label_symbols (or,
for scores, label/{split}.label with one number a line, as fairseq's sentence_prediction reads
with --regression-target), {split}.ids, {split}.conll for the kinds that tag words, and
manifest.json. A pair too long for the positions is cut by its kind's rule (TaskKind.truncate).
Everything is binarised with fairseq's own Dictionary and mmap indexed-dataset builder, as
fairseq-preprocess does (an eos after every line).

The examples are encoded by bio_roberta/conversion/encoder.py (how words, long inputs and
.conll lines are written is stated there).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path
from typing import Optional

from bio_roberta.blurb.split_check import check_blurb_split, identical_splits
from bio_roberta.blurb.suite import BLURB
from bio_roberta.conversion.encoder import (
    ConversionError,
    EncodedSplit,
    TaskEncoder,
    encode_split,
)
from bio_roberta.readers import read_task
from bio_roberta.readers.source_files import SPLITS, TaskData
from bio_roberta.tasks.kinds import SCHEME_TAGS, SCORES_PER_LINE
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta.tasks.truncation import WINDOWS, LongInputs
from bio_roberta_core.checkpoints import check_max_positions, model_positions
from bio_roberta_core.output_dir import new_output_dir
from bio_roberta_core.provenance import (
    atomic_write_json,
    atomic_write_text,
    environment_record,
    file_record,
    sha256_file,
)
from bio_roberta_core.tagging import BIO
from preprocess.vocab_dir import VocabularyDir, read_vocab_dir, write_padded_dict

logger = logging.getLogger(__name__)

# What a finetune-bin/<task> dir holds: convert-task replaces such a dir whole.
FINETUNE_BIN_FILE = re.compile(
    r"^(manifest\.json|input[01]|label|\w+\.(ids|conll|windows)|fold\d+)$"
)

# The most of a split's tokens that may be <unk>. A model's own vocabulary leaves next to none of
# its domain's text unknown (byte-level BPE: none by construction; WordPiece: characters it never
# saw), so more means the text is encoded with a vocabulary not made for it, e.g. an import whose
# tokenizer had no files (every word <unk>). 5% leaves room for odd characters in a few examples
# and still stops such a conversion; --max-unknown-rate 1 converts anyway.
MAX_UNKNOWN_RATE = 0.05


def write_indexed(rows: list[list[int]], prefix: Path, vocab_size: int) -> None:
    """{prefix}.bin/.idx with fairseq's mmap builder (what fairseq-preprocess writes)."""
    import torch
    from fairseq.data import indexed_dataset

    prefix.parent.mkdir(parents=True, exist_ok=True)
    builder = indexed_dataset.make_builder(str(prefix) + ".bin", impl="mmap", vocab_size=vocab_size)
    for row in rows:
        builder.add_item(torch.IntTensor(row))
    builder.finalize(str(prefix) + ".idx")


def vocab_record(vocab: VocabularyDir) -> dict:
    dict_record = file_record(vocab.dict_path)
    return {
        "path": str(vocab.path.resolve()),
        "kind": vocab.kind,
        "sha256": dict_record["sha256"],
        "files": [dict_record] + [file_record(p) for p in vocab.bpe_files.values()],
    }


def unknown_token_rates(
    data: TaskData, encoded: dict[str, EncodedSplit], vocab: dict, max_rate: float
) -> dict[str, float]:
    """Each split's share of <unk> tokens; a split over max_rate stops the conversion."""
    rates = {}
    for split, rows in encoded.items():
        unknown, tokens = rows.counts["unknown_tokens"], rows.counts["encoded_tokens"]
        rates[split] = unknown / tokens if tokens else 0.0
        if rates[split] > max_rate:
            files = ", ".join(map(str, data.splits[split].sources)) or f"the {split} split"
            raise ConversionError(
                f"{data.spec.name}: {files}: {unknown:,} of {tokens:,} tokens "
                f"({rates[split]:.1%}) are <unk> with the vocabulary {vocab['path']}, more than "
                f"--max-unknown-rate {max_rate:g}: is it this model's (an import-hf whose "
                "tokenizer files were missing)? If it is, pass --max-unknown-rate 1"
            )
    return rates


def write_finetune_bin(
    data: TaskData, encoder: TaskEncoder, out_dir: Path, vocab: dict, options: dict
) -> dict:
    """Binarise one TaskData (a task, or one fold) into out_dir and write its manifest last."""
    spec = data.spec
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").unlink(missing_ok=True)
    encoded = {split: encode_split(encoder, data, split) for split in SPLITS}
    rates = unknown_token_rates(data, encoded, vocab, options["max_unknown_rate"])
    inputs = [f"input{i}" for i in range(spec.task_kind.inputs)]
    for name in inputs:
        (out_dir / name).mkdir(parents=True, exist_ok=True)
        write_padded_dict(
            Path(vocab["path"]) / "dict.txt", out_dir / name / "dict.txt"
        )  # as binarize's
    for split, rows in encoded.items():
        for name, input_rows in zip(inputs, (rows.input0, rows.input1)):
            write_indexed(input_rows, out_dir / name / split, len(encoder.dictionary))
        if spec.task_kind.label_encoding == SCORES_PER_LINE:
            atomic_write_text(
                out_dir / "label" / f"{split}.label", "".join(f"{s}\n" for s in rows.scores)
            )
        else:
            write_indexed(rows.labels, out_dir / "label" / split, len(encoder.label_dictionary))
        atomic_write_text(out_dir / f"{split}.ids", "".join(f"{i}\n" for i in rows.ids))
        if encoder.long_inputs.route == WINDOWS:
            atomic_write_text(
                out_dir / f"{split}.windows",
                "".join("\t".join(map(str, window)) + "\n" for window in rows.windows),
            )
        if spec.is_sequence_labelling:
            atomic_write_text(
                out_dir / f"{split}.conll", "\n".join(rows.conll) + ("\n" if rows.conll else "")
            )
    # dict.txt counts are training counts, as fairseq-preprocess writes them.
    label_counts = Counter(i for row in encoded["train"].labels for i in row)
    for index in range(encoder.label_dictionary.nspecial, len(encoder.label_dictionary)):
        encoder.label_dictionary.count[index] = label_counts[index]
    if encoder.label_symbols:
        encoder.label_dictionary.save(str(out_dir / "label" / "dict.txt"))
    sources = sorted({path for split in data.splits.values() for path in split.sources})
    manifest = {
        "task": spec.name,
        "kind": spec.kind,
        "fold": data.fold,
        "tagging_scheme": (
            encoder.scheme if spec.task_kind.label_encoding == SCHEME_TAGS else None
        ),
        "labels": list(encoder.label_symbols),
        "counts": {split: rows.counts["examples"] for split, rows in encoded.items()},
        "split_details": {
            split: {
                "read": data.splits[split].summary(),
                "converted": dict(sorted(encoded[split].counts.items())),
                "unknown_token_rate": rates[split],
            }
            for split in SPLITS
        },
        "max_positions": options["max_positions"],
        "long_inputs": encoder.long_inputs.as_dict(),
        "example_ids": {split: ids_record(out_dir, split, encoded[split]) for split in SPLITS},
        **blurb_split_check(data),
        **({"task_declaration": spec.declaration.record(spec.labels)} if spec.declaration else {}),
        "vocab": vocab,
        "inputs": [file_record(path) for path in sources],
        "options": options,
        **environment_record(),
    }
    atomic_write_json(out_dir / "manifest.json", manifest)
    for split in SPLITS:
        logger.info("%s -> %s: %s", split, out_dir, dict(encoded[split].counts))
    return manifest


def ids_record(out_dir: Path, split: str, rows: EncodedSplit) -> dict:
    """What {split}.ids holds: the release's example ids (a sentence split for the positions
    repeats its id on each piece), so predictions can be keyed by them."""
    ids = [line.split("\t")[0] for line in rows.ids]
    return {
        "file": f"{split}.ids",
        "sha256": sha256_file(out_dir / f"{split}.ids"),
        "lines": len(ids),
        "distinct_ids": len(set(ids)),
    }


def blurb_split_check(data: TaskData) -> dict:
    """The splits that hold the same examples (a copied file: warned), and for a BLURB dataset
    {"blurb_split_check": None when the data read is BLURB's split, else the one-line reason,
    "blurb_split_checked_by": how} (bio_roberta/blurb/split_check.py check_blurb_split)."""
    copies = identical_splits(data)
    for first, second in copies:
        logger.warning(
            "%s: the %s and %s splits hold the same examples (%s, %s): check the files",
            data.spec.name,
            first,
            second,
            data.splits[first].derivation,
            data.splits[second].derivation,
        )
    record = {"identical_splits": [list(pair) for pair in copies]}
    dataset = BLURB.get(data.spec.name)
    if dataset is None:
        return record
    check = check_blurb_split(dataset, data)
    return {
        **record,
        "blurb_split_check": check.reason,
        "blurb_split_checked_by": check.checked_by,
    }


def check_splits_not_empty(data: TaskData) -> None:
    """A split without examples cannot train, select checkpoints or score: stop before writing."""
    for name, split in data.splits.items():
        if split.examples:
            continue
        where = f"{data.spec.name}{f' fold {data.fold}' if data.fold else ''}"
        sources = ", ".join(map(str, split.sources[:2])) + (
            f" and {len(split.sources) - 2} more" if len(split.sources) > 2 else ""
        )
        raise ConversionError(
            f"{where}: the {name} split has no examples (from {sources or 'no files'}: "
            f"{split.derivation}); a task needs train, valid and test examples: "
            f"check those files"
        )


def convert_task(
    spec: TaskSpec,
    data_dir: str | Path,
    vocab_dir: str | Path,
    out_dir: str | Path,
    scheme: str = BIO,
    max_positions: Optional[int] = None,
    max_unknown_rate: float = MAX_UNKNOWN_RATE,
    long_inputs: Optional[LongInputs] = None,
    pretrained: Optional[str | Path] = None,
) -> list[dict]:
    """Convert every fold (or the one split set) of a task; returns the manifests written.

    All folds are read before anything is written, and the output is built beside out_dir and
    swapped in whole (bio_roberta_core.output_dir), so a missing or malformed fold or a killed run
    leaves the previous output as it was. long_inputs: the route of a text longer than the
    positions (None: the kind's, bio_roberta/tasks/truncation.py). The positions: max_positions,
    at most the model's (pretrained, the checkpoint the data is for, or an imported vocabulary's
    own); by default the registry's, or the model's where it has fewer.
    """
    data_dir, vocab_dir, out_dir = Path(data_dir), Path(vocab_dir), Path(out_dir)
    if scheme != BIO and spec.task_kind.label_encoding != SCHEME_TAGS:
        raise ConversionError(
            f"{spec.name} has no tags in a tagging scheme; --scheme applies to NER only"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise ConversionError(
            f"{out_dir}: exists and is not a directory; pass a directory for --out"
        )
    folds = range(1, spec.folds + 1) if spec.folds else [None]
    datasets = [read_task(spec, data_dir, fold) for fold in folds]
    for data in datasets:
        check_splits_not_empty(data)
    vocabulary = read_vocab_dir(vocab_dir)
    model = pretrained or vocabulary.checkpoint  # an imported model's: up to its own positions
    if max_positions and model:
        check_max_positions(max_positions, model)
    elif model:
        max_positions = min(spec.max_positions, model_positions(model))
    max_positions = max_positions or spec.max_positions
    vocab = vocab_record(vocabulary)
    options = {
        "data_dir": str(data_dir.resolve()),
        "scheme": scheme,
        "max_positions": max_positions,
        "pretrained": file_record(pretrained) if pretrained else None,
        "max_unknown_rate": max_unknown_rate,
        "long_inputs": long_inputs.as_dict() if long_inputs else None,
    }
    manifests = []
    with new_output_dir(out_dir, FINETUNE_BIN_FILE) as build:
        for data in datasets:
            encoder = TaskEncoder(data.spec, vocabulary, scheme, max_positions, long_inputs)
            target = build.path / f"fold{data.fold}" if data.fold else build.path
            manifests.append(write_finetune_bin(data, encoder, target, vocab, options))
    return manifests
