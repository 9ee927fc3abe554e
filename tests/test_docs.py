"""docs/ stays in step with the tree: every file it names exists, every link and anchor resolves,
and nothing in the repository points readers at documents outside it (a clone has no ../shared)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT

PAGES = sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]
REPO_PATH = re.compile(  # not the tail of another repository's path (x/configs/y.yaml)
    r"(?<![\w/.-])((?:bio_roberta|configs|preprocess|scripts|tests|user_dir)/[\w/.-]*\w)"
)
LINK = re.compile(r"\]\((?!https?://)([^)#]*)(?:#([^)]+))?\)")
PLACEHOLDER = re.compile(r"[A-Z]{2,}")  # configs/pretrain/recipe/NAME.yaml
SOURCE_FOLDERS = ("bio_roberta", "configs", "docs", "preprocess", "scripts", "tests", "user_dir")
SOURCE_SUFFIXES = {".py", ".sh", ".yaml", ".md", ".ini", ".txt", ".cfg", ".toml", ""}


def heading_anchors(page) -> set:
    """GitHub's anchors: headings lower-cased, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {
        re.sub(r"[^\w\- ]", "", heading.replace("\\", "").lower()).replace(" ", "-")
        for heading in headings
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_named_files_exist(page):
    named = {match.split("::")[0] for match in REPO_PATH.findall(page.read_text(encoding="utf-8"))}
    missing = [
        path
        for path in sorted(named)
        if not PLACEHOLDER.search(path) and not (REPO_ROOT / path).exists()
    ]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_and_anchors_resolve(page):
    broken = []
    for target, anchor in LINK.findall(page.read_text(encoding="utf-8")):
        linked = (page.parent / target) if target else page
        if not linked.exists() or (anchor and anchor not in heading_anchors(linked)):
            broken.append(f"{target}#{anchor}")
    assert not broken, f"{page.name}: broken links {broken}"


def test_no_pointer_outside_the_repository():
    sources = [path for path in REPO_ROOT.iterdir() if path.is_file()]
    for folder in SOURCE_FOLDERS:  # not data or outputs a checkout may hold (data/, demo-out/)
        sources += (REPO_ROOT / folder).rglob("*")
    sources = [
        path
        for path in sources
        if path.suffix in SOURCE_SUFFIXES and path.resolve() != Path(__file__).resolve()
    ]
    pointing = [
        str(path.relative_to(REPO_ROOT))
        for path in sources
        if path.is_file() and "shared/docs" in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert not pointing, f"point at docs/ instead: {pointing}"


def test_the_readme_install_example_installs_what_training_logs_through():
    """README's install commands name extras setup.py has, tensorboard among them: without it
    every pretraining run warns that TensorBoard is missing and writes no curves for `curves`."""
    from doc_commands import find_command

    declared = set(re.findall(r'^\s+"(\w+)": \[', (REPO_ROOT / "setup.py").read_text(), re.M))
    assert {"hf", "tensorboard", "slurm"} <= declared
    for starts, option in (("source /path", "--extras "), ("make install", "EXTRAS=")):
        command = find_command("README.md", starts)
        extras = set(command.split(option)[1].split()[0].split(","))
        assert "tensorboard" in extras and extras <= declared, command
