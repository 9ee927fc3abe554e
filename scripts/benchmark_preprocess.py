#!/usr/bin/env python
"""Benchmark stage 1 end to end (PubMed XML -> text -> BPE ids -> fairseq mmap) against the standard route.

Both routes run on the same input in the same run, each stage as its own process tree (start-up
included), with the same vocabulary and the same number of workers:

  ours       bio-roberta parse-pubmed --workers W --no-dedup --valid-fraction 0
             bio-roberta binarize --workers W        (encode + binarize in one pass)
  standard   pubmed_parser.parse_medline_xml over the files with a W-process pool, writing
             title + abstract, a blank line after each citation (what the paper's pipeline feeds
             the encoder; no sentence splitting, so ours does strictly more work here)
             fairseq examples/roberta/multiprocessing_bpe_encoder.py --workers W --keep-empty
             fairseq-preprocess --only-source --srcdict dict.txt --workers W

Input: the real PubMed baseline samples (default /work/shared/data/corpus/pubmed, ~30 citations
per file), replicated until the uncompressed XML reaches --size-mb: copy k of a file gets every
PMID offset by k * 10^8 so each copy is a distinct citation (deduplication is off in both routes,
so replicated text is kept), written as pubmed90nNNNN.xml.gz like the baseline.
The vocabulary (--vocab-size, default 50k byte-level BPE) is learned once on our parsed text and
is not part of the timing. Prints one JSON object: per stage and end to end, seconds,
documents/s, tokens/s and the peak RSS of the stage's process tree; the same for the standard
route; and the ratios standard / ours.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

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
            title = (record.get("title") or "").strip()
            docs.append("\n".join(part for part in (title, abstract) if part) + "\n\n")
    return docs

out, workers, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
documents = 0
with Pool(workers) as pool, open(out, "w", encoding="utf-8") as handle:
    for docs in pool.imap(parse, paths):
        documents += len(docs)
        handle.write("".join(docs))
print(documents)
"""


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (Linux /proc)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack.extend(int(child) for child in children.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def timed(command: list[str], env: dict | None = None) -> dict:
    """Run a command; its wall time, peak process-tree RSS and stdout."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **(env or {})})
    peak = 0
    done = threading.Event()

    def poll():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss_bytes(process.pid))
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    done.set()
    poller.join()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    return {"seconds": seconds, "peak_rss_mb": peak / 2**20, "stdout": stdout}


def synthesise_input(source: Path, out: Path, size_mb: float) -> dict:
    """Replicate the real PubMed files with shifted PMIDs until the XML reaches size_mb."""
    originals = sorted(source.glob("*.xml.gz"))
    if not originals:
        raise SystemExit(f"{source}: no *.xml.gz PubMed files")
    texts = [gzip.decompress(p.read_bytes()).decode("utf-8") for p in originals]
    out.mkdir(parents=True, exist_ok=True)
    written = copies = 0
    while written < size_mb * 2**20:
        for text in texts:
            shifted = re.sub(r"(<PMID[^>]*>)(\d+)(</PMID>)",
                             lambda m: f"{m.group(1)}{int(m.group(2)) + copies * 10**8}{m.group(3)}", text)
            data = shifted.encode("utf-8")
            name = f"pubmed90n{copies * len(texts) + texts.index(text) + 1:04d}.xml.gz"
            (out / name).write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
            written += len(data)
        copies += 1
    return {"source": str(source), "source_files": len(originals), "copies": copies,
            "files": copies * len(originals), "xml_mb": written / 2**20}


def dataset_tokens(prefix: Path) -> int:
    """Tokens in a fairseq mmap dataset (kept referenced: .sizes is a view of its memory map)."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    dataset = MMapIndexedDataset(str(prefix))
    return int(dataset.sizes.sum())


def stage(result: dict, documents: int, tokens: int) -> dict:
    seconds = result["seconds"]
    return {"seconds": round(seconds, 3), "documents_per_s": round(documents / seconds, 1),
            "tokens_per_s": round(tokens / seconds, 1), "peak_rss_mb": round(result["peak_rss_mb"], 1)}


def end_to_end(stages: dict, documents: int, tokens: int) -> dict:
    seconds = sum(s["seconds"] for s in stages.values())
    return {"seconds": round(seconds, 3), "documents_per_s": round(documents / seconds, 1),
            "tokens_per_s": round(tokens / seconds, 1),
            "peak_rss_mb": max(s["peak_rss_mb"] for s in stages.values())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pubmed", default="/work/shared/data/corpus/pubmed", help="real PubMed *.xml.gz to replicate")
    parser.add_argument("--size-mb", type=float, default=30.0, help="uncompressed XML to synthesise")
    parser.add_argument("--vocab-size", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-dir", help="keep the files here (default: a temporary directory)")
    args = parser.parse_args()

    import fairseq

    from preprocess.vocab import learn_vocabulary

    encoder_script = Path(fairseq.__file__).parent / "examples" / "roberta" / "multiprocessing_bpe_encoder.py"
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work_dir or tmp)
        xml_dir = work / "xml"
        input_record = synthesise_input(Path(args.pubmed), xml_dir, args.size_mb)
        xml_files = sorted(str(p) for p in xml_dir.glob("*.xml.gz"))
        workers = str(args.workers)
        env = {"TOKENIZERS_PARALLELISM": "true"}

        ours = {}
        parse = timed([str(bin_dir / "bio-roberta"), "parse-pubmed", str(xml_dir), "--out", str(work / "text"),
                       "--workers", workers, "--no-dedup", "--valid-fraction", "0"], env)
        text_manifest = json.loads((work / "text" / "manifest.json").read_text())
        our_documents = text_manifest["counts"]["documents_written"]["train"]
        vocab_started = time.perf_counter()
        learn_vocabulary("gpt2", [work / "text"], work / "vocab", vocab_size=args.vocab_size)
        vocab_seconds = time.perf_counter() - vocab_started
        binarize = timed([str(bin_dir / "bio-roberta"), "binarize", str(work / "text"), "--vocab", str(work / "vocab"),
                          "--out", str(work / "ours-bin"), "--workers", workers, "--splits", "train"], env)
        our_tokens = dataset_tokens(work / "ours-bin" / "train")
        ours["parse"] = stage(parse, our_documents, our_tokens)
        ours["encode+binarize"] = stage(binarize, our_documents, our_tokens)

        standard = {}
        parse = timed([sys.executable, "-c", STANDARD_PARSE, str(work / "standard.txt"), workers, *xml_files])
        standard_documents = int(parse["stdout"].strip())
        encode = timed([sys.executable, str(encoder_script), "--encoder-json", str(work / "vocab" / "encoder.json"),
                        "--vocab-bpe", str(work / "vocab" / "vocab.bpe"), "--inputs", str(work / "standard.txt"),
                        "--outputs", str(work / "standard.bpe"), "--keep-empty", "--workers", workers])
        preprocess = timed([str(bin_dir / "fairseq-preprocess"), "--only-source", "--srcdict",
                            str(work / "vocab" / "dict.txt"), "--trainpref", str(work / "standard.bpe"),
                            "--destdir", str(work / "standard-bin"), "--workers", workers])
        standard_tokens = dataset_tokens(work / "standard-bin" / "train")
        standard["parse"] = stage(parse, standard_documents, standard_tokens)
        standard["encode"] = stage(encode, standard_documents, standard_tokens)
        standard["binarize"] = stage(preprocess, standard_documents, standard_tokens)

        ours["end_to_end"] = end_to_end(ours, our_documents, our_tokens)
        standard["end_to_end"] = end_to_end(standard, standard_documents, standard_tokens)
        speedup = {
            "end_to_end_seconds": round(standard["end_to_end"]["seconds"] / ours["end_to_end"]["seconds"], 2),
            "end_to_end_tokens_per_s": round(ours["end_to_end"]["tokens_per_s"] / standard["end_to_end"]["tokens_per_s"], 2),
            "parse_seconds": round(standard["parse"]["seconds"] / ours["parse"]["seconds"], 2),
            "encode_and_binarize_seconds": round(
                (standard["encode"]["seconds"] + standard["binarize"]["seconds"]) / ours["encode+binarize"]["seconds"], 2),
            "peak_rss": round(standard["end_to_end"]["peak_rss_mb"] / ours["end_to_end"]["peak_rss_mb"], 2),
        }
        print(json.dumps({
            "input": {**input_record, "how": "real PubMed files replicated with PMIDs shifted by copy * 1e8"},
            "workers": args.workers, "cpu_count": os.cpu_count(),
            "vocab": {"kind": "gpt2", "vocab_size": args.vocab_size, "learn_seconds": round(vocab_seconds, 1)},
            "ours": {**ours, "documents": our_documents, "tokens": our_tokens},
            "standard": {**standard, "documents": standard_documents, "tokens": standard_tokens},
            "speedup_standard_over_ours": speedup,
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
