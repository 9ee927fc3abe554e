"""A pretrained (masked-LM) fairseq checkpoint as the audit's scorer: the log-probability it gives
each token of a text when that token is masked.

The model is loaded the way fine-tuning and prediction load theirs (fairseq's
load_model_ensemble_and_task with the plugin), its dictionary being the vocabulary dir's dict.txt
with the padding binarize gives it (preprocess/vocab_dir.py), so ids are those of the data-bin it
was trained on. A text is encoded with the vocabulary's own BPE (preprocess/bpe.py) and seen as in
pretraining: <s>, then blocks of at most tokens_per_sample - 1 tokens.
"""

from __future__ import annotations

import math
import random
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from bio_roberta_core.errors import BioRobertaError


class AuditError(BioRobertaError):
    """A checkpoint, vocabulary, text dir or option the audit cannot use (names which)."""


MASKED_LM_ROUTE = "masked LM"
FINE_TUNED_ROUTE = "fine-tuned encoder through the masked-LM head it kept"


class MaskedLMScorer:
    """Masked-token log-probabilities of a pretrained checkpoint, `batch_size` rows per forward."""

    def __init__(self, checkpoint: Path, vocab_dir: Path, batch_size: int = 256):
        import torch
        from fairseq import checkpoint_utils

        import user_dir
        from preprocess.bpe import open_bpe
        from preprocess.vocab_dir import read_vocab_dir, write_padded_dict

        if not Path(checkpoint).is_file():
            raise AuditError(f"checkpoint {checkpoint} does not exist")
        vocab = read_vocab_dir(vocab_dir)
        self.bpe = open_bpe(vocab)
        with tempfile.TemporaryDirectory() as data:  # the dictionary as binarize wrote it
            write_padded_dict(vocab.dict_path, Path(data) / "dict.txt")
            overrides = {"data": data, "user_dir": str(Path(user_dir.__file__).parent)}
            state = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint), overrides)
            self.route = self._masked_lm_route(checkpoint, state, data)
            try:
                models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
                    [str(checkpoint)], state=state
                )
            except RuntimeError as error:
                if "size mismatch" not in str(error):
                    raise
                raise AuditError(
                    f"{checkpoint} was not trained with the dictionary of --vocab {vocab_dir} "
                    "(embedding sizes differ); pass the vocabulary its data-bin was binarized with"
                ) from None
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = models[0].eval().to(self.device)
        self.dictionary = task.source_dictionary
        if "<mask>" not in self.dictionary.indices:
            raise AuditError(
                f"{checkpoint}: its task ({cfg.task._name}) has no <mask> token: audit takes a "
                "pretrained masked-LM checkpoint"
            )
        self.mask = self.dictionary.index("<mask>")
        block = getattr(cfg.task, "tokens_per_sample", None) or self.model.max_positions()
        self.block = min(block, self.model.max_positions()) - 1  # tokens after <s>
        self.batch_size = batch_size

    @staticmethod
    def _masked_lm_route(checkpoint: Path, state: dict, data: str) -> str:
        """How the checkpoint is read as a masked LM: as it is (MASKED_LM_ROUTE), or, fine-tuned,
        through the masked-LM head fine-tuning kept beside its task's head (FINE_TUNED_ROUTE:
        the task's heads are dropped and the model built by fairseq's masked_lm task), which
        measures what the fine-tuned encoder gives away of the notes."""
        from omegaconf import OmegaConf, open_dict

        from bio_roberta_core.fairseq_keys import HEAD_PREFIXES, LM_HEAD, option

        weights = state["model"]
        heads = [key for key in weights if key.startswith(tuple(HEAD_PREFIXES.values()))]
        if not heads:
            return MASKED_LM_ROUTE
        if not any(key.startswith(LM_HEAD) for key in weights):
            raise AuditError(
                f"{checkpoint}: a fine-tuned checkpoint that kept no masked-LM head "
                f"({LM_HEAD}*): audit the pretrained checkpoint its fine-tuning started from"
            )
        for key in heads:
            del weights[key]
        positions = option(state["cfg"]["model"], "max_positions", 512)
        with open_dict(state["cfg"]):
            state["cfg"]["task"] = OmegaConf.create(
                {"_name": "masked_lm", "data": data, "tokens_per_sample": positions}
            )
        return FINE_TUNED_ROUTE

    def same_weights(self, other: "MaskedLMScorer") -> bool:
        """Whether other's model has exactly this one's parameters."""
        import torch

        mine, theirs = self.model.state_dict(), other.model.state_dict()
        return mine.keys() == theirs.keys() and all(
            mine[key].shape == theirs[key].shape and torch.equal(mine[key], theirs[key])
            for key in mine
        )

    def encode(self, text: str) -> list[int]:
        """The dictionary ids of a text (no <s>, no </s>)."""
        line = self.bpe.encode(text)
        ids = self.dictionary.encode_line(line, append_eos=False, add_if_not_exist=False)
        return ids.tolist()

    def masked_log_probs(self, rows: Sequence[tuple[list[int], list[int]]], progress: str = ""):
        """For each (tokens, positions): the log-probability of tokens[p] at each p in positions,
        with every p masked at once; `progress` labels the progress bar."""
        import torch
        from tqdm import tqdm

        order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
        results: list[list[float]] = [[] for _ in rows]
        pad = self.dictionary.pad()
        starts = range(0, len(order), self.batch_size)
        with torch.inference_mode():
            for start in tqdm(
                starts, desc=progress, unit="batch", disable=None if progress else True
            ):
                batch = [order[i] for i in range(start, min(start + self.batch_size, len(order)))]
                width = max(len(rows[i][0]) for i in batch)
                tokens = torch.full((len(batch), width), pad, dtype=torch.long)
                for row, index in enumerate(batch):
                    tokens[row, : len(rows[index][0])] = torch.tensor(rows[index][0])
                targets = tokens.clone()
                masked = torch.zeros_like(tokens, dtype=torch.bool)
                for row, index in enumerate(batch):
                    masked[row, rows[index][1]] = True
                tokens[masked] = self.mask
                logits, _ = self.model(tokens.to(self.device), masked_tokens=masked.to(self.device))
                log_probs = torch.log_softmax(logits.float(), dim=-1)
                picked = log_probs.gather(1, targets[masked].to(self.device)[:, None])[:, 0].cpu()
                offset = 0
                for index in batch:  # masked_tokens keeps row-major order
                    count = len(rows[index][1])
                    results[index] = picked[offset : offset + count].tolist()
                    offset += count
        return results

    def span_scores(self, texts: Sequence[tuple[str, str, str]], progress: str = "") -> list[float]:
        """Masked pseudo-log-likelihood of the middle part of each (prefix, span, suffix): each
        span token masked in turn, the rest of the sentence seen, log-probabilities summed."""
        rows, owners = [], []
        for index, (prefix, span, suffix) in enumerate(texts):
            before = [self.dictionary.bos(), *self.encode(prefix.rstrip())]
            middle = self.encode((" " if prefix[-1:].isspace() else "") + span)
            tokens = before + middle + self.encode(suffix) + [self.dictionary.eos()]
            tokens = tokens[: self.block + 1]
            for position in range(len(before), min(len(before) + len(middle), len(tokens))):
                rows.append((tokens, [position]))
                owners.append(index)
        scores = [0.0] * len(texts)
        for owner, (log_prob,) in zip(owners, self.masked_log_probs(rows, progress)):
            scores[owner] += log_prob
        return scores

    def note_ids(self, notes: Iterable[Sequence[str]]) -> list[list[int]]:
        """Each note's ids (its sentences, each followed by </s>, as binarize writes them): what
        note_log_probs scores, encoded once for every scorer of this vocabulary."""
        eos = self.dictionary.eos()
        return [[i for s in sentences for i in (*self.encode(s), eos)] for sentences in notes]

    def note_log_probs(
        self, note_ids: Sequence[list[int]], seed: int, mask_fraction: float, progress: str = ""
    ) -> list[list[float]]:
        """The log-probability of every token of each note (note_ids), masked: its blocks with
        every token masked once, in ceil(1 / mask_fraction) rounds of a random partition drawn
        from (seed, note number)."""
        rounds = math.ceil(1 / mask_fraction)
        rows, owners = [], []
        for number, ids in enumerate(note_ids):
            rng = random.Random(f"{seed}:{number}")
            for start in range(0, len(ids), self.block):
                tokens = [self.dictionary.bos(), *ids[start : start + self.block]]
                positions = list(range(1, len(tokens)))
                rng.shuffle(positions)
                for part in range(rounds):
                    chosen = sorted(positions[part::rounds])
                    if chosen:
                        rows.append((tokens, chosen))
                        owners.append(number)
        totals: dict[int, list[float]] = {}
        for owner, log_probs in zip(owners, self.masked_log_probs(rows, progress)):
            totals.setdefault(owner, []).extend(log_probs)
        return [v for _, v in sorted(totals.items())]


def note_losses(log_probs: Iterable[Sequence[float]]) -> list[float]:
    """Masked-LM loss of each note: the mean negative log-probability of its tokens (a scorer's
    note_log_probs)."""
    return [-sum(v) / len(v) for v in log_probs]
