#!/usr/bin/env bash
# Stage 1 for the real sources: download -> parse -> learn the vocabulary -> binarize.
# Produces the data-bin dirs the pretraining configs read: $BIN/pm (PubMed + PMC) and
# $BIN/m3 (MIMIC-III), read by fairseq as "$BIN/pm" or "$BIN/pm:$BIN/m3" (one dir per epoch).
# Every step is resumable: downloads resume and skip verified files, parsers reuse finished
# inputs, so re-running after an interruption continues where it stopped.
#
# Sizes from the paper (Lewis et al. 2020, §3) and NCBI's listings, to plan disk and time:
#   PubMed baseline    ~1,200 files, ~40 GB gzipped -> ~22M abstracts, ~27 GB text, 4.2B words
#   PMC OA (comm)      ~12 packages, ~80 GB gzipped -> ~3.4M articles, ~60 GB text, 9.6B words
#   MIMIC-III notes    NOTEEVENTS.csv, 3.9 GB (PhysioNet credentialed access: fetch it yourself)
#                      -> physician notes, ~3.3 GB text, 0.5B words
#   data-bin           ~2 bytes per token (uint16 ids for a 50k vocabulary): ~30 GB for PM, ~1.5 GB M3
set -euo pipefail

DATA=${DATA:-data}                            # everything goes under here
DOWNLOADS=${DOWNLOADS:-$DATA/downloads}
TEXT=${TEXT:-$DATA/text}
VOCAB=${VOCAB:-$DATA/vocab/bio-bpe-50k}
BIN=${BIN:-$DATA/bin}
MIMIC_CSV=${MIMIC_CSV:-$DATA/mimic/NOTEEVENTS.csv.gz}   # skipped when absent
WORKERS=${WORKERS:-$(nproc)}
VOCAB_SIZE=${VOCAB_SIZE:-50000}
# The paper learns its BPE over PubMed; ~10M lines (~1.5 GB) give a stable 50k merge table
# within ~20 GB of memory. Empty = all lines.
VOCAB_MAX_LINES=${VOCAB_MAX_LINES:-10000000}
PUBMED_LIMIT=${PUBMED_LIMIT:-}                # e.g. 5 for a trial run with the first 5 files
PMC_LIMIT=${PMC_LIMIT:-}
# A parse stops the script (exit 1) when an input or record cannot be read, listing each; 1 = accept
# such inputs (still listed on stderr and in each manifest.json). Re-running reuses what was parsed.
ALLOW_PARTIAL=${ALLOW_PARTIAL:-}

limit_args() { if [[ -n "$1" ]]; then echo "--limit $1"; fi; }
parse_args=(--workers "$WORKERS")
if [[ -n "$ALLOW_PARTIAL" ]]; then parse_args+=(--allow-partial); fi

echo "== download (resumable; md5-verified for PubMed, gzip-verified for PMC)"
# shellcheck disable=SC2046
bio-roberta download pubmed --out "$DOWNLOADS/pubmed" $(limit_args "$PUBMED_LIMIT")
# shellcheck disable=SC2046
bio-roberta download pmc --out "$DOWNLOADS/pmc" $(limit_args "$PMC_LIMIT")

echo "== parse into sentence-per-line text shards"
bio-roberta parse-pubmed "$DOWNLOADS/pubmed" --out "$TEXT/pubmed" "${parse_args[@]}"
bio-roberta parse-pmc "$DOWNLOADS/pmc" --out "$TEXT/pmc" "${parse_args[@]}"
if [[ -f "$MIMIC_CSV" ]]; then
    bio-roberta parse-mimic "$MIMIC_CSV" --out "$TEXT/mimic" "${parse_args[@]}"
else
    echo "no $MIMIC_CSV: skipping MIMIC-III (set MIMIC_CSV to the credentialed NOTEEVENTS.csv[.gz])"
fi

echo "== learn the 50k byte-level BPE over PubMed (the paper's domain vocabulary)"
vocab_args=(--kind gpt2 --vocab-size "$VOCAB_SIZE")
if [[ -n "$VOCAB_MAX_LINES" ]]; then vocab_args+=(--max-lines "$VOCAB_MAX_LINES"); fi
if [[ ! -f "$VOCAB/manifest.json" ]]; then
    bio-roberta learn-vocab "$TEXT/pubmed" --out "$VOCAB" "${vocab_args[@]}"
fi

echo "== binarize: one data-bin dir per corpus"
# PM = PubMed + PMC in one dir (train = PubMed shards then PMC shards; valid likewise).
bio-roberta binarize "$TEXT/pubmed" "$TEXT/pmc" --vocab "$VOCAB" --out "$BIN/pm" --workers "$WORKERS"
if [[ -d "$TEXT/mimic" ]]; then
    bio-roberta binarize "$TEXT/mimic" --vocab "$VOCAB" --out "$BIN/m3" --workers "$WORKERS"
fi

bio-roberta vocab-stats --vocab "$VOCAB" --text "$TEXT/pubmed" --max-lines 100000 --out "$VOCAB/stats.json"
echo "done: data-bin dirs under $BIN; pass $BIN/pm (or $BIN/pm:$BIN/m3) to fairseq-train"
