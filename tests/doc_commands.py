"""The commands README.md and docs/*.md show: every ```bash block, its `\\`-continued lines joined
and its comments dropped, one shell command per entry, as a reader would paste it."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)


def page_commands(page: Path) -> list[str]:
    """The commands of one page's bash blocks, in order."""
    commands = []
    for block in BLOCK.findall(page.read_text(encoding="utf-8")):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.sub(r"(^|\s)#.*$", "", line).strip()
            if command:
                commands.append(command)
    return commands


def documented_commands() -> dict[str, list[str]]:
    """Page name (README.md, docs/NAME.md) -> its commands."""
    return {str(page.relative_to(REPO_ROOT)): page_commands(page) for page in PAGES}


def find_command(page: str, starts: str) -> str:
    """The one command of `page` that starts with `starts`."""
    (command,) = [c for c in documented_commands()[page] if c.startswith(starts)]
    return command
