"""The import graph of a package, read from its source: every module's imports of the package's own
modules, relative, late (in a function) and ``TYPE_CHECKING`` ones included (tests/test_architecture.py
reads the library's; tests/test_layout.py the tests' own)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


def python_files(folder: Path) -> list[Path]:
    """Every .py file under ``folder`` (compiled caches left out), sorted."""
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path, root: Path) -> str:
    """``root/a/b/c.py`` -> ``a.b.c``; ``root/a/b/__init__.py`` -> ``a.b``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _target(name: str, modules: set[str]) -> str | None:
    """The module of ``modules`` that importing ``name`` loads: ``name`` itself, or the longest
    prefix that is a module (``pkg.mod.Class`` -> ``pkg.mod``); None for names outside them."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


@cache
def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, for every module of ``root/package`` (once
    per run: do not change it)."""
    paths = {module_name(p, root): p for p in python_files(root / package)}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        # The package a relative import of this module starts from.
        here = name.split(".") if is_package else name.split(".")[:-1]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [_target(alias.name, modules) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = here[: len(here) - (node.level - 1)]
                    base = ".".join([*base_parts, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                # ``from base import x``: the submodule x when there is one, else base itself.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _target(base, modules)
                    for alias in node.names
                ]
            else:
                continue
            edges.update(t for t in targets if t is not None and t != name)
        graph[name] = edges
    return graph
