"""Registry entries of BLURB's four new tasks, in the registry's own TaskSpec.

They live here until the registry's tables take them (DESIGN.md); nothing else states them.
Their kinds are new: sentence-pair regression (BIOSSES), question + context classification
(PubMedQA, BioASQ) and multi-element word tagging (EBM-PICO).

Hyperparameters: Gu et al. (§6.2) tune on dev over lr {1e-5, 3e-5, 5e-5}, batch {16, 32} and
2-60 epochs (BLURB_GRID), with a linear warmup over the first 10% of updates then linear decay
and dropout 0.1, but do not publish each task's pick; the values below are starting points
inside that grid, validated about once an epoch (an epoch of BIOSSES is 4 updates), the best dev
checkpoint kept. Seeds: Table 6 averages ten runs for BIOSSES, BioASQ and PubMedQA, five for
the others (SEED_COUNTS).
"""

from __future__ import annotations

from bio_roberta.tasks.registry import DEFAULT_SEEDS, PUBMED, Hyperparameters, TaskSpec

REGRESSION = "regression"  # a score per sentence pair (BIOSSES)
QA_PAIR = "qa_pair"  # question + context -> one label; context cut
MULTI_ELEMENT_TAGGING = "multi_element_tagging"  # per word, any subset of elements (EBM-PICO)

BLURB_GRID = {"lr": (1e-5, 3e-5, 5e-5), "batch_size": (16, 32), "max_epoch": (2, 60)}
BLURB_WARMUP_RATIO = 0.1

# The recipe's five seeds, then five more for the tasks Table 6 averages over ten runs.
TEN_SEEDS = DEFAULT_SEEDS + (1, 2, 3, 4, 5)
SEED_COUNTS = {"biosses": 10, "pubmedqa": 10, "bioasq": 10}


def _hparams(lr, batch_size, max_epoch, validate_interval_updates):
    return Hyperparameters(
        lr=lr,
        batch_size=batch_size,
        max_epoch=max_epoch,
        validate_interval_updates=validate_interval_updates,
        warmup_ratio=BLURB_WARMUP_RATIO,
    )


BIOSSES = TaskSpec(
    name="biosses",
    display="BIOSSES",
    domain=PUBMED,
    kind=REGRESSION,
    source_format="biosses_blue_rowdata",
    labels=(),
    metric="pearson",
    hparams=_hparams(1e-5, 16, 30, 4),
    paper=(),
    shared_data="sts/BIOSSES",
    notes="100 sentence pairs, gold = mean of 5 annotators' 0-4 scores; BLURB's 64/16/20 split",
)
PUBMEDQA = TaskSpec(
    name="pubmedqa",
    display="PubMedQA",
    domain=PUBMED,
    kind=QA_PAIR,
    source_format="pubmedqa_pqal",
    labels=("yes", "no", "maybe"),
    metric="accuracy",
    hparams=_hparams(3e-5, 16, 30, 29),
    paper=(),
    shared_data="qa/PubMedQA/data",
    notes="PQA-L; context = the abstract without its conclusion; 450/50/500",
)
BIOASQ = TaskSpec(
    name="bioasq",
    display="BioASQ",
    domain=PUBMED,
    kind=QA_PAIR,
    source_format="bioasq_yesno",
    labels=("yes", "no"),
    metric="accuracy",
    hparams=_hparams(3e-5, 16, 20, 42),
    paper=(),
    public=False,
    notes="Task 7b yes/no questions + their snippets; BioASQ registration; 670/75/140",
)
EBM_PICO = TaskSpec(
    name="ebm-pico",
    display="EBM PICO",
    domain=PUBMED,
    kind=MULTI_ELEMENT_TAGGING,
    source_format="ebm_pico",
    labels=("O", "I-PAR", "I-INT", "I-OUT"),
    metric="pico_macro_word_f1",
    hparams=_hparams(5e-5, 32, 3, 500),
    paper=(),
    scored_labels=("I-PAR", "I-INT", "I-OUT"),
    negative_label="O",
    notes="a word may carry several elements (tag 'I-PAR+I-INT'); word-level F1 per element",
)

BLURB_NEW_TASKS: dict[str, TaskSpec] = {
    spec.name: spec for spec in (BIOSSES, PUBMEDQA, BIOASQ, EBM_PICO)
}
