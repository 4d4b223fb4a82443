"""The tests' own layout (issue 43, item 8; docs/development.md, "How the tests are organised"): the
test modules flat in ``tests/`` and nothing else there; what they share in ``tests/support`` (code) and
``tests/data`` (literals only); no test module importing another; and the rewrite that brings a
branch written against the old flat layout over (tests/support/moved.py)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.support import moved
from tests.support.imports import import_graph, python_files
from tests.support.paths import ROOT

#: What a data module may import: annotations, and other data modules.
DATA_IMPORTS = ("__future__", "typing", "collections.abc")


def is_test_module(module: str) -> bool:
    return module.rpartition(".")[2].startswith("test_")


def layout_problems(root: Path) -> list[str]:
    """Where ``root/tests`` departs from the layout, one line each."""
    tests = root / "tests"
    problems = [
        f"{p.name}: a helper module flat among the test modules (its place: tests/support or tests/data)"
        for p in sorted(tests.glob("*.py"))
        if not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py")
    ]
    projects = separate_projects(tests / "conftest.py")
    for folder in sorted(p for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"):
        modules = python_files(folder)
        if folder.name in ("support", "data"):
            problems += [
                f"{p.relative_to(tests)}: a test module outside tests/ (pytest would collect it there)"
                for p in modules
                if p.name.startswith("test_")
            ]
        elif modules and folder.name not in projects:
            # A test's own files (snapshots, golden/, alerts/, go/...) are no Python; shared code is support's.
            problems.append(f"{folder.name}/: Python modules outside tests/support (its place), tests/data")
    graph = import_graph(root, "tests")
    for module, imports in sorted(graph.items()):
        for imported in sorted(imports):
            if is_test_module(imported):
                problems.append(f"{module} imports the test module {imported} (share through tests/support)")
            elif imported == "tests.conftest":
                problems.append(f"{module} imports tests.conftest (fixtures are asked for, not imported)")
    problems += data_problems(tests / "data")
    return problems


def separate_projects(conftest: Path) -> set[str]:
    """The folders of tests/ that are projects of their own (conftest.py ``collect_ignore``: a consumer's
    program and its tests, run by tests/test_consumer.py against the installed package)."""
    for node in ast.parse(conftest.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [
            "collect_ignore"
        ]:
            return set(ast.literal_eval(node.value))
    return set()


def data_problems(folder: Path) -> list[str]:
    """What makes a module of ``folder`` more than data: a function, a class, a lambda or a call, an
    import other than of annotations or of another data module."""
    problems = []
    for path in python_files(folder):
        nodes = sorted(ast.walk(ast.parse(path.read_text(), filename=str(path))), key=lambda n: getattr(n, "lineno", 0))
        for node in nodes:
            where = f"{path.relative_to(folder.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Call)):
                problems.append(f"{where}: {type(node).__name__} in a data module (code goes to tests/support)")
            elif isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level):
                problems.append(f"{where}: a data module imports only `from <module> import ...` of data")
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if module not in DATA_IMPORTS and not module.startswith("tests.data"):
                    problems.append(f"{where}: a data module imports {module}")
    return problems


def test_the_tests_are_laid_out_as_docs_development_md_says():
    assert layout_problems(ROOT) == []


def test_the_layout_check_finds_each_departure(tmp_path: Path):
    files = {
        "__init__.py": "",
        "conftest.py": "collect_ignore = ['project']\n",
        "test_a.py": "from tests.test_b import shared\n",
        "test_b.py": "shared = 1\n",
        "test_c.py": "from tests import test_b\n",
        "test_d.py": "from . import test_b\nfrom .support import ok\n",
        "test_e.py": "def test_late():\n    import tests.test_b\n",
        "test_f.py": "from tests.conftest import x\nfrom tests.support.ok import y\nfrom tests.data.good import z\n",
        "helper.py": "",
        "support/__init__.py": "",
        "support/ok.py": "y = 1\n",
        "support/test_inside.py": "",
        "data/__init__.py": "",
        "data/good.py": "from typing import Any\n\nfrom tests.data.b import A\n\nZ: dict[str, Any] = {**A, 'a': ()}\n",
        "data/bad.py": "import json\nfrom tests.support.ok import y\nZ = json.dumps({})\n\n\ndef f():\n    pass\n",
        "misc/readme.txt": "",
        "project/main.py": "",
        "helpers/tool.py": "",
    }
    for name, text in files.items():
        (tmp_path / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / name).write_text(text)
    assert layout_problems(tmp_path) == [
        "helper.py: a helper module flat among the test modules (its place: tests/support or tests/data)",
        "helpers/: Python modules outside tests/support (its place), tests/data",
        "support/test_inside.py: a test module outside tests/ (pytest would collect it there)",
        "tests.test_a imports the test module tests.test_b (share through tests/support)",
        "tests.test_c imports the test module tests.test_b (share through tests/support)",
        "tests.test_d imports the test module tests.test_b (share through tests/support)",
        "tests.test_e imports the test module tests.test_b (share through tests/support)",
        "tests.test_f imports tests.conftest (fixtures are asked for, not imported)",
        "data/bad.py:1: a data module imports only `from <module> import ...` of data",
        "data/bad.py:2: a data module imports tests.support.ok",
        "data/bad.py:3: Call in a data module (code goes to tests/support)",
        "data/bad.py:6: FunctionDef in a data module (code goes to tests/support)",
    ]


def test_docs_development_md_names_every_module_of_tests_support():
    text = (ROOT / "docs" / "development.md").read_text()
    section = text[text.index("How the tests are organised") : text.index("## A smoke run on a real GPU")]
    support = ROOT / "tests" / "support"
    names = {p.stem for p in support.glob("*.py") if p.stem != "__init__"} | {
        f"{p.name}/" for p in support.iterdir() if (p / "__init__.py").is_file()
    }
    assert sorted(n for n in names if not re.search(rf"(?<![\w/]){re.escape(n)}(?![\w])", section)) == []


# ---------------------------------------------------------------------------------------------
# The rewrite of the old layout's imports (python -m tests.support.moved)
# ---------------------------------------------------------------------------------------------


def test_every_place_the_rewrite_names_exists_and_no_old_module_is_left():
    olds = {*moved.MODULES, *(m for m, _ in moved.NAMES)} - {"tests.support", "tests.conftest"}
    for old in sorted(m for m in olds if not is_test_module(m)):
        path = ROOT / Path(*old.split("."))
        assert not path.with_suffix(".py").exists() and not path.exists(), f"{old} is still there"
    for new in moved.MODULES.values():
        importlib.import_module(new)
    for (old, name), (new, new_name) in moved.NAMES.items():
        if (old, name) in moved.FIXTURES:
            continue
        assert hasattr(importlib.import_module(new), new_name), f"{old}.{name} -> {new}.{new_name}"
    for old, new in moved.PATHS.items():
        assert not (ROOT / old).exists() and (ROOT / new).exists(), (old, new)


OLD = '''\
"""Uses tests/helm.py and tests/standins/ (tests/reference_sources.json)."""
from tests import helm, support
from tests.support import (  # shared
    ROOT,
    VARIANT,
    simulate,
)
from tests.standins.nvidia_smi_grammar import grammar
from tests.test_preflight_checks import REGION, _Session, aws  # noqa: F401
from tests.support.paths import STACKS
import tests.toolkit


def test_x(monkeypatch):
    from tests.test_compose import run

    monkeypatch.setattr("tests.support.ROOT", None)
    assert support.fake_aws_environ and support.ROOT and helm and grammar and run
    assert tests.toolkit.CACHE
'''

NEW = '''\
"""Uses tests/support/tools/helm.py and tests/support/standins/ (tests/data/reference_sources.json)."""
from tests.support.tools import helm
from tests.support import paths, environment
from tests.support.paths import ROOT  # shared
from tests.data.samples import VARIANT
from tests.support.simulation import simulate
from tests.support.standins.nvidia_smi_grammar import grammar
from tests.support.preflight import REGION, StubbedSession as _Session  # noqa: F401
from tests.support.paths import STACKS
import tests.support.tools.toolkit


def test_x(monkeypatch):
    from tests.support.simulation import run_consumer_program as run

    monkeypatch.setattr("tests.support.paths.ROOT", None)
    assert environment.fake_aws_environ and paths.ROOT and helm and grammar and run
    assert tests.support.tools.toolkit.CACHE
'''


def test_the_rewrite_brings_an_old_import_to_the_new_places():
    assert moved.rewrite_python(OLD) == NEW
    assert moved.rewrite_python(NEW) == NEW  # once is enough: nothing of the new layout changes


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("from tests.test_plan import plans\n", "plans of tests.test_plan: a test module's name; move it"),
        ("from tests.test_teams_check import SETTINGS\n", "write load_settings(CHECKED_TEAMS)"),
        ("from tests.support import nothing_like_it\n", "tests.support.nothing_like_it is not a name"),
        ("import tests.test_plan\n", "import tests.test_plan: import the names from tests/support"),
    ],
    ids=["a-test-modules-name", "gone-by-hand", "unknown-name", "import-of-a-test-module"],
)
def test_the_rewrite_names_what_it_cannot_do(line, says):
    with pytest.raises(moved.Unrewritable, match=re.escape(says)):
        moved.rewrite_python(line, "t.py")


def test_no_file_of_the_tests_or_docs_holds_an_import_or_path_of_the_old_layout(capsys):
    # The command docs/development.md gives (moved.py and this file, which hold the old names on
    # purpose, are left alone).
    files = [p for p in python_files(ROOT / "tests") if "consumer_" not in str(p)]
    docs = sorted((ROOT / "docs").glob("*.md"))
    assert Path(moved.__file__).resolve() in moved.KEEP and Path(__file__).resolve() in moved.KEEP
    assert moved.main(["--check", *map(str, files + docs)]) == 0, capsys.readouterr()
