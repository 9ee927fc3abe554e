"""Hugging Face transformers models in and out of fairseq: import-hf (import_hf.py) reads a
transformers model dir into a fairseq checkpoint and vocabulary dir, export-hf (export_hf.py)
writes a checkpoint back as a transformers model with its tokenizer and model card. One module per
model family maps its config and weights both ways (roberta.py, bert.py, modernbert.py; what one
provides: family.py; the list: families.py); between them the weight files (model_files.py), the
tokenizers (tokenizer.py) and the exported model (weights.py)."""
