"""The `bio-roberta` command: one subcommand per module in bio_roberta/commands/.

A command module is named after its subcommand (parse_pubmed.py -> `parse-pubmed`), keeps its
heavy imports inside `add_arguments` and `run`, and defines:
    HELP: str                                  one line for `bio-roberta --help`
    add_arguments(parser: ArgumentParser)      its options
    run(args: Namespace) -> int                exit status
Only the subcommand that runs adds its options, so a command imports only what it uses (`sweep` on a
training machine without the parse stage's blingfire, for one).

What the user must fix (a bad option, a missing or malformed input, a refused output dir) a command
raises as a BioRobertaError (bio_roberta_core/errors.py), whatever module it comes from: `main`
prints it as one line, `bio-roberta <command>: error: <message>`, and exits with status 2.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import pkgutil
import sys
import textwrap

import bio_roberta.commands as commands_package
from bio_roberta import __version__
from bio_roberta.errors import UsageError
from bio_roberta_core.errors import BioRobertaError

__all__ = ["UsageError", "build_parser", "console_main", "main"]

# What to do when a command meets a missing package; the route itself is scripts/install.sh.
INSTALL_HINTS = {
    "fairseq": "install it without replacing your torch: scripts/install.sh (README: Install)",
    "transformers": "install the hf extra: scripts/install.sh --extras hf (README: Install)",
}
# a missing module of ours is a bug to show, not a package to install
OUR_PACKAGES = ("bio_roberta", "bio_roberta_core", "preprocess", "user_dir")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" only where there is a default to state and the help does not
    already say it: no "(default: None)" on required or optional-without-default options. Lines
    break between words only, never inside a task name (i2b2-2010-re)."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )

    def _get_help_string(self, action):
        nothing = action.default is None or action.default is False or action.default == []
        if nothing or action.default is argparse.SUPPRESS or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def discover_commands() -> dict[str, str]:
    """Subcommand name -> module name, from the modules in bio_roberta/commands/."""
    return {
        info.name.replace("_", "-"): f"{commands_package.__name__}.{info.name}"
        for info in pkgutil.iter_modules(commands_package.__path__)
        if not info.name.startswith("_")
    }


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, with the options of `command` only (of all when None)."""
    parser = argparse.ArgumentParser(
        prog="bio-roberta",
        description="RoBERTa-style biomedical and clinical language models on fairseq.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="debug logging; finetune, sweep and blurb-suite also print their Hydra jobs' own "
        "output (else written to RESULTS/hydra/<command>-<time>.log)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in sorted(discover_commands().items()):
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(
            name,
            help=module.HELP,
            description=module.__doc__ or module.HELP,
            formatter_class=HelpFormatter,
        )
        if command in (None, name):
            module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def override_hint(unknown: list[str], argv: list[str]) -> str:
    """What to write instead of a hyperparameter given as an option (--lr 3e-5, among argv): the
    fine-tuning commands take hyperparameters as Hydra overrides (hparams.lr=3e-5)."""
    import dataclasses

    from bio_roberta.tasks.spec import Hyperparameters

    fields = {field.name for field in dataclasses.fields(Hyperparameters)}
    for arg in unknown:
        name, _, value = arg.removeprefix("--").partition("=")
        name = name.replace("-", "_")
        if arg.startswith("--") and name in fields:
            after = argv[argv.index(arg) + 1 :]
            if not value and after and not after[0].startswith("-") and "=" not in after[0]:
                value = after[0]
            return (
                f"; a hyperparameter is a Hydra override after the options: "
                f"hparams.{name}={value or 'VALUE'}"
            )
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # the subcommand is the first argument that is no option: bio-roberta's own options take no
    # values
    command = next((arg for arg in argv if not arg.startswith("-")), "")
    parser = build_parser(command)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{override_hint(unknown, argv)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        stream=sys.stderr,
    )
    # fairseq announces an optional speech dependency (tensorboardX) on every import.
    logging.getLogger("fairseq.tasks.text_to_speech").setLevel(logging.WARNING)
    try:
        return args.run(args) or 0
    except BioRobertaError as error:  # the user's to fix: one line, no traceback
        print(f"bio-roberta {args.command}: error: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:
        package = (error.name or "").partition(".")[0]
        if package in OUR_PACKAGES:
            raise
        hint = INSTALL_HINTS.get(package, f"install it into {sys.prefix}")
        print(
            f"bio-roberta {args.command}: error: needs the Python package {package!r}, which is "
            f"not installed here; {hint}",
            file=sys.stderr,
        )
        return 2


def console_main() -> None:
    """The `bio-roberta` process: main, then exit with its status. Every object left is frozen
    first (gc.freeze), out of reach of the garbage collections of the interpreter's teardown,
    which otherwise go through all that torch and fairseq made: 0.6 s of every command that
    imported them (measured on the 2-core CPU). Their memory goes back with the process; files,
    logs and atexit handlers end as they would."""
    status = main()
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    console_main()
