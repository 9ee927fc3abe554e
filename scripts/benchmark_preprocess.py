#!/usr/bin/env python
"""Benchmark stage 1 end to end (PubMed XML -> text -> BPE ids -> fairseq mmap) against the standard
route.

Both routes run on the same input in the same run, each stage as its own process tree (start-up
included), with the same vocabulary and the same number of workers:

  ours       bio-roberta parse-pubmed --workers W --valid-fraction 0 (dedup on, as by default)
             bio-roberta binarize --workers W                        (encode + binarize in one pass)
  standard   pubmed_parser.parse_medline_xml over the files with a W-process pool, keeping title +
             abstract and dropping citations with an empty abstract (the paper's selection), one
             line per title / abstract line, a blank line after each citation; no sentence
             splitting, so ours does strictly more work here
             fairseq examples/roberta/multiprocessing_bpe_encoder.py --workers W --keep-empty
             fairseq-preprocess --only-source --srcdict dict.txt --workers W

Input, sized by its text (title + abstract characters, default 30 MB as in the issue's reference
measurement): the real PubMed baseline samples (default ../shared/data/corpus/pubmed/*.xml.gz beside
the checkout) are replicated. Copy 0 is the real citations (deletions and book records dropped, each
PMID once, so revisions and deletions cannot make the routes' selections differ); copy k >= 1 shifts
every PMID by k * 10^8 and varies every title/abstract text segment: the words between its first and
last are shuffled, and a share of the longer words (--splice-rate) are spliced with another word
of the corpus (a prefix of one + a suffix of the other, e.g. "hepatocellular" + "...itonitis"),
so the text has enough distinct words for a 50k byte-level BPE, as real PubMed has. The copies are
dealt into --files files of equal citation counts, gzipped like the baseline.

The vocabulary (--vocab-size, default 50k byte-level BPE) is learned once on our parsed text and
is not part of the timing. Peak RSS and PSS are those of each stage's whole process tree (sampled
every 50 ms; PSS splits the pages forked workers share with their parent, which RSS counts once
per process); our parse also runs on a quarter of the files to show that its memory does not
grow with the number of inputs. Every stage runs --repeats times, the two routes interleaved so
both meet the same load, each time from scratch (our parse never reuses .work/). Prints one JSON
object: per stage and end to end, the median wall seconds (and each run's), CPU seconds of the
process tree (much less sensitive than wall time to what else a shared machine runs),
documents/s, tokens/s, peak RSS and PSS for both routes, the ratios standard / ours of each cost
(seconds, CPU seconds, seconds per document or token, peak memory: above 1, ours costs less), an
in-process one-core comparison of the XML parsers alone, the start-up time of a bio-roberta
command (included in each of our stages), and the load average while it ran.

--pmc-scaling 5,10,20,40 measures instead how one PMC article's parse grows with its size: for each
size (MB) it writes one JATS article of the real sample paragraphs (sample/corpus/pmc) repeated, in
two shapes, "paragraphs" (as they are) and "one_unpunctuated_paragraph" (their words without
sentence ends as one paragraph: one sentence, cut into lines; over 10 MB it needs huge_tree), and
runs `bio-roberta parse-pmc` on it alone; it prints per shape and size the wall seconds, CPU
seconds, peak RSS of the process tree, and seconds and peak per input MB less the start-up's (flat
when the parse is linear).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from benchmarks.pmc_scaling import pmc_scaling  # noqa: E402
from benchmarks.preprocess_costs import RATIOS_KEY, cost_ratios, end_to_end, stage  # noqa: E402
from benchmarks.process_tree import timed  # noqa: E402
from benchmarks.pubmed_input import synthesise_input  # noqa: E402

STANDARD_PARSE = r"""
import sys
from multiprocessing import Pool
import pubmed_parser as pp

def parse(path):
    docs = []
    for record in pp.parse_medline_xml(path):
        if record.get("delete"):
            continue
        abstract = (record.get("abstract") or "").strip()
        if abstract:  # the paper keeps title + abstract and removes empty abstracts
            lines = [(record.get("title") or "").strip()] + abstract.split("\n")
            docs.append("".join(line.strip() + "\n" for line in lines if line.strip()) + "\n")
    return docs

out, workers, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
documents = 0
with Pool(workers) as pool, open(out, "w", encoding="utf-8") as handle:
    for docs in pool.imap(parse, paths):
        documents += len(docs)
        handle.write("".join(docs))
print(documents)
"""


def xml_parser_per_core(paths: list[str]) -> dict:
    """Citations/s of the two XML parsers alone, in this process, one core, on the same files."""
    import pubmed_parser

    from preprocess.pubmed import iter_pubmed_records

    rates = {}
    for name, parse in (
        ("pubmed_parser.parse_medline_xml", pubmed_parser.parse_medline_xml),
        ("preprocess.pubmed.iter_pubmed_records", iter_pubmed_records),
    ):
        started = time.perf_counter()
        citations = sum(1 for path in paths for _ in parse(path))
        rates[name] = round(citations / (time.perf_counter() - started), 1)
    return {
        "files": len(paths),
        "citations_per_s": rates,
        "ratio": round(
            rates["preprocess.pubmed.iter_pubmed_records"]
            / rates["pubmed_parser.parse_medline_xml"],
            2,
        ),
    }


def dataset_tokens(prefix: Path) -> int:
    """Tokens in a fairseq mmap dataset (kept referenced: .sizes is a view of its memory map)."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    dataset = MMapIndexedDataset(str(prefix))
    return int(dataset.sizes.sum())


def repeated(commands: dict[str, tuple[list[str], Path]], repeats: int) -> dict[str, dict]:
    """Run each command `repeats` times, interleaved (so both routes meet the same load), each time
    from a clean output path; per command the median seconds, every run's seconds, the peak memory
    over the runs and the result of the last run."""
    runs: dict[str, list[dict]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (command, output) in commands.items():
            shutil.rmtree(output, ignore_errors=True)
            output.unlink(missing_ok=True)
            runs[name].append(timed(command))
    return {
        name: {
            "seconds": statistics.median(run["seconds"] for run in results),
            "cpu_seconds": statistics.median(run["cpu_seconds"] for run in results),
            "runs_seconds": [round(run["seconds"], 2) for run in results],
            "peak_rss_mb": max(run["peak_rss_mb"] for run in results),
            "peak_pss_mb": max(run["peak_pss_mb"] for run in results),
            "load_average_1m": [round(run["load_average_1m"], 2) for run in results],
            "stdout": results[-1]["stdout"],
        }
        for name, results in runs.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pubmed",
        default=str(Path(__file__).resolve().parents[2] / "shared/data/corpus/pubmed"),
        help="real PubMed *.xml.gz to replicate",
    )
    parser.add_argument(
        "--text-mb", type=float, default=30.0, help="title + abstract text to synthesise"
    )
    parser.add_argument("--files", type=int, default=16, help="input files (equal citation counts)")
    parser.add_argument(
        "--splice-rate", type=float, default=0.2, help="share of words >= 6 letters spliced"
    )
    parser.add_argument("--vocab-size", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per stage (interleaved); the median counts"
    )
    parser.add_argument("--work-dir", help="keep the files here (default: a temporary directory)")
    parser.add_argument(
        "--pmc-scaling",
        metavar="MB,MB,...",
        type=lambda text: [float(size) for size in text.split(",")],
        help="measure instead one PMC article's parse at these sizes (e.g. 5,10,20,40)",
    )
    args = parser.parse_args()
    if args.pmc_scaling:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(args.work_dir or tmp)
            work.mkdir(parents=True, exist_ok=True)
            print(json.dumps(pmc_scaling(args.pmc_scaling, work), indent=2))
        return 0
    if not sorted(Path(args.pubmed).glob("*.xml.gz")):
        print(
            "benchmark_preprocess.py: error: no PubMed baseline files (*.xml.gz) in "
            f"{args.pubmed}; it replicates real ones: give their directory with --pubmed DIR "
            "(e.g. what `bio-roberta download pubmed --limit 2 --out DIR` fetches)",
            file=sys.stderr,
        )
        return 2

    import fairseq

    from preprocess.learn_vocab import learn_vocabulary
    from preprocess.vocab_dir import read_vocab_dir

    encoder_script = (
        Path(fairseq.__file__).parent / "examples" / "roberta" / "multiprocessing_bpe_encoder.py"
    )
    bio_roberta = str(Path(sys.executable).parent / "bio-roberta")
    fairseq_preprocess = str(Path(sys.executable).parent / "fairseq-preprocess")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work_dir or tmp)
        xml_dir = work / "xml"
        synthesis_started = time.perf_counter()
        input_record = synthesise_input(
            Path(args.pubmed), xml_dir, args.text_mb, args.files, args.splice_rate
        )
        input_record["synthesis_seconds"] = round(time.perf_counter() - synthesis_started, 1)
        xml_files = sorted(str(p) for p in xml_dir.glob("*.xml.gz"))
        workers = str(args.workers)

        def parse_ours(inputs: list[str], out: Path) -> tuple[list[str], Path]:
            return [
                bio_roberta,
                "parse-pubmed",
                *inputs,
                "--out",
                str(out),
                "--workers",
                workers,
                "--valid-fraction",
                "0",
            ], out

        parses = repeated(
            {
                "ours": parse_ours([str(xml_dir)], work / "text"),
                "ours, a quarter of the files": parse_ours(
                    xml_files[: len(xml_files) // 4], work / "text-quarter"
                ),
                "standard": (
                    [
                        sys.executable,
                        "-c",
                        STANDARD_PARSE,
                        str(work / "standard.txt"),
                        workers,
                        *xml_files,
                    ],
                    work / "standard.txt",
                ),
            },
            args.repeats,
        )
        startup = timed([bio_roberta, "parse-pubmed", "--help"])
        text_manifest = json.loads((work / "text" / "manifest.json").read_text())
        our_documents = text_manifest["counts"]["documents_written"]["train"]
        standard_documents = int(parses["standard"]["stdout"].strip())
        vocab_started = time.perf_counter()
        learn_vocabulary("gpt2", [work / "text"], work / "vocab", vocab_size=args.vocab_size)
        vocab_seconds = time.perf_counter() - vocab_started
        vocab_files = {
            name: str(work / "vocab" / name) for name in ("encoder.json", "vocab.bpe", "dict.txt")
        }
        encodes = repeated(
            {
                "ours": (
                    [
                        bio_roberta,
                        "binarize",
                        str(work / "text"),
                        "--vocab",
                        str(work / "vocab"),
                        "--out",
                        str(work / "ours-bin"),
                        "--workers",
                        workers,
                        "--splits",
                        "train",
                    ],
                    work / "ours-bin",
                ),
                "standard encode": (
                    [
                        sys.executable,
                        str(encoder_script),
                        "--encoder-json",
                        vocab_files["encoder.json"],
                        "--vocab-bpe",
                        vocab_files["vocab.bpe"],
                        "--inputs",
                        str(work / "standard.txt"),
                        "--outputs",
                        str(work / "standard.bpe"),
                        "--keep-empty",
                        "--workers",
                        workers,
                    ],
                    work / "standard.bpe",
                ),
                "standard binarize": (
                    [
                        fairseq_preprocess,
                        "--only-source",
                        "--srcdict",
                        vocab_files["dict.txt"],
                        "--trainpref",
                        str(work / "standard.bpe"),
                        "--destdir",
                        str(work / "standard-bin"),
                        "--workers",
                        workers,
                    ],
                    work / "standard-bin",
                ),
            },
            args.repeats,
        )
        our_tokens = dataset_tokens(work / "ours-bin" / "train")
        standard_tokens = dataset_tokens(work / "standard-bin" / "train")
        ours = {
            "parse": stage(parses["ours"], our_documents, our_tokens),
            "encode+binarize": stage(encodes["ours"], our_documents, our_tokens),
        }
        quarter = parses["ours, a quarter of the files"]
        standard = {
            "parse": stage(parses["standard"], standard_documents, standard_tokens),
            "encode": stage(encodes["standard encode"], standard_documents, standard_tokens),
            "binarize": stage(encodes["standard binarize"], standard_documents, standard_tokens),
        }

        ours["end_to_end"] = end_to_end(ours, our_documents, our_tokens)
        standard["end_to_end"] = end_to_end(standard, standard_documents, standard_tokens)
        ratios = cost_ratios(ours, standard, standard_tokens)
        parser_per_core = xml_parser_per_core(xml_files[:2])
        vocab = read_vocab_dir(work / "vocab").manifest["counts"]
        print(
            json.dumps(
                {
                    "input": {
                        **input_record,
                        "how": "see `scripts/benchmark_preprocess.py --help`: real citations, "
                        "copies with PMIDs shifted by copy * 1e8 and words shuffled within "
                        "each text segment and spliced at --splice-rate; no deletions, "
                        "revisions or duplicate PMIDs",
                    },
                    "workers": args.workers,
                    "cpu_count": os.cpu_count(),
                    "repeats": args.repeats,
                    "load_average_1_5_15m": {
                        "before": [round(x, 2) for x in load_before],
                        "after": [round(x, 2) for x in os.getloadavg()],
                    },
                    "vocab": {
                        "kind": "gpt2",
                        "vocab_size": args.vocab_size,
                        "bpe_units": vocab["bpe_units"],
                        "learn_seconds": round(vocab_seconds, 1),
                        "untimed": True,
                    },
                    "ours": {
                        **ours,
                        "documents": our_documents,
                        "tokens": our_tokens,
                        "documents_skipped": text_manifest["counts"]["documents_skipped"],
                    },
                    "standard": {
                        **standard,
                        "documents": standard_documents,
                        "tokens": standard_tokens,
                    },
                    RATIOS_KEY: ratios,
                    "our_parse_memory_vs_input_files": {
                        f"{len(xml_files) // 4} files": {
                            "peak_rss_mb": round(quarter["peak_rss_mb"], 1),
                            "peak_pss_mb": round(quarter["peak_pss_mb"], 1),
                        },
                        f"{len(xml_files)} files": {
                            key: ours["parse"][key] for key in ("peak_rss_mb", "peak_pss_mb")
                        },
                    },
                    "our_command_start_up_seconds": round(startup["seconds"], 2),
                    "xml_parser_alone_one_core": parser_per_core,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
