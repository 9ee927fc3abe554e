#!/usr/bin/env python
"""The memorisation audit's time on the CPU, as one JSON object, at the size of a MIMIC-III audit:
`bio-roberta audit` run whole (bio_roberta/audit/record.py: the text dir checked and hashed, every
note's tokens masked once, the canaries' exposure among --candidates candidates each) on
--notes members and as many non-members, for the tiny shape (roberta_tiny); and, for the base
shape (roberta_base), its rates (seconds per 1,000 notes, per canary), timed on fewer notes with
the audit's own scorer and extrapolated to the same size. The machine's load (os.getloadavg)
before and after, the threads, the commit and the machine are recorded: the seconds mean little
without them.

The notes are the tests' synthetic MIMIC-style notes (tests/synthetic_notes.py) parsed with
--canaries canaries (repeated 1, 4, 16 times), a BPE vocabulary learned on them; each model is
fairseq-train's checkpoint after one update (the time does not depend on the weights).
    python scripts/benchmark_audit.py [--notes 1000 --candidates 4095 --canaries 4
                                       --base-notes 20 --threads N]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts"), str(REPO / "tests")]
SHAPES = {"tiny": ["--arch", "roberta_tiny"], "base": ["--arch", "roberta_base"]}
TOKENS_PER_SAMPLE = 512


def one_update_checkpoint(databin: Path, save_dir: Path, shape: str) -> Path:
    subprocess.run(
        [sys.executable, "-m", "fairseq_cli.train", databin, "--user-dir", REPO / "user_dir",
         "--cpu", "--num-workers", "0", "--task", "masked_lm", "--criterion", "masked_lm",
         *SHAPES[shape], "--optimizer", "adam", "--lr", "1e-4", "--batch-size", "2",
         "--tokens-per-sample", str(TOKENS_PER_SAMPLE), "--max-update", "1",
         "--disable-validation", "--no-epoch-checkpoints", "--save-dir", save_dir],
        check=True, capture_output=True,
    )  # fmt: skip
    return save_dir / "checkpoint_last.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000, help="members and non-members each")
    parser.add_argument("--candidates", type=int, default=4095, help="per canary")
    parser.add_argument("--canaries", type=int, default=4, help="inserted in the training notes")
    parser.add_argument("--base-notes", type=int, default=20, help="notes timed for base")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    args = parser.parse_args()

    import os
    import platform

    import torch
    from benchmarks.provenance import commit

    from bio_roberta.audit.attacks import candidate_secrets
    from bio_roberta.audit.masked_lm import MaskedLMScorer, note_losses
    from bio_roberta.audit.measurements import AuditOptions
    from bio_roberta.audit.record import audit
    from bio_roberta.audit.verdict import Thresholds
    from preprocess.binarize import binarize
    from preprocess.canaries import CanaryOptions, read_canaries
    from preprocess.learn_vocab import learn_vocabulary
    from preprocess.mimic import parse_mimic
    from preprocess.text_shards import ShardOptions, iter_shard_documents
    from synthetic_notes import write_notes

    if args.threads:
        torch.set_num_threads(args.threads)
    results = {
        "commit": commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "notes_each_side": args.notes,
        "candidates": args.candidates,
        "canaries": args.canaries,
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # a valid fraction of one half: about --notes a side (and a few more to draw from)
        notes = write_notes(root / "NOTEEVENTS.csv", 2 * args.notes + 100, seed=0)
        text_dir = root / "text"
        canaries = CanaryOptions(args.canaries, (1, 4, 16))
        shards = ShardOptions(valid_fraction=0.5, workers=1)
        parse_mimic([notes], text_dir, shards, canaries=canaries)
        learn_vocabulary("gpt2", [text_dir], root / "vocab", vocab_size=2000)
        binarize(text_dir, root / "vocab", root / "bin", progress=False)
        tiny = one_update_checkpoint(root / "bin", root / "tiny", "tiny")
        start = time.perf_counter()
        record = audit(
            tiny,
            root / "vocab",
            text_dir,
            options=AuditOptions(
                notes=args.notes, candidates=args.candidates, batch_size=args.batch_size
            ),
            thresholds=Thresholds(),
            out=root / "tiny.audit",
        )
        results["tiny"] = {
            "audit_seconds": round(time.perf_counter() - start, 1),
            "members": record["membership"]["loss"]["members"],
            "non_members": record["membership"]["loss"]["non_members"],
        }

        base_load = [round(x, 2) for x in os.getloadavg()]
        documents = list(iter_shard_documents(text_dir, "train"))[: args.base_notes]
        (canary, *_) = read_canaries(text_dir)
        secrets = [canary["secret"]] + candidate_secrets(
            canary["secret"], canary["secret_format"], args.candidates, seed="benchmark"
        )
        base = one_update_checkpoint(root / "bin", root / "base", "base")
        scorer = MaskedLMScorer(base, root / "vocab", args.batch_size)
        start = time.perf_counter()
        note_losses(scorer.note_log_probs(scorer.note_ids(documents), seed=0, mask_fraction=0.15))
        per_note = (time.perf_counter() - start) / len(documents)
        start = time.perf_counter()
        scorer.span_scores([(canary["prefix"], s, canary["suffix"]) for s in secrets])
        per_canary = time.perf_counter() - start
        results["base"] = {
            "load_before": base_load,
            "notes_timed": len(documents),
            "s_per_1000_notes": round(per_note * 1000, 1),
            "s_per_canary": round(per_canary, 1),
            "audit_seconds_extrapolated": round(
                per_note * 2 * args.notes + per_canary * args.canaries, 0
            ),
        }
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
