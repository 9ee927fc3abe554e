#!/usr/bin/env bash
# Shared by pretrain.sh and distill.sh: fairseq-hydra-train on CONFIG_DIR/base.yaml (+recipe),
# under torchrun when more than one process takes part.  launch_fairseq.sh CONFIG_DIR DATA SAVE RECIPE [overrides...]
# The per-GPU micro-batch and update_freq come from user_dir/batch_plan.py: on GPUs the largest
# micro-batch that fits the card, update_freq = EFFECTIVE_BATCH / (micro-batch x world size).
#   MICRO_BATCH=N              fix the micro-batch (as an override dataset.batch_size=N does)
#   CHECKPOINT_ACTIVATIONS=1   recompute each layer's activations in the backward: less memory, so
#                              a larger micro-batch fits (about a third more compute per update)
set -euo pipefail
CONFIG_DIR=$1 DATA=$2 SAVE=$3 RECIPE=$4
shift 4
REPO=$(cd "$(dirname "$0")/.." && pwd)
case $CONFIG_DIR in /*) ;; *) CONFIG_DIR=$REPO/$CONFIG_DIR ;; esac
# the project's venv when there is one (make demo / make test), else the python on PATH
PY=${PYTHON:-$( [ -x "$REPO/.venv/bin/python" ] && echo "$REPO/.venv/bin/python" || command -v python3 )}
GPUS=${GPUS:-$($PY -c 'import torch; print(torch.cuda.device_count())')}
NNODES=${NNODES:-1}
PROCS=${PROCS:-$(( GPUS > 0 ? GPUS : 1 ))}
WORLD=$(( PROCS * NNODES ))
EFFECTIVE_BATCH=${EFFECTIVE_BATCH:-8192}
[ "$RECIPE" = tiny ] && EFFECTIVE_BATCH=0  # the tiny recipe keeps its own update_freq
recipe_args=()
[ "$RECIPE" != base ] && recipe_args=("+recipe=$RECIPE")
fixed=()
[ -n "${MICRO_BATCH:-}" ] && { set -- "$@" "dataset.batch_size=$MICRO_BATCH"; fixed=(--fixed); }
for override in "$@"; do case $override in dataset.batch_size=*) fixed=(--fixed) ;; esac; done
[ "${CHECKPOINT_ACTIVATIONS:-0}" = 1 ] && set -- "$@" "+model.checkpoint_activations=true"
batch_args=()
if [ "$GPUS" -eq 0 ] && [ "$EFFECTIVE_BATCH" -eq 0 ]; then
  # on CPU with the recipe's own batch and update_freq (tiny): nothing to plan, and composing the
  # config only to read them back would cost two more starts of fairseq
  echo "world size $WORLD x the recipe's own batch and update_freq (CPU)" >&2
else
  # the composed config (overrides on the command line win); one that does not compose stops here
  # with Hydra's own message
  composed=$($PY -m user_dir.distributed_launch fairseq-hydra-train --config-dir "$CONFIG_DIR" --config-name base \
    "${recipe_args[@]}" "task.data=$DATA" "common.user_dir=$REPO/user_dir" "$@" --cfg job) \
    || { echo "launch_fairseq.sh: the config in $CONFIG_DIR does not compose with these overrides" >&2; exit 2; }
  gpu_memory=()
  [ "$GPUS" -eq 0 ] && gpu_memory=(--gpu-memory-gb 0)
  plan=$($PY -m user_dir.batch_plan --world "$WORLD" --effective-batch "$EFFECTIVE_BATCH" "${gpu_memory[@]}" \
    "${fixed[@]}" <<<"$composed") || exit 2
  read -r BATCH UPDATE_FREQ <<<"$(head -1 <<<"$plan")"
  echo "world size $WORLD x batch $BATCH x update_freq $UPDATE_FREQ = $(( WORLD * BATCH * UPDATE_FREQ )) sequences" \
    "per update (micro-batch: $(tail -1 <<<"$plan"))" >&2
  batch_args=("dataset.batch_size=$BATCH" "optimization.update_freq=[$UPDATE_FREQ]")
fi
cmd=(-m user_dir.distributed_launch fairseq-hydra-train --config-dir "$CONFIG_DIR" --config-name base
     "${recipe_args[@]}" "task.data=$DATA" "checkpoint.save_dir=$SAVE" "common.user_dir=$REPO/user_dir"
     "${batch_args[@]}")
if [ "$WORLD" -gt 1 ]; then
  exec "$(dirname "$PY")/torchrun" --nnodes "$NNODES" --node_rank "${NODE_RANK:-0}" --nproc_per_node "$PROCS" \
    --master_addr "${MASTER_ADDR:-localhost}" --master_port "${MASTER_PORT:-29500}" "${cmd[@]}" "$@"
fi
exec "$PY" "${cmd[@]}" "$@"
