"""An audit record as a short report for people (PREFIX.md, and the model card's audit section)."""

from __future__ import annotations

from typing import Any

from preprocess.canaries import CANARY_FILE


def judged_lines(evidence: dict[str, Any]) -> list[str]:
    """What the audit judged, by content (evidence.py), as a list under its own heading."""
    members, held = evidence["members"], evidence["non_members"]
    canaries, reference = evidence["canaries"], evidence["reference"]
    lineage = evidence["lineage"]
    return [
        "## What it judged",
        "",
        f"- Read as: {evidence['route']}.",
        (
            f"- Members: {members['notes']} notes of the train split of `{members['text_dir']}` "
            f"(manifest sha256 `{members['manifest_sha256']}`, {len(members['shards'])} shards), "
            + (
                "the checkpoint's training notes by its manifests."
                if lineage["followed"]
                else f"not followed to the checkpoint's training data ({lineage['why']})."
            )
        ),
        (
            f"- Non-members: {held['notes']} notes of the {' and '.join(held['splits'])} "
            f"split(s) of `{held['text_dir']}` ({len(held['shards'])} shards), "
            f"{held['shared_with_members']} of them among the members' split."
        ),
        (
            f"- Canaries: {canaries['count']} (`{CANARY_FILE}` sha256 `{canaries['sha256']}`)."
            if canaries
            else f"- Canaries: none (the text dir has no {CANARY_FILE})."
        ),
        (
            f"- Reference: `{reference['path']}` (sha256 `{reference['sha256']}`), "
            + (
                "trained without the members by its manifests."
                if reference["trained_on_members"] is False
                else f"its training data unknown ({reference['why']})."
            )
            if reference
            else "- Reference: none (no --reference)."
        ),
        "",
    ]


def markdown(record: dict) -> str:
    """The record as a short report for people (and model cards)."""
    lines = [
        f"# Memorisation audit: {record['verdict'].upper()}",
        "",
        (
            f"Checkpoint `{record['checkpoint']}` (sha256 `{record['checkpoint_sha256']}`), "
            f"audited {record['created']} by bio-roberta {record['bio_roberta_version']}."
        ),
        "",
        *judged_lines(record["evidence"]),
        "## Canary exposure",
        "",
    ]
    exposure = record["exposure"]
    if isinstance(exposure, str):
        lines.append(f"{exposure}: the text dir has no {CANARY_FILE}.")
    else:
        lines += [
            f"Estimator: {exposure['estimator']}.",
            "",
            "| repeats | canaries | mean bits | max bits |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {repeats} | {g['canaries']} | {g['mean_bits']:.2f} | {g['max_bits']:.2f} |"
            for repeats, g in exposure["by_repeats"].items()
        ]
    lines += [
        "",
        "## Membership inference",
        "",
        (
            "Every token of a note masked once; the loss attack scores a note by the mean "
            f"log-probability of the least likely {record['options']['min_k_percent']:g}% of its "
            "tokens (Min-K% Prob; 100%: minus its masked-LM loss), the reference attack by the "
            "reference's loss minus the model's (all its tokens)."
        ),
        "",
        "| attack | AUC (95% CI) | TPR @ 1% FPR | TPR @ 0.1% FPR | members | non-members |",
        "|---|---|---|---|---|---|",
    ]
    for attack, m in record["membership"].items():
        if m is None:
            lines.append(f"| {attack} | not run (no --reference) | | | | |")
            continue
        low, high = m["auc_ci95"]
        lines.append(
            f"| {attack} | {m['auc']:.3f} ({low:.3f}-{high:.3f}) | {m['tpr_at_1pct_fpr']:.3f} | "
            f"{m['tpr_at_0.1pct_fpr']:.3f} | {m['members']} | {m['non_members']} |"
        )
    probes = record["name_probes"]
    lines += ["", "## Name probes", ""]
    if probes is None:
        lines.append("Not run (no --names).")
    else:
        lines.append(
            f"`{probes['query']}` over {probes['names']} names and {probes['conditions']} "
            f"conditions: top-1 rate {probes['top1_rate']:.3f} vs chance {probes['chance']:.3f} "
            f"(p = {probes['p_value']:.2g})."
        )
    lines += ["", "## Thresholds and verdict", ""]
    lines += [f"- {key}: {value}" for key, value in record["thresholds"].items()]
    lines += ["", f"Verdict: **{record['verdict']}**."]
    lines += [f"- {reason}" for reason in record["reasons"]]
    return "\n".join(lines) + "\n"
