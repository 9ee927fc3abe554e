"""The one declaration of each benchmark task (docs/recipe.md).

Readers, converters, fine-tuning configs, sweeps and the report read these entries and nothing
else: a task's format, labels, metric and hyperparameters are stated here once. Adding a task is
one ``TaskSpec`` in ``TASKS`` plus, if its source format is new, one reader in
``bio_roberta/readers/formats/``. A task outside the package is a task file
(bio_roberta/tasks/task_file.py, docs/own_tasks.md), read into a TaskSpec of DECLARED; get_task
is the one lookup of both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from bio_roberta.tasks.kinds import (
    BINARY_RELATION,
    KINDS,
    MULTI_ELEMENT_TAGGING,
    MULTILABEL,
    NER,
    NLI,
    QA_PAIR,
    REGRESSION,
    RELATION,
    TaskKind,
)
from bio_roberta.tasks.paper_models import lewis_row
from bio_roberta_core.metrics import METRICS

PUBMED = "pubmed"
CLINICAL = "clinical"


@dataclass(frozen=True)
class Hyperparameters:
    """Fine-tuning settings of paper §5.2; the sweep turns them into fairseq options."""

    lr: float
    batch_size: int
    max_epoch: int
    validate_interval_updates: int
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    dropout: float = 0.1
    # Validations without improvement before stopping; None trains all epochs.
    patience: Optional[int] = None


# Sequence labelling: lr 1e-5, batch 32, 20 epochs, validate every 500 updates.
NER_HPARAMS = Hyperparameters(lr=1e-5, batch_size=32, max_epoch=20, validate_interval_updates=500)
# Classification: batch 16, at most 10 epochs, early stopping, validate every 200 updates. The
# paper prints lr 0.002; its released code's README (and BioM-Transformers' reproduction) use 2e-5.
# DDI keeps it in BLURB's untuned route too (one task, `ddi`, serves both suites): 2e-5 is not in
# BLURB_GRID, which the report's protocol line says (report.settings.outside_blurb_grid);
# `blurb-suite --tune` runs DDI over the grid.
CLASSIFICATION_HPARAMS = Hyperparameters(
    lr=2e-5, batch_size=16, max_epoch=10, validate_interval_updates=200, patience=10
)

# BLURB (Gu et al. §6.2) tunes on dev over this grid (`blurb-suite --tune`: every lr x batch size,
# each the setting whose dev score is best, bio_roberta/report/settings.py), the epochs also
# chosen on dev within BLURB_EPOCHS (a run keeps its best-dev checkpoint), with a linear warmup
# over the first 10% of updates then linear decay and dropout 0.1; it does not publish each
# task's pick: the BLURB tasks' hyperparameters below are starting points inside it, validated
# about once an epoch (the untuned route runs them alone).
BLURB_GRID = {"lr": (1e-5, 3e-5, 5e-5), "batch_size": (16, 32)}
BLURB_EPOCHS = (2, 60)
BLURB_WARMUP_RATIO = 0.1


def blurb_hparams(lr, batch_size, max_epoch, validate_interval_updates) -> Hyperparameters:
    return Hyperparameters(
        lr=lr,
        batch_size=batch_size,
        max_epoch=max_epoch,
        validate_interval_updates=validate_interval_updates,
        warmup_ratio=BLURB_WARMUP_RATIO,
    )


# Seeds of BioM-Transformers' reproduction of this recipe; a sweep takes the first N.
DEFAULT_SEEDS = (10, 42, 1234, 12345, 666)
# Ten seeds for the small tasks whose published results average ten runs (BLURB, Gu et al. §6.2):
# the recipe's five, then 1-5.
TEN_SEEDS = DEFAULT_SEEDS + (1, 2, 3, 4, 5)

BIO_TAGS = ("O", "B", "I")


def bio_tags(*entity_types: str) -> tuple[str, ...]:
    """BIO tag set of typed entities, in a fixed order."""
    return ("O",) + tuple(f"{prefix}-{t}" for t in entity_types for prefix in ("B", "I"))


@dataclass(frozen=True)
class Declaration:
    """What a task file (bio_roberta/tasks/task_file.py) says of its task beyond a TaskSpec:
    where its files are and how they are laid out."""

    path: Path  # the task file, resolved
    sha256: str
    format: str  # a key of task_file.FORMATS
    files: Mapping[str, str]  # split (train, valid, test) -> file (or save_to_disk dir)
    columns: Mapping[str, Any]
    infer_labels: bool
    fields: Optional[Mapping[str, Any]] = None  # the task file's own, as read

    @property
    def data_dir(self) -> Path:
        """Where the files are named from, unless a command is given another folder."""
        return self.path.parent

    def record(self, labels: tuple[str, ...]) -> dict:
        """The converted data's record of the declaration (its manifest's task_declaration),
        with the labels the conversion used: with "infer", the train split's, in label-id order."""
        return {
            "path": str(self.path),
            "sha256": self.sha256,
            "format": self.format,
            "files": dict(self.files),
            "columns": dict(self.columns),
            "labels_inferred": self.infer_labels,
            "labels": list(labels),
            # the declaration itself, so that predict, export-hf and bio_roberta.load read the
            # task from the converted data without its task file (task_file.recorded_task)
            "fields": dict(self.fields) if self.fields is not None else None,
        }


@dataclass(frozen=True)
class TaskSpec:
    name: str  # registry key, used on the command line and in file names
    display: str  # as printed in the paper's tables
    domain: str  # PUBMED or CLINICAL (the report's summary rows)
    kind: str  # a row of bio_roberta.tasks.kinds.KINDS: NER, MULTILABEL, ...
    source_format: str  # a reader: bio_roberta/readers/formats/<source_format>.py
    labels: tuple[str, ...]  # every label the source files may hold, in label-id order
    metric: str  # a row of bio_roberta_core.metrics.METRICS
    hparams: Hyperparameters
    # Lewis et al.'s medians (Tables 2 and 7) keyed by paper model (bio_roberta/tasks/
    # paper_models.py), built by lewis_row from the task's row as printed; {} for BLURB's tasks,
    # which Lewis et al. do not report (Gu et al.'s numbers: bio_roberta/blurb/suite.py's Table 6)
    paper: Mapping[str, float]
    public: bool = True
    # Where the task's files sit under ../shared/data (None: not collected there).
    shared_data: Optional[str] = None
    # Labels that count in the score (ChemProt: 5 CPR classes, DDI: 4 types); None: all.
    scored_labels: Optional[tuple[str, ...]] = None
    negative_label: Optional[str] = None
    folds: Optional[int] = None  # cross-validation folds (GAD, EU-ADR)
    model_selection_fold: Optional[int] = None  # fold whose dev run picks early stopping
    max_positions: int = 512
    # The seeds a sweep runs by default (TEN_SEEDS where the published numbers average ten runs).
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    # The entity type of untyped B/I tags (BioBERT's NER files), for the label names of exported
    # models.
    entity_type: Optional[str] = None
    # Further readers (formats/<name>.py with a detect()) whose layout, when found in --data, is
    # read instead of source_format's: LinkBERT's BLURB release for BLURB's datasets.
    other_formats: tuple[str, ...] = ()
    # The labels LinkBERT's release writes in place of ours, read as ours (its scripts/
    # preprocess_blurb.py: "0" for a class named with "false", the first of the sorted labels,
    # which its PRF1 metric takes for the negative; B- for EBM-PICO's I- word tags, each word then
    # an entity to seqeval): its label -> ours.
    linkbert_labels: Mapping[str, str] = field(default_factory=dict)
    notes: str = field(default="", compare=False)
    # A task declared in a file of the user's (bio_roberta/tasks/task_file.py): its files,
    # format and columns; None for the tasks declared here.
    declaration: Optional[Declaration] = field(default=None, compare=False)

    def __post_init__(self):
        """A kind and metric the tables have, a metric the kind's criterion logs at validation
        (fairseq-train picks checkpoints by it), and LinkBERT's labels read as labels of ours."""
        if self.kind not in KINDS:
            raise ValueError(
                f"task {self.name}: kind {self.kind!r} is not one of {sorted(KINDS)} "
                "(bio_roberta/tasks/kinds.py)"
            )
        if self.metric not in METRICS:
            raise ValueError(
                f"task {self.name}: metric {self.metric!r} is not one of "
                f"{sorted(METRICS)} (bio_roberta_core/metrics.py)"
            )
        if METRICS[self.metric].criterion != self.task_kind.criterion:
            logged_by = METRICS[self.metric].criterion
            raise ValueError(
                f"task {self.name}: criterion {self.task_kind.criterion} of kind "
                f"{self.kind} does not log {self.metric} (logged by {logged_by})"
            )
        not_ours = set(self.linkbert_labels.values()) - set(self.labels)
        if not_ours:
            raise ValueError(
                f"task {self.name}: linkbert_labels reads LinkBERT's labels as "
                f"{', '.join(sorted(not_ours))}, not among its labels"
            )

    @property
    def task_kind(self) -> TaskKind:
        return KINDS[self.kind]

    @property
    def is_sequence_labelling(self) -> bool:
        return self.task_kind.tags_words

    @property
    def labels_in_score(self) -> tuple[str, ...]:
        """The labels the task's F1 counts: scored_labels, else every label but the negative."""
        if self.scored_labels:
            return tuple(self.scored_labels)
        return tuple(label for label in self.labels if label != self.negative_label)

    def score(self, gold, predicted) -> float:
        """The task's metric on gold and predicted labels, read as its kind's prediction file."""
        return METRICS[self.metric].score(gold, predicted, self.labels_in_score)

    @property
    def evaluation_folds(self) -> tuple[int, ...]:
        """Folds whose test scores enter the median (all but the model-selection fold)."""
        if not self.folds:
            return ()
        return tuple(f for f in range(1, self.folds + 1) if f != self.model_selection_fold)

    @property
    def run_folds(self) -> tuple[Optional[int], ...]:
        """The folds a run of the task trains on, the model-selection fold first; (None,) for a
        task with one train/dev/test split."""
        return (self.model_selection_fold, *self.evaluation_folds) if self.folds else (None,)


# LinkBERT's BLURB release (bio_roberta/readers/formats/linkbert_hf.py): every BLURB dataset.
LINKBERT = ("linkbert_hf",)


def _biobert_ner(name, display, entity_type, paper, shared_data=None, other_formats=()):
    return TaskSpec(
        name=name,
        display=display,
        domain=PUBMED,
        kind=NER,
        source_format="biobert_ner",
        labels=BIO_TAGS,
        metric="entity_f1",
        hparams=NER_HPARAMS,
        paper=paper,
        shared_data=shared_data,
        entity_type=entity_type,
        other_formats=other_formats,
    )


def _i2b2_ner(name, display, labels, paper, notes):
    return TaskSpec(
        name=name,
        display=display,
        domain=CLINICAL,
        kind=NER,
        source_format="biobert_ner",
        labels=labels,
        metric="entity_f1",
        hparams=NER_HPARAMS,
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
        scored_labels=CHEMPROT_RELATIONS,
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
        scored_labels=("DDI-mechanism", "DDI-effect", "DDI-advise", "DDI-int"),
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
        scored_labels=("PIP", "TeCP", "TeRP", "TrAP", "TrCP", "TrIP", "TrNAP", "TrWP"),
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
    # BLURB's new tasks (Gu et al. 2021; bio_roberta/blurb/suite.py holds Table 3 and 6)
    TaskSpec(
        name="biosses",
        display="BIOSSES",
        domain=PUBMED,
        kind=REGRESSION,
        source_format="biosses_blue_rowdata",
        labels=(),
        metric="pearson",
        hparams=blurb_hparams(1e-5, 16, 30, 4),
        paper={},
        shared_data="sts/BIOSSES",
        seeds=TEN_SEEDS,
        other_formats=LINKBERT,
        notes="100 sentence pairs, gold = mean of 5 annotators' 0-4 scores; BLURB's 64/16/20 split",
    ),
    TaskSpec(
        name="pubmedqa",
        display="PubMedQA",
        domain=PUBMED,
        kind=QA_PAIR,
        source_format="pubmedqa_pqal",
        labels=("yes", "no", "maybe"),
        metric="accuracy",
        hparams=blurb_hparams(3e-5, 16, 30, 29),
        paper={},
        shared_data="qa/PubMedQA/data",
        seeds=TEN_SEEDS,
        other_formats=LINKBERT,
        notes="PQA-L; context = the abstract without its conclusion; 450/50/500",
    ),
    TaskSpec(
        name="bioasq",
        display="BioASQ",
        domain=PUBMED,
        kind=QA_PAIR,
        source_format="bioasq_yesno",
        labels=("yes", "no"),
        metric="accuracy",
        hparams=blurb_hparams(3e-5, 16, 20, 42),
        paper={},
        public=False,
        seeds=TEN_SEEDS,
        other_formats=LINKBERT,
        notes="Task 7b yes/no questions + their snippets; BioASQ registration; 670/75/140",
    ),
    TaskSpec(
        name="ebm-pico",
        display="EBM PICO",
        domain=PUBMED,
        kind=MULTI_ELEMENT_TAGGING,
        source_format="ebm_pico",
        labels=("O", "I-PAR", "I-INT", "I-OUT"),
        metric="pico_macro_word_f1",
        hparams=blurb_hparams(5e-5, 32, 3, 500),
        paper={},
        scored_labels=("I-PAR", "I-INT", "I-OUT"),
        negative_label="O",
        other_formats=LINKBERT,
        linkbert_labels={"B-PAR": "I-PAR", "B-INT": "I-INT", "B-OUT": "I-OUT"},
        notes="a word may carry several elements (tag 'I-PAR+I-INT'); word-level F1 per element",
    ),
    TaskSpec(
        name="gad-blurb",
        display="GAD (BLURB)",
        domain=PUBMED,
        kind=BINARY_RELATION,
        source_format="gad_blurb_fold1",
        labels=("0", "1"),
        metric="binary_f1",
        hparams=blurb_hparams(3e-5, 16, 10, 267),
        paper={},
        shared_data="re/GAD",
        negative_label="0",
        max_positions=128,
        other_formats=LINKBERT,
        notes="BLURB's single GAD split: BioBERT's fold 1, train.tsv rows 1-4261 / the other 535 / "
        "test.tsv (534); F1 of the positive class (BLURB's micro-F1 over one class)",
    ),
    TaskSpec(
        name="chemprot-blurb",
        display="ChemProt (BLURB)",
        domain=PUBMED,
        kind=RELATION,
        source_format="blue_tsv",
        labels=(*CHEMPROT_RELATIONS, "false"),
        metric="micro_f1",
        hparams=blurb_hparams(3e-5, 16, 10, 1128),
        paper={},
        scored_labels=CHEMPROT_RELATIONS,
        negative_label="false",
        other_formats=LINKBERT,
        linkbert_labels={"0": "false"},
        notes="BLURB's ChemProt (its split's sizes: blurb/suite.py; unlabelled pairs false): "
        "BLURB's own tsv or LinkBERT's release; micro-F1 over the 5 CPR classes",
    ),
    TaskSpec(
        name="hoc-blurb",
        display="HoC (BLURB)",
        domain=PUBMED,
        kind=MULTILABEL,
        source_format="blue_hoc",
        labels=HOC_HALLMARKS,
        metric="hoc_micro_f1",
        hparams=blurb_hparams(3e-5, 16, 10, 500),
        paper={},
        other_formats=LINKBERT,
        notes="BLURB's split of all 1852 abstracts (1295/186/371): BLURB's own tsv (BLUE's format) "
        "or LinkBERT's release; micro-F1 over (abstract, hallmark)",
    ),
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
