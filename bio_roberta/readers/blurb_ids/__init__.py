"""BLURB's train/dev/test id lists, one ``<task>.json`` per dataset whose release ids could be
obtained from public files (each file's ``source`` says which, at which commit): a converted
split is BLURB's by its ids when they are these (bio_roberta/blurb/split_check.py
check_blurb_split). Datasets without a file here have no id check.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

IDS_DIR = Path(__file__).parent
ID_SPLITS = ("train", "valid", "test")


@lru_cache(maxsize=None)
def blurb_id_lists(task: str) -> Optional[dict[str, tuple[str, ...]]]:
    """split -> BLURB's ids of a registry task, or None when no list of its release is known."""
    path = IDS_DIR / f"{task}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return {name: tuple(record[name]) for name in ID_SPLITS}
