"""What scripts/benchmark_train.py, benchmark_encoder.py, benchmark_finetune.py and
benchmark_preprocess.py measure with, one module each:

    flops.py               the model-FLOPs count per token and the GPUs' dense bf16 peaks (MFU)
    cpu_shape.py           the CPU comparison's model and batch
    synthetic_data.py      random token lines in fairseq's mmap format, no corpus needed
    memory.py              peak RSS / peak GPU memory of a measurement's process
    fairseq_route.py       fairseq-train in this process (ours or stock), its tokens/s
    transformers_route.py  Hugging Face RobertaForMaskedLM with the same batch and accumulation
    distillation.py        a distillation step against student step + teacher forward
    encoder.py             the encoder alone: fairseq's, fused and compiled implementations
    routes.py              the --mfu routes (plugin or not, precision, encoder implementation)
    measure.py             one measurement in its own process (benchmark_train.py --measure)
    at_scale.py            --mfu: every route at each micro-batch, with model-FLOPs utilisation
    cpu_comparison.py      the default: ours against stock fairseq and transformers on the CPU
    finetune_trainer.py    scripts/benchmark_finetune.py's peer: one transformers Trainer run
    finetune_runs.py       benchmark_finetune.py's run timings, loop pace, medians and ratios
    preprocess_costs.py    benchmark_preprocess.py's stage costs and ratios standard / ours

The architectures' shapes come from fairseq's registry (user_dir/architectures.py).
"""
