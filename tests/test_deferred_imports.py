"""Importing the plugin imports fairseq without scikit-learn and SciPy
(bio_roberta_core/deferred_imports.py), and fairseq's names from them still give the real
functions' results once used."""

import subprocess
import sys

from conftest import REPO_ROOT

CHECK = """
import sys
import user_dir  # imports all of fairseq
deferred = ("sklearn", "sklearn.metrics", "scipy", "scipy.stats")
loaded = sorted(m for m in deferred if m in sys.modules)
assert loaded == [], loaded
from fairseq.criterions import sentence_prediction
from fairseq.tasks import audio_classification
assert repr(sentence_prediction.f1_score) == "<deferred sklearn.metrics.f1_score>"
from sklearn.metrics import f1_score, roc_auc_score
from scipy.stats import pearsonr
import sklearn
assert type(sklearn).__name__ == "module" and sklearn.__version__
assert sentence_prediction.f1_score([0, 1, 1], [0, 1, 0]) == f1_score([0, 1, 1], [0, 1, 0])
assert sentence_prediction.pearsonr([1, 2, 3], [1, 2, 4])[0] == pearsonr([1, 2, 3], [1, 2, 4])[0]
scores = audio_classification.sklearn_metrics.roc_auc_score([0, 1, 1], [0.2, 0.9, 0.1])
assert scores == roc_auc_score([0, 1, 1], [0.2, 0.9, 0.1])
print("ok")
"""


def test_fairseq_is_imported_without_scipy_and_its_names_from_it_still_work():
    run = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
