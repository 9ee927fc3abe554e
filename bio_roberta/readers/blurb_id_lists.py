"""BLURB's train/dev/test id lists (its data_generation/indexing/<task>/ files), shared by the
readers whose sources come as a pool of documents or questions keyed by id (BioASQ, EBM-NLP).

Layout: train_<kind>.tsv, dev_<kind>.tsv, test_<kind>.tsv beside the data, each one line of
comma-separated ids. Given them, each split holds the ids listed (whether those are BLURB's lists
only BLURB's own, bio_roberta/readers/blurb_ids, could tell); else dev is a deterministic 1 in
VALID_ONE_IN of the training pool and the splits say they are not BLURB's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable, Optional

from bio_roberta.readers.source_files import (
    SPLITS,
    BlurbSplit,
    Split,
    TaskFormatError,
    in_valid_slice,
    numbered_lines,
)
from bio_roberta.tasks.spec import TaskSpec

# Without BLURB's id lists, 1 in N training documents / questions goes to valid.
VALID_ONE_IN = 10
# BLURB's id lists (its data_generation/indexing/<task>/): one line of comma-separated ids.
BLURB_INDEX_FILES = {"train": "train_{}.tsv", "valid": "dev_{}.tsv", "test": "test_{}.tsv"}


def index_lists(data_dir: Path, kind: str) -> Optional[dict[str, list[str]]]:
    """BLURB's train/dev/test id lists in data_dir (all three, or None when none is there)."""
    paths = {split: data_dir / name.format(kind) for split, name in BLURB_INDEX_FILES.items()}
    present = [path for path in paths.values() if path.is_file()]
    if not present:
        return None
    if len(present) != len(paths):
        missing = ", ".join(path.name for path in paths.values() if not path.is_file())
        beside = ", ".join(path.name for path in present)
        raise TaskFormatError(
            f"{data_dir}: BLURB's id lists come as three files; {missing} missing beside {beside}"
        )
    lists, seen = {}, {}
    for split, path in paths.items():
        ids = []
        for number, line in numbered_lines(path):
            for item in line.split(","):
                item = item.strip()
                if not item:
                    continue
                if item in seen:
                    raise TaskFormatError(
                        f"{path}:{number}: id {item} already listed in {seen[item]}"
                    )
                seen[item] = f"{path.name}:{number}"
                ids.append(item)
        if not ids:
            raise TaskFormatError(f"{path}: no ids; BLURB's list holds comma-separated ids")
        lists[split] = ids
    return lists


def pooled_layout(
    data_dir: Path,
    task: str,
    files: list[Path],
    wanted: int,
    *,
    files_layout: str,
    pool_layout: str,
    pooled: bool,
) -> bool:
    """Whether data_dir holds a task's pooled layout (True: `pooled`, its folders are there) rather
    than all `wanted` split files of its other layout (False: `files`, those found); an error
    naming both layouts where it holds both, or neither whole."""
    names = ", ".join(path.name for path in files)
    if files and pooled:
        raise TaskFormatError(
            f"{data_dir}: holds both {files_layout}: {names}, and {pool_layout}; keep one layout"
        )
    if pooled:
        return True
    if len(files) != wanted:
        found = f"; found only {names}" if files else ""
        raise TaskFormatError(
            f"{data_dir}: no {task} files in a known layout: expected {files_layout}, or "
            f"{pool_layout}{found}"
        )
    return False


def split_pool(
    spec: TaskSpec,
    data_dir: Path,
    kind: str,
    unit: str,
    read_pool: Callable[[str, Counter], dict[str, tuple]],
    what: dict[str, str],
) -> dict[str, Split]:
    """Splits of documents or questions keyed by id, each ([examples], (source files)), from the
    pools read_pool("train" / "test", that part's counts) reads.

    With BLURB's id lists (BLURB_INDEX_FILES of `kind`) in data_dir, each split holds the ids
    listed (a test id takes its test-pool version); else test = the test pool, and
    valid = the train pool's ids that in_valid_slice picks, those also in the test pool left out:
    train and valid are not BLURB's.
    """
    counts = {"train": Counter(), "test": Counter()}
    train_pool, test_pool = (read_pool(part, counts[part]) for part in ("train", "test"))
    lists = index_lists(data_dir, kind)
    if lists is None:
        index_files = ", ".join(name.format(kind) for name in BLURB_INDEX_FILES.values())
        not_given = f"BLURB's id lists ({index_files}) not given beside the data"
        blurb = {
            "train": BlurbSplit(f"is {what['train']} less our dev, not BLURB's ({not_given})"),
            "valid": BlurbSplit(
                f"is ours, 1 in {VALID_ONE_IN} of {what['train']} by id hash ({not_given})"
            ),
            "test": None,
        }
        in_test = set(train_pool) & set(test_pool)
        counts["train"][f"skipped_{unit}_also_in_test"] = len(in_test)
        pool = [item for item in train_pool if item not in in_test]
        members = {
            "train": [i for i in pool if not in_valid_slice(i, VALID_ONE_IN)],
            "valid": [i for i in pool if in_valid_slice(i, VALID_ONE_IN)],
            "test": list(test_pool),
        }
        derivations = {
            "train": f"{what['train']} minus valid (BLURB's id lists not given)",
            "valid": f"{what['train']} whose id's sha256 is 0 mod {VALID_ONE_IN}: not BLURB's dev, "
            "whose id lists were not given",
            "test": what["test"],
        }
    else:
        members = lists
        derivations = {name: f"BLURB's {BLURB_INDEX_FILES[name].format(kind)}" for name in SPLITS}
        blurb = dict.fromkeys(SPLITS)
    splits = {}
    for name in SPLITS:
        pools = (test_pool, train_pool) if name == "test" else (train_pool, test_pool)
        split = Split(name, derivation=derivations[name], blurb=blurb[name])
        sources = set()
        for item in members[name]:
            found = next((pool[item] for pool in pools if item in pool), None)
            if found is None:
                raise TaskFormatError(
                    f"{data_dir}: {spec.name} {name} lists {unit} {item}, which "
                    "the files do not hold"
                )
            examples, paths = found
            for example in examples:
                split.add(example)
            sources.update(paths)
            split.counts[unit] += 1
        split.sources = sorted(sources)
        split.counts.update(counts.get(name, Counter()))
        splits[name] = split
    if lists is not None:
        listed = {item for ids in lists.values() for item in ids}
        unlisted = (set(train_pool) | set(test_pool)) - listed
        splits["train"].counts[f"skipped_{unit}_not_listed"] = len(unlisted)
    return splits
