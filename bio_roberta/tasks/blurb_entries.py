"""The entries of BLURB's new tasks (Gu et al. 2021; bio_roberta/blurb/suite.py holds Table 3 and
6) and the labels and formats they share with Lewis et al.'s entries; bio_roberta/tasks/registry.py
holds them all in TASKS."""

from __future__ import annotations

from bio_roberta.tasks.kinds import (
    BINARY_RELATION,
    MULTI_ELEMENT_TAGGING,
    MULTILABEL,
    QA_PAIR,
    REGRESSION,
    RELATION,
)
from bio_roberta.tasks.spec import PUBMED, TEN_SEEDS, TaskSpec, blurb_hparams

# LinkBERT's BLURB release (bio_roberta/readers/formats/linkbert_hf.py): every BLURB dataset.
LINKBERT = ("linkbert_hf",)


# ChemProt's five evaluated relation groups (its label set adds "false"), for both its entries.
CHEMPROT_RELATIONS = ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9")
HOC_HALLMARKS = (
    "activating invasion and metastasis",
    "avoiding immune destruction",
    "cellular energetics",
    "enabling replicative immortality",
    "evading growth suppressors",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "resisting cell death",
    "sustaining proliferative signaling",
    "tumor promoting inflammation",
)


def _blurb_task(**fields) -> TaskSpec:
    """A task BLURB adds: PubMed text, no Lewis et al. numbers (Gu et al.'s are in
    bio_roberta/blurb/suite.py), LinkBERT's release a second layout of its files."""
    return TaskSpec(domain=PUBMED, paper={}, other_formats=LINKBERT, **fields)


BLURB_ENTRIES = (
    _blurb_task(
        name="biosses",
        display="BIOSSES",
        kind=REGRESSION,
        source_format="biosses_blue_rowdata",
        labels=(),
        metric="pearson",
        hparams=blurb_hparams(1e-5, 16, 30, 4),
        shared_data="sts/BIOSSES",
        seeds=TEN_SEEDS,
        notes="100 sentence pairs, gold = mean of 5 annotators' 0-4 scores; BLURB's 64/16/20 split",
    ),
    _blurb_task(
        name="pubmedqa",
        display="PubMedQA",
        kind=QA_PAIR,
        source_format="pubmedqa_pqal",
        labels=("yes", "no", "maybe"),
        metric="accuracy",
        hparams=blurb_hparams(3e-5, 16, 30, 29),
        shared_data="qa/PubMedQA/data",
        seeds=TEN_SEEDS,
        notes="PQA-L; context = the abstract without its conclusion; 450/50/500",
    ),
    _blurb_task(
        name="bioasq",
        display="BioASQ",
        kind=QA_PAIR,
        source_format="bioasq_yesno",
        labels=("yes", "no"),
        metric="accuracy",
        hparams=blurb_hparams(3e-5, 16, 20, 42),
        public=False,
        seeds=TEN_SEEDS,
        notes="Task 7b yes/no questions + their snippets; BioASQ registration; 670/75/140",
    ),
    _blurb_task(
        name="ebm-pico",
        display="EBM PICO",
        kind=MULTI_ELEMENT_TAGGING,
        source_format="ebm_pico",
        labels=("O", "I-PAR", "I-INT", "I-OUT"),
        metric="pico_macro_word_f1",
        hparams=blurb_hparams(5e-5, 32, 3, 500),
        negative_label="O",
        linkbert_labels={"B-PAR": "I-PAR", "B-INT": "I-INT", "B-OUT": "I-OUT"},
        notes="a word may carry several elements (tag 'I-PAR+I-INT'); word-level F1 per element",
    ),
    _blurb_task(
        name="gad-blurb",
        display="GAD (BLURB)",
        kind=BINARY_RELATION,
        source_format="gad_blurb_fold1",
        labels=("0", "1"),
        metric="binary_f1",
        hparams=blurb_hparams(3e-5, 16, 10, 267),
        shared_data="re/GAD",
        negative_label="0",
        max_positions=128,
        notes="BLURB's single GAD split: BioBERT's fold 1, train.tsv rows 1-4261 / the other 535 / "
        "test.tsv (534); F1 of the positive class (BLURB's micro-F1 over one class)",
    ),
    _blurb_task(
        name="chemprot-blurb",
        display="ChemProt (BLURB)",
        kind=RELATION,
        source_format="blue_tsv",
        labels=(*CHEMPROT_RELATIONS, "false"),
        metric="micro_f1",
        hparams=blurb_hparams(3e-5, 16, 10, 1128),
        negative_label="false",
        linkbert_labels={"0": "false"},
        notes="BLURB's ChemProt (its split's sizes: blurb/suite.py; unlabelled pairs false): "
        "BLURB's own tsv or LinkBERT's release; micro-F1 over the 5 CPR classes",
    ),
    _blurb_task(
        name="hoc-blurb",
        display="HoC (BLURB)",
        kind=MULTILABEL,
        source_format="blue_hoc",
        labels=HOC_HALLMARKS,
        metric="hoc_micro_f1",
        hparams=blurb_hparams(3e-5, 16, 10, 500),
        notes="BLURB's split of all 1852 abstracts (1295/186/371): BLURB's own tsv (BLUE's format) "
        "or LinkBERT's release; micro-F1 over (abstract, hallmark)",
    ),
)
