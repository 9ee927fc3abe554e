"""Pretraining's launch: the batch that fits the GPU (batch_plan) and the fairseq-hydra-train
command built from a recipe (launch)."""
