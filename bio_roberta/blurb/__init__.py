"""BLURB (Gu et al. 2021, ../shared/papers/gu2021_pubmedbert_blurb.txt) beside the paper's 18 tasks.

suite     the 13 datasets as data: task types and metrics (Table 3), split sizes, Table 6's
          PubMedBERT and BioBERT columns, where each split comes from
tasks     registry entries of the 4 new tasks (BIOSSES, PubMedQA, BioASQ, EBM-PICO)
readers   their readers, and BLURB's single GAD split
metrics   Pearson, PICO word-level F1, BLURB's HoC micro-F1, one scorer per BLURB metric
score     the BLURB score
encoding  how a question + context pair is cut to the model's positions

DESIGN.md (beside this file) is the plan for folding these into the registry's tables.
"""
