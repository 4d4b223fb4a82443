"""GPU-ready EKS as Pulumi components.

Import the composite (``GpuCluster``), GPU capacity for an existing cluster
(``GpuCapacity``), or the pieces (``Cluster``, ``GpuNodeGroup``,
``GpuOperator``, ``GpuVerification``); build settings with ``load_settings`` (plain
dict, e.g. from your own config) or ``settings_from_pulumi_config`` (the ``gpu-eks:*`` keys);
``plan_group`` gives everything derived from one GPU node group's settings (labels, taints,
tolerations, resource name, slots: a ``GroupPlan``).

Names are imported lazily (PEP 562), so ``python -m gpu_eks preflight`` and other tools that
need only the settings or the pure builders do not load the Pulumi SDKs.

Installed, the package is ``gpu_eks``; in this repository it is the folder ``components/`` and answers
to ``gpu_eks`` too; ``components`` is the old import name, kept until 1.0 (components/moved.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .moved import answer_to_import_name as _answer_to_import_name
from .moved import install as _install_moved

# Old paths of moved modules (components/moved.py) import the modules at their new ones.
_install_moved()
# A checkout answers to the wheel's import name (gpu_eks) too.
_answer_to_import_name()

_EXPORTS: dict[str, str] = {
    "Cluster": "cluster.component",
    "ClusterAutoscaler": "autoscaler.component",
    "ClusterAutoscalerArgs": "autoscaler.component",
    "ClusterArgs": "cluster.component",
    "GpuCapacity": "composites.gpu_capacity",
    "GpuCapacityArgs": "composites.gpu_capacity",
    "GpuCluster": "composites.gpu_cluster",
    "GpuClusterArgs": "composites.gpu_cluster",
    "GpuNodeGroup": "nodegroups.component",
    "GpuNodeGroupArgs": "nodegroups.component",
    "GpuOperator": "gpu_operator.component",
    "GpuOperatorArgs": "gpu_operator.component",
    "GpuVerification": "verification.component",
    "GpuVerificationArgs": "verification.component",
    "ConfigError": "config.errors",
    "GpuCapacitySettings": "check.settings",
    "GpuNodeGroupSettings": "config.groups",
    "GroupPlan": "plan.group",
    "Taint": "config.groups",
    "plan_group": "plan.group",
    "GpuOperatorSettings": "config.addons",
    "Settings": "check.settings",
    "load_capacity_settings": "check.loading",
    "load_settings": "check.loading",
    "settings_from_pulumi_config": "check.loading",
}

#: Old names of exports, importable until 1.0 with a DeprecationWarning: the module that says what
#: each is now (its ``old_name``). Not in ``__all__``: a star import does not warn.
_OLD_EXPORTS: dict[str, str] = {
    "TimeSlicingVerification": "verification.component",
    "TimeSlicingVerificationArgs": "verification.component",
}

__all__ = [
    "Cluster",
    "ClusterArgs",
    "ClusterAutoscaler",
    "ClusterAutoscalerArgs",
    "ConfigError",
    "GpuCapacity",
    "GpuCapacityArgs",
    "GpuCapacitySettings",
    "GpuCluster",
    "GpuClusterArgs",
    "GpuNodeGroup",
    "GpuNodeGroupArgs",
    "GpuNodeGroupSettings",
    "GpuOperator",
    "GpuOperatorArgs",
    "GpuOperatorSettings",
    "GpuVerification",
    "GpuVerificationArgs",
    "GroupPlan",
    "Settings",
    "Taint",
    "load_capacity_settings",
    "load_settings",
    "plan_group",
    "settings_from_pulumi_config",
]

if TYPE_CHECKING:
    from .autoscaler.component import ClusterAutoscaler, ClusterAutoscalerArgs
    from .check.loading import load_capacity_settings, load_settings, settings_from_pulumi_config
    from .check.settings import GpuCapacitySettings, Settings
    from .cluster.component import Cluster, ClusterArgs
    from .composites.gpu_capacity import GpuCapacity, GpuCapacityArgs
    from .composites.gpu_cluster import GpuCluster, GpuClusterArgs
    from .config.addons import GpuOperatorSettings
    from .config.errors import ConfigError
    from .config.groups import GpuNodeGroupSettings, Taint
    from .gpu_operator.component import GpuOperator, GpuOperatorArgs
    from .nodegroups.component import GpuNodeGroup, GpuNodeGroupArgs
    from .plan.group import GroupPlan, plan_group
    from .verification.component import GpuVerification, GpuVerificationArgs


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # pyproject.toml's version (components/version.py): one place for the package, the
        # component package's schema and what a consumer's installed copy reports.
        from .version import package_version

        return package_version()
    if name in _OLD_EXPORTS:
        # Not cached in the module's globals: each use says it is an old name.
        return importlib.import_module(f".{_OLD_EXPORTS[name]}", __name__).old_name(name, stacklevel=2)
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
