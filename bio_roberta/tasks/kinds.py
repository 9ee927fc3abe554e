"""Task kinds: what a task's kind decides about converting, fine-tuning and predicting it.

Like fairseq's registries (fairseq/registry.py), a table from a name to its parts: a TaskSpec
names its kind (bio_roberta/tasks/registry.py), and conversion, fine-tuning, predictions and the
report read the kind's row rather than testing its name. A new kind is one row in KINDS; its
fairseq task and criterion are plugin components (user_dir/tasks, user_dir/criterions), its
prediction file one of bio_roberta/tasks/prediction_files.py (or a new one there), and the
metrics its criterion logs rows of bio_roberta_core/metrics.py's METRICS.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from bio_roberta.tasks.classification_tables import LABEL_SETS, SCORES, SINGLE_LABELS
from bio_roberta.tasks.prediction_files import ELEMENT_SET_WORDS, TAGGED_WORDS, PredictionFile
from bio_roberta.tasks.truncation import (
    PIECES,
    TRUNCATE,
    truncate_context,
    truncate_longest_first,
)
from bio_roberta_core.tagging import BIO, PICO_ELEMENTS, entity_types, pico_tags, scheme_tags

NER = "ner"  # token tagging, entity F1
MULTILABEL = "multilabel"  # several labels per document (HOC)
RELATION = "relation"  # single-label sentence classification with a negative class
BINARY_RELATION = "binary_relation"  # 0/1 relation, 10 cross-validation folds (GAD, EU-ADR)
NLI = "nli"  # sentence-pair classification (MedNLI)
REGRESSION = "regression"  # a score per sentence pair (BIOSSES)
QA_PAIR = "qa_pair"  # question + context -> one label, the context cut from its end (PubMedQA)
MULTI_ELEMENT_TAGGING = "multi_element_tagging"  # per word, any subset of elements (EBM-PICO)

# How a kind's labels are written to finetune-bin/<task>/label/ (TaskKind.label_encoding):
CLASS_SYMBOLS = "class_symbols"  # an example's label symbols, binarised with label/dict.txt
SCHEME_TAGS = "scheme_tags"  # a tag per word, converted to the tagging scheme (BIO, IO, BIOUL)
ELEMENT_SETS = "element_sets"  # a tag per word naming its set of elements, written as read
SCORES_PER_LINE = "scores_per_line"  # label/{split}.label, one float a line (no dictionary)
WORD_TAGS = (SCHEME_TAGS, ELEMENT_SETS)


# The functions of a row take the TaskSpec (bio_roberta/tasks/registry.py imports this table).
def no_options(spec) -> list[str]:
    return []


def sentence_prediction_options(spec) -> list[str]:
    """fairseq's sentence_prediction: the number of classes and RoBERTa's <s> and </s> ids; and
    the negative label, which single_label_classification's F1s leave out."""
    options = [
        "--num-classes",
        str(len(spec.labels)),
        "--init-token",
        "0",
        "--separator-token",
        "2",
    ]
    if spec.negative_label is not None:
        options += ["--negative-label", spec.negative_label]
    return options


def regression_options(spec) -> list[str]:
    """fairseq's sentence_prediction reading label/{split}.label: one target, RoBERTa's ids."""
    return [
        "--num-classes",
        "1",
        "--regression-target",
        "--init-token",
        "0",
        "--separator-token",
        "2",
    ]


@dataclass(frozen=True)
class HFExport:
    """How `bio-roberta export-hf` writes a fine-tuned model of the kind
    (bio_roberta/hf/export_hf.py): what transformers must be told so that its model reads the head's
    outputs as fairseq's criterion does."""

    # transformers' config.problem_type (its loss, and how its text-classification pipeline
    # turns outputs into scores); None leaves it to transformers, which takes classes
    problem_type: Optional[str] = None
    # the names of the head's outputs where the kind fixes them; None: the classes of
    # label/dict.txt, or unnamed outputs where the kind has no label dictionary (a score)
    output_names: Optional[tuple[str, ...]] = None
    # written to config.json ("decoding") where transformers' pipelines decode the outputs wrongly
    decoding: Optional[str] = None


@dataclass(frozen=True)
class TaskKind:
    """One row of KINDS."""

    fairseq_task: str  # --task, registered by fairseq or user_dir/tasks
    criterion: str  # --criterion (user_dir/criterions); logs the validation metric
    inputs: int  # texts per example: 1 (input0/) or a pair, 2 (input0/, input1/)
    label_encoding: str  # CLASS_SYMBOLS, SCHEME_TAGS, ELEMENT_SETS or SCORES_PER_LINE
    predictions: PredictionFile  # how predictions are written and read back for the score
    # further fairseq-train options of the task and criterion for a TaskSpec of this kind
    fairseq_options: Callable[..., list[str]] = no_options
    # how a text (pair) longer than the positions is cut: bio_roberta/tasks/truncation.py
    truncate: Callable[..., tuple[list[int], list[int]]] = truncate_longest_first
    # the route of an input longer than the positions unless convert-task's --long-inputs says
    # otherwise (bio_roberta/tasks/truncation.py): the papers' (TRUNCATE, or PIECES for tags)
    long_inputs: str = TRUNCATE
    # how a fine-tuned model of the kind is exported to transformers
    hf_export: HFExport = HFExport()

    @property
    def tags_words(self) -> bool:
        """Labels are a tag per word (sequence labelling), not one per example."""
        return self.label_encoding in WORD_TAGS

    @property
    def has_label_dictionary(self) -> bool:
        """finetune-bin/<task>/label/dict.txt exists (every kind but scores)."""
        return self.label_encoding != SCORES_PER_LINE


_SENTENCE_PREDICTION = TaskKind(
    "sentence_classification",
    "single_label_classification",
    inputs=1,
    label_encoding=CLASS_SYMBOLS,
    predictions=SINGLE_LABELS,
    fairseq_options=sentence_prediction_options,
)

KINDS: dict[str, TaskKind] = {
    NER: TaskKind(
        "sequence_labeling",
        "sequence_labeling",
        inputs=1,
        label_encoding=SCHEME_TAGS,
        predictions=TAGGED_WORDS,
        long_inputs=PIECES,
    ),
    # one sigmoid per label (the criterion's BCE): transformers' pipeline must not softmax them
    MULTILABEL: TaskKind(
        "multilabel_classification",
        "multilabel_classification",
        inputs=1,
        label_encoding=CLASS_SYMBOLS,
        predictions=LABEL_SETS,
        hf_export=HFExport(problem_type="multi_label_classification"),
    ),
    RELATION: _SENTENCE_PREDICTION,
    BINARY_RELATION: _SENTENCE_PREDICTION,
    NLI: dataclasses.replace(_SENTENCE_PREDICTION, inputs=2),
    # fairseq's sentence_prediction with --regression-target (MSE); the criterion adds Pearson.
    REGRESSION: TaskKind(
        "sentence_classification",
        "regression",
        inputs=2,
        label_encoding=SCORES_PER_LINE,
        predictions=SCORES,
        fairseq_options=regression_options,
        hf_export=HFExport(problem_type="regression"),
    ),
    QA_PAIR: dataclasses.replace(_SENTENCE_PREDICTION, inputs=2, truncate=truncate_context),
    # one sigmoid per element per word (Gu et al. §5.2: a word may carry several elements)
    MULTI_ELEMENT_TAGGING: TaskKind(
        "multi_element_tagging",
        "multi_element_tagging",
        inputs=1,
        label_encoding=ELEMENT_SETS,
        predictions=ELEMENT_SET_WORDS,
        long_inputs=PIECES,
        hf_export=HFExport(
            problem_type="multi_label_classification",
            output_names=PICO_ELEMENTS,
            decoding=(
                "multi-label: one sigmoid per element and word (elements "
                f"{', '.join(PICO_ELEMENTS)}), a word is in every element whose logit is > 0; "
                "transformers' token-classification pipeline takes the argmax, which is wrong "
                "for this model"
            ),
        ),
    ),
}


# the fairseq task a kind trained with before, and the one it trains with now (same data and heads)
FAIRSEQ_TASK_NOW = {"sentence_prediction": "sentence_classification"}


def kind_trained_by(fairseq_task: str, criterion: str) -> Optional[TaskKind]:
    """The row of KINDS a model fine-tuned with this fairseq task and criterion (its checkpoint's
    cfg) belongs to, as far as reading its head goes: kinds that share both (sentence_prediction
    with single_label_classification: relations, NLI, QA pairs) export alike. None for another
    pair."""
    fairseq_task = FAIRSEQ_TASK_NOW.get(fairseq_task, fairseq_task)
    matches = [
        kind
        for kind in KINDS.values()
        if (kind.fairseq_task, kind.criterion) == (fairseq_task, criterion)
    ]
    if len({(kind.has_label_dictionary, kind.hf_export) for kind in matches}) != 1:
        return None
    return matches[0]


def label_symbols(spec, scheme: str = BIO) -> tuple[str, ...]:
    """The label dictionary of a task (finetune-bin/<task>/label/dict.txt), class ids in order.

    Scheme tags: the scheme's tags over the registry's entity types. Element sets: every set of
    EBM-PICO elements as a tag. Scores: none (no dictionary). Otherwise the registry's labels
    with spaces written as '_' (a fairseq dictionary symbol cannot hold a space).
    """
    encoding = spec.task_kind.label_encoding
    if encoding == SCHEME_TAGS:
        return scheme_tags(entity_types(spec.labels), scheme)
    if encoding == ELEMENT_SETS:
        return pico_tags()
    if not spec.task_kind.has_label_dictionary:
        return ()
    return tuple(label.replace(" ", "_") for label in spec.labels)
