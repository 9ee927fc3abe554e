"""The BLURB score recomputed from Table 6's per-dataset results, and its partial form."""

import pytest

from bio_roberta.blurb.score import blurb_score, mean_over_runs, table6_results
from bio_roberta.blurb.split_check import NO_CHECK, split_gap
from bio_roberta.blurb.suite import (
    BLURB,
    BLURB_DATASETS,
    NER,
    QUESTION_ANSWERING,
    SENTENCE_SIMILARITY,
    TABLE6_BLURB_SCORES,
    TASK_TYPES,
    metric_gap,
)
from bio_roberta.tasks.registry import TASKS


@pytest.mark.parametrize("column", TABLE6_BLURB_SCORES)
def test_blurb_score_of_table6_equals_the_printed_score(column):
    """Each of Table 6's nine BLURB scores (PubMedBERT 81.10, BioBERT 80.29, ...), from its 13
    per-dataset results."""
    score = blurb_score(table6_results(column))
    assert not score.partial
    assert round(score.score, 2) == TABLE6_BLURB_SCORES[column]


def test_table6_pubmedbert_type_averages_by_hand():
    score = blurb_score(table6_results("PubMedBERT"))
    assert score.type_averages[NER] == pytest.approx((93.33 + 85.62 + 87.82 + 84.52 + 80.06) / 5)
    assert score.type_averages[QUESTION_ANSWERING] == pytest.approx((55.84 + 87.56) / 2)
    assert score.type_averages[SENTENCE_SIMILARITY] == 92.30
    assert list(score.type_averages) == list(TASK_TYPES)


def test_the_plain_average_of_datasets_is_not_the_blurb_score():
    """The score weighs task types equally, not datasets: NER's five count as one type."""
    results = table6_results("PubMedBERT")
    plain = sum(results.values()) / len(results)
    assert round(plain, 2) != TABLE6_BLURB_SCORES["PubMedBERT"]


def test_a_partial_score_averages_the_types_present_and_names_what_is_missing():
    results = {
        name: value
        for name, value in table6_results("PubMedBERT").items()
        if name not in ("hoc-blurb", "chemprot-blurb", "ddi", "bioasq")
    }
    score = blurb_score(results)
    assert score.partial
    assert score.missing == ("chemprot-blurb", "ddi", "hoc-blurb", "bioasq")
    assert set(score.type_averages) == set(TASK_TYPES) - {"Document Classification"}
    assert score.type_averages["Relation Extraction"] == 82.34  # GAD alone
    assert score.score == pytest.approx(sum(score.type_averages.values()) / 5)
    one = blurb_score({"biosses": 0.9})
    assert one.score == 0.9 and len(one.missing) == 12


def test_blurb_score_refuses_unknown_datasets_and_no_results():
    with pytest.raises(ValueError, match="not BLURB datasets: mednli"):
        blurb_score({"mednli": 80.0, "biosses": 90.0})
    with pytest.raises(ValueError, match="no results"):
        blurb_score({})
    with pytest.raises(ValueError, match="'BioMed-RoBERTa' is not a column of Gu et al.'s Table 6"):
        table6_results("BioMed-RoBERTa")


def test_mean_over_runs():
    assert mean_over_runs([0.5, 0.7, 0.9]) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="no runs"):
        mean_over_runs([])


def test_every_blurb_dataset_is_a_registry_task():
    """All 13 datasets are registry tasks; the new ones have no Lewis et al. numbers. GAD's row
    is BLURB's single split, not Lewis et al.'s cross-validated gad; ChemProt's and HoC's are
    BLURB's tasks (its metric), not Lewis et al.'s."""
    assert {d.task for d in BLURB_DATASETS} <= set(TASKS)
    new = {"biosses", "pubmedqa", "bioasq", "ebm-pico", "gad-blurb", "chemprot-blurb", "hoc-blurb"}
    assert {d.task for d in BLURB_DATASETS if not TASKS[d.task].paper} == new
    assert BLURB["gad-blurb"].display == "GAD" and "gad" not in BLURB
    assert not TASKS["gad-blurb"].folds and TASKS["gad"].folds


def test_split_and_metric_gaps():
    """A manifest's check decides; without one the split is unknown, never BLURB's (issue 21: a
    JNLPBA run without a manifest was "fine")."""
    for dataset in BLURB_DATASETS:
        assert split_gap(dataset).startswith("split unchecked: no data manifest")
        assert split_gap(dataset, NO_CHECK) == split_gap(dataset)
    assert split_gap(BLURB["hoc-blurb"], None) is None and split_gap(BLURB["biosses"], "x") == "x"
    assert metric_gap(BLURB["gad-blurb"], "binary_f1") is None
    assert metric_gap(BLURB["gad-blurb"], "micro_f1") is None
    assert metric_gap(BLURB["chemprot-blurb"], "macro_f1") == (
        "scored by macro_f1 here, by micro_f1 in BLURB"
    )
    assert {d.task for d in BLURB_DATASETS if metric_gap(d, TASKS[d.task].metric)} == set()
