#!/usr/bin/env bash
# Distil the large model into the base model (configs/distill/base.yaml, paper §7).
#
#   scripts/distill.sh DATA_BIN SAVE_DIR TEACHER_CKPT STUDENT_CKPT [base|align|tiny] [overrides...]
#     base  = "distill" (5·MLM + 2·T²·KL, T=2); align = "distill + align" (+ 1·cosine)
# The baseline: scripts/pretrain.sh DATA_BIN SAVE_DIR train_longer checkpoint.finetune_from_model=STUDENT_CKPT
# Launch on several GPUs / nodes / SLURM exactly as in scripts/pretrain.sh (GPUS, NNODES, ...).
set -euo pipefail
usage="usage: scripts/distill.sh DATA_BIN SAVE_DIR TEACHER_CKPT STUDENT_CKPT [base|align|tiny] [overrides...]"
DATA=${1:?$usage}; SAVE=${2:?$usage}; TEACHER=${3:?$usage}; STUDENT=${4:?$usage}; RECIPE=${5:-base}
shift $(( $# < 5 ? $# : 5 ))
exec "$(dirname "$0")/launch_fairseq.sh" configs/distill "$DATA" "$SAVE" "$RECIPE" \
  "task.teacher_path=$TEACHER" "checkpoint.finetune_from_model=$STUDENT" "$@"
