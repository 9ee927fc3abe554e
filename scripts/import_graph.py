#!/usr/bin/env python
"""Print which of our packages imports which (with the importing modules and what they import),
the imports that break the layering (a package may import only packages of a lower layer, never
one of its own layer or above; the same inside bio_roberta for the sub-packages of
SUBPACKAGE_LAYERS) and the modules that import each other. Exit status 1 when there is either;
tests/test_import_graph.py fails on them too.

    python scripts/import_graph.py [REPO]
"""

import ast
import sys
from collections import defaultdict
from pathlib import Path

# bio_roberta_core imports nothing of ours; preprocess and user_dir build on it and not on each
# other; bio_roberta (commands, registry, sweeps, report, export) is on top.
LAYERS = {"bio_roberta_core": 0, "preprocess": 1, "user_dir": 1, "bio_roberta": 2}
# Inside bio_roberta: the task declarations (with their kinds' prediction files), the readers of
# their source files, BLURB's suite and score, the report (whose BLURB rows blurb/leaderboard.py
# takes without importing it), the conversion into finetune-bin and pretraining's launch, the
# predictions of a fine-tuned model, a whole BLURB run; the rest of bio_roberta (commands,
# sweeps, export) may import any of them.
SUBPACKAGE_LAYERS = {
    "bio_roberta.tasks": 0,
    "bio_roberta.readers": 1,
    "bio_roberta.blurb": 2,
    "bio_roberta.report": 3,
    "bio_roberta.conversion": 4,
    "bio_roberta.pretraining": 4,
    "bio_roberta.prediction": 5,
    "bio_roberta.blurb_run": 6,
}


def our_modules(repo: Path) -> dict[str, Path]:
    """Module name -> file of every module of our packages (a package's __init__ as the package)."""
    return {
        ".".join(path.relative_to(repo).with_suffix("").parts).removesuffix(".__init__"): path
        for package in LAYERS
        for path in sorted((repo / package).rglob("*.py"))
    }


def imported_modules(path: Path, module: str, modules) -> set[str]:
    """Every module the file of `module` imports, at its top or inside functions: ours by their
    module name (`from a import b` is a.b where that is a module), others by their top package."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            levels_up = package.split(".")[: len(package.split(".")) - node.level + 1]
            parts = levels_up if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {name if name.split(".")[0] in LAYERS else name.split(".")[0] for name in names}


def package_of(module: str, layers: dict[str, int]):
    """The package of `layers` that holds module, or None."""
    return next(
        (package for package in layers if module == package or module.startswith(package + ".")),
        None,
    )


def package_edges(repo: Path, layers=LAYERS) -> dict[tuple[str, str], dict[str, set[str]]]:
    """(importing package, imported package) -> {importing module: the modules it imports there},
    for the packages of `layers`."""
    modules = our_modules(repo)
    edges = defaultdict(lambda: defaultdict(set))
    for module, path in modules.items():
        source = package_of(module, layers)
        for name in imported_modules(path, module, modules):
            target = package_of(name, layers)
            if source and target and target != source:
                edges[source, target][module].add(name)
    return edges


def layering_violations(edges, layers=LAYERS) -> list[tuple[str, str]]:
    """The (importing, imported) package pairs that go up or sideways."""
    return [pair for pair in sorted(edges) if layers[pair[1]] >= layers[pair[0]]]


def module_cycles(repo: Path) -> list[list[str]]:
    """Groups of our modules that import each other, directly or through others."""
    modules = our_modules(repo)
    graph = {
        module: set(imported_modules(path, module, modules)) & set(modules) - {module}
        for module, path in modules.items()
    }
    reach = {}
    for module in graph:
        seen, todo = set(), list(graph[module])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
        reach[module] = seen
    groups = {tuple(sorted(n for n in reach[m] if m in reach[n])) for m in graph if m in reach[m]}
    return [list(group) for group in sorted(groups)]


def main(repo: Path) -> int:
    violations = []
    for layers in (LAYERS, SUBPACKAGE_LAYERS):
        edges = package_edges(repo, layers)
        violations += layering_violations(edges, layers)
        for pair in sorted(edges):
            note = "   NOT ALLOWED (up or sideways)" if pair in violations else ""
            print(f"{pair[0]} -> {pair[1]}{note}")
            for module, names in sorted(edges[pair].items()):
                print(f"    {module}: {', '.join(sorted(names))}")
    cycles = module_cycles(repo)
    for group in cycles:
        print(f"NOT ALLOWED: modules that import each other: {', '.join(group)}")
    return 1 if violations or cycles else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])))
