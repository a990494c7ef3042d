"""The import graph of scripts/ and suites/ has no circle.

Every import statement counts, the ones inside functions too: a lazy import still
ties the two modules together (suites/harness.py imports _counting inside main(),
which is how the old circle harness -> _counting -> harness stayed hidden).
Host modules are resolved by their names under ``iomatrix``; the suites import
their siblings by bare name (``import _results``, ``from _api import ...``).
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "scripts" / "iomatrix"
SUITES = ROOT / "suites"


def module_files() -> dict[str, Path]:
    """{module name: file} of the project: tools, the host package and the suites."""
    files = {f"scripts.{p.stem}": p for p in (ROOT / "scripts").glob("*.py")}
    for p in PACKAGE_DIR.rglob("*.py"):
        parts = p.relative_to(PACKAGE_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            files[".".join(("iomatrix", *parts))] = p
    files.update({f"suites.{p.stem}": p for p in SUITES.glob("*.py")})
    return files


def imported_names(tree: ast.AST) -> set[str]:
    """Every dotted name an import in ``tree`` may bring in (``from a import b``: a and a.b)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def project_module(name: str, importer: str, files: dict) -> str | None:
    """The project module an imported name refers to, or None for the standard library and
    third parties."""
    if name.startswith("iomatrix."):
        parts = name.split(".")
        for length in range(len(parts), 1, -1):   # the longest prefix that is a module
            candidate = ".".join(parts[:length])
            if candidate in files:
                return candidate
        return None
    if importer.startswith("suites."):
        # The suites' sibling imports are bare names (the worker puts suites/ on sys.path).
        candidate = f"suites.{name.split('.')[0]}"
        return candidate if candidate in files else None
    return None


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    graph = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = {project_module(name, module, files) for name in imported_names(tree)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph as [a, b, ..., a], or None (depth-first, colouring nodes)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    path: list[str] = []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_project_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_lazy_and_sibling_imports():
    graph = import_graph()
    # harness.py imports _counting inside main(); both import the suite API by bare name.
    assert "suites._counting" in graph["suites.harness"]
    assert "suites._api" in graph["suites._counting"]
    assert "iomatrix.measuring.runner" in graph["iomatrix.measuring.bench"]
    assert "iomatrix.storing.store" in graph["scripts.report"]


def test_a_cycle_is_found_and_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_stages_contract_holds():
    """pyproject.toml's [tool.importlinter]: each stage of scripts/iomatrix/ imports only the
    stages below it (import-linter checks indirect imports too)."""
    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable))
    assert lint, "import-linter is a test dependency (pyproject.toml)"
    # --no-cache: a test writes nothing in the repository (test_robustness checks it).
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 broken" in done.stdout
