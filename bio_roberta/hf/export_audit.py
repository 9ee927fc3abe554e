"""export-hf's memorisation gate (issues 31, 41): a checkpoint whose manifests record MIMIC-III
notes among its training data leaves only with a passing audit record of that exact checkpoint
and of those notes.

The record is what `bio-roberta audit CHECKPOINT` writes (CHECKPOINT.audit.json by default, or the
file given with --audit). The gate reads no verdict from it: it recomputes the verdict from the
recorded measurements by the stricter of the record's thresholds and the defaults
(audit/verdict.py), refuses a record whose own verdict is not what its numbers give (edited), and
holds the record's evidence against the checkpoint's lineage (audit/evidence.py, lineage.py): its
sha256, the members being the checkpoint's MIMIC-III training shards by content, its canaries,
non-members that are none of its training notes, a reference that is another model. PhysioNet asks
that a model which may reproduce or memorise notes be shared only under MIMIC's own restrictions
(mimic-code#828); what a pass promises and does not: docs/audit.md.

- MIMIC recorded: refused unless this checkpoint's record passes; a failing one is refused naming
  its reasons. --allow-unaudited exports without a passing record, and the card's first lines
  say so.
- A recorded link of the lineage not here (a data-bin or text dir moved, a pretrained checkpoint
  gone): refused (fails closed), saying how to point the gate at the training data
  (--training-data DATA_BIN, which the card records) or --allow-unaudited.
- MIMIC not recorded, or a chain our stages never wrote (provenance unknown): exported; the card
  says which, and carries an audit record of this checkpoint when there is one (a failing one is
  refused as above: someone audited it and it failed).
- A record that is not an audit record, is of another checkpoint or other notes, or was edited, is
  refused whatever the options: the file given is the wrong one.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from bio_roberta.audit.evidence import evidence_problem
from bio_roberta.audit.lineage import TrainingData
from bio_roberta.audit.report import judged_lines
from bio_roberta.audit.verdict import Thresholds, judged
from bio_roberta.errors import ExportError
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

    record/path: this checkpoint's audit record, if any; reasons/thresholds: why it fails (none: it
    passes) by the thresholds the gate judged it by, recomputed from its measurements; required:
    MIMIC-III is recorded among the training data; unaudited: exported under --allow-unaudited
    without a passing record; stale: an audit record at the default path that is of another
    checkpoint."""

    training: TrainingData
    record: Optional[dict[str, Any]] = None
    path: Optional[Path] = None
    unaudited: bool = False
    stale: str = ""
    reasons: tuple[str, ...] = ()
    thresholds: Optional[Thresholds] = None

    @property
    def verdict(self) -> Optional[str]:
        return None if self.record is None else "fail" if self.reasons else "pass"

    @property
    def required(self) -> bool:
        return bool(self.training.mimic)

    def manifest(self) -> dict[str, Any]:
        return {
            "required": self.required,
            "record": file_record(self.path) if self.record is not None else None,
            "verdict": self.verdict,
            "allow_unaudited": self.unaudited,
            **({"training_data_given": list(self.training.given)} if self.training.given else {}),
        }

    def card_warning(self) -> list[str]:
        """The card's first lines when the model leaves without a passing audit."""
        if not self.unaudited:
            return []
        if self.record is not None:
            what = (
                f"**Warning: this model failed its memorisation audit** (`{self.path}`: "
                f"{'; '.join(self.reasons)})"
            )
        else:
            what = "**Warning: this model has not passed a memorisation audit**"
        if self.training.broken:
            why = (
                "It was exported with `--allow-unaudited` although the training data its "
                f"manifests record cannot be followed ({self.training.broken[0]}): whether it "
                "learnt from clinical notes is unknown"
            )
        elif self.required:
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
        if self.training.given:
            lines += [
                (
                    "Training data as named by `--training-data` "
                    f"({', '.join(f'`{d}`' for d in self.training.given)}), not followed from the "
                    "checkpoint's own options."
                ),
                "",
            ]
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
        lines += [
            (
                f"Verdict: **{self.verdict.upper()}**, recomputed from the record's measurements "
                f"(`bio-roberta audit`, bio-roberta {record.get('bio_roberta_version')}, "
                f"{record.get('created')}); record `{self.path}`, sha256 "
                f"{file_record(self.path)['sha256']}. What the numbers mean and what passing does "
                f"not prove: bio-roberta's {DOC}."
            ),
            "",
        ]
        judged_what = judged_lines(record["evidence"])
        lines += [judged_what[0].removeprefix("## ") + ":", *judged_what[1:]]
        lines += membership_table(record.get("membership"))
        for title, key in (("Canary exposure", "exposure"), ("Name probes", "name_probes")):
            lines += [f"{title}:", ""] + bullets(record.get(key), "not measured") + [""]
        thresholds = asdict(self.thresholds)
        lines += ["Thresholds judged against:", ""] + bullets(thresholds, "none")
        looser = Thresholds(**record["thresholds"]).looser_than(Thresholds())
        if looser:
            lines += [
                "",
                (
                    f"(The audit ran with looser thresholds, {'; '.join(looser)}: the gate "
                    "judged it by the defaults.)"
                ),
            ]
        lines += ["", "Reasons:", ""] + bullets(list(self.reasons), "none") + [""]
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
    if training.broken and not allow_unaudited:
        raise ExportError(
            f"{checkpoint}: the training data its manifests record cannot be followed from here "
            f"({training.broken[0]}), so whether it learnt from MIMIC-III notes is unknown: pass "
            "--training-data DATA_BIN (the data-bin it was trained on; the model card says so), "
            "export from the dir it was trained in, or --allow-unaudited"
        )
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
    thresholds, reasons = None, []
    if record is not None:
        try:
            thresholds, reasons = judged(record)
            problem = evidence_problem(record, sha256, training)
        except ValueError as error:
            problem = str(error)
        if problem:
            raise ExportError(
                f"{path}: not an audit record the gate can take: {problem}; write one with "
                f"`{command}`"
            )
    if reasons and not allow_unaudited:
        raise ExportError(
            f"{checkpoint} failed its memorisation audit ({path}): {'; '.join(reasons)}. A model "
            "that may have memorised MIMIC-III notes is shared only under PhysioNet's terms "
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
    passed = record is not None and not reasons
    return AuditGate(
        training,
        record,
        path if record is not None else None,
        unaudited=not passed
        and (bool(training.mimic) or record is not None or bool(training.broken)),
        stale=stale,
        reasons=tuple(reasons),
        thresholds=thresholds,
    )
