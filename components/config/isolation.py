"""``gpuOperator.isolation``: how devices reach containers, cluster-wide, in one setting.

It chooses together the device plugin's ``DEVICE_LIST_STRATEGY`` (gpu_operator/values.py) and the
container toolkit settings every GPU node's boot stage writes (plan/boot.py ``isolate``), because
no plugin strategy works on every kind of node (catalog/device_lists.py ``gpu_pod_outcome``):

| value | plugin strategy | node toolkit: envvar when unprivileged, volume mounts |
|---|---|---|
| ``enforced`` (default) | ``volume-mounts`` | false, true (0.3.0's) |
| ``migrating`` | ``envvar`` (0.2.0's) | true, true |

Precisely: under ``migrating`` a GPU pod gets its devices on a 0.2.0 node (the toolkit's defaults)
and on a ``migrating`` node, but none on an ``enforced`` node (it refuses the variable); under
``enforced`` it gets them on ``migrating`` and ``enforced`` nodes and is not created on a 0.2.0 node
(the variable names ``/var/run/nvidia-container-devices``, which no GPU is called). Hence the
upgrade from 0.2.0 in two steps (UPGRADING.md): ``migrating`` first (the nodes roll to settings
that honour both strategies; the plugin keeps 0.2.0's), then ``enforced`` (the plugin switches, the
nodes roll again). Under ``migrating`` nothing is isolated: a pod with no GPU request that sets
``NVIDIA_VISIBLE_DEVICES=all`` sees every GPU of its node, as on 0.2.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..catalog import device_lists

ENFORCED = "enforced"
MIGRATING = "migrating"
IsolationName = Literal["enforced", "migrating"]


@dataclass(frozen=True)
class Isolation:
    #: The device plugin's DEVICE_LIST_STRATEGY.
    device_list_strategy: str
    #: ``nvidia-ctk config --set`` pairs of the GPU nodes' boot stage, in order.
    toolkit_settings: tuple[tuple[str, str], ...]

    @property
    def enforced(self) -> bool:
        """Whether a pod without a GPU request is kept from the GPUs (the isolation Job can pass): the
        nodes' toolkit refuses the variable from unprivileged containers."""
        return device_lists.isolated(device_lists.toolkit_settings(self.toolkit_settings))


ISOLATIONS: dict[str, Isolation] = {
    # `volume-mounts` alone: `envvar,volume-mounts` (0.3.0) sends the same (device_lists.py), so
    # the envvar member, which did nothing, is dropped; the node settings are 0.3.0's.
    ENFORCED: Isolation(
        device_lists.VOLUME_MOUNTS,
        ((device_lists.ENVVAR_WHEN_UNPRIVILEGED, "false"), (device_lists.VOLUME_MOUNTS_ACCEPTED, "true")),
    ),
    # `envvar`: what the operator's asset gives the plugin without our env (0.2.0).
    MIGRATING: Isolation(
        device_lists.ENVVAR,
        ((device_lists.ENVVAR_WHEN_UNPRIVILEGED, "true"), (device_lists.VOLUME_MOUNTS_ACCEPTED, "true")),
    ),
}

#: What the outputs and the impact summary say of a cluster whose isolation is not enforced.
NOT_ENFORCED = (
    "not enforced (gpuOperator.isolation: migrating): a pod without a GPU request that sets "
    "NVIDIA_VISIBLE_DEVICES=all sees every GPU of its node"
)
