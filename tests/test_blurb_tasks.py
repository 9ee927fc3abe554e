"""The four new tasks' entries hang together with the readers, scorers and suite; QA truncation."""

import random

import pytest

from bio_roberta.blurb.suite import BLURB
from bio_roberta.readers import READERS, read_task
from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta.tasks.spec import BLURB_EPOCHS, BLURB_GRID, DEFAULT_SEEDS, TEN_SEEDS
from bio_roberta.tasks.truncation import truncate_context
from bio_roberta_core.metrics import METRICS
from conftest import shared_data_path

NEW_TASKS = ("biosses", "pubmedqa", "bioasq", "ebm-pico")


@pytest.mark.parametrize("name", NEW_TASKS)
def test_new_task_entries_name_a_reader_a_scorer_and_blurbs_row(name):
    spec = get_task(name)
    assert spec.source_format in READERS and spec.paper == {}
    assert spec.metric == BLURB[name].metric and spec.metric in METRICS
    assert spec.display == BLURB[name].display
    hp = spec.hparams
    assert hp.lr in BLURB_GRID["lr"] and hp.batch_size in BLURB_GRID["batch_size"]
    assert BLURB_EPOCHS[0] <= hp.max_epoch <= BLURB_EPOCHS[1]
    assert hp.warmup_ratio == 0.1 and hp.dropout == 0.1


def test_ten_seeds_for_the_small_tasks():
    """Table 6 averages ten runs for BIOSSES, BioASQ and PubMedQA (Gu et al. §6.2)."""
    assert len(set(TEN_SEEDS)) == 10 and TEN_SEEDS[:5] == DEFAULT_SEEDS
    ten = {name for name, spec in TASKS.items() if spec.seeds == TEN_SEEDS}
    assert ten == {"biosses", "pubmedqa", "bioasq"}


@pytest.mark.real_data
@pytest.mark.parametrize("name", ["biosses", "pubmedqa"])
def test_new_tasks_read_from_their_shared_data_folder(name):
    spec = get_task(name)
    data = read_task(spec, shared_data_path(*spec.shared_data.split("/")))
    sizes = tuple(len(data.splits[s].examples) for s in ("train", "valid", "test"))
    assert sizes == BLURB[name].split_sizes


def test_truncate_context_keeps_the_question_and_the_start_of_the_context():
    rng = random.Random(0)
    for _ in range(500):
        question = [rng.randrange(100) for _ in range(rng.randint(1, 30))]
        context = [rng.randrange(100) for _ in range(rng.randint(0, 300))]
        budget = rng.randint(len(question) + 1, 350)
        kept_question, kept_context = truncate_context(question, context, budget, "q")
        assert kept_question == question
        assert kept_context == context[: len(kept_context)]
        assert len(kept_question) + len(kept_context) == min(budget, len(question) + len(context))


def test_truncate_context_refuses_a_question_without_room_for_context():
    with pytest.raises(
        ValueError, match="PMID 1: the question alone has 8 tokens, the budget is 8"
    ):
        truncate_context(list(range(8)), [1, 2], 8, "PMID 1")
