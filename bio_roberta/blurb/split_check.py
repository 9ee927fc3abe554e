"""Whether what a reader read is BLURB's split of a dataset (bio_roberta/blurb/suite.py), and how
it was checked: only content (digests of examples or of their ids measured on public copies of
BLURB's files, bio_roberta/blurb/split_evidence.py; BLURB's id lists in
bio_roberta/readers/blurb_ids) finds it BLURB's; sizes and the reader's own knowledge
(``Split.blurb``) can only find it not BLURB's."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Mapping, Optional

from bio_roberta.blurb.split_evidence import (
    BLURB_DIGESTS,
    BLURB_ID_DIGESTS,
    UNPROVEN,
)
from bio_roberta.blurb.suite import ABSTRACTS, MENTIONS, BlurbDataset
from bio_roberta.readers.blurb_ids import blurb_id_lists
from bio_roberta.readers.source_files import Split, TaggedSentence, TaskData
from bio_roberta.tasks.kinds import MULTILABEL
from bio_roberta_core.tagging import tag_spans

# split_gap's argument when the data manifest carries no blurb_split_check.
NO_CHECK = object()

SPLIT_ORDER = ("train", "valid", "test")
NO_DIGESTS = (None, None, None)


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


def _digest_items(split: Split, by_abstract: bool) -> list[str]:
    """One JSON line per example, without its id (which each layout numbers its own way). By
    abstract (HoC): one line per abstract, its sentences' texts joined by a space in file order
    and their labels ORed, as LinkBERT's process_HOC (scripts/preprocess_blurb.py) turns BLURB's
    sentence rows into its release's records, so BLURB's tsv and LinkBERT's release of it read
    the same."""
    if by_abstract:
        abstracts: dict[str, tuple[list[str], set[str]]] = {}
        for e in split.examples:
            texts, labels = abstracts.setdefault(e.group or e.id, ([], set()))
            texts.append(e.text)
            labels.update(e.labels)
        return [
            json.dumps([" ".join(texts), None, sorted(labels), True])
            for texts, labels in abstracts.values()
        ]
    return [
        json.dumps(
            [list(e.words), list(e.tags)]
            if isinstance(e, TaggedSentence)
            else [e.text, e.text_pair, list(e.labels), e.group is not None]
        )
        for e in split.examples
    ]


def split_digest(split: Split, by_abstract: bool = False) -> str:
    """First 16 hex digits of the sha256 of a split's examples (by_abstract: of its abstracts,
    _digest_items), sorted: equal for the same examples in any layout or order. Nothing else is
    normalised: the same abstracts in other text (BLUE's HoC writes &lt; and drops Greek letters
    where BLURB's keeps them) are other examples."""
    items = sorted(_digest_items(split, by_abstract))
    return hashlib.sha256("\n".join(items).encode("utf-8")).hexdigest()[:16]


def split_digests(data: TaskData) -> dict[str, str]:
    """split -> split_digest of each split a reader read; a multi-label (HoC) task's by
    abstract."""
    by_abstract = data.spec.kind == MULTILABEL
    return {
        name: split_digest(data.splits[name], by_abstract)
        for name in SPLIT_ORDER
        if name in data.splits
    }


def id_digest(split: Split) -> str:
    """First 16 hex digits of the sha256 of a split's example ids, sorted: what proves a split
    BLURB's where BLURB's rule names its examples but no public file gives their text
    (split_evidence.BLURB_ID_DIGESTS)."""
    ids = sorted(example.id for example in split.examples)
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:16]


# How a split was checked (the data manifest's blurb_split_checked_by). Only content (a digest of
# BLURB's files, or BLURB's id lists) can find a split BLURB's; sizes and the reader can only find
# it not BLURB's; equal sizes without a content check are unknown.
BY_CONTENT = "content: the sha256 of the sorted examples, measured on BLURB's files"
BY_IDS = "ids: the examples' release ids against BLURB's id lists (bio_roberta/readers/blurb_ids)"
BY_CONTENT_AND_IDS = (
    "content and ids: the sha256 of the sorted examples of the splits public files give, of the "
    "sorted example ids of those only BLURB's rule gives (bio_roberta/blurb/split_evidence.py)"
)
BY_SIZES = "sizes: not BLURB's, each number's source named in bio_roberta/blurb/suite.py"
BY_READER = "the reader: not BLURB's (a split of its own)"
BY_NOTHING = "none possible: unknown"


@dataclass(frozen=True)
class SplitCheck:
    reason: Optional[str]  # None: BLURB's split; else why not, or why it is unknown
    checked_by: str  # BY_CONTENT, BY_IDS, BY_CONTENT_AND_IDS, BY_SIZES, BY_READER or BY_NOTHING


def identical_splits(data: TaskData) -> list[tuple[str, str]]:
    """Pairs of splits that hold the same examples (a copied file), SPLIT_ORDER order."""
    digests = split_digests(data)
    return [
        (first, second)
        for i, first in enumerate(SPLIT_ORDER)
        for second in SPLIT_ORDER[i + 1 :]
        if digests[first] == digests[second]
    ]


def id_list_gap(
    dataset: BlurbDataset, data: TaskData, lists: Mapping[str, tuple[str, ...]]
) -> Optional[str]:
    """None when each split holds exactly the example ids of `lists` (split -> ids); else one line
    saying how many ids each split lacks and holds besides."""
    gaps = []
    for name in SPLIT_ORDER:
        split = data.splits[name]
        found = {example.id for example in split.examples}
        expected = set(lists[name])
        if found != expected:
            gaps.append(
                f"{name} lacks {len(expected - found)} of BLURB's {len(expected)} ids and holds "
                f"{len(found - expected)} others"
            )
    if not gaps:
        return None
    return f"{dataset.display}: {'; '.join(gaps)} (BLURB's id lists, bio_roberta/readers/blurb_ids)"


def check_blurb_split(dataset: BlurbDataset, data: TaskData) -> SplitCheck:
    """Whether the data read is BLURB's split, and how that was checked. Two splits with the same
    examples are not; a split its reader knows not to be BLURB's is not. Then what
    bio_roberta/blurb/split_evidence.py records decides, split by split: the examples' digest
    (BLURB_DIGESTS), else their ids' (BLURB_ID_DIGESTS, unless the reader placed the examples by
    BLURB's own lists): one split other than BLURB's is not, every split proven is BLURB's. Then
    sizes other than BLURB's are not; else the examples' ids decide where BLURB's id lists are
    known (bio_roberta/readers/blurb_ids) and the reader did not place the examples by them.
    Equal sizes, file names or no check possible tell nothing: unknown (naming the unproven
    splits and the file that would prove them), never BLURB's."""
    copies = identical_splits(data)
    if copies:
        pairs = ", ".join(f"{a} and {b}" for a, b in copies)
        return SplitCheck(f"{dataset.display}: {pairs} hold the same examples", BY_CONTENT)
    known = {name: data.splits[name].blurb for name in SPLIT_ORDER}
    why_not = [
        f"{name} {fact.why_not}"
        for name, fact in known.items()
        if fact is not None and fact.why_not is not None
    ]
    if why_not:
        return SplitCheck(f"{dataset.display}: {'; '.join(why_not)}", BY_READER)
    sizes = check_split_sizes(dataset, data) if dataset.unit is not None else None
    placed_by = {fact.placed_by for fact in known.values() if fact is not None and fact.placed_by}
    content = dict(zip(SPLIT_ORDER, BLURB_DIGESTS.get(dataset.task, NO_DIGESTS)))
    ids = NO_DIGESTS if placed_by else BLURB_ID_DIGESTS.get(dataset.task, NO_DIGESTS)
    by_ids = dict(zip(SPLIT_ORDER, ids))
    measured = [name for name in SPLIT_ORDER if content[name]]
    id_measured = [name for name in SPLIT_ORDER if by_ids[name]]
    unproven = [name for name in SPLIT_ORDER if name not in measured + id_measured]
    checked_by = BY_CONTENT_AND_IDS if id_measured else BY_CONTENT
    found = split_digests(data) if measured else {}
    differ = [name for name in measured if found[name] != content[name]]
    if differ:
        return SplitCheck(
            sizes
            or f"{dataset.display}: {'/'.join(differ)} hold other examples than BLURB's "
            "(same sizes)",
            checked_by,
        )
    differ = [name for name in id_measured if id_digest(data.splits[name]) != by_ids[name]]
    if differ:
        return SplitCheck(
            sizes
            or f"{dataset.display}: {'/'.join(differ)} hold other example ids than BLURB's rule "
            f"gives (same sizes; {dataset.split_source})",
            checked_by,
        )
    if (measured or id_measured) and not unproven:
        return SplitCheck(None, checked_by)
    if sizes is not None:
        return SplitCheck(sizes, BY_SIZES)
    lists = blurb_id_lists(dataset.task)
    if lists is not None and not placed_by:
        return SplitCheck(id_list_gap(dataset, data, lists), BY_IDS)
    if measured or id_measured:
        why = (
            f"{'/'.join(measured + id_measured)} hold BLURB's examples by "
            f"{'content' if measured else 'ids'}, but no public file at hand proves BLURB's "
            f"{'/'.join(unproven)} and sizes cannot"
        )
    elif placed_by:
        why = (
            f"its reader placed the examples by {', '.join(sorted(placed_by))}, so their ids "
            "cannot prove it, and no digest of BLURB's files is at hand"
        )
    elif dataset.unit is not None:
        why = (
            "sizes equal BLURB's, which cannot prove it: no id lists of BLURB's release and no "
            "digest of its files at hand"
        )
    else:
        why = "no sizes to compare, no id lists of BLURB's release, no digest of its files"
    if dataset.task in UNPROVEN:
        why += f"; what would prove it: {UNPROVEN[dataset.task]}"
    return SplitCheck(
        f"{dataset.display}: split unknown ({why}); {dataset.split_source}", BY_NOTHING
    )


def check_split(dataset: BlurbDataset, data: TaskData) -> Optional[str]:
    """None when the data read is BLURB's split; else one line saying why not or why unknown (the
    data manifest's ``blurb_split_check``; check_blurb_split says how it was checked)."""
    return check_blurb_split(dataset, data).reason


def split_gap(dataset: BlurbDataset, check=NO_CHECK) -> Optional[str]:
    """Why the split of our runs is not BLURB's, or None. ``check`` is the data manifest's
    ``blurb_split_check`` (None: the converter found BLURB's split; a string: how it differs);
    without one the split is unknown, never BLURB's."""
    if check is not NO_CHECK:
        return check
    return (
        "split unchecked: no data manifest with a blurb_split_check (convert-task writes one); "
        f"{dataset.split_source}"
    )


# What the report and leaderboard.json call each check (the manifest's blurb_split_checked_by);
# NOT_RECORDED: no data manifest, or one written before convert-task recorded how it checked.
CHECK_NAMES = {
    BY_CONTENT: "content hash",
    BY_IDS: "ids",
    BY_CONTENT_AND_IDS: "content hash + ids",
    BY_READER: "reader",
    BY_SIZES: "sizes",
    BY_NOTHING: "none possible",
}
# The checks that can only find a split not BLURB's: with no reason recorded, unknown.
NEGATIVE_ONLY = (BY_READER, BY_SIZES)
NOT_RECORDED = "not recorded"
# A split's outcome: checked and BLURB's; checked and not BLURB's; unknown (no check possible,
# or none recorded): never BLURB's.
BLURBS, NOT_BLURBS, UNKNOWN = "BLURB's", "not BLURB's", "unknown"


@dataclass(frozen=True)
class SplitStatus:
    """Whether the split a dataset's runs trained on is BLURB's, how that was checked, why not."""

    checked_by: str  # a CHECK_NAMES value, or NOT_RECORDED
    outcome: str  # BLURBS, NOT_BLURBS or UNKNOWN
    reason: Optional[str]  # None for BLURBS; else why not BLURB's, or why unknown

    @property
    def is_blurbs(self) -> bool:
        return self.outcome == BLURBS

    @property
    def text(self) -> str:
        """How it was checked and what it found, e.g. "sizes: not BLURB's"."""
        return f"{self.checked_by}: {self.outcome}"


def split_status(dataset: BlurbDataset, check=NO_CHECK, checked_by=None) -> SplitStatus:
    """The status of a split from its data manifest's ``blurb_split_check`` (NO_CHECK: no manifest,
    or one without it) and ``blurb_split_checked_by`` (None: not recorded). BLURB's only when a
    check was made and found it: no check possible, or none recorded, is unknown, never BLURB's,
    whatever blurb_split_check says."""
    name = CHECK_NAMES.get(checked_by, NOT_RECORDED)
    if check is NO_CHECK:
        return SplitStatus(name, UNKNOWN, split_gap(dataset))
    if checked_by is not None and checked_by not in CHECK_NAMES:
        return SplitStatus(
            NOT_RECORDED,
            UNKNOWN,
            f"{dataset.display}: blurb_split_checked_by {checked_by!r} is no check this "
            "bio-roberta knows; convert the dataset again (bio-roberta convert-task)",
        )
    if checked_by == BY_NOTHING:
        return SplitStatus(name, UNKNOWN, check or f"{dataset.display}: split unchecked")
    if checked_by is None:
        return SplitStatus(
            name,
            UNKNOWN if check is None else NOT_BLURBS,
            check
            or f"{dataset.display}: the data manifest does not say how its split was checked "
            "(written before blurb_split_checked_by); convert the dataset again "
            "(bio-roberta convert-task) to check it",
        )
    if check is None and checked_by in NEGATIVE_ONLY:
        return SplitStatus(
            name,
            UNKNOWN,
            f"{dataset.display}: the data manifest gives no reason from a check by {name}, "
            "which can only find a split not BLURB's: unknown",
        )
    return SplitStatus(name, BLURBS if check is None else NOT_BLURBS, check)


def combined_status(statuses: list[SplitStatus]) -> Optional[SplitStatus]:
    """One status of the runs of a dataset trained on several conversions: BLURB's only when every
    one is, not BLURB's when one is not, else unknown; None for no runs."""
    if not statuses:
        return None
    unique = list(dict.fromkeys(statuses))
    if len(unique) == 1:
        return unique[0]
    outcome = next(
        (o for o in (NOT_BLURBS, UNKNOWN) if any(s.outcome == o for s in unique)), BLURBS
    )
    reasons = sorted({s.reason for s in unique if s.reason})
    checks = " + ".join(dict.fromkeys(s.checked_by for s in unique))
    return SplitStatus(checks, outcome, "; ".join(reasons) or None)
