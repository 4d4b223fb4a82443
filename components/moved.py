"""Modules that moved, importable at their old paths (UPGRADING.md, "Pure plan package" and "The plan
handed down").

Issue 35 put the pure fact tables in ``catalog/`` and the pure builders the group plan calls in
``plan/``; issue 43 the rules that read plans in ``check/`` and the components' shared blocks in
``blocks/``. A consumer's ``import components.nodegroups.userdata`` (a path the README documented) or
``from components.sharing.plan import plan_group`` keeps working: ``components/__init__.py``
installs ``MovedModules`` at the end of ``sys.meta_path``, so a real module at a path always wins,
and an old path imports the module itself (``components.sharing.plan is components.plan.group``),
only when it is imported. Nothing in this repository imports an old path
(tests/test_architecture.py). They go in 1.0.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

#: Old module path -> where the module lives now.
MOVED_MODULES: dict[str, str] = {
    "components.gpu_operator.chart": "components.catalog.gpu_operator",
    "components.autoscaler.chart": "components.catalog.cluster_autoscaler",
    "components.nodegroups.labels": "components.catalog.labels",
    "components.sharing.plan": "components.plan.group",
    "components.sharing.device_plugin": "components.plan.device_plugin",
    "components.nodegroups.userdata": "components.plan.userdata",
    "components.nodegroups.placement": "components.plan.placement",
    "components.autoscaler.asg": "components.plan.asg",
    # Issue 43: the rules that read plans, on their own floor above the plan.
    "components.config.settings": "components.check.settings",
    "components.config.loading": "components.check.loading",
    "components.config.warnings": "components.check.warnings",
    "components.config.group_rules": "components.check.groups",
    "components.autoscaler.rules": "components.check.autoscaler",
    # The multi-node launch template fragments and a Karpenter group's objects: pure builders of the plan.
    "components.nodegroups.multinode": "components.plan.multinode",
    "components.karpenter.objects": "components.plan.karpenter",
    # The shared blocks below the components, and facts to the catalog.
    "components.helm": "components.blocks.helm",
    "components.cluster.iam": "components.blocks.iam",
    "components.nodegroups.managed": "components.blocks.managed",
    "components.gpu_operator.coverage": "components.blocks.coverage",
    "components.verification.podsecurity": "components.blocks.podsecurity",
    "components.efa.chart": "components.catalog.efa",
    # The node monitoring agent's add-on values, the cluster's own.
    "components.nodehealth.values": "components.cluster.node_monitoring",
}
#: Old packages that are gone as folders: an empty package of their old modules.
MOVED_PACKAGES: tuple[str, ...] = ("components.sharing", "components.nodehealth")


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of ``MOVED_MODULES`` and gives the module that lives at its new one."""

    def __init__(self) -> None:
        #: The moved modules' own specs, by old path (see exec_module).
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname, path, target=None):
        if fullname in MOVED_MODULES or fullname in MOVED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname in MOVED_PACKAGES)
        return None

    def create_module(self, spec):
        if spec.name in MOVED_PACKAGES:
            return types.ModuleType(spec.name, f"Moved: see components.moved ({MOVED_PACKAGES}).")
        module = importlib.import_module(MOVED_MODULES[spec.name])
        # The import system gives the module the spec it was found by: exec_module puts its own back.
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        if module.__name__ != module.__spec__.name:
            module.__spec__ = self._specs[module.__spec__.name]


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
