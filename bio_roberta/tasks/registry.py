"""The one declaration of each benchmark task (docs/recipe.md).

Readers, converters, fine-tuning configs, sweeps and the report read these entries and nothing
else: a task's format, labels, metric and hyperparameters are stated here once (a TaskSpec:
bio_roberta/tasks/spec.py). Adding a task is one ``TaskSpec`` in ``TASKS`` (BLURB's new tasks:
bio_roberta/tasks/blurb_entries.py) plus, if its source format is new, one reader in
``bio_roberta/readers/formats/``. A task outside the package is a task file
(bio_roberta/tasks/task_file.py, docs/own_tasks.md), read into a TaskSpec of DECLARED; get_task
is the one lookup of both.
"""

from __future__ import annotations

from typing import Optional

from bio_roberta.tasks.blurb_entries import (
    BLURB_ENTRIES,
    CHEMPROT_RELATIONS,
    HOC_HALLMARKS,
    LINKBERT,
)
from bio_roberta.tasks.kinds import (
    BINARY_RELATION,
    MULTILABEL,
    NER,
    NLI,
    QA_PAIR,
    REGRESSION,
    RELATION,
)
from bio_roberta.tasks.paper_models import lewis_row
from bio_roberta.tasks.spec import (
    BIO_TAGS,
    CLASSIFICATION_HPARAMS,
    CLINICAL,
    NER_HPARAMS,
    PUBMED,
    Hyperparameters,
    TaskSpec,
    bio_tags,
)


def _lewis_ner(**fields) -> TaskSpec:
    """One of Lewis et al.'s NER tasks: BioBERT's token<TAB>tag files, entity F1, NER_HPARAMS."""
    return TaskSpec(
        kind=NER,
        source_format="biobert_ner",
        metric="entity_f1",
        hparams=NER_HPARAMS,
        **fields,
    )


def _biobert_ner(name, display, entity_type, paper, shared_data=None, other_formats=()):
    return _lewis_ner(
        name=name,
        display=display,
        domain=PUBMED,
        labels=BIO_TAGS,
        paper=paper,
        shared_data=shared_data,
        entity_type=entity_type,
        other_formats=other_formats,
    )


def _i2b2_ner(name, display, labels, paper, notes):
    return _lewis_ner(
        name=name,
        display=display,
        domain=CLINICAL,
        labels=labels,
        paper=paper,
        public=False,
        notes=notes,
    )


def _binary_relation(name, display, paper, shared_data=None):
    return TaskSpec(
        name=name,
        display=display,
        domain=PUBMED,
        kind=BINARY_RELATION,
        source_format="biobert_re_folds",
        labels=("0", "1"),
        metric="binary_f1",
        hparams=CLASSIFICATION_HPARAMS,
        paper=paper,
        shared_data=shared_data,
        negative_label="0",
        folds=10,
        model_selection_fold=1,
    )


I2B2_2014_PHI_TYPES = (
    "PATIENT",
    "DOCTOR",
    "USERNAME",
    "PROFESSION",
    "ROOM",
    "DEPARTMENT",
    "HOSPITAL",
    "ORGANIZATION",
    "STREET",
    "CITY",
    "STATE",
    "COUNTRY",
    "ZIP",
    "LOCATION-OTHER",
    "AGE",
    "DATE",
    "PHONE",
    "FAX",
    "EMAIL",
    "URL",
    "MEDICALRECORD",
    "HEALTHPLAN",
    "ACCOUNT",
    "LICENSE",
    "DEVICE",
    "BIOID",
    "IDNUM",
)

_TASK_LIST = (
    # entity types as BioBERT's Table 1 names them (JNLPBA and BC2GM: gene/protein mentions)
    _biobert_ner(
        "bc5cdr-chem",
        "BC5CDR-Chemical",
        "Chemical",
        lewis_row(87.3, 90.8, 90.3, 91.9, 91.9, 90.6, 91.7, 93.0, 92.0, 93.3, 93.7, 93.1, 92.9),
        "ner/BC5CDR-Chemical",
        LINKBERT,
    ),
    _biobert_ner(
        "bc5cdr-disease",
        "BC5CDR-Disease",
        "Disease",
        lewis_row(77.6, 82.3, 80.6, 83.6, 83.3, 81.3, 81.9, 83.9, 82.4, 84.8, 85.2, 84.0, 83.8),
        other_formats=LINKBERT,
    ),
    _biobert_ner(
        "jnlpba",
        "JNLPBA",
        "Gene",
        lewis_row(79.5, 80.1, 80.2, 80.3, 80.4, 79.3, 80.4, 80.9, 80.5, 80.8, 81.0, 80.9, 80.6),
        other_formats=LINKBERT,
    ),
    _biobert_ner(
        "ncbi-disease",
        "NCBI-disease",
        "Disease",
        lewis_row(84.7, 87.1, 86.1, 86.9, 87.6, 86.1, 88.0, 88.2, 87.2, 88.6, 89.0, 88.2, 87.7),
        "ner/NCBI-disease",
        LINKBERT,
    ),
    _biobert_ner(
        "bc4chemd",
        "BC4CHEMD",
        "Chemical",
        lewis_row(88.6, 90.6, 89.7, 91.8, 92.2, 90.3, 92.6, 92.6, 92.5, 93.2, 93.7, 92.8, 92.7),
    ),
    _biobert_ner(
        "bc2gm",
        "BC2GM",
        "Gene",
        lewis_row(82.7, 85.3, 84.2, 85.7, 85.6, 83.9, 86.6, 87.2, 86.3, 87.3, 88.0, 87.5, 87.0),
        other_formats=LINKBERT,
    ),
    _biobert_ner(
        "linnaeus",
        "LINNAEUS",
        "Species",
        lewis_row(79.8, 87.8, 84.2, 84.1, 86.2, 84.8, 85.0, 85.9, 82.9, 87.3, 88.4, 85.8, 85.3),
    ),
    _biobert_ner(
        "species-800",
        "Species-800",
        "Species",
        lewis_row(75.8, 78.3, 77.3, 77.8, 79.2, 77.4, 78.4, 79.5, 78.2, 79.5, 81.1, 79.9, 79.6),
        "ner/Species-800",
    ),
    _i2b2_ner(
        "i2b2-2010",
        "I2B2-2010",
        bio_tags("problem", "test", "treatment"),
        lewis_row(83.5, 87.3, 85.0, 86.3, 86.0, 86.3, 86.0, 86.7, 88.2, 89.2, 89.7, 88.5, 88.1),
        "concepts; n2c2 licence, token/tag files as bio-lm writes them",
    ),
    _i2b2_ner(
        "i2b2-2012",
        "I2B2-2012",
        bio_tags("PROBLEM", "TEST", "TREATMENT", "CLINICAL_DEPT", "EVIDENTIAL", "OCCURRENCE"),
        lewis_row(74.9, 78.3, 76.4, 77.6, 77.6, 78.0, 77.3, 78.4, 79.4, 80.2, 80.8, 80.0, 79.5),
        "temporal EVENT types; n2c2 licence",
    ),
    _i2b2_ner(
        "i2b2-2014",
        "I2B2-2014",
        bio_tags(*I2B2_2014_PHI_TYPES),
        lewis_row(95.6, 95.8, 95.2, 95.2, 94.7, 94.6, 94.9, 95.0, 95.5, 96.2, 96.3, 95.3, 95.5),
        "de-identification, PHI TYPE attribute; n2c2 licence",
    ),
    TaskSpec(
        name="hoc",
        display="HOC",
        domain=PUBMED,
        kind=MULTILABEL,
        source_format="blue_hoc",
        labels=HOC_HALLMARKS,
        metric="hoc_abstract_f1",
        hparams=CLASSIFICATION_HPARAMS,
        paper=lewis_row(
            86.0, 85.2, 86.7, 84.7, 86.6, 86.2, 86.5, 85.9, 85.8, 87.2, 86.6, 86.9, 86.5
        ),
        shared_data="cls/HOC",
        notes="rows are sentences; scored at abstract level (union of its sentences' labels)",
    ),
    TaskSpec(
        name="chemprot",
        display="ChemProt",
        domain=PUBMED,
        kind=RELATION,
        source_format="blue_tsv",
        labels=(*CHEMPROT_RELATIONS, "false"),
        metric="macro_f1",
        hparams=CLASSIFICATION_HPARAMS,
        paper=lewis_row(
            69.6, 71.7, 75.7, 69.7, 73.9, 68.5, 74.9, 72.4, 74.7, 76.4, 76.2, 75.7, 75.4
        ),
        negative_label="false",
        notes="Table 1 reports macro-F1 over the 5 CPR classes (BLURB: micro-F1)",
    ),
    _binary_relation(
        "gad",
        "GAD",
        lewis_row(79.4, 73.4, 81.6, 78.7, 81.2, 79.2, 81.8, 81.1, 81.9, 81.4, 81.1, 82.3, 82.2),
        "re/GAD",
    ),
    _binary_relation(
        "euadr",
        "EU-ADR",
        lewis_row(85.0, 85.0, 85.0, 85.5, 85.0, 85.1, 85.0, 85.0, 85.0, 85.0, 85.0, 85.0, 85.0),
    ),
    TaskSpec(
        name="ddi",
        display="DDI-2013",
        domain=PUBMED,
        kind=RELATION,
        source_format="ddi_xml",
        labels=("DDI-mechanism", "DDI-effect", "DDI-advise", "DDI-int", "DDI-false"),
        metric="micro_f1",
        hparams=CLASSIFICATION_HPARAMS,
        paper=lewis_row(
            79.0, 80.5, 80.7, 79.1, 79.9, 77.3, 80.5, 81.9, 82.1, 81.8, 82.1, 81.2, 81.0
        ),
        negative_label="DDI-false",
        shared_data="re/DDI-2013/DDICorpus",
        other_formats=LINKBERT,
        linkbert_labels={"0": "DDI-false"},
        notes="the original corpus XML; the BLUE ddi2013-type tsv is read by blue_tsv",
    ),
    TaskSpec(
        name="i2b2-2010-re",
        display="I2B2-2010-RE",
        domain=CLINICAL,
        kind=RELATION,
        source_format="blue_tsv",
        labels=("PIP", "TeCP", "TeRP", "TrAP", "TrCP", "TrIP", "TrNAP", "TrWP", "false"),
        metric="micro_f1",
        hparams=CLASSIFICATION_HPARAMS,
        paper=lewis_row(
            72.4, 75.2, 75.0, 69.8, 74.4, 74.0, 74.5, 73.8, 76.2, 75.6, 78.6, 75.5, 75.0
        ),
        negative_label="false",
        public=False,
        notes="n2c2 licence; BLUE i2b2-2010 tsv",
    ),
    TaskSpec(
        name="mednli",
        display="MedNLI",
        domain=CLINICAL,
        kind=NLI,
        source_format="mednli_jsonl",
        labels=("entailment", "neutral", "contradiction"),
        metric="accuracy",
        hparams=CLASSIFICATION_HPARAMS,
        paper=lewis_row(
            81.4, 83.3, 85.1, 79.7, 82.5, 81.8, 84.7, 83.2, 85.7, 87.2, 88.5, 86.8, 87.1
        ),
        public=False,
        notes="PhysioNet licence",
    ),
    *BLURB_ENTRIES,
)

TASKS: dict[str, TaskSpec] = {spec.name: spec for spec in _TASK_LIST}
assert len(TASKS) == len(_TASK_LIST), "task names must be unique"


# The metric and hyperparameters of a task declared in a file without them, by kind
# (bio_roberta/tasks/task_file.py); its kinds are the ones a task file may declare.
KIND_DEFAULTS: dict[str, tuple[str, Hyperparameters]] = {
    NER: ("entity_f1", NER_HPARAMS),
    RELATION: ("micro_f1", CLASSIFICATION_HPARAMS),
    BINARY_RELATION: ("binary_f1", CLASSIFICATION_HPARAMS),
    NLI: ("accuracy", CLASSIFICATION_HPARAMS),
    REGRESSION: ("pearson", CLASSIFICATION_HPARAMS),
    QA_PAIR: ("accuracy", CLASSIFICATION_HPARAMS),
}

# Tasks declared by task files (`--task-file`, bio_roberta/tasks/task_file.py), by name.
DECLARED: dict[str, TaskSpec] = {}


def find_task(name: str) -> Optional[TaskSpec]:
    """The registry's task or a declared one (task files), None for another name."""
    return TASKS.get(name) or DECLARED.get(name)


def task_names() -> list[str]:
    """Every task a command may name: the registry's, then the declared ones."""
    return [*TASKS, *DECLARED]


def get_task(name: str) -> TaskSpec:
    """The one lookup of a task by name: the registry's tasks, then those of task files."""
    spec = find_task(name)
    if spec is None:
        raise KeyError(
            f"unknown task {name!r}; known tasks: {', '.join(sorted(task_names()))} "
            "(a task of your own: --task-file, docs/own_tasks.md)"
        )
    return spec


def paper_results(model: str) -> dict[str, float]:
    """Lewis et al.'s result per task (Tables 2 and 7) of a paper model (bio_roberta/tasks/
    paper_models.py), registry order; {} for a model they did not run."""
    return {name: spec.paper[model] for name, spec in TASKS.items() if model in spec.paper}


# Summary rows of the report (docs/recipe.md): Lewis et al.'s Table 2 groups, over the tasks
# Table 2 reports (those with paper numbers; BLURB's tasks: bio_roberta/blurb/score.py).
def summary_groups() -> dict[str, tuple[str, ...]]:
    specs = [s for s in TASKS.values() if s.paper]
    return {
        "Seq. Lab.": tuple(s.name for s in specs if s.is_sequence_labelling),
        "Classif.": tuple(s.name for s in specs if not s.is_sequence_labelling),
        "PubMed": tuple(s.name for s in specs if s.domain == PUBMED),
        "Clinical": tuple(s.name for s in specs if s.domain == CLINICAL),
        "All": tuple(s.name for s in specs),
    }
