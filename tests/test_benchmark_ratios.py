"""The benchmarks compare like with like and name their ratios as they are computed:
benchmark_preprocess's ratios are standard's cost over ours, each of them (on main at 6bfaaea the
JSON called them ``ratios_ours_over_standard``, and its rates were ours over standard)."""

import sys

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import benchmark_preprocess  # noqa: E402
from benchmarks import preprocess_costs  # noqa: E402


def stages(scale: float, documents: int, tokens: int) -> dict:
    """A route's stages as benchmark_preprocess reports them, each costing `scale` times a unit:
    ours in two stages (parse, encode+binarize), the standard route in three."""

    def result(seconds):
        return {
            "seconds": seconds * scale,
            "runs_seconds": [seconds * scale],
            "cpu_seconds": 2 * seconds * scale,
            "peak_rss_mb": 100 * scale,
            "peak_pss_mb": 80 * scale,
            "load_average_1m": [0.5],
        }

    ours = scale == 1
    names = ("parse", "encode+binarize") if ours else ("parse", "encode", "binarize")
    found = {
        name: preprocess_costs.stage(result(seconds), documents, tokens)
        for name, seconds in zip(names, (4.0, 3.0) if ours else (4.0, 1.0, 2.0))
    }
    found["end_to_end"] = preprocess_costs.end_to_end(found, documents, tokens)
    return found


def test_preprocess_ratios_are_standard_s_cost_over_ours_every_one():
    """The standard route costing 3x ours in seconds, CPU seconds and memory, on the same
    documents and tokens: every ratio is 3, rates included (as seconds per document or token),
    under a key that says so."""
    ours, standard = stages(1, 1000, 50_000), stages(3, 1000, 50_000)
    ratios = preprocess_costs.cost_ratios(ours, standard, 50_000)
    assert ratios == pytest.approx(dict.fromkeys(ratios, 3.0), abs=0.01)
    assert {"end_to_end_seconds_per_document", "encode_and_binarize_seconds_per_token"} < set(
        ratios
    )
    # ours costing more: every ratio below 1
    ours, standard = stages(1, 1000, 50_000), stages(0.5, 1000, 50_000)
    slower = preprocess_costs.cost_ratios(ours, standard, 50_000)
    assert all(value == pytest.approx(0.5, abs=0.01) for value in slower.values())
    assert benchmark_preprocess.RATIOS_KEY == "ratios_standard_over_ours"
