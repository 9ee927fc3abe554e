"""Every subcommand's --help reads clean: each option explained, no "(default: None)", no default
stated twice, no internal names of the code, no path broken by the text wrapping; `bio-roberta
--version` and `python -m bio_roberta` work; the command's process ends with what is left out of
the teardown's garbage collections."""

from __future__ import annotations

import argparse
import gc
import re
import subprocess
import sys

import pytest

from bio_roberta import cli
from bio_roberta.cli import build_parser, discover_commands, main
from conftest import REPO_ROOT

COMMANDS = sorted(discover_commands())
# DEFAULT_SEEDS, X.y; not $MICRO_BATCH, an environment variable the user sets
INTERNAL_NAME = re.compile(r"(?<!\$)\b[A-Z]+_[A-Z_]+\b|\b[A-Z][a-z]+[A-Z]\w*\.\w+")
BROKEN_PATH = re.compile(r"\w/ \w")  # bio_roberta/configs/ finetune/sweep.yaml


def subcommand_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_states_each_option_once_without_noise(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "(default: None)" not in text
    assert not BROKEN_PATH.findall(text), BROKEN_PATH.findall(text)
    parser = subcommand_parser(command)
    formatter = parser._get_formatter()
    prose = [parser.description]
    for action in parser._actions:
        assert action.help, f"{command} {action.option_strings or action.dest}: no help"
        prose.append(formatter._expand_help(action))
        assert prose[-1].count("default") <= 1, f"{command}: {prose[-1]}"
    internal = INTERNAL_NAME.findall(" ".join(prose))
    assert not internal, f"{command} --help names code: {internal}"


def test_version_and_python_m():
    version = subprocess.run(
        [sys.executable, "-m", "bio_roberta", "--version"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    assert version.returncode == 0 and version.stdout.startswith("bio-roberta 0."), version
    listed = subprocess.run(
        [sys.executable, "-m", "bio_roberta", "--help"], capture_output=True, text=True
    )
    assert listed.returncode == 0 and all(command in listed.stdout for command in COMMANDS)


def test_the_command_exits_with_its_status_and_every_object_frozen(monkeypatch):
    monkeypatch.setattr(cli, "main", lambda: 3)
    try:
        with pytest.raises(SystemExit) as exit:
            cli.console_main()
        assert exit.value.code == 3
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_convert_task_help_lists_every_task(capsys):
    from bio_roberta.tasks.registry import TASKS

    with pytest.raises(SystemExit):
        main(["convert-task", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(re.search(rf"\b{re.escape(name)}\b", text) for name in TASKS)
