"""GPU sharing profiles: the NVIDIA device plugin's time-slicing configuration.

Each profile becomes one key of the device-plugin ConfigMap (``devicePlugin.config.data``);
a node picks its profile with the label ``nvidia.com/device-plugin.config=<profile>``.

Time-slicing gives no memory or fault isolation: the pods sharing a T4 share its 16 GiB and
a GPU fault in one affects the others. It raises utilisation for small, trusted workloads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from ..config.groups import TimeSlicing

#: The extended resource the device plugin slices (renamed to ``<name>.shared`` if asked).
GPU_RESOURCE = "nvidia.com/gpu"


def device_plugin_config(profile: TimeSlicing, mig_strategy: str = "none") -> dict[str, Any]:
    """One k8s-device-plugin config file (``version: v1``) for ``profile``.

    ``replicas: 1`` gives a config without ``sharing``: each GPU is advertised once. The plugin
    refuses ``replicas < 2`` and an empty ``resources`` list inside ``sharing.timeSlicing``, but
    a config without ``sharing`` is its "none" strategy (NVIDIA/k8s-device-plugin
    api/config/v1/replicas.go, sharing.go; v0.17.2, v0.18.1, v0.20.0).

    ``flags.migStrategy`` must equal the chart's ``mig.strategy``: the operator passes that as
    the MIG_STRATEGY env, which overrides the file (see values.gpu_operator_values).
    """
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": mig_strategy}}
    if profile.shared:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": profile.rename_by_default,
                "failRequestsGreaterThanOne": profile.fail_requests_greater_than_one,
                "resources": [{"name": GPU_RESOURCE, "replicas": profile.replicas}],
            }
        }
    return config


def device_plugin_config_data(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """ConfigMap data: profile name → config file text (ConfigMap values are strings), from each
    profile's config file (``device_plugin_config``; a group plan's ``device_plugin_config``)."""
    return {name: yaml.safe_dump(dict(config), sort_keys=False) for name, config in sorted(configs.items())}


def config_map_name(data: Mapping[str, str], prefix: str = "time-slicing-config") -> str:
    """A ConfigMap name that changes whenever the sharing configuration changes.

    Why: the device plugin reads its ConfigMap only at start-up, so editing the ConfigMap in
    place changes nothing until someone runs ``kubectl rollout restart`` (NVIDIA/gpu-operator
    #1144). The operator mounts the ConfigMap into the device-plugin and GFD DaemonSets *by
    name* (its ``handleDevicePluginConfig`` transform sets the volume's ConfigMap name from
    ``devicePlugin.config.name``), so a new name changes the DaemonSets' pod template and
    Kubernetes rolls them: the new slicing is live after the next ``pulumi up`` with no manual
    step. Helm deletes the ConfigMap of the old name in the same upgrade.
    """
    digest = hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()[:10]
    return f"{prefix}-{digest}"
