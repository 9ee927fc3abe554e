"""What an audit judged, by content: the record carries it and every reader holds it against the
checkpoint's own lineage (lineage.py), so that a record of other notes, of a reference that is the
model itself, of non-members that are members, or one typed by hand opens nothing.

An audit record's "evidence":
    members      the text dir's manifest sha256, the sha256 of each of its train shards, how many
                 notes were drawn and the sha256 of those notes;
    non_members  the same of the held-out notes (valid split, or --non-members' every split), and
                 how many of them are notes of the members' split (must be none);
    canaries     the sha256 of canaries.jsonl, or null where the text dir has none;
    reference    its path and sha256, and whether its own lineage holds the members' shards;
    route        how the checkpoint was read (a masked LM, or a fine-tuned encoder through the
                 masked-LM head it kept);
    lineage      whether the audit found the text dir among the checkpoint's training data.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from bio_roberta.audit.lineage import TrainingData
from bio_roberta_core.provenance import sha256_file
from preprocess.text_shards import shard_files

EVIDENCE_KEYS = ("members", "non_members", "canaries", "reference", "route", "lineage")


def shard_digests(text_dir: Path, splits: Sequence[str]) -> list[str]:
    """The sha256 of each shard of the splits, sorted."""
    return sorted(sha256_file(path) for split in splits for path in shard_files(text_dir, split))


def note_digest(sentences: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sentences).encode("utf-8")).hexdigest()


def notes_digest(notes: Iterable[Sequence[str]]) -> str:
    """One sha256 for a set of notes, whatever their order."""
    return hashlib.sha256("".join(sorted(map(note_digest, notes))).encode()).hexdigest()


def text_dir_evidence(
    text_dir: Path, splits: Sequence[str], notes: Sequence[Sequence[str]]
) -> dict[str, Any]:
    return {
        "text_dir": str(text_dir),
        "splits": list(splits),
        "manifest_sha256": sha256_file(text_dir / "manifest.json"),
        "shards": shard_digests(text_dir, splits),
        "notes": len(notes),
        "notes_sha256": notes_digest(notes),
    }


def corpus_of(shards: Sequence[str], training: TrainingData) -> Optional[dict[str, Any]]:
    """The corpus of training whose training shards are exactly `shards`, if any."""
    return next((c for c in training.corpora if set(c["train_shards"]) == set(shards)), None)


def lineage_problem(members_shards: Sequence[str], training: TrainingData) -> Optional[str]:
    """Why the members are not the checkpoint's training notes, where its lineage tells; None when
    they are or it cannot tell (then `lineage.followed` is false and the gate decides)."""
    if not training.corpora or corpus_of(members_shards, training) is not None:
        return None
    trained = "; ".join(
        f"{c['text_dir']} (binarized into {c['data_bin']})" for c in training.corpora
    )
    return f"its training notes are those of {trained}"


def evidence_problem(
    record: dict[str, Any], checkpoint_sha256: str, training: TrainingData
) -> Optional[str]:
    """What in a record's evidence does not hold against the checkpoint and its lineage (one line),
    or None. Only the checkpoint's MIMIC-III corpora are asked for: those are what the gate
    guards."""
    evidence = record.get("evidence")
    if not isinstance(evidence, dict) or set(EVIDENCE_KEYS) - set(evidence):
        return "it carries no evidence of what it judged (written by hand, or by an older audit)"
    members, non_members = evidence["members"], evidence["non_members"]
    reference, canaries = evidence["reference"], evidence["canaries"]
    if training.mimic:
        corpus = corpus_of(members.get("shards") or [], training)
        if corpus is None or corpus["source"] != "mimic":
            trained = ", ".join(c["text_dir"] for c in training.mimic)
            return (
                f"it judged other notes than the checkpoint was trained on (its members are the "
                f"train shards of {members.get('text_dir')}; the checkpoint's MIMIC-III notes are "
                f"{trained}): audit with --text-dir {training.mimic[0]['text_dir']}"
            )
        if corpus["text_manifest_sha256"] not in (None, members.get("manifest_sha256")):
            return (
                f"its members' text dir manifest (sha256 {members.get('manifest_sha256')}) is not "
                f"the one {corpus['data_bin']} was binarized from"
            )
        if (
            corpus["canaries_sha256"]
            and (canaries or {}).get("sha256") != corpus["canaries_sha256"]
        ):
            return (
                f"{corpus['text_dir']} holds canaries (canaries.jsonl sha256 "
                f"{corpus['canaries_sha256']}) and the record measured "
                f"{'other canaries' if canaries else 'none'}"
            )
    trained_on = set(non_members.get("shards") or []) & training.train_shards()
    if trained_on or non_members.get("shared_with_members", 1) != 0:
        return (
            f"its non-members include notes the checkpoint was trained on ({len(trained_on)} "
            f"training shards, {non_members.get('shared_with_members')} notes of the members' "
            "split)"
        )
    if reference is not None:
        if reference.get("sha256") == checkpoint_sha256:
            return "its reference model is the checkpoint itself"
        if reference.get("trained_on_members") is not False:
            return "its reference model was trained on the members (or the audit could not tell)"
    return None
