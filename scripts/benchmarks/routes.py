"""The --mfu routes: our plugin or not, precision, encoder implementation (our task's option)."""

ROUTES = {
    "ours_bf16": {"ours": True, "precision": "bf16", "encoder": "auto"},
    "ours_bf16_fairseq_encoder": {"ours": True, "precision": "bf16", "encoder": "fairseq"},
    "ours_fp16": {"ours": True, "precision": "fp16", "encoder": "auto"},
    "fairseq_fp16": {"ours": False, "precision": "fp16"},
    "fairseq_bf16": {"ours": False, "precision": "bf16"},
    "transformers_bf16": {},
}
