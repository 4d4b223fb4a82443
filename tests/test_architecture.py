"""Guards on the code's shape: no module over 500 lines, no import cycle among the modules of
``components``, and docs/architecture.md naming every folder of ``components`` and only real files.
Each guard is also run on a synthetic case it must reject, so it can fail.

The import graph is built statically with ``ast``: every ``import``/``from ... import`` anywhere in
a module (inside functions and ``if TYPE_CHECKING:`` blocks too) is an edge; relative imports are
resolved; ``from . import x`` points at the submodule ``x`` when there is one; a package's
``__init__.py`` is a node of its own (the package's name).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.support.imports import import_graph, module_name, python_files
from tests.support.paths import ROOT

MAX_MODULE_LINES = 500


# ---------------------------------------------------------------------------------------------
# Module length
# ---------------------------------------------------------------------------------------------


def long_modules(folders: Iterable[Path], limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    """(path, line count) of each Python module under ``folders`` longer than ``limit`` lines."""
    out: list[tuple[str, int]] = []
    for folder in folders:
        for path in python_files(folder):
            count = len(path.read_text().splitlines())
            if count > limit:
                out.append((str(path), count))
    return out


def test_no_module_is_longer_than_500_lines():
    too_long = long_modules([ROOT / "components", ROOT / "tooling"])
    assert too_long == [], f"split these modules (over {MAX_MODULE_LINES} lines): {too_long}"


def test_the_line_counter_finds_a_long_module(tmp_path: Path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "short.py").write_text("x = 1\n" * 500)
    (package / "sub" / "long.py").write_text("x = 1\n" * 501)
    assert long_modules([package]) == [(str(package / "sub" / "long.py"), 501)]


# ---------------------------------------------------------------------------------------------
# Import cycles
# ---------------------------------------------------------------------------------------------


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as [a, b, ..., a], or None when there is none (depth-first)."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        stack = [iter(sorted(graph.get(start, ())))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
            elif nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_components_has_no_import_cycle():
    graph = import_graph(ROOT, "components")
    assert "components" in graph and "components.preflight" in graph and "components.catalog" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle among the modules of components: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"a", "x"}}) is None


def test_the_import_graph_sees_relative_late_and_type_checking_imports(tmp_path: Path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .sub import leaf\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import Thing\n"
    )
    (package / "top.py").write_text("import os\n\n\ndef late():\n    from . import other\n    return other\n")
    (package / "other.py").write_text("from pkg.sub import leaf\nfrom . import NAME_OF_INIT\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {"pkg.sub.leaf"},
        "pkg.sub": set(),
        "pkg.sub.leaf": {"pkg.top"},
        "pkg.top": {"pkg.other"},
        "pkg.other": {"pkg.sub.leaf", "pkg"},
    }
    assert find_cycle(graph) == ["pkg", "pkg.sub.leaf", "pkg.top", "pkg.other", "pkg"]


# ---------------------------------------------------------------------------------------------
# docs/architecture.md names every folder of components/ and only paths that exist
# ---------------------------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def folders_not_named(text: str, root: Path) -> list[str]:
    """Packages under ``root`` (``components/<name>/``) that ``text`` never names as ```<name>/```."""
    return sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file() and f"`{p.name}/`" not in text)


def named_paths_missing(text: str, roots: Iterable[Path]) -> list[str]:
    """Every ```a/b.py``` or ```x.py``` the text names that exists under none of ``roots``."""
    names = set(re.findall(r"`([\w./]+\.(?:py|md))`", text))
    return sorted(n for n in names if not any((r / n).exists() for r in roots))


def _architecture_roots() -> list[Path]:
    return [
        ROOT,
        ROOT / "components",
        ROOT / "tests",
        ROOT / "docs",
        *[p for p in (ROOT / "components").iterdir() if p.is_dir()],
    ]


def test_architecture_doc_names_every_folder_and_only_real_files():
    text = ARCHITECTURE.read_text()
    assert folders_not_named(text, ROOT / "components") == []
    assert named_paths_missing(text, _architecture_roots()) == []


def test_the_architecture_checks_catch_a_stale_doc(tmp_path: Path):
    (tmp_path / "pkg" / "newconcept").mkdir(parents=True)
    (tmp_path / "pkg" / "newconcept" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "old").mkdir()
    (tmp_path / "pkg" / "old" / "__init__.py").write_text("")
    assert folders_not_named("`old/` owns things", tmp_path / "pkg") == ["newconcept"]
    assert named_paths_missing("see `old/gone.py` and `pkg/old/__init__.py`", [tmp_path]) == ["old/gone.py"]


# ---------------------------------------------------------------------------------------------
# Floors: the direction the folders import in, measured (issues 35, 43)
# ---------------------------------------------------------------------------------------------
#
# catalog <- config <- plan <- check <- blocks <- components <- composites <- the faces: each floor
# imports only the floors below it, and the components stand side by side (none imports another:
# the composites wire them). docs/architecture.md records what is measured here
# (``python -m tests.test_architecture`` prints it):
#
# * the back-up imports: each (importing folder, imported module) where the module sits on a floor
#   above the folder's (one pair however many modules of the folder import it);
# * the imports between components: each (importing folder, imported module) of two component folders;
# * the folder pairs that import each other (a loop of two folders, on any floors);
# * the walk of ``plan_group`` over a MIG group: the folders of the functions it calls, in call
#   order, consecutive calls in one folder counted once: the folders visited, the moves between
#   them, and the climbs (moves into a folder on a floor above the plan's own: the plan calling up
#   into the components it is meant to feed).

#: The component folders: each declares one concept's resources, reading plans (and the blocks).
COMPONENTS = (
    "nodegroups",
    "autoscaler",
    "gpu_operator",
    "karpenter",
    "cluster",
    "verification",
    "teams",
    "observability",
    "efa",
    "coldstart",
    "preflight",
)

#: The floor of each folder of ``components`` (a top-level module is its own folder).
FLOORS: dict[str, int] = {
    # Facts about AWS and upstream software; the package's version.
    "catalog": 0,
    "version": 0,
    # Parse: the settings models and their own rules.
    "config": 1,
    # Plan: plan_group and the pure builders.
    "plan": 2,
    # Check: the rules that read plans, the settings whole.
    "check": 3,
    # The shared blocks the components declare with.
    "blocks": 4,
    **dict.fromkeys(COMPONENTS, 5),
    "composites": 6,
    # The faces: the package itself, this repository's program, the other languages, the review.
    **dict.fromkeys(("components", "__main__", "program", "multilang", "review", "moved", "compat"), 7),
}

#: A MIG group on managed nodes (examples/Pulumi.mig-h100.yaml): the plan's longest walk.
WALK_GROUP = {
    "name": "h100-mixed",
    "instanceTypes": ["p5.48xlarge"],
    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    "migStrategy": "mixed",
    "mig": {"migDevices": {"1g.10gb": 4, "3g.40gb": 1}, "replicas": {"1g.10gb": 2}},
}


def folder_of(module: str) -> str:
    """``components.a.b`` -> ``a``; ``components`` -> ``components``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def backup_imports(graph: Mapping[str, Iterable[str]], floors: Mapping[str, int]) -> list[tuple[str, str]]:
    """Each (importing folder, imported module) where the module's floor is above the folder's."""
    return sorted(
        {
            (folder_of(importer), imported)
            for importer, imports in graph.items()
            for imported in imports
            if floors[folder_of(imported)] > floors[folder_of(importer)]
        }
    )


def sideways_imports(graph: Mapping[str, Iterable[str]], folders: Iterable[str]) -> list[tuple[str, str]]:
    """Each (importing folder, imported module) where both folders are of ``folders`` and differ."""
    among = set(folders)
    return sorted(
        {
            (folder_of(importer), imported)
            for importer, imports in graph.items()
            for imported in imports
            if folder_of(importer) in among
            and folder_of(imported) in among
            and folder_of(importer) != folder_of(imported)
        }
    )


def mutual_folders(graph: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """Each pair of folders (sorted) of which each imports the other."""
    edges = {(folder_of(importer), folder_of(imported)) for importer, imports in graph.items() for imported in imports}
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def walk_of(calls: Iterable[str], floors: Mapping[str, int]) -> tuple[list[str], int, int, int]:
    """The folders of ``calls`` (module names, in call order, the first one the walk's start) with
    consecutive repeats dropped, and (folders visited, moves, climbs above the start's floor)."""
    walk: list[str] = []
    for module in calls:
        folder = folder_of(module)
        if not walk or walk[-1] != folder:
            walk.append(folder)
    climbs = sum(floors[folder] > floors[walk[0]] for folder in walk[1:])
    return walk, len(set(walk)), len(walk) - 1, climbs


def plan_group_calls(group: Mapping[str, object] = WALK_GROUP) -> list[str]:
    """The module of every function of ``components`` that ``plan_group(group)`` calls, in order."""
    import sys

    from components.config.groups import GpuNodeGroupSettings
    from components.plan.group import plan_group

    settings = GpuNodeGroupSettings.model_validate(group)
    calls: list[str] = []

    def profile(frame, event, _arg):
        module = frame.f_globals.get("__name__", "")
        # components.moved's finders: the import system asks them when the walk first imports a module.
        if event == "call" and module.startswith("components.") and module != "components.moved":
            calls.append(module)

    sys.setprofile(profile)
    try:
        plan_group(settings)
    finally:
        sys.setprofile(None)
    return calls


#: The imports that still run up a floor, each with why.
KNOWN_BACK_UP_IMPORTS: list[tuple[str, str]] = []


def test_every_folder_stands_on_a_floor():
    folders = {folder_of(m) for m in import_graph(ROOT, "components")}
    assert sorted(folders - set(FLOORS)) == [], "put each new folder on a floor: FLOORS"
    assert sorted(set(FLOORS) - folders) == [], "a folder is gone: take it out of FLOORS"


def test_the_folders_import_down_the_floors_but_for_the_known_back_up_imports():
    assert backup_imports(import_graph(ROOT, "components"), FLOORS) == KNOWN_BACK_UP_IMPORTS


def test_the_components_stand_side_by_side():
    """No component imports another: what two share is a block (``blocks/``), a fact (``catalog/``)
    or the plan's; the composites wire them."""
    assert sideways_imports(import_graph(ROOT, "components"), COMPONENTS) == []


def test_no_two_folders_import_each_other():
    assert mutual_folders(import_graph(ROOT, "components")) == []


def test_the_plan_group_walk_stays_in_plan_config_and_catalog():
    walk, folders, moves, climbs = walk_of(plan_group_calls(), FLOORS)
    # The boot stage (issue 31) reads the catalog's MIG placements; the repair policy (issue 33) the
    # settings; the user data's taints include the boot stage's pending one (issue 40), formatted by
    # the settings' Taint; a Karpenter EFA node's ENIs (issue 41) the multi-node settings; the boot
    # stage and the user data read the group's capacity provider (issue 43): more moves, the same
    # three folders and no climb.
    assert " ".join(walk) == (
        "plan config plan config plan catalog plan catalog plan config plan config plan config plan config plan "
        "catalog plan catalog plan catalog plan config plan"
    )
    assert (folders, moves, climbs) == (3, 24, 0)


def pulumi_imports(folder: Path) -> list[str]:
    """``path: module`` for each import of the Pulumi SDK or a provider SDK under ``folder``."""
    found = []
    for path in python_files(folder):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            found += [f"{path.name}: {n}" for n in names if n == "pulumi" or n.startswith(("pulumi.", "pulumi_"))]
    return found


def test_the_floors_below_the_components_declare_nothing():
    """The catalog and the plan never import Pulumi; the settings only read a program's config and
    raise its RunError (check/loading.py, config/errors.py), inside functions, never a provider."""
    assert pulumi_imports(ROOT / "components" / "catalog") == []
    assert pulumi_imports(ROOT / "components" / "plan") == []
    assert pulumi_imports(ROOT / "components" / "config") == ["errors.py: pulumi"]
    assert sorted(pulumi_imports(ROOT / "components" / "check")) == ["loading.py: pulumi", "loading.py: pulumi.runtime"]


# ---------------------------------------------------------------------------------------------
# Moved modules: importable at their old paths, imported by nobody here
# ---------------------------------------------------------------------------------------------


def imports_of_old_paths(roots: Iterable[Path], old: Iterable[str]) -> list[str]:
    """``path: module`` for each import of a module of ``old`` under ``roots`` (relative imports
    resolved from the package each root's modules are in, the root's own name)."""
    old = tuple(old)
    found = []
    for root in roots:
        for path in python_files(root):
            package = module_name(path, root.parent).split(".")
            if path.name != "__init__.py":
                package = package[:-1]
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base_parts = package[: len(package) - (node.level - 1)] if node.level else []
                    module = ".".join([*base_parts, *([node.module] if node.module else [])])
                    names = [module, *(f"{module}.{a.name}" for a in node.names)]
                else:
                    continue
                found += [f"{path.relative_to(root.parent)}: {n}" for n in names if n in old]
    return sorted(found)


def test_nothing_here_imports_a_moved_module_at_its_old_path():
    """The old paths are for consumers (components/moved.py); this repository uses the new ones
    (relative imports are checked by the import graph: an old path there is no module at all)."""
    from components.moved import MOVED_MODULES, MOVED_PACKAGES

    old = [f"components.{name}" for name in (*MOVED_MODULES, *MOVED_PACKAGES)]
    assert imports_of_old_paths([ROOT / "components", ROOT / "tests", ROOT / "tooling"], old) == []
    graph = import_graph(ROOT, "components")
    assert not set(old) & set(graph), "a module is back at an old path: take it out of components/moved.py"


def test_an_old_path_finder_is_caught(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import old.mod\nfrom old import mod\nfrom old.mod import x\nimport new\n")
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "pkg" / "sub" / "b.py").write_text("from ..old import mod\nfrom . import mod\nfrom .mod import y\n")
    assert imports_of_old_paths([tmp_path / "pkg"], ["old.mod", "pkg.old.mod", "pkg.sub.mod"]) == [
        "pkg/a.py: old.mod",
        "pkg/a.py: old.mod",
        "pkg/a.py: old.mod",
        "pkg/sub/b.py: pkg.old.mod",
        "pkg/sub/b.py: pkg.sub.mod",
        "pkg/sub/b.py: pkg.sub.mod",
    ]


def test_the_old_paths_import_the_moved_modules_and_only_when_asked():
    from tests.support.commands import run_python

    code = (
        "import importlib, sys, components\n"
        "from components.moved import MOVED_MODULES\n"
        "assert not [m for m in MOVED_MODULES.values() if 'components.' + m in sys.modules], 'loaded by import'\n"
        "for old, new in MOVED_MODULES.items():\n"
        "    module = importlib.import_module('components.' + old)\n"
        "    assert module is importlib.import_module('components.' + new), old\n"
        "    assert module.__spec__.name == 'components.' + new, old\n"
        "from components.sharing.plan import plan_group\n"
        "from components.nodegroups.userdata import gpu_node_config\n"
        "import components.autoscaler.asg\n"
        "assert components.autoscaler.asg.asg_tags is components.plan.asg.asg_tags\n"
        "assert plan_group is components.plan_group\n"
        "print('ok')\n"
    )
    result = run_python("-c", code)
    assert (result.stdout, result.stderr) == ("ok\n", "")


def test_the_floor_measures_count_what_they_say():
    floors = {"low": 0, "mid": 1, "top": 2}
    graph = {
        "pkg.low.a": {"pkg.mid.b", "pkg.low.c"},
        "pkg.low.c": {"pkg.mid.b", "pkg.top.d"},
        "pkg.top.d": {"pkg.low.a"},
    }
    assert backup_imports(graph, floors) == [("low", "pkg.mid.b"), ("low", "pkg.top.d")]
    # Two folders of one floor: neither runs up, but they stand on each other and import each other.
    graph = {"pkg.left.a": {"pkg.right.b", "pkg.low.c"}, "pkg.right.b": {"pkg.left.a"}, "pkg.low.c": set()}
    assert backup_imports(graph, {"low": 0, "left": 1, "right": 1}) == []
    assert sideways_imports(graph, ["left", "right"]) == [("left", "pkg.right.b"), ("right", "pkg.left.a")]
    assert sideways_imports(graph, ["left", "low"]) == [("left", "pkg.low.c")]
    assert mutual_folders(graph) == [("left", "right")]
    assert mutual_folders({"pkg.a.x": {"pkg.b.y"}, "pkg.b.y": {"pkg.c.z"}, "pkg.c.z": set()}) == []
    calls = ["pkg.mid.x", "pkg.mid.y", "pkg.low.a", "pkg.mid.x", "pkg.top.z", "pkg.top.z", "pkg.mid.x", "pkg.top.w"]
    assert walk_of(calls, floors) == (["mid", "low", "mid", "top", "mid", "top"], 3, 5, 2)


if __name__ == "__main__":
    _walk, _folders, _moves, _climbs = walk_of(plan_group_calls(), FLOORS)
    _graph = import_graph(ROOT, "components")
    for _what, _pairs in (
        ("back-up imports", backup_imports(_graph, FLOORS)),
        ("imports between components", sideways_imports(_graph, COMPONENTS)),
        ("folder pairs importing each other", mutual_folders(_graph)),
    ):
        print(f"{_what}: {len(_pairs)}")
        for _pair in _pairs:
            print("   ", *_pair)
    print(f"plan_group walk: {' -> '.join(_walk)}: {_folders} folders, {_moves} moves, {_climbs} climbs")
