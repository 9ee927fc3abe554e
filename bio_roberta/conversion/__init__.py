"""Conversion of a task's source files into finetune-bin/<task>: the encoder of examples into
rows of ids (encoder) and the binarised directory with its manifest (finetune_bin)."""
