"""A task's declaration: TaskSpec, with its hyperparameters and seeds (the entries themselves are
in bio_roberta/tasks/registry.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from bio_roberta.tasks.kinds import KINDS, TaskKind
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
    # The label the score leaves out (ChemProt's "false": its 5 CPR classes count; DDI's
    # "DDI-false": its 4 types); None: every label counts.
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
        """The labels the task's F1 counts: every label but the negative."""
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
