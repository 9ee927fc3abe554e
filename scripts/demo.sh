#!/usr/bin/env bash
# The whole pipeline on the bundled sample (sample/), at toy size on CPU, in one output dir:
#   parse PubMed / PMC / MIMIC -> learn a byte-level BPE -> binarize (PM, M3) -> pretrain a tiny
#   teacher and a tiny student -> distil the teacher into the student -> convert two tasks ->
#   fine-tune them with 3 seeds -> median report (markdown, CSV, PNG) -> Hugging Face export.
#   Training curves (loss, learning rate) go to TensorBoard logs beside each checkpoint and to
#   training-curves.png.
#
#   scripts/demo.sh [OUT]        (default: demo-out; `make demo` runs it inside the venv)
#
# The real-scale pipeline is the same commands with the real corpora and the base/large recipes
# (README.md). Every stage leaves a manifest.json, result.json or checkpoint; a stage whose output
# is complete is skipped, so running the demo again reuses what is done.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-demo-out}" && cd "${1:-demo-out}" && pwd)
SAMPLE=$REPO/sample
SEEDS=${SEEDS:-10,42,1234}
START=$SECONDS
PROGRESS_SECONDS=${PROGRESS_SECONDS:-10}  # how often a training or fine-tuning stage reports progress
FINETUNE_TASKS=(ncbi-disease chemprot)
# The training stages run on CPU (the tiny recipe sets common.cpu), so no GPU count is asked for
# (the launcher would import torch once more for it), and each process uses one intra-op thread:
# the tiny models' ops gain nothing from a second thread, while on a shared 2-core machine every
# parallel op waits for a thread another process holds. With torch's default of one thread per
# core the 128-wide teacher ran 6x slower (1.5 s per update instead of 0.25 s) whenever the
# machine was busy; the 64-wide student's ops are too small to be split, which is why it was not.
export GPUS=${GPUS:-0} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

stage() { printf '\n==> [%4ds] %s\n' $((SECONDS - START)) "$*" >&2; }
done_note() { printf '    output: %s\n' "$*" >&2; }
# The last num_updates fairseq logged in LOG (0 before the first).
updates_in() { grep -o 'num_updates[=": ]*[0-9]*' "$1" | tail -n 1 | grep -o '[0-9]*$' || echo 0; }
# While PID runs, say every PROGRESS_SECONDS how many of TOTAL UNITs are done (COUNT... prints the
# number), the time left at the rate since the first was done, and where the log is.
watch_progress() {  # watch_progress PID UNIT TOTAL LOG COUNT...
  local pid=$1 unit=$2 total=$3 log=$4 started=$SECONDS next=$SECONDS first=0 first_at=0 count eta
  shift 4
  while kill -0 "$pid" 2>/dev/null; do
    if (( SECONDS >= next )); then
      next=$((SECONDS + PROGRESS_SECONDS))
      count=$("$@")
      eta="no ETA yet"
      if (( first == 0 )); then
        first=$count first_at=$SECONDS
      elif (( count > first )); then
        eta="ETA $(( (SECONDS - first_at) * (total - count) / (count - first) )) s"
      fi
      printf '    [%4ds] %s %d/%d, %s (log: %s)\n' $((SECONDS - started)) "$unit" "$count" "$total" \
        "$eta" "$log" >&2
    fi
    sleep 1
  done
}
# Run a training stage unless an earlier demo run completed it (its save dir holds .demo-complete),
# reporting its progress in updates (of the command's optimization.max_update).
train_once() {  # train_once SAVE_DIR COMMAND...
  local save=$1 total= arg
  shift
  for arg; do case $arg in optimization.max_update=*) total=${arg#*=} ;; esac; done
  [ -n "$total" ] || { echo "demo.sh: train_once $save: no optimization.max_update=N given" >&2; exit 2; }
  if [ -f "$save/checkpoint_last.pt" ] && [ -f "$save/.demo-complete" ]; then
    echo "    reusing $save" >&2
    return
  fi
  "$@" > "$save.log" 2>&1 &
  watch_progress $! update "$total" "$save.log" updates_in "$save.log"
  wait $! || { tail -n 30 "$save.log" >&2; exit 1; }
  touch "$save/.demo-complete"
}

stage "1/9 parse the corpora (PubMed baseline + update files, PMC .nxml + .tar.gz, MIMIC-III notes)"
bio-roberta parse-pubmed "$SAMPLE/corpus/pubmed" --out "$OUT/text/pubmed" --valid-fraction 0.2
bio-roberta parse-pmc "$SAMPLE/corpus/pmc" --out "$OUT/text/pmc" --valid-fraction 0.2
bio-roberta parse-mimic "$SAMPLE/corpus/mimic/NOTEEVENTS.csv" --out "$OUT/text/mimic" \
  --all-categories --placeholders type --valid-fraction 0.2
done_note "$OUT/text/{pubmed,pmc,mimic}"

stage "2/9 learn a byte-level BPE vocabulary over PubMed + PMC"
[ -f "$OUT/vocab/manifest.json" ] || \
  bio-roberta learn-vocab "$OUT/text/pubmed" "$OUT/text/pmc" --out "$OUT/vocab" --vocab-size 1500 --min-frequency 2
bio-roberta vocab-stats --vocab "$OUT/vocab" --ner "ncbi-disease=$SAMPLE/tasks/ncbi-disease" --text "$OUT/text/pmc" \
  --out "$OUT/vocab-stats.json"
done_note "$OUT/vocab"

stage "3/9 binarize: PM (PubMed + PMC) and M3 (MIMIC-III)"
[ -f "$OUT/data-bin/pm/manifest.json" ] || \
  bio-roberta binarize "$OUT/text/pubmed" "$OUT/text/pmc" --vocab "$OUT/vocab" --out "$OUT/data-bin/pm" --workers 2
[ -f "$OUT/data-bin/m3/manifest.json" ] || \
  bio-roberta binarize "$OUT/text/mimic" --vocab "$OUT/vocab" --out "$OUT/data-bin/m3" --workers 2
done_note "$OUT/data-bin/{pm,m3}"

DATA="$OUT/data-bin/pm:$OUT/data-bin/m3"
# demo shape: 128-token blocks; the sample is a few hundred sentences, so validate and save every
# 50 updates rather than at each (3-update) epoch
SHAPE=(task.tokens_per_sample=128 model.max_positions=128 dataset.batch_size=16
       dataset.validate_interval=50 checkpoint.save_interval=50)
stage "4/9 pretrain a tiny teacher (128 wide) on PM+M3 with the paper's recipe at toy size"
mkdir -p "$OUT/checkpoints/teacher"
train_once "$OUT/checkpoints/teacher" "$REPO/scripts/pretrain.sh" "$DATA" "$OUT/checkpoints/teacher" tiny \
  "${SHAPE[@]}" optimization.max_update=300 +model.encoder_embed_dim=128 +model.encoder_ffn_embed_dim=256 \
  +model.encoder_attention_heads=4
done_note "$OUT/checkpoints/teacher/checkpoint_last.pt"

stage "5/9 pretrain a tiny student (64 wide) the same way"
mkdir -p "$OUT/checkpoints/student"
train_once "$OUT/checkpoints/student" "$REPO/scripts/pretrain.sh" "$DATA" "$OUT/checkpoints/student" tiny \
  "${SHAPE[@]}" optimization.max_update=200
done_note "$OUT/checkpoints/student/checkpoint_last.pt"

stage "6/9 distil the teacher into the student (MLM + KL at T=2 + cosine alignment through a 64->128 projection)"
mkdir -p "$OUT/checkpoints/distilled"
train_once "$OUT/checkpoints/distilled" "$REPO/scripts/distill.sh" "$DATA" "$OUT/checkpoints/distilled" \
  "$OUT/checkpoints/teacher/checkpoint_last.pt" "$OUT/checkpoints/student/checkpoint_last.pt" tiny \
  "${SHAPE[@]}" criterion.alpha_cos=1.0 optimization.max_update=100 \
  model.encoder_embed_dim=64 model.encoder_ffn_embed_dim=128
bio-roberta curves "$OUT/checkpoints/teacher" "$OUT/checkpoints/student" "$OUT/checkpoints/distilled" \
  --out "$OUT/training-curves.png"
done_note "$OUT/checkpoints/distilled/checkpoint_last.pt; loss and learning rate against updates of the" \
  "three runs: $OUT/training-curves.png (from the TensorBoard logs in checkpoints/*/tensorboard)"

stage "7/9 convert two tasks (NCBI-disease NER, ChemProt relations) with the model's vocabulary"
for task in "${FINETUNE_TASKS[@]}"; do
  [ -f "$OUT/finetune-bin/$task/manifest.json" ] || \
    bio-roberta convert-task "$task" --data "$SAMPLE/tasks/$task" --vocab "$OUT/vocab" \
      --out "$OUT/finetune-bin/$task" --max-positions 128
done
done_note "$OUT/finetune-bin/{ncbi-disease,chemprot}"

stage "8/9 fine-tune both tasks with seeds $SEEDS (Hydra multirun, 2 local processes)"
seed_count=$(tr ',' '\n' <<<"$SEEDS" | wc -l)
# the sweep shows each run starting, its progress and its end itself (one counter, not two)
bio-roberta sweep --tasks "$(IFS=,; echo "${FINETUNE_TASKS[*]}")" --seed-list "$SEEDS" \
  --pretrained "$OUT/checkpoints/distilled/checkpoint_last.pt" \
  --data-root "$OUT/finetune-bin" --results "$OUT/results" \
  hparams.lr=1e-3 hparams.batch_size=8 hparams.max_epoch=30 hparams.validate_interval_updates=16 hparams.patience=null \
  hydra/launcher=joblib hydra.launcher.n_jobs=2
bio-roberta report "$OUT/results" --out "$OUT/report" --expected-seeds "$seed_count"
done_note "$OUT/report/report.md, $OUT/report/report.csv, $OUT/report/scores.png," \
  "$OUT/report/training_curves.png"

stage "9/9 export the distilled model and a fine-tuned NER model to Hugging Face transformers"
# Both models were trained on M3, which parse-mimic's manifest records, so export-hf asks for a
# memorisation audit of each (docs/audit.md). The sample's notes are our own synthetic ones, not
# MIMIC-III's: the demo exports without an audit, and each model card's first line says so.
bio-roberta export-hf "$OUT/checkpoints/distilled/checkpoint_last.pt" "$OUT/hf/distilled" --vocab "$OUT/vocab" \
  --allow-unaudited
# under the run dir of the demo's setting (results/<task>/<setting>/seed<seed>: its hparams differ
# from the registry's)
ner_best=$(find "$OUT/results/ncbi-disease" -path '*/checkpoints/checkpoint_best.pt' | sort | head -n 1)
bio-roberta export-hf "$ner_best" "$OUT/hf/ncbi-disease" --vocab "$OUT/vocab" --allow-unaudited
done_note "$OUT/hf/{distilled,ncbi-disease}"

stage "done in $((SECONDS - START)) s; everything is under $OUT"
cat "$OUT/report/report.md"
