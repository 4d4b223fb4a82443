"""GPU-ready EKS as Pulumi components.

Import the composite (``GpuCluster``), GPU capacity for an existing cluster
(``GpuCapacity``), or the pieces (``Cluster``, ``GpuNodeGroup``,
``GpuOperator``, ``TimeSlicingVerification``); build settings with ``load_settings`` (plain
dict, e.g. from your own config) or ``settings_from_pulumi_config`` (the ``gpu-eks:*`` keys).

Names are imported lazily (PEP 562), so ``python -m components preflight`` and other tools that
need only the settings or the pure builders do not load the Pulumi SDKs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Cluster": "cluster",
    "ClusterAutoscaler": "autoscaler",
    "ClusterAutoscalerArgs": "autoscaler",
    "ClusterArgs": "cluster",
    "GpuCapacity": "capacity",
    "GpuCapacityArgs": "capacity",
    "GpuCluster": "gpu_cluster",
    "GpuClusterArgs": "gpu_cluster",
    "GpuNodeGroup": "nodegroup",
    "GpuNodeGroupArgs": "nodegroup",
    "GpuOperator": "operator",
    "GpuOperatorArgs": "operator",
    "TimeSlicingVerification": "verification",
    "TimeSlicingVerificationArgs": "verification",
    "ConfigError": "settings",
    "GpuCapacitySettings": "settings",
    "GpuNodeGroupSettings": "settings",
    "GpuOperatorSettings": "settings",
    "Settings": "settings",
    "load_capacity_settings": "settings",
    "load_settings": "settings",
    "settings_from_pulumi_config": "settings",
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
    "Settings",
    "TimeSlicingVerification",
    "TimeSlicingVerificationArgs",
    "load_capacity_settings",
    "load_settings",
    "settings_from_pulumi_config",
]

if TYPE_CHECKING:
    from .autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
    from .capacity import GpuCapacity, GpuCapacityArgs
    from .cluster import Cluster, ClusterArgs
    from .gpu_cluster import GpuCluster, GpuClusterArgs
    from .nodegroup import GpuNodeGroup, GpuNodeGroupArgs
    from .operator import GpuOperator, GpuOperatorArgs
    from .settings import (
        ConfigError,
        GpuCapacitySettings,
        GpuNodeGroupSettings,
        GpuOperatorSettings,
        Settings,
        load_capacity_settings,
        load_settings,
        settings_from_pulumi_config,
    )
    from .verification import TimeSlicingVerification, TimeSlicingVerificationArgs


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'components' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
