"""The mig-parted config of the cluster: one named config per MIG group, for the gpu-operator's
mig-manager (its ``migManager.config`` ConfigMap, key ``config.yaml``).

mig-manager applies, on each node, the config named by the node's ``nvidia.com/mig.config`` label
(plan.MIG_CONFIG_LABEL), which the group's nodes carry from kubelet (nodeadm) with a name of the
group (plan.mig_config_name): a layout change changes this file, never the nodes' user data. The
ConfigMap's name is a hash of its content, so a layout change also renames it, the operator
re-points mig-manager's DaemonSet at it, the DaemonSet rolls, and each mig-manager applies the
new layout when it starts (NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go ``start`` applies the
label's config first, then waits for changes; an already applied config is left alone:
deployments/container/reconfigure-mig.sh ``nvidia-mig-parted assert`` then ``exit_success`` at
v0.12.1, pkg/mig/reconfigure/reconfigure.go "Selected MIG config is already applied" at v0.13.1 and
v0.15.0; the mig-managers of gpu-operator v25.3.1, v25.10.1, v26.7.0).

File format: mig-parted ``version: v1``, ``mig-configs: <name>: [{devices, mig-enabled,
mig-devices}]`` (the chart's own default config, assets/state-mig-manager/0400_configmap.yaml).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from ..catalog.mig import MIG_DISABLED
from . import device_plugin
from .group import GroupPlan

#: The ConfigMap key mig-manager reads ("ConfigMap MUST have a key named config.yaml": the chart's
#: values.yaml migManager.config, v26.7.0; the operator mounts it as /mig-parted-config/config.yaml).
CONFIG_KEY = "config.yaml"


def mig_parted_config(plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The mig-parted config of every MIG group of ``plans``, and ``all-disabled``: the chart's
    ``migManager.config.default``, which a MIG-capable node without the label gets."""
    configs: dict[str, Any] = {MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for p in plans:
        if p.mig_layout is not None and p.mig_config_name is not None:
            configs[p.mig_config_name] = [
                {"devices": "all", "mig-enabled": True, "mig-devices": dict(p.mig_layout)},
            ]
    return {"version": "v1", "mig-configs": configs}


def config_map_data(plans: Sequence[GroupPlan]) -> dict[str, str]:
    """The ConfigMap data (``config.yaml``: the file's text)."""
    return {CONFIG_KEY: yaml.safe_dump(mig_parted_config(plans), sort_keys=False)}


def mig_manager_values(plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The chart's ``migManager`` values: {} (the chart's own) without a MIG group, so clusters
    without MIG render as before; else the chart creates our ConfigMap (``config.create``, ``name``,
    ``data``: values.yaml at v25.3.1, v25.10.1, v26.7.0). ``env`` is left alone: at v25.3.1 the
    chart's own ``WITH_REBOOT=false`` (Helm replaces lists), later versions the same default
    (mig-parted ``--with-reboot``: false)."""
    if not any(p.mig_layout is not None for p in plans):
        return {}
    data = config_map_data(plans)
    return {
        "config": {
            "create": True,
            "name": device_plugin.config_map_name(data, "gpu-eks-mig-parted"),
            "default": MIG_DISABLED,
            "data": data,
        }
    }
