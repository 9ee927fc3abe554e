#!/usr/bin/env python
"""Print which of our packages imports which (with the importing modules), and the imports that
break the layering: a package may import only packages of a lower layer, never one of its own
layer or above. tests/test_import_graph.py fails on any such import.

    python scripts/import_graph.py [REPO]
"""
import ast
import sys
from collections import defaultdict
from pathlib import Path

# bio_roberta_core imports nothing of ours; preprocess and user_dir build on it and not on each
# other; bio_roberta (commands, registry, sweeps, report, export) is on top.
LAYERS = {"bio_roberta_core": 0, "preprocess": 1, "user_dir": 1, "bio_roberta": 2}


def imported_names(path: Path, module: str) -> set[str]:
    """Every module a file imports, at its top or inside functions (absolute names)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = module.split(".")[: -node.level] if node.level else []
            names.add(".".join(base + ([node.module] if node.module else [])))
    return names


def package_edges(repo: Path) -> dict[tuple[str, str], dict[str, set[str]]]:
    """(importing package, imported package) -> {importing module: the modules it imports there}."""
    edges = defaultdict(lambda: defaultdict(set))
    for package in LAYERS:
        for path in sorted((repo / package).rglob("*.py")):
            module = ".".join(path.relative_to(repo).with_suffix("").parts)
            for name in imported_names(path, module):
                target = name.split(".")[0]
                if target in LAYERS and target != package:
                    edges[package, target][module].add(name)
    return edges


def layering_violations(edges) -> list[tuple[str, str]]:
    """The (importing, imported) package pairs that go up or sideways."""
    return [pair for pair in sorted(edges) if LAYERS[pair[1]] >= LAYERS[pair[0]]]


def main(repo: Path) -> int:
    edges = package_edges(repo)
    violations = layering_violations(edges)
    for pair in sorted(edges):
        print(f"{pair[0]} -> {pair[1]}" + ("   NOT ALLOWED (up or sideways)" if pair in violations else ""))
        for module, names in sorted(edges[pair].items()):
            print(f"    {module}: {', '.join(sorted(names))}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)))
