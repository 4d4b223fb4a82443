"""GPU sharing profiles: the NVIDIA device plugin's time-slicing and MPS configuration.

Each profile becomes one key of the device-plugin ConfigMap (``devicePlugin.config.data``);
a node picks its profile with the label ``nvidia.com/device-plugin.config=<profile>``.

Time-slicing gives no memory or fault isolation: the pods sharing a T4 share its 16 GiB and
a GPU fault in one affects the others. It raises utilisation for small, trusted workloads.
MPS (``sharing.mps``) runs an MPS control daemon per node that limits each client to
1/replicas of the GPU's memory and compute (docs/sharing.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from ..config.groups import SharingSettings
from ..config.mps import Mps

#: The extended resource the device plugin slices (renamed to ``<name>.shared`` if asked).
GPU_RESOURCE = "nvidia.com/gpu"

#: The MPS root on the host: the gpu-operator's ``DefaultMPSRoot`` and the chart's
#: ``devicePlugin.mps.root`` default (controllers/object_controls.go; deployments/gpu-operator/
#: values.yaml; v25.3.1, v25.10.1, v26.7.0). The operator passes it to the device plugin as the
#: ``MPS_ROOT`` env (its ``--mps-root`` flag, which the plugin requires under MPS: "using MPS requires
#: --mps-root to be specified", cmd/nvidia-device-plugin/main.go, v0.17.2-v0.20.0) and mounts
#: ``<root>/shm`` (a tmpfs of half the node's memory, mounted by the MPS daemon's ``mount-shm`` init
#: container) at ``/dev/shm`` of the plugin and the daemon; the plugin mounts it at ``/dev/shm``
#: of every MPS client (internal/plugin/mps.go updateReponse).
MPS_ROOT = "/run/nvidia/mps"


def _config_file(mig_strategy: str, allocation_policy: str | None) -> dict[str, Any]:
    """A config file's ``version`` and ``flags``, without ``sharing``: the part every profile has."""
    flags: dict[str, Any] = {"migStrategy": mig_strategy}
    if allocation_policy is not None:
        flags["plugin"] = {"sharedDevicesAllocationPolicy": allocation_policy}
    return {"version": "v1", "flags": flags}


def device_plugin_config(
    profile: SharingSettings, mig_strategy: str = "none", allocation_policy: str | None = None
) -> dict[str, Any]:
    """One k8s-device-plugin config file (``version: v1``) for ``profile``.

    Time-slicing with ``replicas: 1`` gives a config without ``sharing``: each GPU is advertised
    once. The plugin refuses ``replicas < 2`` and an empty ``resources`` list inside
    ``sharing.timeSlicing`` or ``sharing.mps``, but a config without ``sharing`` is its "none"
    strategy (NVIDIA/k8s-device-plugin api/config/v1/replicas.go, sharing.go; v0.17.2, v0.18.1,
    v0.20.0). An MPS profile always writes ``failRequestsGreaterThanOne: true``: the plugin forces
    it at v0.17.2/v0.18.1 and defaults it at v0.20.0 (api/config/v1/config.go), so the file says
    what every version does.

    ``flags.migStrategy`` must equal the chart's ``mig.strategy``: the operator passes that as
    the MIG_STRATEGY env, which overrides the file (see values.gpu_operator_values).
    ``allocation_policy`` is ``flags.plugin.sharedDevicesAllocationPolicy`` (plugin v0.20.0+).
    """
    config = _config_file(mig_strategy, allocation_policy)
    if isinstance(profile, Mps):
        config["sharing"] = {
            "mps": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": profile.replicas}],
            }
        }
    elif profile.shared:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": profile.rename_by_default,
                "failRequestsGreaterThanOne": profile.fail_requests_greater_than_one,
                "resources": [{"name": GPU_RESOURCE, "replicas": profile.replicas}],
            }
        }
    return config


def mig_device_plugin_config(
    mig_strategy: str, shared: Mapping[str, int], allocation_policy: str | None = None
) -> dict[str, Any]:
    """The config file of a MIG group's profile: its strategy, and time-slicing of the slices
    (``shared``: resource -> replicas; ``nvidia.com/mig-<profile>`` under mixed, ``nvidia.com/gpu``
    under single: the resources the plugin time-slices, its README v0.17.2-v0.20.0), never
    renamed, one slot per request. Without ``shared``, no ``sharing`` block: every slice once."""
    config = _config_file(mig_strategy, allocation_policy)
    if shared:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": name, "replicas": n} for name, n in shared.items()],
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
