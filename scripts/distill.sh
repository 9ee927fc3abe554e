#!/usr/bin/env bash
# Distil the large model into the base model (configs/distill/base.yaml, paper §7):
# `bio-roberta distill` (see its --help) with the recipe as fifth argument.
#
#   scripts/distill.sh DATA_BIN SAVE_DIR TEACHER_CKPT STUDENT_CKPT [RECIPE] [overrides...]
#     base  = "distill" (5·MLM + 2·T²·KL, T=2); align = "distill + align" (+ 1·cosine)
#     student6, student4: the student built from the teacher's layers; STUDENT_CKPT is then "-"
# The baseline: scripts/pretrain.sh DATA_BIN SAVE_DIR train_longer checkpoint.finetune_from_model=STUDENT_CKPT
# Launch on several GPUs / nodes / SLURM exactly as in scripts/pretrain.sh (GPUS, NNODES, ...).
student=("$4")
[ "$4" = - ] && student=()
exec bio-roberta distill --recipe "${5:-base}" "${@:1:3}" "${student[@]}" "${@:6}"
