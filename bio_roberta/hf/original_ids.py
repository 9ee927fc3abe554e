"""An imported model's own token ids, both ways. fairseq's dictionary renumbers a transformers
model's vocabulary (its 4 specials first, the tokens in the model's id order, padding entries to
a multiple of 64, <mask> last), so import-hf records which transformers id each dictionary entry's
row was (the vocabulary dir's manifest, options.original_ids), and export-hf puts the rows back
in that order with the padding rows dropped: the exported model has the original's vocabulary
size and takes the original tokenizer's ids, so the original tokenizer beside exported (or
fine-tuned) weights gives the right embeddings.

Rows of the original embeddings that no token names (Megatron pads its vocabulary to a multiple of
128; a config's vocab_size may exceed its tokenizer's) are carried in padding entries of the
dictionary, so that they come back as they went in too (``without_token``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from bio_roberta.errors import ExportError
from bio_roberta_core.fairseq_keys import ENCODER, LM_HEAD
from bio_roberta_core.model_dictionary import load_model_dictionary

if TYPE_CHECKING:
    from preprocess.vocab_dir import VocabularyDir

RECORD = "original_ids"  # the vocabulary dir manifest's options field
# fairseq's specials, the first entries of every dictionary (<mask> is the last)
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
# fairseq's weights with a row per dictionary entry
VOCABULARY_SIZED = (ENCODER + "embed_tokens.weight", LM_HEAD + "weight", LM_HEAD + "bias")


def as_runs(rows: list[Optional[int]]) -> list[list]:
    """rows as [first id, count] runs of consecutive ids ([None, count]: padding rows): an
    import's order is a few such runs, its manifest stays small."""
    runs: list[list] = []
    for row in rows:
        last = runs[-1] if runs else None
        if last is not None and (
            row is None
            and last[0] is None
            or row is not None
            and last[0] is not None
            and last[0] + last[1] == row
        ):
            last[1] += 1
        else:
            runs.append([row, 1])
    return runs


def from_runs(runs: list[list]) -> list[Optional[int]]:
    return [None if first is None else first + i for first, count in runs for i in range(count)]


@dataclass(frozen=True)
class OriginalIds:
    """Dictionary index -> the transformers id of its row (None: a padding entry, a zero row), the
    original embeddings' row count, and the ids among them that no token names."""

    rows: list[Optional[int]]
    vocab_size: int
    without_token: frozenset[int]

    def record(self) -> dict[str, Any]:
        return {
            "rows": as_runs(self.rows),
            "vocab_size": self.vocab_size,
            "without_token": sorted(self.without_token),
        }

    @classmethod
    def read(cls, record: dict[str, Any], manifest: Path, entries: int) -> "OriginalIds":
        """The manifest's record, checked against the dictionary's size (dict.txt + <mask>): every
        original row exactly once."""
        try:
            ids = cls(
                from_runs(record["rows"]),
                int(record["vocab_size"]),
                frozenset(record["without_token"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ExportError(
                f"{manifest}: options.{RECORD} is not import-hf's record ({error!r}); re-run "
                "`bio-roberta import-hf` into it"
            ) from None
        problem = ids.problem(entries)
        if problem:
            raise ExportError(f"{manifest}: options.{RECORD} {problem}; re-run import-hf")
        return ids

    def problem(self, entries: int) -> Optional[str]:
        """What makes these ids no renumbering of a dictionary of that many entries back to the
        original rows; None: they are one."""
        if len(self.rows) != entries:
            return f"numbers {len(self.rows)} entries, the dictionary has {entries}"
        held = sorted(row for row in self.rows if row is not None)
        if held != list(range(self.vocab_size)):
            return f"does not give each of the {self.vocab_size} original rows exactly once"
        if not self.without_token <= set(held):
            return "names rows without a token that it does not give"
        return None

    def special_ids(self) -> dict[str, int]:
        """fairseq's specials -> their original ids ([CLS], [PAD], [SEP], [UNK]'s)."""
        return dict(zip(FAIRSEQ_SPECIALS, self.rows))

    def restore(self, state: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint's weights with each vocabulary-sized one's rows in the original order,
        the padding rows dropped."""
        import torch

        held = [i for i, row in enumerate(self.rows) if row is not None]
        order = torch.tensor([self.rows[i] for i in held])
        restored = dict(state)
        for name in VOCABULARY_SIZED:
            if name in state:
                tensor = state[name]
                out = tensor.new_zeros((self.vocab_size, *tensor.shape[1:]))
                out[order] = tensor[torch.tensor(held)]
                restored[name] = out
        return restored


# fairseq's own ids: a model trained here (its dictionary is its vocabulary)
FAIRSEQ_SPECIAL_IDS = {symbol: i for i, symbol in enumerate(FAIRSEQ_SPECIALS)}


def imported_ids(vocab: VocabularyDir, dict_txt: Path) -> Optional[OriginalIds]:
    """import-hf's record of its model's own ids in the vocabulary dir, for the dictionary of
    dict_txt; None for a vocabulary of ours (its dictionary's ids are its models')."""
    from preprocess.vocab_dir import MANIFEST

    options = vocab.manifest.get("options", {})
    if "imported_from" not in options:  # not import-hf's
        return None
    manifest = vocab.path / MANIFEST
    record = options.get(RECORD)
    if record is None:
        raise ExportError(
            f"{manifest}: written by an import-hf that did not record its model's own token ids "
            f"(options.{RECORD}), without which the export would number the tokens as fairseq's "
            f"dictionary does; re-run `bio-roberta import-hf {options['imported_from']} "
            f"{vocab.path}` (the same dict.txt unless the model has embedding rows no token names)"
        )
    dictionary = load_model_dictionary(dict_txt)
    if dict_txt.resolve() != vocab.dict_path.resolve():
        if dictionary.symbols != load_model_dictionary(vocab.dict_path).symbols:
            raise ExportError(
                f"{dict_txt} is not the dict.txt of the import {vocab.path}, whose manifest "
                "records the model's id of each of its entries: leave --dict out"
            )
    return OriginalIds.read(record, manifest, len(dictionary))
