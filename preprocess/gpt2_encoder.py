"""fairseq's gpt2 BPE and dict.txt rules for the binarizer and vocabulary learning, without fairseq.

BatchGPT2Encoder is fairseq's gpt2 BPE with a per-pre-token cache over whole batches (same ids as
fairseq's encoder, several times faster). Neither it nor read_dictionary_indices imports the
fairseq package: its __init__ loads torch and every task and model, seconds of start-up per
process for what needs only fairseq's regex and dict.txt rules.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
from pathlib import Path

import numpy as np

# fairseq Dictionary's special symbols, in index order, ahead of dict.txt's symbols
DICTIONARY_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
EOS_INDEX, UNK_INDEX = 2, 3


def read_dictionary_indices(dict_path: str | os.PathLike) -> tuple[dict[str, int], int]:
    """(symbol -> index, number of indices) of a dict.txt, as fairseq's Dictionary.load assigns
    them: the specials first, then one index per line ("symbol count", or "symbol count
    #fairseq:overwrite" to give an existing symbol a new index); a repeated symbol without the flag
    is an error."""
    indices = {symbol: index for index, symbol in enumerate(DICTIONARY_SPECIALS)}
    size = len(indices)
    with open(dict_path, encoding="utf-8") as lines:
        for line in lines:
            try:
                symbol, field = line.rstrip().rsplit(" ", 1)
                overwrite = field == "#fairseq:overwrite"
                if overwrite:
                    symbol, field = symbol.rsplit(" ", 1)
                int(field)
            except ValueError:
                raise ValueError(
                    f"{dict_path}: expected '<symbol> <count> [flags]', got {line.rstrip()!r}"
                ) from None
            if symbol in indices and not overwrite:
                raise ValueError(
                    f"{dict_path}: duplicate symbol {symbol!r} without #fairseq:overwrite"
                )
            indices[symbol] = size
            size += 1
    return indices, size


@functools.lru_cache(maxsize=None)
def fairseq_gpt2_bpe_utils():
    """fairseq's data/encoders/gpt2_bpe_utils.py (json + regex only), loaded from its file without
    running the fairseq package's __init__."""
    fairseq = importlib.util.find_spec("fairseq")
    if fairseq is None:
        raise ModuleNotFoundError("No module named 'fairseq'", name="fairseq")
    package_dir = Path(fairseq.submodule_search_locations[0])
    spec = importlib.util.spec_from_file_location(
        "fairseq_gpt2_bpe_utils", package_dir / "data" / "encoders" / "gpt2_bpe_utils.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BatchGPT2Encoder:
    """fairseq's gpt2 BPE (its own regex, byte mapping, vocabulary and merge ranks) over batches of
    lines, cached per pre-token.

    The speed comes from matching fairseq's regex once over a whole batch, caching a pre-token's
    ids (Zipf: most pre-tokens repeat), and applying the merges of a new pre-token with HF
    tokenizers' BPE model built from fairseq's own parsed vocabulary and merge ranks: the same
    lowest-rank-first merges as fairseq's Python loop, which costs ~100 us per new pre-token,
    and a corpus brings hundreds of thousands of them (tests/test_vocab.py compares the ids with
    fairseq's encoder on synthetic edge cases and real abstracts).
    """

    # Lines are stripped and non-empty, so the "\n" joining them is always a pre-token by itself.
    LINE_END = -1

    def __init__(
        self,
        encoder_json: str | os.PathLike,
        vocab_bpe: str | os.PathLike,
        max_cache: int = 2_000_000,
    ):
        from tokenizers.models import BPE

        self.reference = fairseq_gpt2_bpe_utils().get_encoder(str(encoder_json), str(vocab_bpe))
        ranks = self.reference.bpe_ranks
        self.merges = BPE(
            vocab=dict(self.reference.encoder), merges=sorted(ranks, key=ranks.__getitem__)
        )
        # fairseq's byte -> unit character mapping as a str.translate table over latin-1 decoded
        # bytes
        self.byte_units = dict(self.reference.byte_encoder)
        self.max_cache = max_cache
        self.cache: dict[str, list[int]] = {"\n": [self.LINE_END]}

    def _merged_ids(self, pretoken: str) -> list[int]:
        """The ids of a pre-token not seen before: fairseq's byte mapping, then the merges."""
        byte_text = pretoken.encode("utf-8").decode("latin-1").translate(self.byte_units)
        return [token.id for token in self.merges.tokenize(byte_text)]

    def encode_lines(self, lines: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ids of all lines, each line followed by LINE_END; ids per line) for stripped non-empty
        lines."""
        if not lines:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        pretokens = self.reference.re.findall(self.reference.pat, "\n".join(lines))
        # per batch rather than per occurrence: the set, lookups and flattening run in C
        new = set(pretokens).difference(self.cache)
        if len(self.cache) + len(new) > self.max_cache:  # bound the memory on huge corpora
            self.cache = {"\n": [self.LINE_END]}
            new = set(pretokens).difference(self.cache)
        for pretoken in new:
            self.cache[pretoken] = self._merged_ids(pretoken)
        ids = list(itertools.chain.from_iterable(map(self.cache.__getitem__, pretokens)))
        ids.append(self.LINE_END)
        flat = np.array(ids, dtype=np.int64)
        ends = np.flatnonzero(flat == self.LINE_END)
        if len(ends) != len(lines):
            raise ValueError("encode_lines needs stripped lines without line breaks")
        return flat, np.diff(ends, prepend=-1) - 1
