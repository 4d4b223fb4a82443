"""The package's import name (issue 43): installed it is ``gpu_eks``, in this repository the folder
``components`` answering to ``gpu_eks`` too, and the old name ``components`` is the wheel's alias
until 1.0 (components/moved.py). These checks run on the checkout; tests/test_consumer.py runs the
installed wheel: a consumer's own ``components`` package beside ``gpu_eks``, the old name's warning,
``python -m gpu_eks``, the entry point and the component package's schema.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
import warnings
from pathlib import Path

import components
from components import moved
from tests.support.paths import ROOT

#: The names the package is imported under somewhere: none of its modules may import itself by one.
NAMES = ("components", "gpu_eks")


def absolute_self_imports(folder: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """``path:line: module`` for each absolute import of ``NAMES`` by a module under ``folder``
    (``skip``: paths relative to it that must, the wheel's old-name package)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if str(path.relative_to(folder)) in skip:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            found += [f"{path.relative_to(folder)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in NAMES]
    return found


def test_the_package_imports_its_own_modules_relatively():
    """Installed as ``gpu_eks``, an absolute ``components.x`` would import a consumer's own package
    of that name (or the old-name alias); so would ``gpu_eks.x`` here, a second copy of nothing."""
    assert absolute_self_imports(ROOT / "components", skip=("compat/__init__.py",)) == []


def test_the_self_import_check_finds_one(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("from . import b\nimport components.config\nimport componentsx\n")
    (tmp_path / "sub" / "c.py").write_text("def f():\n    from gpu_eks import GpuCluster\n")
    assert absolute_self_imports(tmp_path) == ["a.py:2: components.config", "sub/c.py:2: gpu_eks"]


def test_gpu_eks_names_this_checkouts_modules_not_a_second_copy():
    import gpu_eks
    import gpu_eks.config.errors
    import gpu_eks.review.cli
    from gpu_eks import GpuCluster, Settings

    assert gpu_eks is components and GpuCluster is components.GpuCluster and Settings is components.Settings
    assert gpu_eks.config.errors is importlib.import_module("components.config.errors")
    assert gpu_eks.config.errors.ConfigError is components.ConfigError
    assert gpu_eks.config.errors.__spec__.name == "components.config.errors"
    assert gpu_eks.review.cli is importlib.import_module("components.review.cli")
    # A moved module's old path, under the new name: the module at its new path.
    assert importlib.import_module("gpu_eks.sharing.plan") is importlib.import_module("components.plan.group")
    aliased = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "gpu_eks"}
    assert len(aliased) >= 6
    assert [n for n, m in aliased.items() if m is not sys.modules.get("components" + n.removeprefix("gpu_eks"))] == []


def test_the_alias_leaves_another_package_of_its_name_alone():
    """Where the alias's name is another package (a consumer's own ``components``), its submodules
    are that package's to find."""
    alias = moved.PackageAlias("gpu_eks_test_alias", "components")
    assert alias.find_spec("gpu_eks_test_alias", None).name == "gpu_eks_test_alias"
    assert alias.find_spec("gpu_eks_test_alias.__main__", None) is None  # python -m runs it from its file
    other = types.ModuleType("gpu_eks_test_alias")
    other.__path__ = []
    sys.modules["gpu_eks_test_alias"] = other
    try:
        assert alias.find_spec("gpu_eks_test_alias.config", None) is None
        sys.modules["gpu_eks_test_alias"] = components
        assert alias.find_spec("gpu_eks_test_alias.config", None).name == "gpu_eks_test_alias.config"
    finally:
        del sys.modules["gpu_eks_test_alias"]


def test_the_wheels_old_name_package_does_nothing_here():
    """components/compat/ is the wheel's top-level ``components``; here it is a subpackage of the
    library, and importing it changes nothing and says nothing."""
    finders = list(sys.meta_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        importlib.import_module("components.compat")
    assert caught == [] and sys.meta_path == finders and sys.modules["components"] is components


def test_the_moved_modules_are_named_inside_the_package():
    """``MOVED_MODULES`` holds paths inside the package (its import name differs: gpu_eks installed,
    components here): an entry written with a package name would be looked up under it twice."""
    entries = [*moved.MOVED_MODULES, *moved.MOVED_MODULES.values(), *moved.MOVED_PACKAGES]
    assert [e for e in entries if e.split(".")[0] in NAMES] == []
