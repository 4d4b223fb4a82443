"""A GPU node of a group's plan, as the device plugin and node repair treat a failed GPU: a model of
upstream behaviour, for tests (no hardware here).

The device plugin (NVIDIA/k8s-device-plugin v0.17.2, v0.18.1, v0.20.0, the plugins of gpu-operator
v25.3.1-v26.7.0):

* advertises each GPU ``replicas`` times under sharing (``internal/rm/device_map.go``
  ``updateDeviceMapWithReplicas``: devices ``<uuid>::<i>``), once otherwise;
* on an NVML critical-XID event not in its ignored list (13, 31, 43, 45, 68, 109: application errors)
  marks the device it keeps for that GPU's UUID Unhealthy, for good (``internal/rm/health.go``
  ``checkHealth``: ``parentToDeviceMap[uuid] = d`` keeps one device per UUID, the last one written;
  ``internal/plugin/server.go`` "there is no way to recover from the Unhealthy state").

Node repair (``plan.repair.RepairPolicy.action``): a reboot resets every GPU and restarts the
plugin, a replacement brings a new instance, EKS's own action without overrides is one of the two:
either way the node advertises every slot again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components.catalog import node_health as nh
from components.observability.rules import APPLICATION_XIDS
from components.plan.group import GroupPlan


@dataclass
class GpuNode:
    plan: GroupPlan
    #: Device id -> (GPU index, healthy), in the order the plugin builds them.
    devices: dict[str, tuple[int, bool]] = field(default_factory=dict)
    #: GPUs that failed (their processes fail, whatever the plugin advertises).
    failed: set[int] = field(default_factory=set)
    #: The node condition the agent set, None while healthy.
    condition_reason: str | None = None

    def __post_init__(self) -> None:
        self.boot()

    def boot(self) -> None:
        replicas = self.plan.slots_per_node // self.plan.gpus_per_node
        self.devices = {
            (f"GPU-{g}::{r}" if replicas > 1 else f"GPU-{g}"): (g, True)
            for g in range(self.plan.gpus_per_node)
            for r in range(replicas)
        }
        self.failed = set()
        self.condition_reason = None

    def xid(self, gpu: int, code: int) -> None:
        """The driver reports XID ``code`` on GPU ``gpu``."""
        if code in APPLICATION_XIDS:
            return
        self.failed.add(gpu)
        kept = {g: device for device, (g, _) in self.devices.items()}  # one device per GPU: the last
        self.devices[kept[gpu]] = (gpu, False)
        if code in nh.WELL_KNOWN_XIDS:
            self.condition_reason = nh.xid_reason(code)

    def lose_dcgm(self) -> None:
        """The agent loses its DCGM host engine (no GPU failed)."""
        self.condition_reason = "DCGMError"

    @property
    def advertised(self) -> int:
        """Healthy devices: what kubelet offers the scheduler."""
        return sum(1 for _, healthy in self.devices.values() if healthy)

    @property
    def working(self) -> int:
        """Advertised slots whose GPU works."""
        return sum(1 for g, healthy in self.devices.values() if healthy and g not in self.failed)

    def repair(self) -> str:
        """What node repair does once the condition has stood its wait: the action, applied."""
        if self.condition_reason is None:
            return "none"
        action = self.plan.repair.action(self.condition_reason)
        # EKS's own action (no overrides) is a reboot or a replacement: either way every slot again.
        if action in ("Reboot", "Replace", nh.EKS_DEFAULT_ACTION):
            self.boot()
        return action
