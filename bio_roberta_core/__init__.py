"""What every other package of bio-roberta builds on, and which imports none of them: provenance
and atomic files, the checkpoint loading policy, the task metrics, the tagging schemes and the base
of the errors a user can act on.

preprocess/ and user_dir/ import it and not each other; bio_roberta/ is on top of all three
(scripts/import_graph.py prints the graph; tests/test_import_graph.py keeps it one-way).
"""
