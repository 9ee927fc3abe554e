"""EBM-PICO: the words of trial abstracts tagged with Participants, Interventions, Outcomes.

Layouts (one of them in data_dir): SciBERT's release train.txt / dev.txt / test.txt ("token POS O
tag" lines, -DOCSTART- (PMID) per abstract), or EBM-NLP 2.0's documents/<PMID>.tokens with
annotations/aggregated/starting_spans/<element>/{train,test/gold}/<PMID>.AGGREGATED.ann (0/1 per
token), whose train/dev split comes from BLURB's id lists when given
(bio_roberta/readers/blurb_id_lists.py).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

from bio_roberta.readers.blurb_id_lists import pooled_layout, split_pool
from bio_roberta.readers.source_files import (
    SentenceLines,
    Split,
    TaggedSentence,
    TaskFormatError,
    check_label,
    numbered_lines,
    require_file,
)
from bio_roberta.tasks.spec import TaskSpec
from bio_roberta_core.tagging import PICO_ELEMENTS, PICO_SEPARATOR, pico_tag

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "EBM-NLP's `documents/` + `annotations/aggregated/starting_spans/`, or SciBERT's "
    "`train.txt`/`dev.txt`/`test.txt`"
)

logger = logging.getLogger(__name__)

# SciBERT's release (data/pico/ebmnlp): "token POS O tag" lines, -DOCSTART- (PMID) per abstract.
SCIBERT_PICO_FILES = {"train": "train.txt", "valid": "dev.txt", "test": "test.txt"}
DOCSTART = re.compile(r"-DOCSTART- \((\d+)\)")
# EBM-NLP 2.0 (ebm_nlp_2_00): documents/<PMID>.tokens and, per element, 0/1 per token in
# annotations/aggregated/starting_spans/<element>/{train,test/gold}/<PMID>.AGGREGATED.ann.
EBM_NLP_DOCUMENTS = "documents"
EBM_NLP_SPANS = Path("annotations", "aggregated", "starting_spans")
EBM_NLP_ELEMENTS = dict(zip(("participants", "interventions", "outcomes"), PICO_ELEMENTS))
EBM_NLP_PARTS = {"train": "train", "test": Path("test", "gold")}
SENTENCE_END = "."


def _read_scibert_pico_file(spec: TaskSpec, path: Path, split: Split) -> None:
    sentence, document = SentenceLines(path, split), None
    documents = set()

    for number, line in numbered_lines(path):
        split.counts["lines"] += 1
        where = f"{path}:{number}"
        if not line.strip():
            sentence.end()
            continue
        if line.startswith("-DOCSTART-"):
            match = DOCSTART.fullmatch(line.strip())
            if not match:
                raise TaskFormatError(f"{where}: expected '-DOCSTART- (PMID)', found {line[:60]!r}")
            sentence.end()
            document = match.group(1)
            if document in documents:
                raise TaskFormatError(f"{where}: abstract {document} appears twice in {path.name}")
            documents.add(document)
            continue
        if document is None:
            raise TaskFormatError(f"{where}: a token before the first '-DOCSTART- (PMID)' line")
        columns = line.split(" ")
        if len(columns) != 4 or not all(columns):
            raise TaskFormatError(
                f"{where}: expected 4 space-separated columns (token, POS, O, "
                f"tag), found {line[:60]!r}"
            )
        sentence.add(number, columns[0], check_label(spec, columns[3], where))
    sentence.end()
    split.counts["documents"] = len(documents)


def _ebm_nlp_labels(path: Path, tokens: int) -> list[bool]:
    labels = " ".join(line for _, line in numbered_lines(path)).split()
    if len(labels) != tokens:
        raise TaskFormatError(f"{path}: {len(labels)} labels for the document's {tokens} tokens")
    for position, label in enumerate(labels, 1):
        if label not in ("0", "1"):
            raise TaskFormatError(
                f"{path}: token {position}: label {label!r}; starting_spans hold 0 or 1"
            )
    return [label == "1" for label in labels]


def _ebm_nlp_documents(data_dir: Path, part: str, counts: Counter) -> dict[str, tuple]:
    """PMID -> (its sentences, its files) for the documents annotated in one part (train,
    test/gold), each word tagged with every element whose aggregated span covers it."""
    annotations: dict[str, dict[str, Path]] = {}
    for folder, element in EBM_NLP_ELEMENTS.items():
        element_dir = data_dir / EBM_NLP_SPANS / folder / EBM_NLP_PARTS[part]
        if not element_dir.is_dir():
            raise TaskFormatError(
                f"{element_dir}: missing; EBM-NLP holds {EBM_NLP_SPANS}/"
                f"<element>/{EBM_NLP_PARTS[part]}/<PMID>.AGGREGATED.ann for each "
                "element"
            )
        for path in sorted(element_dir.glob("*.ann")):
            annotations.setdefault(path.name.split(".")[0], {})[element] = path
    documents = {}
    for pmid in sorted(annotations):
        token_path = require_file(
            data_dir / EBM_NLP_DOCUMENTS / f"{pmid}.tokens",
            f"the tokens of annotated document {pmid}",
        )
        words = " ".join(line for _, line in numbered_lines(token_path)).split()
        covered = {
            element: _ebm_nlp_labels(path, len(words))
            for element, path in annotations[pmid].items()
        }
        for element in PICO_ELEMENTS:
            if element not in covered:
                counts[f"documents_without_{element}"] += 1
                logger.warning("%s %s: no %s annotation; its words carry none", part, pmid, element)
        tags = [pico_tag(e for e in covered if covered[e][i]) for i in range(len(words))]
        counts["words_in_several_elements"] += sum(1 for tag in tags if PICO_SEPARATOR in tag)
        sentences, start = [], 0
        for i, word in enumerate(words):
            if word == SENTENCE_END or i == len(words) - 1:
                sentences.append(
                    TaggedSentence(
                        f"{pmid}:{start + 1}",
                        tuple(words[start : i + 1]),
                        tuple(tags[start : i + 1]),
                    )
                )
                start = i + 1
        documents[pmid] = (sentences, (token_path, *annotations[pmid].values()))
    return documents


def _read_ebm_nlp(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    return split_pool(
        spec,
        data_dir,
        "pmid",
        "documents",
        lambda part, counts: _ebm_nlp_documents(data_dir, part, counts),
        {"train": "starting_spans train documents", "test": "starting_spans test/gold documents"},
    )


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """EBM-PICO: the words of trial abstracts tagged with Participants, Interventions, Outcomes.

    Overlaps (Gu et al. §4.2: about 3% of PIO words lie in two elements): from the original
    EBM-NLP files a word keeps every element whose span covers it (tag 'I-PAR+I-INT'), as BLURB
    means to ("we instead use the original dataset"), and the model predicts a set per word
    (docs/finetune.md). SciBERT's release already removed overlapping words from the larger span,
    so its words carry one tag: read as given, its gold differs from BLURB's on those words.

    EBM-NLP: documents/<PMID>.tokens + starting_spans aggregated annotations, split into
    sentences after each '.' token (as EBM-NLP's and BLURB's preprocessing do); test = test/gold.
    SciBERT: train.txt / dev.txt / test.txt as released.

    Args:
        spec: the registry entry; its labels are the PICO tags (and their combinations).
        data_dir: the folder holding one of the two layouts (and BLURB's id lists, if given).

    Returns:
        train / valid / test Splits of TaggedSentence, id "<file or PMID>:<first word's line or
        position>".

    Raises:
        TaskFormatError: both layouts or neither, a line or annotation not as above, a document
            twice, an id list naming a document the files lack.
    """
    scibert = [
        data_dir / name for name in SCIBERT_PICO_FILES.values() if (data_dir / name).is_file()
    ]
    if pooled_layout(
        data_dir,
        "EBM-PICO",
        scibert,
        len(SCIBERT_PICO_FILES),
        files_layout=f"SciBERT's {'/'.join(SCIBERT_PICO_FILES.values())} ('token POS O tag' lines)",
        pool_layout=f"EBM-NLP's {EBM_NLP_DOCUMENTS}/ and {EBM_NLP_SPANS}/",
        pooled=(data_dir / EBM_NLP_DOCUMENTS).is_dir() or (data_dir / EBM_NLP_SPANS).is_dir(),
    ):
        return _read_ebm_nlp(spec, data_dir)
    splits = {}
    for name, file_name in SCIBERT_PICO_FILES.items():
        path = data_dir / file_name
        # SciBERT's PMIDs are BLURB's train/dev lists, but file names cannot tell these files
        # are SciBERT's (blurb stays unknown)
        splits[name] = Split(name, sources=[path], derivation=f"SciBERT's {file_name}")
        _read_scibert_pico_file(spec, path, splits[name])
    return splits
