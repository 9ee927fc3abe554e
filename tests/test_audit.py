"""`bio-roberta audit` on the tiny models of tests/audit_models.py (issue 31, item 2; issue 41): a
model trained well past convergence on notes with canaries exposes its canaries more the more
often they were repeated and tells its training notes from held-out ones; the same run stopped
after 2 updates does neither, and its audit passes. What the record judged is bound to the
checkpoint's own training data, and every way around export-hf's gate that issue 41 found is
refused.

The margins come from `python tests/audit_models.py 0 1 2` (3 seeds, AUDIT_CANDIDATES=255
candidates, so exposure is measured up to 8 bits; about 1.44 bits at chance), measured on this
2-core machine shared with other jobs:
                          seed 0   seed 1   seed 2   margin
  target exposure 1x      1.34     0.92     1.95
  target exposure 4x      7.21     2.77     5.80
  target exposure 16x     8.00     8.00     8.00
    16x - 1x              6.66     7.08     6.05     > 4.0
  target loss AUC         0.583    0.780    0.719    > 0.55
  target reference AUC    0.620    0.643    0.609    > 0.56
  early loss AUC          0.576    0.536    0.582    within 0.5 +- 0.1 (the default --max-auc)
  early reference AUC     0.587    0.585    0.533
  early exposure 16x      1.25     1.16     2.86     < 4.0
  early verdict           pass     pass     pass
(46 members, 54 non-members; the bootstrap 95% interval of an AUC is about +-0.11, so the early
model's pass is a small sample's: its loss AUC was 0.643 after 5 updates and 0.419 at its random
initialisation on seed 0.) The loss attack scores a note by its 20% least likely tokens
(--min-k-percent's default); by its mean loss over all tokens (--min-k-percent 100) the target's
AUC was 0.574, 0.620, 0.617. The reference attack scores by the mean loss either way.
"""

from __future__ import annotations

import json

import pytest
import torch

from audit_models import AUDIT_CANDIDATES
from bio_roberta.cli import main
from bio_roberta_core.checkpoints import read_checkpoint
from bio_roberta_core.provenance import sha256_file
from preprocess.canaries import CONDITIONS

MIN_EXPOSURE_GAP_16_OVER_1 = 4.0
MIN_TARGET_LOSS_AUC = 0.55
MIN_TARGET_REFERENCE_AUC = 0.56
MAX_EARLY_AUC_DISTANCE = 0.1
MAX_EARLY_EXPOSURE_16 = 4.0


def audit_command(checkpoint, models, *options):
    return [
        "audit",
        str(checkpoint),
        "--vocab",
        str(models.vocab),
        "--text-dir",
        str(models.text_dir),
        "--candidates",
        str(AUDIT_CANDIDATES),
        "--max-exposure-bits",
        "7",
        *options,
    ]


@pytest.fixture(scope="module")
def target_audit(audit_models, tmp_path_factory):
    names = tmp_path_factory.mktemp("names") / "names.csv"
    names.write_text(
        "".join(f"Person {i},{CONDITIONS[i % 4]}\n" for i in range(8)), encoding="utf-8"
    )
    code = main(
        audit_command(
            audit_models.target, audit_models, "--reference", str(audit_models.other),
            "--names", str(names),
        )
    )  # fmt: skip
    prefix = audit_models.target.with_name(audit_models.target.name + ".audit")
    return code, prefix, json.loads(prefix.with_name(prefix.name + ".json").read_text())


@pytest.fixture(scope="module")
def early_audit(audit_models):
    """(exit status, record) of the early model's audit beside it, with the reference."""
    early = audit_models.early
    code = main(audit_command(early, audit_models, "--reference", str(audit_models.other)))
    return code, json.loads(early.with_name(early.name + ".audit.json").read_text())


@pytest.mark.slow
def test_the_trained_model_exposes_repeated_canaries_and_its_training_notes(
    audit_models, target_audit
):
    code, prefix, record = target_audit
    exposure = record["exposure"]["by_repeats"]
    assert set(exposure) == {"1", "4", "16"}
    gap = exposure["16"]["mean_bits"] - exposure["1"]["mean_bits"]
    assert gap > MIN_EXPOSURE_GAP_16_OVER_1, exposure
    loss, reference = record["membership"]["loss"], record["membership"]["reference"]
    assert loss["auc"] > MIN_TARGET_LOSS_AUC, loss
    assert reference["auc"] > MIN_TARGET_REFERENCE_AUC, reference
    assert loss["auc_ci95"][0] <= loss["auc"] <= loss["auc_ci95"][1]
    manifest = json.loads((audit_models.text_dir / "manifest.json").read_text())
    assert loss["members"] == manifest["counts"]["documents_written"]["train"]
    assert loss["non_members"] == manifest["counts"]["documents_written"]["valid"]
    # the record the export gate reads, and the verdict it gives
    assert record["checkpoint_sha256"] == sha256_file(audit_models.target)
    assert record["verdict"] == "fail" and code == 1 and record["reasons"]
    assert {"thresholds", "created", "bio_roberta_version", "name_probes"} <= set(record)
    probes = record["name_probes"]
    assert probes["names"] == 8 and probes["chance"] == 0.25 and 0 <= probes["top1_rate"] <= 1
    report = prefix.with_name(prefix.name + ".md").read_text()
    assert "FAIL" in report and "| 16 |" in report and "reference" in report


@pytest.mark.slow
def test_a_model_early_in_its_training_exposes_nothing(early_audit):
    """The control: the same notes and flags stopped at EARLY_UPDATES updates, before memorising."""
    code, record = early_audit
    loss = record["membership"]["loss"]
    assert abs(loss["auc"] - 0.5) < MAX_EARLY_AUC_DISTANCE, loss
    assert record["exposure"]["by_repeats"]["16"]["mean_bits"] < MAX_EARLY_EXPOSURE_16
    assert record["verdict"] == "pass" and code == 0, record["reasons"]


@pytest.mark.slow
def test_without_canaries_exposure_is_not_measured_and_the_verdict_rests_on_membership(
    audit_models, tmp_path, capsys
):
    other_text = audit_models.other_text_dir  # no canaries.jsonl
    command = audit_command(audit_models.other, audit_models, "--out", str(tmp_path / "own"))
    command[command.index("--text-dir") + 1] = str(other_text)
    code = main([*command, "--notes", "12"])
    record = json.loads((tmp_path / "own.json").read_text())
    assert record["exposure"] == "not measured (no canaries)"
    assert record["membership"]["loss"]["members"] == 12
    assert code == (0 if record["verdict"] == "pass" else 1)
    assert all(reason.startswith("membership") for reason in record["reasons"])
    assert "not measured (no canaries)" in (tmp_path / "own.md").read_text()


@pytest.mark.parametrize(
    "options, message",
    [
        (["--candidates", "100"], "--candidates 100 measure at most 6.66 bits"),
        (["--vocab", "VOCAB_FILE"], "is a file"),
        (["--min-k-percent", "0"], "--min-k-percent 0.0 is not in (0, 100]"),
    ],
)
def test_bad_options_are_one_line(audit_models, options, message, capsys):
    command = audit_command(audit_models.target, audit_models, *options)
    if "VOCAB_FILE" in command:
        command[command.index("VOCAB_FILE")] = str(audit_models.vocab / "dict.txt")
    assert main(command) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("bio-roberta audit: error:") and message in error


@pytest.mark.slow
def test_export_takes_only_a_passing_audit_of_the_checkpoint_and_its_own_notes(
    audit_models, target_audit, early_audit, tmp_path, capsys
):
    """The gate end to end (issue 31, item 3; issue 41) on what `bio-roberta audit` wrote: export-hf
    refuses a MIMIC-trained model without a record, naming the command; refuses the target after
    its failing audit, with the reasons it recomputes (and exports it under --allow-unaudited with
    the warning opening the card); exports the early model once its own audit passed, the card
    giving the recomputed verdict and what the audit judged, by content."""
    export = ["export-hf", "--vocab", str(audit_models.vocab)]

    def exported(checkpoint, out, *options) -> tuple[int, str]:
        status = main([*export, str(checkpoint), str(out), *options])
        return status, capsys.readouterr().err.strip().splitlines()[-1:]

    status, line = exported(audit_models.other, tmp_path / "other-hf")
    assert status == 2 and "bio-roberta audit" in line[0]
    _code, prefix, record = target_audit
    status, line = exported(audit_models.target, tmp_path / "target-hf")
    assert status == 2 and f"failed its memorisation audit ({prefix}.json): " in line[0]
    assert "; ".join(record["reasons"]) in line[0]
    status, _ = exported(audit_models.target, tmp_path / "target-hf", "--allow-unaudited")
    card = card_body(tmp_path / "target-hf")
    assert status == 0 and card.startswith(
        f"> **Warning: this model failed its memorisation audit** (`{prefix}.json`: "
        f"{record['reasons'][0]}"
    )
    assert "Verdict: **FAIL**" in card

    code, early = early_audit
    out = tmp_path / "early-hf"
    status, line = exported(audit_models.early, out)
    assert status == 0, line
    card = (out / "README.md").read_text()
    assert "## Memorisation audit\n\nVerdict: **PASS**, recomputed from the record's" in card
    members = early["evidence"]["members"]
    assert f"(manifest sha256 `{members['manifest_sha256']}`" in card
    assert "the checkpoint's training notes by its manifests" in card
    assert "Reference: `" in card and "trained without the members by its manifests" in card
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["audit"]["verdict"] == "pass"


def card_body(export_dir) -> str:
    """The model card of an export dir without its front matter."""
    return (export_dir / "README.md").read_text().split("---\n", 2)[2].lstrip()


def refused(command, capsys) -> str:
    """The one-line error of a `bio-roberta` command that must exit 2."""
    assert main(command) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("bio-roberta "), line
    return line


@pytest.mark.slow
def test_an_audit_of_other_notes_another_reference_or_members_as_non_members_is_refused(
    audit_models, tmp_path, capsys
):
    """Issue 41, items 1-3: an audit of notes the model never saw (with the default or loosened
    thresholds), a reference that is the model itself (the same file, or the same weights in
    another), and non-members that are its training notes each passed; now each is refused in one
    line before anything is scored."""
    target = audit_models.target
    for loosened in ((), ("--max-auc", "0.99", "--max-tpr-at-1pct-fpr", "1")):
        command = audit_command(target, audit_models, *loosened, "--out", str(tmp_path / "a"))
        command[command.index("--text-dir") + 1] = str(audit_models.other_text_dir)
        line = refused(command, capsys)
        assert f"{target} was not trained on the train notes of --text-dir " in line
        assert f"its training notes are those of {audit_models.text_dir} (binarized into " in line

    same = refused(audit_command(target, audit_models, "--reference", str(target)), capsys)
    assert f"--reference {target} is the audited model itself (same file)" in same
    copy = tmp_path / "copy.pt"
    state = read_checkpoint(target)
    state["extra_state"] = {**(state.get("extra_state") or {}), "saved_again": True}
    torch.save(state, copy)
    assert sha256_file(copy) != sha256_file(target)
    same = refused(audit_command(target, audit_models, "--reference", str(copy)), capsys)
    assert "is the audited model itself (same weights)" in same
    early = audit_command(audit_models.early, audit_models, "--reference", str(target))
    trained = refused(early, capsys)
    assert f"--reference {target} was trained on the members' notes" in trained

    members = refused(
        audit_command(target, audit_models, "--non-members", str(audit_models.text_dir)), capsys
    )
    assert f"{audit_models.text_dir}: " in members
    assert "non-member notes are notes of" in members and "train split" in members
    assert not (tmp_path / "a.json").exists()


@pytest.mark.slow
def test_a_record_edited_or_of_other_notes_is_refused_naming_what_differs(
    audit_models, target_audit, tmp_path, capsys
):
    """Issue 41, items 1 and 7: the gate recomputes the verdict from the measurements (a failing
    record edited to pass is refused) and holds the evidence against the checkpoint's lineage (a
    record whose members are other notes, or whose canaries are not the text dir's, is refused)."""
    from bio_roberta.audit.evidence import text_dir_evidence

    _code, prefix, record = target_audit
    export = ["export-hf", str(audit_models.target), str(tmp_path / "hf")]
    export += ["--vocab", str(audit_models.vocab), "--audit"]

    def gate(edited: dict) -> str:
        path = tmp_path / "edited.json"
        path.write_text(json.dumps(edited))
        line = refused([*export, str(path)], capsys)
        assert line.startswith(f"bio-roberta export-hf: error: {path}: not an audit record the ")
        return line

    assert "edited by hand" in gate({**record, "verdict": "pass", "reasons": []})
    evidence = json.loads(json.dumps(record["evidence"]))
    evidence["members"] = text_dir_evidence(audit_models.other_text_dir, ["train"], [["note"]])
    line = gate({**record, "evidence": evidence})
    assert "it judged other notes than the checkpoint was trained on" in line
    assert f"audit with --text-dir {audit_models.text_dir}" in line
    evidence = json.loads(json.dumps(record["evidence"]))
    evidence["canaries"] = None
    assert "holds canaries" in gate({**record, "evidence": evidence})
    evidence = json.loads(json.dumps(record["evidence"]))
    evidence["reference"]["sha256"] = record["checkpoint_sha256"]
    assert "its reference model is the checkpoint itself" in gate({**record, "evidence": evidence})
    assert not (tmp_path / "hf").exists()


def export_arguments(checkpoint, out, vocab) -> list[str]:
    """The arguments of `bio-roberta export-hf` of a checkpoint with its vocabulary."""
    return ["export-hf", str(checkpoint), str(out), "--vocab", str(vocab)]


@pytest.mark.slow
def test_the_gate_follows_a_relative_data_dir_from_anywhere_and_fails_closed_when_it_is_gone(
    audit_models, tmp_path, capsys, monkeypatch
):
    """Issue 41, item 6: a checkpoint records its data dir as the relative path it was trained
    with; export-hf from another dir looked for it there, found nothing and exported without an
    audit. It is now looked for above the checkpoint too; where it is nowhere (renamed), the gate
    fails closed and --training-data points it at the data-bin."""
    project = audit_models.target.parent.parent  # where target-bin is
    state = read_checkpoint(audit_models.target)
    state["cfg"]["task"]["data"] = "target-bin"
    checkpoint = project / "relative" / "checkpoint_last.pt"
    checkpoint.parent.mkdir(exist_ok=True)
    torch.save(state, checkpoint)
    monkeypatch.chdir(tmp_path)
    export = export_arguments(checkpoint, tmp_path / "hf", audit_models.vocab)
    line = refused(export, capsys)
    assert f"{checkpoint} was trained on MIMIC-III notes ({audit_models.text_dir}" in line

    state["cfg"]["task"]["data"] = "renamed-bin"
    torch.save(state, checkpoint)
    line = refused(export, capsys)
    assert (
        "the training data its manifests record cannot be followed from here (its data dir " in line
    )
    assert "renamed-bin is not here" in line and "--training-data DATA_BIN" in line
    line = refused([*export, "--training-data", str(project / "target-bin")], capsys)
    assert "was trained on MIMIC-III notes" in line
    assert main([*export, "--allow-unaudited"]) == 0
    card = card_body(tmp_path / "hf")
    assert "cannot be followed (its data dir renamed-bin is not here" in card.split("\n")[0]


@pytest.mark.slow
def test_a_fine_tuned_checkpoint_is_audited_through_the_masked_lm_head_it_kept(
    audit_models, tmp_path, capsys
):
    """Issue 41, item 8: the audit export-hf asks for crashed on a fine-tuned checkpoint
    (FileNotFoundError: input0/dict.txt). It reads the fine-tuned encoder through the masked-LM
    head fine-tuning kept, follows its lineage to the MIMIC-trained model it started from, and says
    which route it took; export-hf takes that record."""
    from finetune_data import build_ner, fine_tune_from

    data = build_ner(tmp_path / "ner", audit_models.vocab / "dict.txt")
    flags = ("--task", "sequence_labeling", "--criterion", "sequence_labeling")
    flags += ("--max-positions", "64")  # the audit models' blocks
    run = fine_tune_from(data, tmp_path / "checkpoints", audit_models.target, *flags)
    assert run.returncode == 0, run.stderr[-3000:]
    checkpoint = tmp_path / "checkpoints" / "checkpoint_last.pt"
    code = main(audit_command(checkpoint, audit_models, "--notes", "20"))
    record = json.loads(checkpoint.with_name(checkpoint.name + ".audit.json").read_text())
    assert code == (0 if record["verdict"] == "pass" else 1)
    assert record["evidence"]["route"] == "fine-tuned encoder through the masked-LM head it kept"
    assert record["evidence"]["lineage"] == {"followed": True}
    export = export_arguments(checkpoint, tmp_path / "hf", audit_models.vocab)
    if record["verdict"] == "fail":
        assert "failed its memorisation audit" in refused(export, capsys)
    else:
        assert main(export) == 0


@pytest.mark.slow
def test_an_out_holding_another_checkpoints_audit_is_not_overwritten(
    audit_models, target_audit, capsys
):
    """Issue 41 (weak): two audits on one --out both exited 0 and the last won."""
    _code, prefix, _record = target_audit
    before = prefix.with_name(prefix.name + ".json").read_bytes()
    line = refused(audit_command(audit_models.early, audit_models, "--out", str(prefix)), capsys)
    assert f"{prefix}.json holds the audit of another checkpoint (sha256 " in line
    assert prefix.with_name(prefix.name + ".json").read_bytes() == before


def test_a_names_file_that_is_not_utf8_is_one_line(audit_models, tmp_path, capsys):
    """Issue 41, item 9: a non-UTF-8 --names file was a 30-line UnicodeDecodeError traceback."""
    names = tmp_path / "names.csv"
    names.write_bytes("Jos\xe9 Marchetti,amyloidosis\n".encode("latin-1"))
    line = refused(audit_command(audit_models.target, audit_models, "--names", str(names)), capsys)
    assert f"{names}: line 1: byte 0xe9 at offset 3 is not UTF-8" in line
