"""Two tiny masked LMs for the memorisation audit's tests, built once per session through the
package's own stages (parse-mimic --canaries, learn-vocab, binarize) and stock fairseq-train:

  target     roberta_tiny trained well past convergence (no dropout) on synthetic notes
             (synthetic_notes.py) with canaries repeated 1, 4 and 16 times; its text dir's valid
             split is the held-out notes;
  early      the target's training stopped at EARLY_UPDATES updates (same data, flags and seed): a
             model of those notes that has not memorised them yet;
  other      the same shape and vocabulary trained as long on other synthetic notes (another
             seed), the "model trained on other text": the reference of the likelihood-ratio attack
             and a model whose audit on the target's notes must find nothing.

`python tests/audit_models.py SEED...` builds them for each seed and prints the audit numbers:
how the margins in tests/test_audit.py were derived.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tiny_training import train_masked_lm

NOTES = 100  # about half train (members), half valid (non-members)
VALID_FRACTION = 0.5
CANARIES = 6  # two of each repeat count
CANARY_REPEATS = (1, 4, 16)
TOKENS_PER_SAMPLE = 64
UPDATES = 600
EARLY_UPDATES = 2
AUDIT_CANDIDATES = 255  # exposure measurable up to 8 bits
# no dropout: memorise; one checkpoint, at the end (--save-interval beyond the last epoch)
MODEL_FLAGS = (
    "--dropout",
    "0",
    "--attention-dropout",
    "0",
    "--lr",
    "3e-3",
    "--save-interval",
    "100000",
)


@dataclass(frozen=True)
class AuditModels:
    vocab: Path
    text_dir: Path  # the target's: canaries.jsonl, train = members, valid = non-members
    target: Path
    other: Path
    early: Path
    other_text_dir: Path  # the other model's notes


def _train(databin: Path, save_dir: Path, seed: int, updates: int = UPDATES) -> Path:
    train_masked_lm(
        databin,
        save_dir,
        updates,
        *MODEL_FLAGS,
        "--seed",
        str(seed),
        "--disable-validation",
        tokens_per_sample=TOKENS_PER_SAMPLE,
        batch_size=32,
        env={"OMP_NUM_THREADS": "1"},  # a tiny model: threads only contend
    )
    return save_dir / "checkpoint_last.pt"


def build_audit_models(root: Path, seed: int = 0) -> AuditModels:
    from preprocess.binarize import binarize
    from preprocess.canaries import CanaryOptions
    from preprocess.learn_vocab import learn_vocabulary
    from preprocess.mimic import parse_mimic
    from preprocess.text_shards import ShardOptions
    from synthetic_notes import write_notes

    options = ShardOptions(valid_fraction=VALID_FRACTION, workers=1)
    text_dirs = {}
    for name, note_seed, canaries in (
        ("target", seed, CanaryOptions(CANARIES, CANARY_REPEATS, seed)),
        ("other", seed + 1000, None),
    ):
        notes = write_notes(root / name / "NOTEEVENTS.csv", NOTES, note_seed)
        text_dirs[name] = root / f"{name}-text"
        parse_mimic([notes], text_dirs[name], options, canaries=canaries)
    vocab = root / "vocab"
    # learned on the other notes, as a vocabulary learned on a large corpus: 16 copies of a
    # secret in a tiny one would merge it into fewer tokens than its candidates
    learn_vocabulary("gpt2", [text_dirs["other"]], vocab, vocab_size=600)
    checkpoints = {}
    for name, text_dir in text_dirs.items():
        databin = root / f"{name}-bin"
        binarize(text_dir, vocab, databin, progress=False)
        checkpoints[name] = _train(databin, root / f"{name}-checkpoints", seed)
    early = _train(root / "target-bin", root / "early-checkpoints", seed, EARLY_UPDATES)
    return AuditModels(
        vocab, text_dirs["target"], checkpoints["target"], checkpoints["other"], early,
        text_dirs["other"],
    )  # fmt: skip


if __name__ == "__main__":  # the repeated runs behind the test margins
    import json
    import tempfile
    import time

    from bio_roberta.audit.measurements import AuditOptions
    from bio_roberta.audit.record import audit
    from bio_roberta.audit.verdict import Thresholds

    for seed in map(int, sys.argv[1:]):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            models = build_audit_models(Path(tmp), seed)
            built = time.perf_counter() - start
            options = AuditOptions(candidates=AUDIT_CANDIDATES, seed=seed)
            results = {}
            for name in ("target", "early"):
                record = audit(
                    getattr(models, name),
                    models.vocab,
                    models.text_dir,
                    reference=models.other,
                    options=options,
                    thresholds=Thresholds(max_exposure_bits=7.0),
                    out=Path(tmp) / f"{name}.audit",
                )
                results[name] = {
                    "exposure": {
                        r: g["mean_bits"] for r, g in record["exposure"]["by_repeats"].items()
                    },
                    "loss": record["membership"]["loss"],
                    "reference": record["membership"]["reference"],
                    "verdict": record["verdict"],
                    "reasons": record["reasons"],
                }
            print(json.dumps({"seed": seed, "build_s": round(built, 1), **results}))
