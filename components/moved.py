"""Old names, importable until 1.0 (UPGRADING.md): modules that moved, and the package's old name.

**Modules.** Issue 35 put the pure fact tables in ``catalog/`` and the pure builders the group plan
calls in ``plan/``; issue 43 the rules that read plans in ``check/`` and the components' shared blocks
in ``blocks/``. A consumer's ``import components.nodegroups.userdata`` (a path the README documented;
``gpu_eks.nodegroups.userdata`` under the new name) or ``from gpu_eks.sharing.plan import plan_group``
keeps working: the package's ``__init__.py``
installs ``MovedModules`` at the end of ``sys.meta_path``, so a real module at a path always wins,
and an old path imports the module itself (``gpu_eks.sharing.plan is gpu_eks.plan.group``),
only when it is imported. ``MOVED_MODULES`` names them inside the package, whatever its import name.
Nothing in this repository imports an old path (tests/test_architecture.py).

**The package** (issue 43). Releases up to 0.3.0 installed it as ``components``, a name many Pulumi
projects give a folder of their own: one of the two then shadowed the other. The wheel installs it
as ``gpu_eks`` (``version.IMPORT_NAME``), and, until 1.0, a top-level ``components`` of one file
(components/compat/) that calls ``keep_old_name``: ``components`` and every ``components.x`` are then
the modules ``gpu_eks`` and ``gpu_eks.x`` themselves (``PackageAlias``), with one DeprecationWarning. A
project's own ``components`` package, earlier on ``sys.path``, still wins over that file, and the
library never imports the old name, so ``gpu_eks`` works beside it. In this repository the folder
``components/`` is the package; it answers to ``gpu_eks`` too once imported
(``answer_to_import_name``), so the docs' programs and a consumer's project run on a checkout.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings
from pathlib import Path

from .version import DISTRIBUTION, IMPORT_NAME, OLD_IMPORT_NAME, PACKAGE

#: Old module path -> where the module lives now, both inside the package (``gpu_eks.<path>``).
MOVED_MODULES: dict[str, str] = {
    "gpu_operator.chart": "catalog.gpu_operator",
    "autoscaler.chart": "catalog.cluster_autoscaler",
    "nodegroups.labels": "catalog.labels",
    "sharing.plan": "plan.group",
    "sharing.device_plugin": "plan.device_plugin",
    "nodegroups.userdata": "plan.userdata",
    "nodegroups.placement": "plan.placement",
    "autoscaler.asg": "plan.asg",
    # Issue 43: the rules that read plans, on their own floor above the plan.
    "config.settings": "check.settings",
    "config.loading": "check.loading",
    "config.warnings": "check.warnings",
    "config.group_rules": "check.groups",
    "autoscaler.rules": "check.autoscaler",
    # The multi-node launch template fragments and a Karpenter group's objects: pure builders of the plan.
    "nodegroups.multinode": "plan.multinode",
    "karpenter.objects": "plan.karpenter",
    # The shared blocks below the components, and facts to the catalog.
    "helm": "blocks.helm",
    "cluster.iam": "blocks.iam",
    "nodegroups.managed": "blocks.managed",
    "gpu_operator.coverage": "blocks.coverage",
    "verification.podsecurity": "blocks.podsecurity",
    "efa.chart": "catalog.efa",
    # The node monitoring agent's add-on values, the cluster's own.
    "nodehealth.values": "cluster.node_monitoring",
    # Issue 43, item 7: modules named by what they hold.
    "config.sharing": "config.mps",
}
#: Old packages that are gone as folders: an empty package of their old modules.
MOVED_PACKAGES: tuple[str, ...] = ("sharing", "nodehealth")

#: What importing the old name says (once: the wheel's ``components`` runs once per process).
OLD_NAME_WARNING = (
    f"{OLD_IMPORT_NAME!r} is the old import name of {DISTRIBUTION} and goes in 1.0: use {IMPORT_NAME!r} "
    f"(import {IMPORT_NAME}, python -m {IMPORT_NAME}; UPGRADING.md, 'The import name gpu_eks')"
)


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of ``MOVED_MODULES`` and gives the module that lives at its new one."""

    def __init__(self) -> None:
        #: The moved modules' own specs, by old path (see exec_module).
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}

    @staticmethod
    def _inside(fullname: str) -> str | None:
        return fullname.removeprefix(f"{PACKAGE}.") if fullname.startswith(f"{PACKAGE}.") else None

    def find_spec(self, fullname, path, target=None):
        name = self._inside(fullname)
        if name in MOVED_MODULES or name in MOVED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=name in MOVED_PACKAGES)
        return None

    def create_module(self, spec):
        name = self._inside(spec.name)
        if name in MOVED_PACKAGES:
            return types.ModuleType(spec.name, f"Moved: see {__name__} ({MOVED_PACKAGES}).")
        module = importlib.import_module(f"{PACKAGE}.{MOVED_MODULES[name]}")
        # The import system gives the module the spec it was found by: exec_module puts its own back.
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        if module.__name__ != module.__spec__.name:
            module.__spec__ = self._specs[module.__spec__.name]


class PackageAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the package ``alias`` and each ``alias.x`` as the module ``target`` / ``target.x``
    itself, not a second copy (the same classes, the same module state). Goes first on
    ``sys.meta_path``: ``sys.modules[alias]`` is ``target``, whose ``__path__`` would otherwise load
    each file again under the alias's name. Answers for submodules only while ``alias`` is
    ``target`` (another package of that name keeps its own modules), and never for a ``__main__``,
    which ``python -m`` runs from its file (the real package's, found through ``__path__``)."""

    def __init__(self, alias: str, target: str) -> None:
        self.alias, self.target = alias, target
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def _real_name(self, fullname: str) -> str | None:
        if fullname == self.alias:
            return self.target
        if not fullname.startswith(f"{self.alias}.") or fullname.endswith(".__main__"):
            return None
        if sys.modules.get(self.alias) is None or sys.modules.get(self.alias) is not sys.modules.get(self.target):
            return None
        return self.target + fullname.removeprefix(self.alias)

    def find_spec(self, fullname, path, target=None):
        real = self._real_name(fullname)
        found = importlib.util.find_spec(real) if real is not None else None
        if found is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=found.submodule_search_locations is not None)
        spec.loader_state = real
        return spec

    def create_module(self, spec):
        module = importlib.import_module(spec.loader_state)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the alias's spec on the module: its own goes back.
        if module.__spec__.loader is self:
            module.__spec__ = self._specs.pop(module.__spec__.name)


def install() -> None:
    """Put the moved modules' finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())


def _alias(alias: str, target: str) -> None:
    """Put a ``PackageAlias`` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, PackageAlias) and (f.alias, f.target) == (alias, target) for f in sys.meta_path):
        sys.meta_path.insert(0, PackageAlias(alias, target))


def answer_to_import_name() -> None:
    """In this repository (the package imported as ``components``, its folder): ``gpu_eks`` and
    ``gpu_eks.x`` name the same modules, as they do where the wheel is installed. Installed, a no-op."""
    if PACKAGE != IMPORT_NAME:
        _alias(IMPORT_NAME, PACKAGE)


def keep_old_name(name: str) -> None:
    """The wheel's top-level ``components`` (components/compat/, module ``name``) calls this: the old
    name becomes this package itself, its submodules ours, and it says so once. Under any other
    name (this repository's ``components.compat``) it does nothing.

    A project's own ``components`` folder of Python modules without ``__init__.py`` (a namespace
    package, PEP 420) is one the import system passes over for any installed package of that name:
    before it on ``sys.path``, it still wins here. The old name is then that folder's package, as
    without the wheel: no alias, no warning. (A folder of other files stays the library's.)"""
    if name != OLD_IMPORT_NAME or PACKAGE == OLD_IMPORT_NAME:
        return
    own = _namespace_folders(name)
    if own:
        sys.modules[name].__path__ = own
        return
    _alias(OLD_IMPORT_NAME, PACKAGE)
    sys.modules[OLD_IMPORT_NAME] = sys.modules[PACKAGE]
    _warn_old_name()


def _namespace_folders(name: str) -> list[str]:
    """The folders ``name`` holding Python modules in the ``sys.path`` entries before the one holding
    module ``name`` (the wheel's): a project's namespace package (a regular one there would have been
    imported instead)."""
    installed = Path(sys.modules[name].__file__).resolve().parents[1]
    folders = []
    for entry in sys.path:
        where = Path(entry or os.getcwd()).resolve()
        if where == installed:
            break
        folder = where / name
        if folder.is_dir() and (any(folder.glob("*.py")) or any(folder.glob("*/*.py"))):
            folders.append(str(folder))
    return folders


def _warn_old_name() -> None:
    """The DeprecationWarning, on the line that imported the old name (Python skips the import
    system's frames). Imported by ``python -m components ...`` (runpy), it is the command's own: a
    warning of ``__main__``, which Python shows by default."""
    frame = sys._getframe(3)  # above the wheel's components/__init__.py: the import system, the importer
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    if frame is not None and frame.f_globals.get("__name__") == "runpy":
        warnings.warn_explicit(OLD_NAME_WARNING, DeprecationWarning, f"python -m {OLD_IMPORT_NAME}", 0, "__main__")
    else:
        warnings.warn(OLD_NAME_WARNING, DeprecationWarning, stacklevel=4)
