"""The packages import one way: bio_roberta_core imports none of ours, preprocess and user_dir
import it and not each other, bio_roberta is on top; inside it, the task declarations, their
readers, BLURB's suite, the report, the conversion and pretraining's launch, prediction, the BLURB
run (tasks/ never imports blurb/, blurb/ never the report, prediction never the BLURB run); no two
modules import each other (scripts/import_graph.py prints the graph)."""

import importlib.util

from conftest import REPO_ROOT

spec = importlib.util.spec_from_file_location(
    "import_graph", REPO_ROOT / "scripts" / "import_graph.py"
)
import_graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_graph)


def test_no_package_imports_upward_or_sideways():
    edges = import_graph.package_edges(REPO_ROOT)
    assert import_graph.layering_violations(edges) == [], {
        pair: dict(edges[pair]) for pair in edges
    }
    assert not [pair for pair in edges if pair[0] == "bio_roberta_core"]


def test_no_subpackage_of_bio_roberta_imports_upward_or_sideways():
    layers = import_graph.SUBPACKAGE_LAYERS
    edges = import_graph.package_edges(REPO_ROOT, layers)
    assert import_graph.layering_violations(edges, layers) == [], {
        pair: dict(edges[pair]) for pair in edges
    }
    assert not [pair for pair in edges if pair[0] == "bio_roberta.tasks"]


def test_no_modules_import_each_other():
    assert import_graph.module_cycles(REPO_ROOT) == []


def test_the_checks_find_what_they_forbid_anywhere_in_a_module(tmp_path):
    for path, source in {
        "bio_roberta_core/sub/a.py": "def load():\n    from bio_roberta.tasks import registry\n",
        "preprocess/a.py": "from user_dir import batch_plan\nfrom . import b\n",
        "preprocess/b.py": "def later():\n    from preprocess.a import x\n",
        "user_dir/a.py": "import bio_roberta_core.metrics\n",
        "bio_roberta/tasks/registry.py": "from preprocess.vocab import read_vocab_dir\n",
        "bio_roberta/tasks/convert.py": "def check():\n    from bio_roberta.blurb import suite\n",
        "bio_roberta/blurb/suite.py": "from bio_roberta.readers.source_files import TaskData\n",
        "bio_roberta/report/blurb.py": "from bio_roberta.blurb.suite import BLURB\n",
        "bio_roberta/blurb/leaderboard.py": "from bio_roberta.report.blurb import blurb_rows\n",
        "bio_roberta/prediction/predictions.py": "from bio_roberta.blurb_run import submission\n",
        "bio_roberta/blurb_run/run.py": "from bio_roberta.conversion.finetune_bin import x\n",
        "bio_roberta/conversion/finetune_bin.py": "from bio_roberta.pretraining import launch\n",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source)
    edges = import_graph.package_edges(tmp_path)
    assert import_graph.layering_violations(edges) == [
        ("bio_roberta_core", "bio_roberta"),
        ("preprocess", "user_dir"),
    ]
    assert dict(edges["bio_roberta_core", "bio_roberta"]) == {
        "bio_roberta_core.sub.a": {"bio_roberta.tasks.registry"}
    }
    layers = import_graph.SUBPACKAGE_LAYERS
    inner = import_graph.package_edges(tmp_path, layers)
    assert import_graph.layering_violations(inner, layers) == [
        ("bio_roberta.blurb", "bio_roberta.report"),
        ("bio_roberta.conversion", "bio_roberta.pretraining"),
        ("bio_roberta.prediction", "bio_roberta.blurb_run"),
        ("bio_roberta.tasks", "bio_roberta.blurb"),
    ]
    assert sorted(inner) == [
        ("bio_roberta.blurb", "bio_roberta.readers"),
        ("bio_roberta.blurb", "bio_roberta.report"),
        ("bio_roberta.blurb_run", "bio_roberta.conversion"),
        ("bio_roberta.conversion", "bio_roberta.pretraining"),
        ("bio_roberta.prediction", "bio_roberta.blurb_run"),
        ("bio_roberta.report", "bio_roberta.blurb"),
        ("bio_roberta.tasks", "bio_roberta.blurb"),
    ]
    assert import_graph.module_cycles(tmp_path) == [["preprocess.a", "preprocess.b"]]
