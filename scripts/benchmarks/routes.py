"""The --mfu routes: our plugin or not, precision, encoder implementation (our task's option) and
fairseq-train flags added last (the levers of docs/pretrain.md, "Speed")."""

# compiled layers (what auto means on a GPU), the LM head's loss 4,096 masked rows at a time (~9,800
# at 128 x 512), fairseq's Adam with torch's fused step
LEVERS = ["--lm-loss-chunk-rows", "4096", "--optimizer", "fused_adam"]

ROUTES = {
    "ours_bf16": {"ours": True, "precision": "bf16", "encoder": "auto"},
    "ours_bf16_levers": {"ours": True, "precision": "bf16", "encoder": "compiled", "flags": LEVERS},
    "ours_bf16_levers_cuda_graphs": {
        "ours": True,
        "precision": "bf16",
        "encoder": "compiled",
        "flags": [*LEVERS, "--encoder-cuda-graphs"],
    },
    "ours_bf16_levers_fp8": {
        "ours": True,
        "precision": "bf16",
        "encoder": "compiled",
        "flags": [*LEVERS, "--float8-training"],
    },
    "ours_bf16_fairseq_encoder": {"ours": True, "precision": "bf16", "encoder": "fairseq"},
    "ours_fp16": {"ours": True, "precision": "fp16", "encoder": "auto"},
    "fairseq_fp16": {"ours": False, "precision": "fp16"},
    "fairseq_bf16": {"ours": False, "precision": "bf16"},
    "transformers_bf16": {},
}


def cannot_run_here(route: str, cpu: bool) -> str | None:
    """Why ROUTE cannot run on this machine (on the CPU, or without torchao), else None."""
    import importlib.util

    spec = ROUTES[route]
    if cpu and spec.get("precision") == "fp16":
        return "fairseq's fp16 optimizer needs CUDA"
    if cpu and "--encoder-cuda-graphs" in spec.get("flags", ()):
        return "CUDA graphs need CUDA"
    if "--float8-training" in spec.get("flags", ()) and not importlib.util.find_spec("torchao"):
        return "float8_training needs torchao, not installed here"
    return None
