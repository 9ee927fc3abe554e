"""export-hf's memorisation gate (issue 31): a checkpoint whose manifests record MIMIC-III notes
among its training data leaves only with a passing audit record of that exact checkpoint.

The record is what `bio-roberta audit CHECKPOINT` writes (CHECKPOINT.audit.json by default, or the
file given with --audit); it is this checkpoint's when its checkpoint_sha256 is the file's sha256.
PhysioNet asks that a model which may reproduce or memorise notes be shared only under MIMIC's own
restrictions (mimic-code#828); the audit's numbers and what they do not prove are docs/audit.md's.

- MIMIC recorded: refused unless this checkpoint's record says pass; a failing record is refused
  naming its reasons. --allow-unaudited exports without a passing record, and the card's first
  lines say so.
- MIMIC not recorded, or the chain of manifests broken (provenance unknown): exported; the card
  says which, and carries an audit record of this checkpoint when there is one (a failing one is
  refused as above: someone audited it and it failed).
- A record that is not an audit record, or an --audit of another checkpoint, is refused whatever
  the options: the file given is the wrong one.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from bio_roberta.errors import ExportError
from bio_roberta.hf.model_card import TrainingData
from bio_roberta_core.provenance import file_record

logger = logging.getLogger(__name__)

AUDIT_SUFFIX = ".audit.json"
VERDICTS = ("pass", "fail")
DOC = "docs/audit.md"
MEMBERSHIP_ATTACKS = {"loss": "loss", "reference": "likelihood ratio (reference model)"}


def default_audit_path(checkpoint: Path) -> Path:
    """Where `bio-roberta audit CHECKPOINT` writes its record when not given --out."""
    return checkpoint.with_name(checkpoint.name + AUDIT_SUFFIX)


def audit_command(checkpoint: Path, vocab_dir: Path, training: TrainingData) -> str:
    text_dir = training.mimic[0]["text_dir"] if training.mimic else "TEXT_DIR"
    return f"bio-roberta audit {checkpoint} --vocab {vocab_dir} --text-dir {text_dir}"


def read_audit_record(path: Path, command: str) -> dict[str, Any]:
    """The audit record at path, checked to have the fields the gate and the card read."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ExportError(
            f"{path}: not a readable audit record ({error}); write one with `{command}`"
        ) from None
    problem = None
    if not isinstance(record, dict):
        problem = "not a JSON object"
    elif not isinstance(record.get("checkpoint_sha256"), str):
        problem = "no checkpoint_sha256"
    elif record.get("verdict") not in VERDICTS:
        problem = f"verdict {record.get('verdict')!r} is none of {', '.join(VERDICTS)}"
    elif not isinstance(record.get("reasons", []), list):
        problem = "reasons is not a list"
    if problem:
        raise ExportError(f"{path}: not an audit record ({problem}); write one with `{command}`")
    return record


@dataclass(frozen=True)
class AuditGate:
    """What the gate decided, for the card and the export manifest.

    record/path: this checkpoint's audit record, if any; required: MIMIC-III is recorded among the
    training data; unaudited: exported under --allow-unaudited without a passing record; stale: an
    audit record at the default path that is of another checkpoint."""

    training: TrainingData
    record: Optional[dict[str, Any]] = None
    path: Optional[Path] = None
    unaudited: bool = False
    stale: str = ""

    @property
    def required(self) -> bool:
        return bool(self.training.mimic)

    def manifest(self) -> dict[str, Any]:
        return {
            "required": self.required,
            "record": file_record(self.path) if self.record is not None else None,
            "verdict": self.record["verdict"] if self.record is not None else None,
            "allow_unaudited": self.unaudited,
        }

    def card_warning(self) -> list[str]:
        """The card's first lines when the model leaves without a passing audit."""
        if not self.unaudited:
            return []
        if self.record is not None:
            what = (
                f"**Warning: this model failed its memorisation audit** (`{self.path}`: "
                f"{'; '.join(self.record.get('reasons') or ['no reasons given'])})"
            )
        else:
            what = "**Warning: this model has not passed a memorisation audit**"
        if self.required:
            why = (
                "It was trained on MIMIC-III clinical notes and exported with `--allow-unaudited`: "
                "it may reproduce parts of those notes. Share it only under PhysioNet's "
                "credentialed data use agreement"
            )
        else:
            why = "It was exported with `--allow-unaudited`: it may reproduce its training text"
        return [f"> {what}. {why} (bio-roberta's {DOC}).", ""]

    def card_section(self) -> list[str]:
        lines = ["## Memorisation audit", ""]
        if self.record is None:
            if self.required:
                lines.append(
                    "Not audited: exported with `--allow-unaudited` although the training data "
                    "include MIMIC-III notes."
                )
            elif self.training.unknown:
                lines.append(
                    "Not audited. Whether the training data include clinical notes is unknown (the "
                    "manifests do not say, above); export-hf asks for an audit only where they "
                    "record MIMIC-III. If they did include notes, run `bio-roberta audit` before "
                    "sharing."
                )
            else:
                lines.append(
                    "Not audited: the training data its manifests record include no MIMIC-III "
                    "notes."
                )
            if self.stale:
                lines.append(f"({self.stale}.)")
            return lines + [""]
        record = self.record
        verdict = "PASS" if record["verdict"] == "pass" else "FAIL"
        lines += [
            (
                f"Verdict: **{verdict}** (`bio-roberta audit`, bio-roberta "
                f"{record.get('bio_roberta_version')}, {record.get('created')}); record "
                f"`{self.path}`, sha256 {file_record(self.path)['sha256']}. What the numbers mean "
                f"and what passing does not prove: bio-roberta's {DOC}."
            ),
            "",
        ]
        lines += membership_table(record.get("membership"))
        for title, key in (("Canary exposure", "exposure"), ("Name probes", "name_probes")):
            lines += [f"{title}:", ""] + bullets(record.get(key), "not measured") + [""]
        lines += ["Thresholds judged against:", ""] + bullets(record.get("thresholds"), "none")
        lines += ["", "Reasons:", ""] + bullets(record.get("reasons"), "none given") + [""]
        return lines


def membership_table(membership: Any) -> list[str]:
    """Membership inference, one row per attack (loss; likelihood ratio with a reference model)."""
    rows = []
    for key, name in MEMBERSHIP_ATTACKS.items():
        attack = (membership or {}).get(key)
        if not isinstance(attack, dict):
            continue
        ci = attack.get("auc_ci95") or ["?", "?"]
        rows.append(
            f"| {name} | {attack.get('auc')} | [{ci[0]}, {ci[1]}] | "
            f"{attack.get('tpr_at_1pct_fpr')} | {attack.get('tpr_at_0.1pct_fpr')} | "
            f"{attack.get('members')} | {attack.get('non_members')} |"
        )
    if not rows:
        return ["Membership inference: not measured.", ""]
    return [
        "Membership inference (notes trained on vs held out):",
        "",
        "| attack | ROC AUC | 95% CI | TPR at 1% FPR | TPR at 0.1% FPR | members | non-members |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def bullets(value: Any, empty: str) -> list[str]:
    """A record's nested values as `- key.subkey: value` lines, in the record's order."""
    lines = [f"- {key}: {item}" if key else f"- {item}" for key, item in flatten("", value)]
    return lines or [f"- {empty}"]


def flatten(prefix: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of each leaf; a list of plain values is one leaf under a key (a top-level
    list, such as the reasons, one leaf per item)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from flatten(f"{prefix}.{key}" if prefix else str(key), item)
    elif isinstance(value, list) and (
        not prefix or any(isinstance(v, (dict, list)) for v in value)
    ):
        for number, item in enumerate(value):
            yield from flatten(f"{prefix}[{number}]" if prefix else "", item)
    elif isinstance(value, list):
        if value:
            yield prefix, ", ".join(map(str, value))
    elif value is not None:
        yield prefix, value


def check_audit(
    checkpoint: Path,
    sha256: str,
    vocab_dir: Path,
    training: TrainingData,
    audit: Optional[Path] = None,
    allow_unaudited: bool = False,
) -> AuditGate:
    """The gate's decision for checkpoint (sha256: its file's); ExportError saying what to run."""
    command = audit_command(checkpoint, vocab_dir, training)
    path = Path(audit) if audit is not None else default_audit_path(checkpoint)
    if audit is not None and not path.is_file():
        raise ExportError(f"--audit {path} does not exist; write it with `{command}`")
    record = read_audit_record(path, command) if path.is_file() else None
    stale = ""
    if record is not None and record["checkpoint_sha256"] != sha256:
        other = (
            f"{path} is the audit of another checkpoint (sha256 {record['checkpoint_sha256']}, "
            f"{checkpoint}'s is {sha256})"
        )
        if audit is not None:
            raise ExportError(
                f"{other}: pass this checkpoint's record, or write it with `{command}`"
            )
        record, stale = None, other
        logger.warning("%s; it is not used", other)
    if record is not None and record["verdict"] == "fail" and not allow_unaudited:
        reasons = "; ".join(record.get("reasons") or ["no reasons given"])
        raise ExportError(
            f"{checkpoint} failed its memorisation audit ({path}): {reasons}. A model that may "
            "have memorised MIMIC-III notes is shared only under PhysioNet's terms "
            f"({DOC}); --allow-unaudited exports it with that warning opening its card"
        )
    if record is None and training.mimic and not allow_unaudited:
        corpus = training.mimic[0]
        why = stale or f"there is no audit record ({path} does not exist)"
        raise ExportError(
            f"{checkpoint} was trained on MIMIC-III notes ({corpus['text_dir']}, binarized into "
            f"{corpus['data_bin']}) and {why}: run `{command}`, then export again (--audit FILE "
            "names a record elsewhere; --allow-unaudited exports without one, saying so in the "
            "model card)"
        )
    passed = record is not None and record["verdict"] == "pass"
    return AuditGate(
        training,
        record,
        path if record is not None else None,
        unaudited=not passed and (bool(training.mimic) or record is not None),
        stale=stale,
    )
