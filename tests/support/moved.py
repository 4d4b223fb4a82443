"""Where each helper of the tests' old flat layout went (issue 43, item 8), and the rewrite of a test
file's imports to the new places: ``python -m tests.support.moved FILE...`` (``--check``: change
nothing, exit 1 if a file would change or holds an import it cannot rewrite).

Until then ``tests/`` held 17 helper modules beside the test modules, and test modules imported from
each other. A branch written against that layout is brought over by running this on its tests (and
its docs, for the paths they mention); tests/test_layout.py runs it on a sample of the old layout.

Rewritten: ``from tests.<old> import a, b as c`` (at any depth, over several lines), ``from tests
import <old module>``, the attributes of ``from tests import support`` (``support.simulate``),
dotted strings naming an old place (``monkeypatch.setattr("tests.support.ROOT", ...)``), the
dotted names and paths of modules and data files that moved whole (``import tests.helm``,
``tests/helm.py``). A renamed name is imported under its old one (``import new as old``), so the
rest of the file is untouched. Then ruff sorts the imports and formats the changed files. What it
cannot rewrite it names, with the line: an import of a test module's name that did not move (move
it into tests/support by hand), ``import tests.test_...``, a name it does not know.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: Modules (and packages) that moved whole; every name keeps its name.
MODULES = {
    "tests.reference": "tests.support.reference",
    "tests.standins": "tests.support.standins",
    "tests.helm": "tests.support.tools.helm",
    "tests.promtool": "tests.support.tools.promtool",
    "tests.checkov": "tests.support.tools.checkov",
    "tests.toolkit": "tests.support.tools.toolkit",
    "tests.admission": "tests.support.standins.admission",
    "tests.crd_cel": "tests.support.standins.crds",
    "tests.scheduling": "tests.support.standins.scheduling",
    "tests.karpenter_scheduling": "tests.support.standins.karpenter",
    "tests.gpu_failure": "tests.support.standins.gpu_failure",
    "tests.preflight_fixtures": "tests.support.preflight",
    "tests.settings_strategies": "tests.support.strategies.settings",
    "tests.settings_samples": "tests.support.strategies.samples",
    "tests.promised": "tests.data.promised",
    "tests.ca_instance_types": "tests.data.ca_instance_types",
}

_SUPPORT = {
    "tests.support.paths": ("ROOT", "TESTS", "SNAPSHOTS", "STACKS"),
    "tests.support.reference": (
        "CHART_VERSIONS",
        "reference_path",
        "observed_path",
        "unavailable",
        "SAFE_LOADER",
        "load_reference_yaml",
    ),
    "tests.support.environment": (
        "FAKE_AWS_ENV",
        "MOTO_AMIS",
        "fake_aws_environ",
        "share_botocore_models",
        "share_kubernetes_schemas",
        "subprocess_env",
    ),
    "tests.support.simulation": ("settings_for_stack", "simulate", "simulate_run", "_SIMULATIONS"),
    "tests.support.copies": ("copy_project", "copy_repository_files"),
    "tests.support.commands": ("main_in_process", "run_python", "tooling_cli", "loopback_server", "git"),
    "tests.data.samples": ("VARIANT_OVERRIDES", "AUTOSCALED_OVERRIDES", "VARIANT", "AUTOSCALED", "DEFAULTS"),
}
_CONFTEST = ("CHART_VERSIONS", "ROOT", "STACKS", "load_reference_yaml", "reference_path", "simulate")
_SHARED = {
    "tests.test_examples": {
        "example": "tests.support.simulation",
        "EXAMPLES": "tests.support.paths",
        "RELEASE": "tests.support.tokens",
    },
    "tests.test_autoscaler": {
        "template_node": "tests.support.standins.autoscaler",
        "fits": "tests.support.standins.autoscaler",
        "pod_from_outputs": "tests.support.standins.autoscaler",
        "nodeconfig_of": "tests.support.rendered",
        "asg_tags_of": "tests.support.rendered",
    },
    "tests.test_plan": {"kubelet_flags_in": "tests.support.rendered"},
    "tests.test_compose": {"EXISTING_KUBECONFIG": "tests.data.samples", "GROUP_T4": "tests.data.samples"},
    "tests.test_consumer_review": dict.fromkeys(
        ("PROJECT", "GIT", "review", "review_subprocess"), "tests.support.review"
    ),
    "tests.test_workflows": dict.fromkeys(("load_workflow", "zizmor", "zizmor_or_skip"), "tests.support.workflows"),
    "tests.test_device_plugin_rules": dict.fromkeys(
        ("plugin_config_problems", "PLUGIN_FIELDS", "RESOURCE_FIELDS"), "tests.support.standins.device_plugin"
    ),
    "tests.test_helm_values": dict.fromkeys(("FREE_FORM", "NFD", "leaf_paths"), "tests.support.chart_values"),
    "tests.test_impact": {
        **dict.fromkeys(
            ("NODE_GROUP", "LAUNCH_TEMPLATE", "RELEASE", "NODEPOOL", "NODECLASS", "NODEOVERLAY"), "tests.support.tokens"
        ),
        **dict.fromkeys(("item", "doc"), "tests.support.documents"),
    },
    "tests.test_kubernetes_objects": {"KINDS": "tests.support.tokens"},
    "tests.test_nodeconfig": {"strict": "tests.support.standins.crds"},
    "tests.test_preflight_checks": {
        "REGION": "tests.support.preflight",
        "VERSION": "tests.support.preflight",
        "TODAY": "tests.support.environment",
    },
    "tests.test_properties": {
        "key_names_a_setting": "tests.support.settings_keys",
        "render_pure": "tests.support.contract",
    },
    "tests.test_render": {"copy_project": "tests.support.copies"},
    "tests.test_teams_policy": dict.fromkeys(
        (
            *("SETTINGS", "ML", "CV", "POLICY", "SELECT_T4", "GPU_TOLERATION", "gpu_container", "pod", "pinned"),
            *("admitted", "refused_by", "cpu", "gpu", "cpu_pod", "gpu_pod", "debug"),
        ),
        "tests.support.teams",
    ),
    "tests.test_architecture": dict.fromkeys(("import_graph", "module_name", "python_files"), "tests.support.imports"),
}

#: Names that moved one by one: (old module, name) -> (new module, name there).
NAMES: dict[tuple[str, str], tuple[str, str]] = {
    **{("tests.support", n): (new, n) for new, names in _SUPPORT.items() for n in names},
    ("tests.support", "REFERENCE"): ("tests.support.reference", "LOCAL"),
    # What the old module imported and tests took from it.
    **{("tests.support", n): ("tooling.simulation", n) for n in ("Simulation", "program_from_file", "run_program")},
    ("tests.support", "run_stack"): ("tooling.simulation", "run_stack"),
    **{(old, n): (new, n) for old, names in _SHARED.items() for n, new in names.items()},
    ("tests.mixed_clusters", "ZERO"): ("tests.data.clusters", "ZERO"),
    ("tests.mixed_clusters", "GROUPS"): ("tests.data.clusters", "GROUPS"),
    ("tests.mixed_clusters", "CLUSTERS"): ("tests.data.clusters", "CLUSTERS"),
    ("tests.mixed_clusters", "REFUSED"): ("tests.data.clusters", "REFUSED"),
    ("tests.mixed_clusters", "teams_of"): ("tests.support.clusters", "teams_of"),
    ("tests.mixed_clusters", "settings_of"): ("tests.support.clusters", "settings_of"),
    ("tests.mixed_clusters", "plans_of"): ("tests.support.clusters", "plans_of"),
    ("tests.conftest", "TODAY"): ("tests.support.environment", "TODAY"),
    ("tests.conftest", "REFERENCE"): ("tests.support.reference", "LOCAL"),
    ("tests.test_autoscaler", "LT"): ("tests.support.tokens", "LAUNCH_TEMPLATE"),
    ("tests.test_compose", "run"): ("tests.support.simulation", "run_consumer_program"),
    ("tests.test_render", "cli"): ("tests.support.commands", "tooling_cli"),
    ("tests.test_preflight_checks", "_Session"): ("tests.support.preflight", "StubbedSession"),
    ("tests.test_preflight_checks", "_eks_with_versions"): ("tests.support.preflight", "eks_with_versions"),
}
for _name in _CONFTEST:
    NAMES["tests.conftest", _name] = NAMES["tests.support", _name]

#: Names a test imported from another test module that are now pytest fixtures of tests/conftest.py:
#: the import goes (a test asks for the fixture by its parameter's name).
FIXTURES = {("tests.test_preflight_checks", "aws")}

#: Names with no mechanical rewrite, and what to write instead.
BY_HAND = {
    ("tests.test_teams_check", "SETTINGS"): "load_settings(CHECKED_TEAMS) (tests.data.samples)",
    ("tests.test_teams_check", "ML"): "load_settings(CHECKED_TEAMS).teams[0] (tests.data.samples)",
    ("tests.test_teams_check", "CV"): "load_settings(CHECKED_TEAMS).teams[1] (tests.data.samples)",
}

#: Files that moved whole, for the paths docs and comments mention (tests/<old> -> tests/<new>).
PATHS = {
    **{
        old.replace(".", "/") + ".py": new.replace(".", "/") + ".py"
        for old, new in MODULES.items()
        if old != "tests.standins"
    },
    "tests/standins/": "tests/support/standins/",
    "tests/moto_amis.json": "tests/data/moto_amis.json",
    "tests/reference_sources.json": "tests/data/reference_sources.json",
}
#: Files that hold the old names on purpose (this table, the test of the rewrite): never rewritten.
KEEP = {Path(__file__).resolve(), Path(__file__).resolve().parents[1] / "test_layout.py"}
#: Paths of modules that were split: named, not rewritten (the reader picks the new home).
SPLIT_PATHS = ("tests/support.py", "tests/mixed_clusters.py")


class Unrewritable(Exception):
    """An import this script cannot rewrite (the message says where and why)."""


def _new_module(module: str) -> str | None:
    """The new place of a module that moved whole (or of a module inside a package that did)."""
    for old, new in MODULES.items():
        if module == old or module.startswith(old + "."):
            return new + module[len(old) :]
    return None


def _is_submodule(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module or package of the new layout (``from tests.support import reference``)."""
    folder = Path(__file__).resolve().parents[2].joinpath(*package.split("."))
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _place(module: str, name: str, where: str) -> tuple[str, str] | None:
    """(new module, new name) of ``name`` imported from ``module``; None when it stays (a fixture
    now: the import goes)."""
    if (module, name) in FIXTURES:
        return None
    if (module, name) in NAMES:
        return NAMES[module, name]
    moved = _new_module(module)
    if moved is not None:
        return moved, name
    if (module, name) in BY_HAND:
        raise Unrewritable(f"{where}: {module}.{name} is gone; write {BY_HAND[module, name]}")
    if module.startswith("tests.test_") or module == "tests.conftest":
        raise Unrewritable(f"{where}: {name} of {module}: a test module's name; move it into tests/support by hand")
    if module in ("tests.support", "tests.data") and _is_submodule(module, name):
        return module, name
    if module in ("tests.support", "tests.mixed_clusters"):
        raise Unrewritable(f"{where}: {module}.{name} is not a name this script knows")
    return module, name


def _import_lines(node: ast.ImportFrom, where: str, attributes: set[str]) -> list[str] | None:
    """The statements replacing ``node``, or None when it stays as it is."""
    module = node.module or ""
    if node.level or not (module == "tests" or module.startswith("tests.")):
        return None
    by_module: dict[str, list[str]] = {}
    changed = False
    for alias in node.names:
        bound = alias.asname or alias.name
        if module == "tests":
            if alias.name == "support" and alias.asname is None and attributes:
                changed = True  # ``support.X`` of the old module: the attributes are rewritten below
                for attribute in sorted(attributes):
                    new, _ = NAMES["tests.support", attribute]
                    parent, _, last = new.rpartition(".")
                    by_module.setdefault(parent, []).append(last)
                continue
            moved = _new_module(f"tests.{alias.name}")
            target = moved.rpartition(".") if moved else ("tests", ".", alias.name)
            parent, name = target[0], target[2]
        else:
            placed = _place(module, alias.name, where)
            if placed is None:
                changed = True
                continue
            parent, name = placed
        changed |= (parent, name) != (module, alias.name)
        by_module.setdefault(parent, []).append(name if name == bound else f"{name} as {bound}")
    if not changed:
        return None
    return [f"from {parent} import {', '.join(dict.fromkeys(names))}" for parent, names in by_module.items()]


def _support_attributes(nodes: list[ast.AST]) -> set[str]:
    """The attributes of the old ``tests.support`` read through ``from tests import support``."""
    imported = any(
        isinstance(n, ast.ImportFrom)
        and n.module == "tests"
        and not n.level
        and any(a.name == "support" and a.asname is None for a in n.names)
        for n in nodes
    )
    if not imported:
        return set()
    return {
        n.attr
        for n in nodes
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "support"
        and ("tests.support", n.attr) in NAMES
    }


_DOTTED = re.compile(r"""(?<=["'])tests\.([a-z_][\w.]*)\.(\w+)(?=["'])""")


def _dotted(match: re.Match[str]) -> str:
    module, name = f"tests.{match.group(1)}", match.group(2)
    placed = NAMES.get((module, name)) or ((_new_module(module), name) if _new_module(module) else None)
    return f"{placed[0]}.{placed[1]}" if placed else match.group(0)


def rewrite_python(text: str, where: str = "<text>") -> str:
    """``text`` (a Python module) with every import of the old layout rewritten."""
    nodes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.ImportFrom, ast.Import, ast.Attribute))]
    _plain_imports(nodes, where)
    attributes = _support_attributes(nodes)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str]]] = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            new = _import_lines(node, f"{where}:{node.lineno}", attributes)
            if new is not None:
                indent = " " * node.col_offset
                span = lines[node.lineno - 1 : node.end_lineno]
                comments = [line[line.index("#") :].rstrip("\n") for line in span if "#" in line]
                comment = "  ".join(comments)
                # An import that only named a fixture goes (in a block, ``pass`` keeps the block).
                statements = [indent + s for s in new] or ([indent + "pass"] if indent else [])
                if comment and statements:
                    statements[0] += "  " + comment
                edits.append((node.lineno - 1, node.end_lineno or node.lineno, statements))
    for start, end, statements in sorted(edits, reverse=True):
        lines[start:end] = [s + "\n" for s in statements]
    out = "".join(lines)
    for attribute in attributes:
        module = NAMES["tests.support", attribute][0].rpartition(".")[2]
        out = re.sub(rf"(?<![\w.])support\.{attribute}\b", f"{module}.{attribute}", out)
    return rewrite_paths(_MODULE_PATHS.sub(_module_path, _DOTTED.sub(_dotted, out)))


#: A dotted name starting with a module that moved whole, in code or text (``import tests.helm``,
#: ``tests.helm.template(...)``): the module part is rewritten.
_MODULE_PATHS = re.compile(
    r"(?<![\w.])(" + "|".join(map(re.escape, sorted(MODULES, key=len, reverse=True))) + r")(?![\w])"
)


def _module_path(match: re.Match[str]) -> str:
    return MODULES[match.group(1)]


def _plain_imports(nodes: list[ast.AST], where: str) -> None:
    """``import tests.<module>`` of a module that was split or is a test module: named, not rewritten."""
    for node in nodes:
        for alias in node.names if isinstance(node, ast.Import) else ():
            if alias.name.startswith(("tests.test_", "tests.conftest", "tests.mixed_clusters")):
                raise Unrewritable(f"{where}:{node.lineno}: import {alias.name}: import the names from tests/support")


_PATHS = re.compile(r"(?<![\w/.])(" + "|".join(map(re.escape, sorted(PATHS, key=len, reverse=True))) + ")")


def rewrite_paths(text: str) -> str:
    """``text`` with the paths of the files that moved whole rewritten."""
    return _PATHS.sub(lambda m: PATHS[m.group(1)], text)


def split_mentions(text: str) -> list[int]:
    """Line numbers (from 1) that mention a module that was split (the reader picks the new home)."""
    return [i for i, line in enumerate(text.splitlines(), 1) if any(p in line for p in SPLIT_PATHS)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.moved", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="Python files (imports, strings, paths) or others (paths)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    changed, problems = [], []
    for path in args.files:
        if path.resolve() in KEEP:
            continue
        text = path.read_text()
        try:
            new = rewrite_python(text, str(path)) if path.suffix == ".py" else rewrite_paths(text)
        except Unrewritable as err:
            problems.append(str(err))
            continue
        problems += [
            f"{path}:{n}: names a module that was split (tests/support/moved.py says where)"
            for n in split_mentions(new)
        ]
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new)
    python = [str(p) for p in changed if p.suffix == ".py"]
    if python and not args.check:
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run([*ruff, "check", "--quiet", "--select", "I,RUF100", "--fix", *python], check=False)
        subprocess.run([*ruff, "format", "--quiet", *python], check=False)
    for path in changed:
        print(f"{'would rewrite' if args.check else 'rewrote'} {path}")
    for problem in problems:
        print(f"by hand: {problem}", file=sys.stderr)
    return 1 if problems or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
