#!/usr/bin/env bash
# Pretrain a RoBERTa on a data-bin with the paper's recipe (configs/pretrain/base.yaml):
# `bio-roberta pretrain` (see its --help) with the recipe as third argument.
#
#   scripts/pretrain.sh DATA_BIN SAVE_DIR [RECIPE] [hydra overrides...]
#     RECIPE: base (default) | large | continue_roberta | train_longer | tiny
#             | modernbert | modernbert_long | continue_modernbert | modernbert_tiny
#   e.g. scripts/pretrain.sh data-bin/pm:data-bin/m3 ckpt/pm-m3 base task.corpus_sampling_ratios=0.9,0.1
#        scripts/pretrain.sh data-bin/pm ckpt/pm-wwm base task.mask_whole_words=true task.bpe_dir=vocab/pm
#
# The effective batch is the recipe's (8,192 sequences for the paper's, 4,608 for modernbert) =
# batch_size x update_freq x world size; update_freq is computed from the world size at hand
# (EFFECTIVE_BATCH overrides the recipe's), the per-GPU micro-batch
# from the GPU's memory (MICRO_BATCH=N fixes it; CHECKPOINT_ACTIVATIONS=1 makes room for more).
#
# Launch, one node (GPUS = local GPUs; data parallel over NCCL):
#   GPUS=8 scripts/pretrain.sh ...           -> torchrun --nproc_per_node 8 ...
# Several nodes with torchrun (run on every node, same MASTER_ADDR):
#   NNODES=4 NODE_RANK=$i MASTER_ADDR=host0 GPUS=8 scripts/pretrain.sh ...
# SLURM (one task per node; torchrun starts the per-GPU processes):
#   #SBATCH --nodes=4 --ntasks-per-node=1 --gpus-per-node=8
#   srun bash -c 'NNODES=$SLURM_NNODES NODE_RANK=$SLURM_NODEID \
#        MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -1) GPUS=8 \
#        scripts/pretrain.sh DATA_BIN SAVE_DIR'
# CPU (gloo), e.g. to check synchronisation: GPUS=0 PROCS=2 scripts/pretrain.sh DATA SAVE tiny
# The plan and the command line without starting anything: scripts/pretrain.sh DATA SAVE base --dry-run
exec bio-roberta pretrain --recipe "${3:-base}" "${@:1:2}" "${@:4}"
