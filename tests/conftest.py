"""Fixtures shared by the whole suite."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "sample"
# Real public data lives beside the checkout, never in it; tests that need it skip without it.
SHARED_DATA = Path(os.environ.get("BIO_ROBERTA_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
USER_DIR = REPO_ROOT / "user_dir"


def shared_data_path(*parts: str) -> Path:
    """A path under ../shared/data, skipping the calling test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


@pytest.fixture
def shared_data():
    return shared_data_path
