"""GPU-ready EKS as Pulumi components.

Import the composite (``GpuCluster``) or the pieces (``Cluster``, ``GpuNodeGroup``,
``GpuOperator``, ``TimeSlicingVerification``); build settings with ``load_settings`` (plain
dict, e.g. from your own config) or ``settings_from_pulumi_config`` (the ``gpu-eks:*`` keys).
"""

from .cluster import Cluster, ClusterArgs
from .gpu_cluster import GpuCluster, GpuClusterArgs
from .nodegroup import GpuNodeGroup, GpuNodeGroupArgs
from .operator import GpuOperator, GpuOperatorArgs
from .settings import (
    ConfigError,
    GpuNodeGroupSettings,
    GpuOperatorSettings,
    Settings,
    load_settings,
    settings_from_pulumi_config,
)
from .verification import TimeSlicingVerification, TimeSlicingVerificationArgs

__all__ = [
    "Cluster",
    "ClusterArgs",
    "ConfigError",
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
    "load_settings",
    "settings_from_pulumi_config",
]
