"""`bio-roberta audit`: canary exposure, membership inference and name probes of one pretrained
checkpoint, judged against thresholds, written as PREFIX.json (the record export-hf reads) and
PREFIX.md.

Members are notes of the text dir's train split; non-members its valid split (which canaries never
enter) or a --non-members text dir. Every token of a note is masked once (masked_lm.py: the
partition drawn from --seed). The loss attack scores a note by the mean log-probability of its
--min-k-percent least likely tokens (Min-K% Prob, Shi et al. 2024; 100: minus its masked-LM loss);
with --reference, the likelihood-ratio attack scores it by reference loss - target loss (all its
tokens). Higher scores say "member".
"""

from __future__ import annotations

import datetime
import logging
import math
import random
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional, Sequence

from bio_roberta.audit.attacks import min_k_score
from bio_roberta.audit.evidence import (
    corpus_of,
    lineage_problem,
    note_digest,
    text_dir_evidence,
)
from bio_roberta.audit.lineage import read_json, training_data
from bio_roberta.audit.masked_lm import MASKED_LM_ROUTE, AuditError, MaskedLMScorer, note_losses
from bio_roberta.audit.measurements import (
    AuditOptions,
    attack_record,
    max_bits,
    measure_exposure,
    name_probes,
    read_name_probes,
)
from bio_roberta.audit.report import markdown
from bio_roberta.audit.verdict import NOT_MEASURED, Thresholds, verdict
from bio_roberta_core.fairseq_keys import MASKED_LM
from bio_roberta_core.provenance import atomic_write_json, atomic_write_text, sha256_file
from preprocess.canaries import CANARY_FILE, CanaryError, read_canaries
from preprocess.text_shards import finished_manifest, iter_shard_documents

logger = logging.getLogger(__name__)


def default_prefix(checkpoint: Path) -> Path:
    return checkpoint.with_name(checkpoint.name + ".audit")


def _notes(
    text_dir: Path,
    splits: Sequence[str],
    count: int,
    seed: int,
    what: str,
    canaries: Sequence[dict] = (),
) -> tuple[list, set[str]]:
    """(up to `count` notes of the splits, drawn from the seed, without the canary sentences (their
    exposure is measured apart: in a note they would tell members by the canaries alone); the
    digest of every note of the splits, drawn or not)."""
    finished_manifest(text_dir)
    inserted = {canary["prefix"] + canary["secret"] + canary["suffix"] for canary in canaries}

    def documents():
        for split in splits:
            for doc in iter_shard_documents(text_dir, split):
                yield [sentence for sentence in doc if sentence not in inserted]

    # the draw of shuffling every note, held as positions: one pass counts, the next keeps `count`
    # notes, so a corpus of millions is never in memory (their digests are 32 bytes each)
    digests = {note_digest(doc) for doc in documents()}
    order = list(range(sum(1 for _ in documents())))
    if not order:
        raise AuditError(
            f"{text_dir}: no {what} notes in its {' or '.join(splits)} split; pass a text dir "
            "that has them (--non-members TEXT_DIR for held-out notes)"
        )
    random.Random(f"{what}:{seed}").shuffle(order)
    rank = {position: i for i, position in enumerate(order[:count])}
    notes: list = [None] * len(rank)
    for position, doc in enumerate(documents()):
        if position in rank:
            notes[rank[position]] = doc
    return notes, digests


def audit(
    checkpoint: Path,
    vocab_dir: Path,
    text_dir: Path,
    non_members: Optional[Path] = None,
    reference: Optional[Path] = None,
    names: Optional[Path] = None,
    options: AuditOptions = AuditOptions(),
    thresholds: Thresholds = Thresholds(),
    out: Optional[Path] = None,
) -> dict[str, Any]:
    """Audit `checkpoint`; writes PREFIX.json and PREFIX.md (PREFIX: `out`, default
    default_prefix) and returns the record. What it judged is checked before anything is scored
    (AuditError, one line): the members are the checkpoint's training notes where its lineage
    tells, the non-members none of them, the reference another model not trained on them."""
    from bio_roberta_core.output_dir import output_lock

    checkpoint = Path(checkpoint)
    if max_bits(options) <= thresholds.max_exposure_bits:
        needed = 2 ** math.ceil(thresholds.max_exposure_bits + 0.01)
        raise AuditError(
            f"--candidates {options.candidates} measure at most {max_bits(options):.2f} bits of "
            f"exposure, not above --max-exposure-bits {thresholds.max_exposure_bits}: the check "
            f"could not fail; pass --candidates of at least {needed}"
        )
    if not 0 < options.min_k_percent <= 100:
        raise AuditError(f"--min-k-percent {options.min_k_percent} is not in (0, 100]")
    for path, what in ((checkpoint, "checkpoint"), (reference, "--reference")):
        if path is not None and not Path(path).is_file():
            raise AuditError(f"{what} {path} does not exist")
    prefix = Path(out) if out is not None else default_prefix(checkpoint)
    json_path = prefix.with_name(prefix.name + ".json")
    with output_lock(json_path):
        sha256 = sha256_file(checkpoint)
        held = read_json(json_path)
        if held is not None and held.get("checkpoint_sha256") not in (None, sha256):
            raise AuditError(
                f"{json_path} holds the audit of another checkpoint (sha256 "
                f"{held.get('checkpoint_sha256')}); pass another --out, or remove it"
            )
        record = _audit(
            checkpoint, sha256, vocab_dir, text_dir, non_members, reference, names, options,
            thresholds,
        )  # fmt: skip
        atomic_write_text(prefix.with_name(prefix.name + ".md"), markdown(record))
        atomic_write_json(json_path, record)  # last: the record says the audit finished
    return record


def _audit(
    checkpoint: Path,
    sha256: str,
    vocab_dir: Path,
    text_dir: Path,
    non_members: Optional[Path],
    reference: Optional[Path],
    names: Optional[Path],
    options: AuditOptions,
    thresholds: Thresholds,
) -> dict[str, Any]:
    from bio_roberta import __version__

    try:
        canaries = read_canaries(text_dir)
    except CanaryError as error:
        raise AuditError(str(error)) from None
    pairs = read_name_probes(names) if names is not None else None
    members, member_digests = _notes(
        text_dir, ["train"], options.notes, options.seed, "member", canaries
    )
    held_dir, held_splits = (
        (text_dir, ["valid"]) if non_members is None else (non_members, ["train", "valid"])
    )
    held_out, _ = _notes(held_dir, held_splits, options.notes, options.seed, "non-member", canaries)
    evidence = {
        "members": text_dir_evidence(Path(text_dir), ["train"], members),
        "non_members": text_dir_evidence(Path(held_dir), held_splits, held_out),
        "canaries": (
            {"sha256": sha256_file(Path(text_dir) / CANARY_FILE), "count": len(canaries)}
            if canaries
            else None
        ),
        "reference": None,
        "names": {"path": str(names), "sha256": sha256_file(names)} if names else None,
    }
    shared = sum(note_digest(note) in member_digests for note in held_out)
    evidence["non_members"]["shared_with_members"] = shared
    if shared:
        raise AuditError(
            f"{held_dir}: {shared} of its {len(held_out)} non-member notes are notes of "
            f"{text_dir}'s train split, which the model was trained on: non-members must be "
            "notes it never saw (the valid split, or --non-members of other notes)"
        )

    scorer = MaskedLMScorer(checkpoint, vocab_dir, options.batch_size)
    evidence["route"] = scorer.route
    evidence["lineage"] = _check_lineage(checkpoint, sha256, scorer, evidence, text_dir)
    reference_scorer = None
    if reference is not None:
        reference_scorer = MaskedLMScorer(reference, vocab_dir, options.batch_size)
        evidence["reference"] = _check_reference(
            Path(reference), sha256, scorer, reference_scorer, evidence["members"]["shards"]
        )
    # one vocabulary: the reference scores the same ids
    note_ids = {"members": scorer.note_ids(members), "non_members": scorer.note_ids(held_out)}
    log_probs = {
        group: scorer.note_log_probs(ids, options.seed, options.mask_fraction, f"loss of {group}")
        for group, ids in note_ids.items()
    }
    losses = {group: note_losses(notes) for group, notes in log_probs.items()}
    min_k = {
        group: [min_k_score(v, options.min_k_percent) for v in notes]
        for group, notes in log_probs.items()
    }
    membership = {
        "loss": attack_record(min_k["members"], min_k["non_members"], options.seed),
        "reference": None,
    }
    if reference_scorer is not None:
        ratio = {
            group: [
                ref - target
                for ref, target in zip(
                    note_losses(
                        reference_scorer.note_log_probs(
                            ids, options.seed, options.mask_fraction, f"reference loss of {group}"
                        )
                    ),
                    losses[group],
                )
            ]
            for group, ids in note_ids.items()
        }
        membership["reference"] = {
            "checkpoint": str(reference),
            **attack_record(ratio["members"], ratio["non_members"], options.seed),
        }
    record = {
        "checkpoint": str(checkpoint),
        "checkpoint_sha256": sha256,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "bio_roberta_version": __version__,
        "text_dir": str(text_dir),
        "non_members_dir": str(non_members) if non_members is not None else None,
        "evidence": evidence,
        "options": asdict(options),
        "exposure": measure_exposure(scorer, canaries, options) if canaries else NOT_MEASURED,
        "membership": membership,
        "name_probes": (
            name_probes(scorer, pairs, thresholds.name_probe_alpha) if pairs is not None else None
        ),
        "thresholds": asdict(thresholds),
    }
    reasons = verdict(record, thresholds)
    record["verdict"] = "fail" if reasons else "pass"
    record["reasons"] = reasons
    return record


def _check_lineage(
    checkpoint: Path, sha256: str, scorer: MaskedLMScorer, evidence: dict, text_dir: Path
) -> dict[str, Any]:
    """Whether the members are the checkpoint's training notes, by content, where its manifests
    tell (AuditError where they say other notes); the record's `lineage`."""
    kind = MASKED_LM if scorer.route == MASKED_LM_ROUTE else "fine-tuned"
    training = training_data(checkpoint, kind, None, sha256)
    members = evidence["members"]["shards"]
    problem = lineage_problem(members, training)
    if problem:
        raise AuditError(
            f"{checkpoint} was not trained on the train notes of --text-dir {text_dir}: "
            f"{problem}; pass the text dir it was trained on"
        )
    trained_on = set(evidence["non_members"]["shards"]) & training.train_shards()
    if trained_on:
        raise AuditError(
            f"{evidence['non_members']['text_dir']}: {len(trained_on)} of its non-member shards "
            f"are shards {checkpoint} was trained on: non-members must be notes it never saw"
        )
    followed = corpus_of(members, training) is not None
    why = "; ".join(training.unknown + training.broken) or "its lineage records no corpora"
    return {"followed": followed, **({} if followed else {"why": why})}


def _check_reference(
    reference: Path,
    sha256: str,
    scorer: MaskedLMScorer,
    reference_scorer: MaskedLMScorer,
    member_shards: Sequence[str],
) -> dict[str, Any]:
    """The record's `reference`, after refusing a reference that is the model itself (same file or
    same weights: every likelihood ratio would be 0 and that attack could never fail) or that was
    trained on the members."""
    reference_sha256 = sha256_file(reference)
    if reference_sha256 == sha256 or scorer.same_weights(reference_scorer):
        raise AuditError(
            f"--reference {reference} is the audited model itself (same "
            f"{'file' if reference_sha256 == sha256 else 'weights'}): its likelihood ratios "
            "would all be 0 and that attack could never fail; pass a model trained without "
            "these notes"
        )
    kind = MASKED_LM if reference_scorer.route == MASKED_LM_ROUTE else "fine-tuned"
    training = training_data(reference, kind, None, reference_sha256)
    trained_on_members = bool(training.train_shards() & set(member_shards))
    if trained_on_members:
        raise AuditError(
            f"--reference {reference} was trained on the members' notes (its data-bins read "
            "their shards): the likelihood-ratio attack needs a model trained without them"
        )
    known = bool(training.corpora) and not training.broken
    return {
        "path": str(reference),
        "sha256": reference_sha256,
        # False: its lineage is known and holds none of the members; None: it could not be told
        "trained_on_members": False if known else None,
        **({} if known else {"why": "; ".join(training.unknown + training.broken)}),
    }
