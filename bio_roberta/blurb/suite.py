"""BLURB's 13 datasets as data, stated once: Gu et al. (2021) Tables 3 and 6 and §4.

Each row gives the dataset's task type and metric (Table 3), the split sizes of BLURB's data,
Table 6's test results of its nine models (x100, as printed), where BLURB's split comes
from and the dataset's folder in LinkBERT's BLURB release. ``check_blurb_split``
(bio_roberta/blurb/split_check.py) says whether what a reader read is BLURB's split and how it
checked, so a report can tell BLURB's split from another one and from an unknown one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from bio_roberta.tasks.paper_models import gu_row

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

# Table 6's "BLURB score" row, as printed, keyed by model.
TABLE6_BLURB_SCORES = gu_row(75.99, 75.76, 76.33, 80.29, 78.80, 78.08, 77.19, 76.19, 81.10)

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
    # Table 6's test results (x100, as printed) keyed by paper model (bio_roberta/tasks/
    # paper_models.py), built by gu_row from the dataset's row as printed
    table6: Mapping[str, float]
    # BLURB's split, and which files give it (LinkBERT's release gives every one); whether the
    # files read do is checked by content (check_blurb_split)
    split_source: str
    # Its name in LinkBERT's BLURB release (scripts/preprocess_blurb.py), whose folder of it is
    # <root>/<linkbert_dir>.
    linkbert_name: str
    # Registry metrics that compute the same number as `metric` (GAD: F1 of its one positive class).
    same_metric: tuple[str, ...] = ()

    @property
    def linkbert_dir(self) -> str:
        """Its folder in LinkBERT's release: tokcls/<name>_hf for the word-tagging types,
        seqcls/<name>_hf for the rest."""
        family = "tokcls" if self.task_type in (NER, PICO) else "seqcls"
        return f"{family}/{self.linkbert_name}_hf"

    def folders(self, root: Path) -> list[Path]:
        """The folders under a BLURB data root that hold this dataset: LinkBERT's
        <root>/<linkbert_dir> and <root>/<task>, those that exist."""
        return [path for path in (root / self.linkbert_dir, root / self.task) if path.is_dir()]


def _ner(task, display, sizes, table6, linkbert_name, note=""):
    return BlurbDataset(
        task,
        display,
        NER,
        "entity_f1",
        sizes,
        MENTIONS,
        table6,
        "Crichton et al.'s split (MTL-Bioinformatics-2016's files), tags cut to B/I/O by BLURB's "
        "data generation" + note,
        linkbert_name,
    )


BLURB_DATASETS = (
    # Where each split size comes from. Mention counts (B tags) measured on the copies of BLURB's
    # files bio_roberta/blurb/split_evidence.py names: NCBI-disease, BC5CDR-chem, BC5CDR-disease
    # (Table 3 prints a dev of 4244, its files hold 4246 by seqeval), BC2GM (all three, equal to
    # Table 3's); JNLPBA: Table 3's, its dev and test measured equal there (its train file is not
    # at hand); ChemProt: Table 3's, no copy of BLURB's files being at hand; HoC, BioASQ, GAD:
    # measured on those copies, equal to Table 3's but GAD's swapped dev/test; DDI: BLURB's
    # release (issue 26: train = the 27,792 pairs of the corpus's Train files, measured on
    # ../shared/data re/DDI-2013, less the 2,496 of its dev files; dev and test also measured on
    # that copy); BIOSSES, PubMedQA: measured here on the files that rebuild BLURB's split
    # (../shared/data sts/BIOSSES, qa/PubMedQA: 64/16/20, 450/50/500), equal to Table 3's.
    _ner(
        "bc5cdr-chem",
        "BC5-chem",
        (5203, 5347, 5385),
        gu_row(89.25, 89.99, 89.43, 92.85, 92.49, 92.51, 90.80, 91.19, 93.33),
        "BC5CDR-chem",
        " (mention counts equal Table 3's)",
    ),
    _ner(
        "bc5cdr-disease",
        "BC5-disease",
        (4182, 4246, 4424),
        gu_row(81.44, 79.92, 80.65, 84.70, 84.54, 84.70, 83.04, 83.69, 85.62),
        "BC5CDR-disease",
    ),
    _ner(
        "ncbi-disease",
        "NCBI-disease",
        (5134, 787, 960),
        gu_row(85.67, 85.87, 86.62, 89.13, 88.10, 88.25, 86.32, 88.04, 87.82),
        "NCBI-disease",
        " (mention counts equal Table 3's)",
    ),
    _ner(
        "bc2gm",
        "BC2GM",
        (15197, 3061, 6325),
        gu_row(80.90, 81.23, 80.90, 83.82, 83.36, 83.36, 81.71, 81.87, 84.52),
        "BC2GM",
    ),
    _ner(
        "jnlpba",
        "JNLPBA",
        (46750, 4551, 8662),
        gu_row(78.63, 78.52, 78.81, 79.35, 79.45, 79.56, 78.59, 78.68, 80.06),
        "JNLPBA",
        " (BLURB's cut of the shared task's Genia4ERtask2.iob2); entity types merged; BioBERT's "
        "own JNLPBA files are another split (32178/8575/6241 mentions, issue 42's count)",
    ),
    BlurbDataset(
        "ebm-pico",
        "EBM PICO",
        PICO,
        "pico_macro_word_f1",
        (339167, 85321, 16364),
        None,
        gu_row(72.34, 71.70, 73.02, 73.18, 73.12, 73.06, 72.06, 72.54, 73.38),
        "EBM-NLP's starting_spans, test = test/gold; train/dev PMIDs from SciBERT's release "
        "(BLURB's indexing/ebmnlp/*_pmid.tsv): SciBERT's files, or EBM-NLP's with those lists, "
        "give BLURB's split, EBM-NLP's alone a dev of ours. Table 3 does not say what its sizes "
        "count: only the reader given BLURB's PMID lists can tell (Split.blurb); SciBERT's or "
        "LinkBERT's files by their names alone are unchecked",
        "ebmnlp",
    ),
    BlurbDataset(
        "chemprot-blurb",
        "ChemProt",
        RELATION_EXTRACTION,
        "micro_f1",
        (18035, 11268, 15745),
        EXAMPLES,
        gu_row(71.86, 71.54, 72.98, 76.14, 75.24, 75.00, 72.04, 71.46, 77.24),
        "BLURB regenerates all three splits from the original ChemProt corpus, expanding "
        "unlabelled pairs to false: BLURB's tsv or LinkBERT's release; not BLUE's tsv (sizes "
        "tell)",
        "chemprot",
    ),
    BlurbDataset(
        "ddi",
        "DDI",
        RELATION_EXTRACTION,
        "micro_f1",
        (25296, 2496, 5716),
        EXAMPLES,
        gu_row(80.04, 79.34, 79.52, 80.88, 81.06, 81.22, 78.20, 77.78, 82.36),
        "original corpus, one example per pair; test = the 191 test files (our ddi_xml reader's "
        "5,716 pairs, the same); train/dev = the 714 Train files by BLURB's own 624/90-file "
        "lists: dev = BLURB's and LinkBERT's release, train = every other Train pair (the corpus "
        "XML holds no dev; Table 3's 22233/5559 is another partition of the same 27,792 Train "
        "pairs, docs/blurb_splits.md)",
        "DDI",
    ),
    BlurbDataset(
        "gad-blurb",
        "GAD",
        RELATION_EXTRACTION,
        "micro_f1",
        (4261, 535, 534),
        EXAMPLES,
        gu_row(77.72, 77.28, 77.72, 80.94, 80.90, 79.66, 78.40, 77.24, 82.34),
        "BioBERT's fold 1: train = its train.tsv rows 1-4261, dev = the other 535, test = its "
        "test.tsv (534); rebuilt (Table 3 prints dev and test sizes swapped, 534/535)",
        "GAD",
        ("binary_f1",),
    ),
    BlurbDataset(
        "biosses",
        "BIOSSES",
        SENTENCE_SIMILARITY,
        "pearson",
        (64, 16, 20),
        EXAMPLES,
        gu_row(82.68, 81.40, 81.25, 89.52, 86.25, 87.15, 91.23, 85.38, 92.30),
        "BLUE's pair numbers, listed in BLURB's preprocessor (bio_roberta/readers/blurb_ids/"
        "biosses.json), which LinkBERT's release keeps as ids; rebuilt from BLUE's 70/16/14 "
        "files, which hold all 100 pairs, by those same numbers (so unproven)",
        "BIOSSES",
    ),
    BlurbDataset(
        "hoc-blurb",
        "HoC",
        DOCUMENT_CLASSIFICATION,
        "hoc_micro_f1",
        (1295, 186, 371),
        ABSTRACTS,
        gu_row(80.20, 80.12, 79.66, 81.54, 80.66, 81.16, 80.74, 80.48, 82.32),
        "BLURB's own split of all 1,852 abstracts (its indexing/HoC/*_pmid.tsv, in no public "
        "repository at hand): BLURB's tsv files (BLUE's format) or LinkBERT's release; BLUE's "
        "tsv (1108/157/315, control abstracts left out) is another",
        "HoC",
    ),
    BlurbDataset(
        "pubmedqa",
        "PubMedQA",
        QUESTION_ANSWERING,
        "accuracy",
        (450, 50, 500),
        EXAMPLES,
        gu_row(51.62, 49.96, 52.84, 60.24, 57.38, 51.40, 49.08, 48.44, 55.84),
        "test = test_ground_truth.json; train/dev = fold 0 of PubMedQA's split_dataset.py "
        "(its PMIDs: bio_roberta/readers/blurb_ids/pubmedqa.json); rebuilt",
        "pubmedqa",
    ),
    BlurbDataset(
        "bioasq",
        "BioASQ",
        QUESTION_ANSWERING,
        "accuracy",
        (670, 75, 140),
        EXAMPLES,
        gu_row(70.36, 74.44, 75.20, 84.14, 78.86, 74.22, 68.50, 68.71, 87.56),
        "Task 7b yes/no: training7b -> train/dev by BLURB's id lists (rebuilt when given, else "
        "dev is ours), test = the five golden batches; LinkBERT's release holds BLURB's",
        "bioasq",
    ),
)
BLURB: dict[str, BlurbDataset] = {dataset.task: dataset for dataset in BLURB_DATASETS}
assert len(BLURB) == 13 and {d.task_type for d in BLURB_DATASETS} == set(TASK_TYPES)


def metric_gap(dataset: BlurbDataset, run_metric: str) -> Optional[str]:
    """Why runs scored by run_metric do not give BLURB's number, or None."""
    if run_metric in (dataset.metric, *dataset.same_metric):
        return None
    return f"scored by {run_metric} here, by {dataset.metric} in BLURB"
