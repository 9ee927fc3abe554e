"""The DDI corpus XML (DDI Extraction 2013), converted as BLUE's create_ddi_bert does.

Layout: data_dir is the DDICorpus folder: TRAIN_DIRS and TEST_DIRS hold one <document id=...>
.xml file each, of <sentence text=...> with <entity id charOffset text> and <pair e1 e2 ddi type>.
One example per <pair>, its two entities replaced by @DRUG$ (the first span of a discontinuous
entity; one placeholder when the two overlap), other drugs kept. The corpus has no dev split:
valid = the Train documents whose id hashes into 1 of VALID_ONE_IN (BLUE's dev is ~1/4 of Train).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

from bio_roberta.readers.source_files import (
    BlurbSplit,
    Split,
    TaskFormatError,
    TextExample,
    check_label,
    in_valid_slice,
)
from bio_roberta.tasks.spec import TaskSpec

logger = logging.getLogger(__name__)

VALID_ONE_IN = 4
PLACEHOLDER = "@DRUG$"
TRAIN_DIRS = ("Train/DrugBank", "Train/MedLine")
TEST_DIRS = (
    "Test/Test for DDI Extraction task/DrugBank",
    "Test/Test for DDI Extraction task/MedLine",
)

# The files `--data` holds, as docs/data.md states them (bio_roberta/report/data_sources.py).
LAYOUT = (
    "the DDI corpus XML: `Train/DrugBank`, `Train/MedLine`, `Test/Test for DDI Extraction "
    "task/{DrugBank,MedLine}`; one example per `<pair>`, its two drugs replaced by `@DRUG$` as "
    "BLUE does; valid is 1 in 4 Train documents by the hash of their id"
)
OFFSET = re.compile(r"^(\d+)-(\d+)")


def _ddi_document_examples(
    spec: TaskSpec, path: Path, counts: Counter
) -> tuple[str, list[TextExample]]:
    from lxml import etree

    try:
        document = etree.parse(str(path)).getroot()
    except etree.XMLSyntaxError as error:
        raise TaskFormatError(f"{path}:{error.lineno}: not well-formed XML ({error.msg})") from None
    if document.tag != "document" or not document.get("id"):
        raise TaskFormatError(
            f"{path}:{document.sourceline}: expected <document id=...>, found <{document.tag}>"
        )
    examples = []
    for sentence in document.iter("sentence"):
        counts["sentences"] += 1
        text = sentence.get("text")
        if text is None:
            raise TaskFormatError(
                f"{path}:{sentence.sourceline}: <sentence> without a text attribute"
            )
        spans = {}
        for entity in sentence.iter("entity"):
            where = f"{path}:{entity.sourceline}"
            match = OFFSET.match(entity.get("charOffset", ""))
            if not match:
                raise TaskFormatError(
                    f"{where}: charOffset {entity.get('charOffset')!r} is not start-end"
                )
            start, end = int(match.group(1)), int(match.group(2)) + 1
            if end > len(text) or start >= end:
                raise TaskFormatError(
                    f"{where}: charOffset {start}-{end - 1} outside the "
                    f"sentence ({len(text)} chars)"
                )
            if ";" not in entity.get("charOffset") and text[start:end] != entity.get("text"):
                raise TaskFormatError(
                    f"{where}: charOffset gives {text[start:end]!r} but the entity text "
                    f"is {entity.get('text')!r}"
                )
            spans[entity.get("id")] = (start, end)
        for pair in sentence.iter("pair"):
            where = f"{path}:{pair.sourceline}"
            counts["pairs"] += 1
            if pair.get("e1") not in spans or pair.get("e2") not in spans:
                raise TaskFormatError(
                    f"{where}: pair {pair.get('id')} names an entity not in its sentence"
                )
            if pair.get("ddi") == "true":
                if not pair.get("type"):
                    counts["skipped_true_pair_without_type"] += 1
                    logger.warning(
                        "%s: pair %s has ddi=true but no type; skipped", where, pair.get("id")
                    )
                    continue
                label = f"DDI-{pair.get('type')}"
            elif pair.get("ddi") == "false":
                label = spec.negative_label
            else:
                raise TaskFormatError(f"{where}: ddi={pair.get('ddi')!r}, expected true or false")
            (s1, e1), (s2, e2) = sorted((spans[pair.get("e1")], spans[pair.get("e2")]))
            if s2 < e1:
                counts["pairs_overlapping"] += 1
                replaced = text[:s1] + PLACEHOLDER + text[max(e1, e2) :]
            else:
                replaced = text[:s1] + PLACEHOLDER + text[e1:s2] + PLACEHOLDER + text[e2:]
            examples.append(
                TextExample(
                    pair.get("id"),
                    replaced,
                    (check_label(spec, label, where),),
                    group=document.get("id"),
                )
            )
    return document.get("id"), examples


def read(spec: TaskSpec, data_dir: Path) -> dict[str, Split]:
    """Read the DDI corpus.

    Args:
        spec: the registry entry; its labels are DDI-<type> and its negative label.
        data_dir: the DDICorpus folder (Train/ and Test/ as released).

    Returns:
        train / valid / test Splits of TextExample, one per <pair>, id the pair's id, group its
        document's id; counts of sentences, pairs, overlapping pairs and documents.

    Raises:
        TaskFormatError: a folder without .xml files, XML not well-formed or not a <document>,
            an entity offset outside its sentence or not matching its text, a pair naming an
            entity not in its sentence, a ddi attribute not true or false.
    """
    ours = (
        f"ours, 1 in {VALID_ONE_IN} Train documents by id hash, not BLURB's dev documents (whose "
        "list the corpus does not hold)"
    )
    train = Split(
        "train",
        derivation=f"{' + '.join(TRAIN_DIRS)} minus valid documents",
        blurb=BlurbSplit(f"is Train less a dev of ours: {ours}"),
    )
    valid = Split(
        "valid",
        derivation=(
            f"Train documents whose id's sha256 is 0 mod {VALID_ONE_IN} "
            "(the corpus has no dev split)"
        ),
        blurb=BlurbSplit(f"is {ours}"),
    )
    test = Split("test", derivation=" + ".join(TEST_DIRS))
    for dirs, is_train in ((TRAIN_DIRS, True), (TEST_DIRS, False)):
        for sub in dirs:
            folder = data_dir / sub
            files = sorted(folder.glob("*.xml")) if folder.is_dir() else []
            if not files:
                raise TaskFormatError(
                    f"{folder}: no DDI corpus .xml files; pass the DDICorpus folder"
                )
            for path in files:
                counts = Counter()
                doc_id, examples = _ddi_document_examples(spec, path, counts)
                split = (
                    test
                    if not is_train
                    else valid
                    if in_valid_slice(doc_id, VALID_ONE_IN)
                    else train
                )
                split.sources.append(path)
                split.counts.update(counts)
                split.counts["documents"] += 1
                for example in examples:
                    split.add(example)
    return {"train": train, "valid": valid, "test": test}
