"""BLURB (Gu et al. 2021, "Domain-Specific Language Model Pretraining for Biomedical Natural
Language Processing", Tables 3 and 6) beside Lewis et al.'s 18 tasks: what is BLURB's own.

suite     the 13 datasets as data: task types and metrics (Table 3), split sizes, Table 6's
          nine columns, where each split comes from and whether our files rebuild it
score     the BLURB score
ids       BLURB's id lists per split, where public files give them, with their source

Its tasks are registry entries (bio_roberta/tasks/registry.py), their readers files of
bio_roberta/readers/formats/, their kinds rows of bio_roberta/tasks/kinds.py, their metrics rows of
bio_roberta_core/metrics.py; docs/blurb.md says how a sweep and the report run the suite.
"""
