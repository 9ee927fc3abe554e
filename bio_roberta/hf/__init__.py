"""Hugging Face transformers models in and out of fairseq: import-hf (import_hf.py) reads a
transformers model dir into a fairseq checkpoint and vocabulary dir, export-hf (export_hf.py)
writes a checkpoint back as a transformers model with its tokenizer and model card; the model
families' mappings (families.py, modernbert.py), the weight files (model_files.py), the
tokenizers (tokenizer.py) and the weights of export (weights.py) between them."""
