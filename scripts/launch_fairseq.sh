#!/usr/bin/env bash
# Shared by pretrain.sh and distill.sh: fairseq-hydra-train on CONFIG_DIR/base.yaml (+recipe),
# with update_freq = EFFECTIVE_BATCH / (batch_size x world size), under torchrun when more than
# one process takes part.  launch_fairseq.sh CONFIG_DIR DATA SAVE RECIPE [overrides...]
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
recipe_args=()
[ "$RECIPE" != base ] && recipe_args=("+recipe=$RECIPE")
# batch size per process as the composed config sets it (overrides on the command line win);
# a config that does not compose stops here with Hydra's own message
composed=$($PY -m user_dir.distributed_launch fairseq-hydra-train --config-dir "$CONFIG_DIR" --config-name base \
  "${recipe_args[@]}" "task.data=$DATA" "common.user_dir=$REPO/user_dir" "$@" --cfg job) \
  || { echo "launch_fairseq.sh: the config in $CONFIG_DIR does not compose with these overrides" >&2; exit 2; }
BATCH=$(awk '/^dataset:/{d=1} d && /^  batch_size:/ && !found {print $2; found=1}' <<<"$composed")
UPDATE_FREQ=$(( (EFFECTIVE_BATCH + BATCH * WORLD - 1) / (BATCH * WORLD) ))
[ "$RECIPE" = tiny ] && UPDATE_FREQ=1
echo "world size $WORLD x batch $BATCH x update_freq $UPDATE_FREQ = $(( WORLD * BATCH * UPDATE_FREQ )) sequences per update" >&2
cmd=(-m user_dir.distributed_launch fairseq-hydra-train --config-dir "$CONFIG_DIR" --config-name base
     "${recipe_args[@]}" "task.data=$DATA" "checkpoint.save_dir=$SAVE" "common.user_dir=$REPO/user_dir"
     "optimization.update_freq=[$UPDATE_FREQ]")
if [ "$WORLD" -gt 1 ]; then
  exec "$(dirname "$PY")/torchrun" --nnodes "$NNODES" --node_rank "${NODE_RANK:-0}" --nproc_per_node "$PROCS" \
    --master_addr "${MASTER_ADDR:-localhost}" --master_port "${MASTER_PORT:-29500}" "${cmd[@]}" "$@"
fi
exec "$PY" "${cmd[@]}" "$@"
