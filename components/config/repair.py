"""Node repair of a GPU node group (``gpuNodeGroups[].repair``): its settings, validated against the
EKS API's model (botocore 1.44.5 ``eks`` 2017-11-01: ``NodeRepairConfig``,
``NodeRepairConfigOverrides``, ``RepairAction``), and what a Karpenter group cannot express.

The default ``nodeRepairConfig`` is ``enabled`` and the bounds alone (issue 41): every member of
the model's ``NodeRepairConfig`` is optional, and it is the form the EKS User Guide's node-repair
page enables repair with; the per-reason overrides ("If you use this, you must specify all the
values", EKS API Reference, NodeRepairConfigOverrides) were never sent to a real EKS endpoint by
this project. ``overrides: true`` sends them, one per fault of ``catalog.node_health.FAULTS``.

The fault classes and what each one means: ``catalog.node_health``. The plan (``plan.group``)
turns these settings into the node group's ``nodeRepairConfig`` or Karpenter's ``nodeRepair`` gate.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from ..catalog import node_health
from .capacity_provider import CapacityProvider
from .errors import KeyedProblem, KeyedProblems
from .fields import _Model, doc

_MODEL = "botocore eks NodeRepairConfig"


def _action(value: str) -> str:
    if value not in node_health.REPAIR_ACTIONS:
        raise ValueError(
            "Reboot, Replace or NoAction (the EKS API's RepairAction enum, botocore eks "
            "NodeRepairConfigOverrides.repairAction)"
        )
    return value


def _non_zero(value: int) -> int:
    if value < 1:
        raise ValueError(f"an integer ≥ 1 (the EKS API's NonZeroInteger: min 1, {_MODEL})")
    return value


def _percent(value: int) -> int:
    if not 1 <= value <= 100:
        raise ValueError(f"an integer from 1 to 100 (the EKS API's PercentCapacity: min 1, max 100, {_MODEL})")
    return value


RepairAction = Annotated[str, AfterValidator(_action)]
NonZero = Annotated[int, Field(strict=True), AfterValidator(_non_zero)]
PercentCapacity = Annotated[int, Field(strict=True), AfterValidator(_percent)]


class RepairActions(_Model):
    """What EKS does to a node of a managed node group, per fault class of the node monitoring
    agent's ``AcceleratedHardwareReady`` reasons (``catalog.node_health.FAULTS``)."""

    model_config = ConfigDict(title="RepairActions")

    reset_gpu: RepairAction = Field(
        "Reboot",
        **doc(
            "Faults NVIDIA clears with a GPU reset (XIDs 46, 48, 62, 74, 95, 109, 110, 119, 120, 136, 140, 143, "
            "155, 156, 158; double-bit ECC; NVLink): a reboot resets every GPU of the node, minutes instead of a new "
            "instance's boot and image pulls.",
            type="`Reboot` | `Replace` | `NoAction`",
            default="`Reboot`",
        ),
    )
    restart_instance: RepairAction = Field(
        "Reboot",
        **doc(
            "Faults cleared by restarting the instance (XID 151; Fabric Manager not running).",
            type="`Reboot` | `Replace` | `NoAction`",
            default="`Reboot`",
        ),
    )
    hardware: RepairAction = Field(
        "Replace",
        **doc(
            "Broken hardware a reboot keeps (XIDs 54, 63, 64, 79, 142; NVSwitch fabric failure; a GPU missing; a "
            "failed DCGM diagnostic): a new instance, on another host.",
            type="`Reboot` | `Replace` | `NoAction`",
            default="`Replace`",
        ),
    )
    monitoring: RepairAction = Field(
        "NoAction",
        **doc(
            "The agent lost its DCGM host engine (`DCGMError`): nothing says a GPU failed, and a fleet-wide cause "
            "(the `dcgm-server` pod not running) must reach a person, not reboot every node.",
            type="`Reboot` | `Replace` | `NoAction`",
            default="`NoAction`",
        ),
    )

    def of(self, fault_class: str) -> str:
        return {
            node_health.RESET_GPU: self.reset_gpu,
            node_health.RESTART_INSTANCE: self.restart_instance,
            node_health.HARDWARE: self.hardware,
            node_health.MONITORING: self.monitoring,
        }[fault_class]


class Repair(_Model):
    """Node auto repair of a GPU node group: EKS ``nodeRepairConfig`` on a managed node group,
    Karpenter's ``nodeRepair`` gate on a Karpenter group (replace only, fixed wait and bound)."""

    model_config = ConfigDict(title="RepairSettings")

    enabled: bool = Field(
        True,
        **doc(
            "Repair the group's unhealthy nodes (node conditions of the EKS node monitoring agent, which the library "
            "installs on clusters it creates, and `Ready`). Managed node group: `nodeRepairConfig`, an in-place "
            "update of the node group (no node is replaced by turning it on or off). Karpenter: the controller's "
            'one `nodeRepair` feature gate, so every Karpenter group must agree. See "Node health".',
            type="bool",
            default="`true`",
        ),
    )
    overrides: bool = Field(
        False,
        **doc(
            "Managed node groups only: send one `nodeRepairConfigOverrides` entry per GPU fault (28: the reason, "
            "`waitMinutes`, the action of its class in `actions`). Off: `nodeRepairConfig` is `enabled` and the "
            "bounds alone, the form EKS documents without overrides, and EKS applies its own action per reason. "
            'See "Node health".',
            type="bool",
            default="`false`",
        ),
    )
    actions: RepairActions = Field(
        RepairActions(),
        **doc(
            "Managed node groups only, with `overrides: true`: the action per fault class (Karpenter always replaces)."
        ),
    )
    wait_minutes: NonZero = Field(
        node_health.DEFAULT_WAIT_MINUTES,
        **doc(
            "Managed node groups only, with `overrides: true`: minutes a GPU fault stands before the node is "
            "repaired (`minRepairWaitTimeMins` of each override; EKS's own and Karpenter's is 10).",
            type="int ≥ 1",
            default="`10` (EKS's own)",
        ),
    )
    max_unhealthy_percent: PercentCapacity | None = Field(
        None,
        **doc(
            "Managed node groups only: repair pauses while more than this share of the group is unhealthy "
            "(`maxUnhealthyNodeThresholdPercentage`). Not with `maxUnhealthyCount`.",
            type="int 1–100",
            default="EKS's: paused above 20% once the group has more than 5 nodes",
        ),
    )
    max_unhealthy_count: NonZero | None = Field(
        None,
        **doc(
            "Managed node groups only: repair pauses while more than this many nodes are unhealthy "
            "(`maxUnhealthyNodeThresholdCount`). Not with `maxUnhealthyPercent`.",
            type="int ≥ 1",
            default="EKS's (see `maxUnhealthyPercent`)",
        ),
    )
    max_parallel_percent: PercentCapacity | None = Field(
        None,
        **doc(
            "Managed node groups only: at most this share of the unhealthy nodes repaired at once "
            "(`maxParallelNodesRepairedPercentage`). Not with `maxParallelCount`.",
            type="int 1–100",
            default="none (`maxParallelCount` 1)",
        ),
    )
    max_parallel_count: NonZero | None = Field(
        None,
        **doc(
            "Managed node groups only: at most this many nodes repaired at once (`maxParallelNodesRepairedCount`); "
            "1 unless `maxParallelPercent` is set: GPU capacity is scarce, and the group's updates take one node "
            "at a time too.",
            type="int ≥ 1",
            default="`1`",
        ),
    )

    @model_validator(mode="after")
    def _one_of_each_pair(self) -> Repair:
        problems: list[KeyedProblem] = []
        for percent, count, api in (
            ("max_unhealthy_percent", "max_unhealthy_count", "maxUnhealthyNodeThreshold"),
            ("max_parallel_percent", "max_parallel_count", "maxParallelNodesRepaired"),
        ):
            if getattr(self, percent) is not None and getattr(self, count) is not None:
                key = _camel(count)
                problems.append(
                    (
                        (key,),
                        getattr(self, count),
                        f"not with {_camel(percent)}: the EKS API takes {api}Percentage or {api}Count, not both "
                        f"({_MODEL}: 'you cannot also set ... at the same time')",
                    )
                )
        if problems:
            raise KeyedProblems(problems)
        return self


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


_KARPENTER_BOUND = (
    "Karpenter's bound is fixed: 20% of the NodePool, rounded up (kubernetes-sigs/karpenter v1.14.1 node/health "
    "controller.go allowedUnhealthyPercent)"
)
_KARPENTER_PARALLEL = (
    "Karpenter repairs every eligible node within its 20% bound at once: no parallel limit (node/health controller.go)"
)
#: What Karpenter 1.14.1's repair cannot express, per key in the settings' order (the source of each:
#: catalog.node_health).
_KARPENTER_FIXED = {
    "overrides": "Karpenter takes no per-reason overrides: it replaces on every AcceleratedHardwareReady=False "
    "(RepairPolicies)",
    "actions": "Karpenter replaces the node on every AcceleratedHardwareReady=False, whatever the reason: no reboot, "
    "no per-fault action (aws/karpenter-provider-aws v1.14.1 cloudprovider.go RepairPolicies; EKS user guide, "
    "node-repair: only managed node groups support Reboot)",
    "waitMinutes": "Karpenter waits a fixed 10 minutes (RepairPolicies TolerationDuration)",
    "maxUnhealthyPercent": _KARPENTER_BOUND,
    "maxUnhealthyCount": _KARPENTER_BOUND,
    "maxParallelPercent": _KARPENTER_PARALLEL,
    "maxParallelCount": _KARPENTER_PARALLEL,
}


def repair_problems(repair: Repair, provider: CapacityProvider) -> list[KeyedProblem]:
    """What a group's repair keys cannot do with its capacity provider:
    Karpenter's fixed repair, one feature gate (``karpenter_repair_problems``); on a managed node
    group, ``actions`` and ``waitMinutes`` without ``overrides`` (they are the overrides' values: a
    setting that would do nothing)."""
    if provider.repair_gate:
        return karpenter_repair_problems(repair)
    if repair.overrides:
        return []
    return [
        (
            ("repair", _camel(key)),
            _dump(getattr(repair, key)),
            f"no {_camel(key)} without overrides: true: it is a value of the nodeRepairConfigOverrides, which are "
            "sent only with overrides (without them EKS applies its own action per reason)",
        )
        for key in ("actions", "wait_minutes")
        if key in repair.model_fields_set
    ]


def karpenter_repair_problems(repair: Repair) -> list[KeyedProblem]:
    """The keys a Karpenter group sets that its repair cannot honour: refused, each saying why
    (a setting that would do nothing is not accepted silently)."""
    given = {_camel(f) for f in repair.model_fields_set}
    return [
        (("repair", key), _dump(getattr(repair, _snake(key))), f"no {key} on a Karpenter group: {why}")
        for key, why in _KARPENTER_FIXED.items()
        if key in given
    ]


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _dump(value: Any) -> Any:
    return value.model_dump(by_alias=True, exclude_unset=True) if isinstance(value, _Model) else value
