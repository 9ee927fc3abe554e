"""BLURB's 13 datasets as data, stated once: Gu et al. (2021) Tables 3 and 6 and §4.

Each row gives the dataset's task type and metric (Table 3), the split sizes of BLURB's data,
Table 6's PubMedBERT and BioBERT test results (x100, as printed) and where BLURB's split comes
from, including whether the files our readers take rebuild it. ``check_split`` says whether what a
reader read is BLURB's split (the reader's own knowledge, ``Split.blurb``, and
``check_split_sizes``: BLURB's sizes), so a report can tell BLURB's split from another one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from bio_roberta.readers.source_files import TaggedSentence, TaskData
from bio_roberta_core.tagging import tag_spans

# The six task types of the BLURB score (Table 6 caption), in Table 3's order.
NER = "NER"
PICO = "PICO"
RELATION_EXTRACTION = "Relation Extraction"
SENTENCE_SIMILARITY = "Sentence Similarity"
DOCUMENT_CLASSIFICATION = "Document Classification"
QUESTION_ANSWERING = "Question Answering"
TASK_TYPES = (
    NER,
    PICO,
    RELATION_EXTRACTION,
    SENTENCE_SIMILARITY,
    DOCUMENT_CLASSIFICATION,
    QUESTION_ANSWERING,
)

TABLE6_COLUMNS = ("PubMedBERT", "BioBERT")
# Table 6's "BLURB score" row for those columns, as printed.
TABLE6_BLURB_SCORES = {"PubMedBERT": 81.10, "BioBERT": 80.29}

# Whether the files our readers take rebuild BLURB's split (BlurbDataset.split).
REBUILT = "rebuilt"
WITH_ID_LISTS = "rebuilt only given BLURB's id lists"
NOT_REBUILT = "not rebuilt"
# split_gap's argument when the data manifest carries no blurb_split_check.
NO_CHECK = object()

# Units of split_sizes: entity mentions (B tags), examples, abstracts; None: not checkable.
MENTIONS = "mentions"
EXAMPLES = "examples"
ABSTRACTS = "abstracts"


@dataclass(frozen=True)
class BlurbDataset:
    task: str  # the registry entry (bio_roberta/tasks/registry.py) whose runs give its result
    display: str  # as Tables 3 and 6 print it
    task_type: str  # one of TASK_TYPES
    metric: str  # a row of bio_roberta_core/metrics.py METRICS
    split_sizes: tuple[int, int, int]  # train, dev, test of BLURB's data, in `unit`
    unit: Optional[str]  # MENTIONS, EXAMPLES, ABSTRACTS; None: sizes not checkable
    table6: tuple[float, float]  # TABLE6_COLUMNS order
    split_source: str  # BLURB's split, and whether our supported files rebuild it
    split: str  # REBUILT, WITH_ID_LISTS or NOT_REBUILT from the files our readers take
    # Registry metrics that compute the same number as `metric` (GAD: F1 of its one positive class).
    same_metric: tuple[str, ...] = ()


def _ner(task, display, sizes, table6, note=""):
    return BlurbDataset(
        task,
        display,
        NER,
        "entity_f1",
        sizes,
        MENTIONS,
        table6,
        "Crichton et al.'s split, which BioBERT's NERdata files keep" + note,
        REBUILT,
    )


BLURB_DATASETS = (
    _ner(
        "bc5cdr-chem",
        "BC5-chem",
        (5203, 5347, 5385),
        (93.33, 92.85),
        " (mention counts equal Table 3's)",
    ),
    _ner("bc5cdr-disease", "BC5-disease", (4182, 4244, 4424), (85.62, 84.70)),
    _ner(
        "ncbi-disease",
        "NCBI-disease",
        (5134, 787, 960),
        (87.82, 89.13),
        " (mention counts equal Table 3's)",
    ),
    _ner("bc2gm", "BC2GM", (15197, 3061, 6325), (84.52, 83.82)),
    _ner(
        "jnlpba",
        "JNLPBA",
        (46750, 4551, 8662),
        (80.06, 79.35),
        "; entity types merged, as BioBERT's untyped tags",
    ),
    BlurbDataset(
        "ebm-pico",
        "EBM PICO",
        PICO,
        "pico_macro_word_f1",
        (339167, 85321, 16364),
        None,
        (73.38, 73.18),
        "EBM-NLP's starting_spans, test = test/gold; train/dev PMIDs from SciBERT's release "
        "(BLURB's indexing/ebmnlp/*_pmid.tsv): SciBERT's files, or EBM-NLP's with those lists, "
        "give BLURB's split, EBM-NLP's alone a dev of ours. Table 3 does not say what its sizes "
        "count, so the reader says which (Split.blurb)",
        WITH_ID_LISTS,
    ),
    BlurbDataset(
        "chemprot",
        "ChemProt",
        RELATION_EXTRACTION,
        "micro_f1",
        (18035, 11268, 15745),
        EXAMPLES,
        (77.24, 76.14),
        "BLURB regenerates all three splits from the original ChemProt corpus, expanding "
        "unlabelled pairs to false; not rebuilt from BLUE's tsv (sizes tell)",
        NOT_REBUILT,
    ),
    BlurbDataset(
        "ddi",
        "DDI",
        RELATION_EXTRACTION,
        "micro_f1",
        (22233, 5559, 5716),
        EXAMPLES,
        (82.36, 80.88),
        "original corpus; test = the 191 test files (our reader's 5,716 pairs, the same); "
        "train/dev = BLURB's own 624/90-file lists, which our files do not hold",
        NOT_REBUILT,
    ),
    BlurbDataset(
        "gad-blurb",
        "GAD",
        RELATION_EXTRACTION,
        "micro_f1",
        (4261, 535, 534),
        EXAMPLES,
        (82.34, 80.94),
        "BioBERT's fold 1: train = its train.tsv rows 1-4261, dev = the other 535, test = its "
        "test.tsv (534); rebuilt (Table 3 prints dev and test sizes swapped, 534/535)",
        REBUILT,
        ("binary_f1",),
    ),
    BlurbDataset(
        "biosses",
        "BIOSSES",
        SENTENCE_SIMILARITY,
        "pearson",
        (64, 16, 20),
        EXAMPLES,
        (92.30, 89.52),
        "BLUE's pair numbers, listed in BLURB's preprocessor; rebuilt from BLUE's 70/16/14 "
        "files, which hold all 100 pairs",
        REBUILT,
    ),
    BlurbDataset(
        "hoc",
        "HoC",
        DOCUMENT_CLASSIFICATION,
        "hoc_micro_f1",
        (1295, 186, 371),
        ABSTRACTS,
        (82.32, 81.54),
        "BLURB's own split of all 1,852 abstracts; BLUE's tsv (1108/157/315, control abstracts "
        "left out) cannot rebuild it; BLURB's tsv files have BLUE's format",
        NOT_REBUILT,
    ),
    BlurbDataset(
        "pubmedqa",
        "PubMedQA",
        QUESTION_ANSWERING,
        "accuracy",
        (450, 50, 500),
        EXAMPLES,
        (55.84, 60.24),
        "test = test_ground_truth.json; train/dev = fold 0 of PubMedQA's split_dataset.py; rebuilt",
        REBUILT,
    ),
    BlurbDataset(
        "bioasq",
        "BioASQ",
        QUESTION_ANSWERING,
        "accuracy",
        (670, 75, 140),
        EXAMPLES,
        (87.56, 84.14),
        "Task 7b yes/no: training7b -> train/dev by BLURB's id lists (rebuilt when given, else "
        "dev is ours), test = the five golden batches",
        WITH_ID_LISTS,
    ),
)
BLURB: dict[str, BlurbDataset] = {dataset.task: dataset for dataset in BLURB_DATASETS}
assert len(BLURB) == 13 and {d.task_type for d in BLURB_DATASETS} == set(TASK_TYPES)
assert {d.split for d in BLURB_DATASETS} <= {REBUILT, WITH_ID_LISTS, NOT_REBUILT}

SPLIT_ORDER = ("train", "valid", "test")


def read_sizes(dataset: BlurbDataset, data: TaskData) -> tuple[int, int, int]:
    """Train, dev, test sizes of what a reader read, in the dataset's unit."""
    if dataset.unit is None:
        raise ValueError(f"{dataset.display}: Table 3's sizes have no checkable unit")
    sizes = []
    for name in SPLIT_ORDER:
        split = data.splits[name]
        if dataset.unit == MENTIONS:
            sizes.append(
                sum(
                    len(tag_spans(example.tags))
                    for example in split.examples
                    if isinstance(example, TaggedSentence)
                )
            )
        elif dataset.unit == ABSTRACTS:
            sizes.append(split.counts["abstracts"])
        else:
            sizes.append(split.counts["examples"])
    return tuple(sizes)


def check_split_sizes(dataset: BlurbDataset, data: TaskData) -> Optional[str]:
    """None when the data read has BLURB's split sizes; else one line saying how it differs."""
    found = read_sizes(dataset, data)
    if found == dataset.split_sizes:
        return None
    sizes = "/".join(map(str, found))
    return (
        f"{dataset.display}: train/dev/test {dataset.unit} {sizes}, BLURB's split has "
        f"{'/'.join(map(str, dataset.split_sizes))} ({dataset.split_source})"
    )


def check_split(dataset: BlurbDataset, data: TaskData) -> Optional[str]:
    """None when the data read is BLURB's split; else one line saying why not (the data
    manifest's ``blurb_split_check``). A split its reader knows not to be BLURB's decides; else
    sizes in a countable unit must be BLURB's; without one (EBM-PICO) the readers must know every
    split to be BLURB's."""
    known = {name: data.splits[name].blurb for name in SPLIT_ORDER}
    why_not = [
        f"{name} {fact.why_not}"
        for name, fact in known.items()
        if fact is not None and fact.why_not is not None
    ]
    if why_not:
        return f"{dataset.display}: {'; '.join(why_not)}"
    if dataset.unit is not None:
        return check_split_sizes(dataset, data)
    unknown = [name for name, fact in known.items() if fact is None]
    if not unknown:
        return None
    return (
        f"{dataset.display}: sizes not checkable and the reader does not know whether its "
        f"{'/'.join(unknown)} is BLURB's; {dataset.split_source}"
    )


def split_gap(dataset: BlurbDataset, check=NO_CHECK) -> Optional[str]:
    """Why the split of our runs is not BLURB's, or None. ``check`` is the data manifest's
    ``blurb_split_check`` (None: the converter found BLURB's split; a string: how it differs);
    without one, the dataset's ``split`` fact decides."""
    if check is not NO_CHECK:
        return check
    if dataset.split == REBUILT:
        return None
    if dataset.split == WITH_ID_LISTS:
        return (
            "BLURB's split needs its id lists, and the data manifest does not say they were given "
            f"({dataset.split_source})"
        )
    return f"our files do not rebuild BLURB's split ({dataset.split_source})"


def metric_gap(dataset: BlurbDataset, run_metric: str) -> Optional[str]:
    """Why runs scored by run_metric do not give BLURB's number, or None."""
    if run_metric in (dataset.metric, *dataset.same_metric):
        return None
    return f"scored by {run_metric} here, by {dataset.metric} in BLURB"
