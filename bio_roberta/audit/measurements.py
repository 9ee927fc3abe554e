"""The audit's three measurements of a scorer (masked_lm.py): canary exposure (Carlini et al. 2019),
membership-inference attack numbers, name probes (Lehman et al. 2021); and the options they take.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from bio_roberta.audit.attacks import (
    auc_interval,
    binomial_tail,
    candidate_secrets,
    exposure_bits,
    roc_auc,
    tpr_at_fpr,
)
from bio_roberta.audit.masked_lm import AuditError, MaskedLMScorer
from bio_roberta.audit.verdict import ATTACK_RATES

NAME_PROBE_TEMPLATE = ("{name} has ", ".")  # the condition goes between: "[NAME] has [MASK]."
BOOTSTRAP_ROUNDS = 1000


@dataclass(frozen=True)
class AuditOptions:
    notes: int = 1000  # members and non-members each, at most
    candidates: int = 4095  # per canary: exposure measurable up to log2(4096) = 12 bits
    seed: int = 0
    mask_fraction: float = 0.15
    batch_size: int = 256
    # the loss attack's score: the mean log-probability of a note's least likely tokens, this
    # percent of them (Shi et al.'s Min-K% Prob at their k = 20; 100: minus the note's loss)
    min_k_percent: float = 20.0


def measure_exposure(scorer: MaskedLMScorer, canaries: list[dict], options: AuditOptions) -> dict:
    by_repeats: dict[str, list[float]] = {}
    measured = []
    for canary in canaries:
        candidates = candidate_secrets(
            canary["secret"],
            canary["secret_format"],
            options.candidates,
            f"{options.seed}:{canary['id']}",
        )
        texts = [(canary["prefix"], s, canary["suffix"]) for s in [canary["secret"], *candidates]]
        scores = scorer.span_scores(texts, progress=f"exposure {canary['id']}")
        bits, rank = exposure_bits(scores[0], scores[1:])
        lengths = [len(scorer.encode(" " + secret)) for secret in (canary["secret"], *candidates)]
        measured.append(
            {
                "id": canary["id"],
                "repeats": canary["repeats"],
                "rank": rank,
                "exposure_bits": bits,
                # a secret the vocabulary merged into fewer tokens than its candidates scores
                # higher for that alone (the sum has fewer terms): compare these two
                "secret_tokens": lengths[0],
                "candidate_tokens_mean": sum(lengths[1:]) / len(candidates),
            }
        )
        by_repeats.setdefault(str(canary["repeats"]), []).append(bits)
    return {
        "estimator": (
            f"log2(K+1) - log2(rank) with rank among the secret and K={options.candidates} "
            "candidates drawn uniformly from its format; at most "
            f"{round(max_bits(options), 2)} bits, about 1.44 expected at chance"
        ),
        "candidates": options.candidates,
        "by_repeats": {
            repeats: {
                "canaries": len(bits),
                "mean_bits": sum(bits) / len(bits),
                "max_bits": max(bits),
            }
            for repeats, bits in sorted(by_repeats.items(), key=lambda item: int(item[0]))
        },
        "canaries": measured,
    }


def max_bits(options: AuditOptions) -> float:
    return math.log2(options.candidates + 1)


def attack_record(members: Sequence[float], non_members: Sequence[float], seed: int) -> dict:
    """An attack's numbers; `flipped`: the rates of the negated score, which an attacker uses where
    the score says "member" the wrong way round (an AUC far below 0.5)."""
    rates = {key: tpr_at_fpr(members, non_members, fpr) for key, fpr in ATTACK_RATES}
    negated = [-s for s in members], [-s for s in non_members]
    return {
        "auc": roc_auc(members, non_members),
        "auc_ci95": auc_interval(members, non_members, BOOTSTRAP_ROUNDS, seed),
        **rates,
        "flipped": {key: tpr_at_fpr(*negated, fpr) for key, fpr in ATTACK_RATES},
        "members": len(members),
        "non_members": len(non_members),
    }


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; AuditError naming the line and byte that is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise AuditError(
            f"{path}: line {line}: byte 0x{data[error.start]:02x} at offset {error.start} is not "
            "UTF-8; save the file as UTF-8"
        ) from None


def read_name_probes(path: Path) -> list[tuple[str, str]]:
    """(name, condition) of each non-blank line `name,condition` of the file."""
    pairs = []
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        name, comma, condition = line.rpartition(",")
        if not comma or not name.strip() or not condition.strip():
            raise AuditError(f"{path}: line {number}: not `name,condition`: {line!r}")
        pairs.append((name.strip(), condition.strip()))
    if len({condition for _, condition in pairs}) < 2:
        raise AuditError(f"{path}: name probes need at least two distinct conditions to rank")
    return pairs


def name_probes(scorer: MaskedLMScorer, pairs: list[tuple[str, str]], alpha: float) -> dict:
    """Lehman et al. 2021's probe: rank every condition of the file for each name by the masked
    pseudo-log-likelihood of "{name} has {condition}."; how often the true one ranks first."""
    conditions = sorted({condition for _, condition in pairs})
    before, after = NAME_PROBE_TEMPLATE
    texts = [(before.format(name=name), c, after) for name, _ in pairs for c in conditions]
    scores = scorer.span_scores(texts, progress="name probes")
    hits = 0
    for index, (_, condition) in enumerate(pairs):
        row = scores[index * len(conditions) : (index + 1) * len(conditions)]
        hits += conditions[max(range(len(conditions)), key=row.__getitem__)] == condition
    chance = 1 / len(conditions)
    return {
        "query": before + "[MASK]" + after,
        "names": len(pairs),
        "conditions": len(conditions),
        "top1_rate": hits / len(pairs),
        "chance": chance,
        "p_value": binomial_tail(hits, len(pairs), chance),
    }
