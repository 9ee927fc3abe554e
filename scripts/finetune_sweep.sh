#!/usr/bin/env bash
# Stage 3: fine-tune every converted task x its seeds (the registry's: 5, or 10 for BLURB's small
# tasks; SEEDS=N takes the first N of each) from a pretrained checkpoint, then the median report of
# SUITE=lewis (default) | blurb | both.
#
#   scripts/finetune_sweep.sh CHECKPOINT FINETUNE_BIN RESULTS [local|joblib|slurm] [hydra overrides...]
#
#   local   one run after another (Hydra's basic launcher)
#   joblib  N parallel local processes (JOBS=N, default 2; each needs its own GPU or CPU share)
#   slurm   one SLURM job per (task, seed) via hydra-submitit-launcher (pip install '.[slurm]');
#           PARTITION, GPUS_PER_NODE, TIMEOUT_MIN, CPUS_PER_TASK, MEM_GB tune the request, e.g.
#             PARTITION=gpu scripts/finetune_sweep.sh ckpt/checkpoint_best.pt finetune-bin results slurm
#
# Further arguments are Hydra overrides of bio_roberta/configs/finetune/sweep.yaml (hparams.lr=...);
# the architecture is the checkpoint's own unless arch=NAME is given. Re-running skips finished runs; failed runs are re-tried.
set -euo pipefail
if [[ $# -lt 3 ]]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
checkpoint=$1 data_root=$2 results=$3 launcher=${4:-local}
shift $(( $# >= 4 ? 4 : 3 ))

case $launcher in
    local) launch=() ;;
    joblib) launch=(hydra/launcher=joblib "hydra.launcher.n_jobs=${JOBS:-2}") ;;
    slurm) launch=(hydra/launcher=submitit_slurm
                   "hydra.launcher.partition=${PARTITION:?set PARTITION to a SLURM partition}"
                   "hydra.launcher.gpus_per_node=${GPUS_PER_NODE:-1}" "hydra.launcher.tasks_per_node=1"
                   "hydra.launcher.cpus_per_task=${CPUS_PER_TASK:-8}" "hydra.launcher.mem_gb=${MEM_GB:-32}"
                   "hydra.launcher.timeout_min=${TIMEOUT_MIN:-720}") ;;
    *) echo "launcher must be local, joblib or slurm, not '$launcher'" >&2; exit 2 ;;
esac

tasks=${TASKS:-$(ls "$data_root" | paste -sd, -)}  # default: every converted task
seeds=()
[[ -n "${SEEDS:-}" ]] && seeds=(--seeds "$SEEDS")
bio-roberta sweep --tasks "$tasks" "${seeds[@]}" --pretrained "$checkpoint" \
    --data-root "$data_root" --results "$results" "${launch[@]}" "$@"
expected=()
[[ -n "${SEEDS:-}" ]] && expected=(--expected-seeds "$SEEDS")
bio-roberta report "$results" --out "$results/report" --suite "${SUITE:-lewis}" "${expected[@]}"
