"""The repair policy of one GPU node group, from its settings (``config.repair``) and the agent's
fault classes (``catalog.node_health``). Pure: no Pulumi. ``GroupPlan.repair`` is the one place
components read it: the managed node group's ``nodeRepairConfig``, Karpenter's ``nodeRepair`` gate,
the stack outputs, the change-impact summary and the alert on a paused repair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..catalog import node_health
from ..config.groups import GpuNodeGroupSettings

#: What happens to a fault the agent only reports as an event (``node_health.EVENT_ONLY_REASONS``) or that
#: repair leaves alone (``NoAction``): the alerts are what a person sees.
ALERT_ONLY = "alertOnly"


@dataclass(frozen=True)
class RepairPolicy:
    """What node repair does to a node of the group, per fault of the node monitoring agent."""

    group: str
    #: Who repairs, in the outputs' words (``CapacityProvider.repair_by``).
    by: str
    #: The provider's fixed repair, one feature gate for all its groups (Karpenter's,
    #: ``CapacityProvider.repair_gate``); else the group's own (EKS's ``nodeRepairConfig``).
    gate: bool
    enabled: bool
    #: Minutes a fault stands before the node is repaired (Karpenter: its fixed 10).
    wait_minutes: int
    #: Fault class -> ``Reboot`` | ``Replace`` | ``NoAction`` (Karpenter: ``Replace`` for every class).
    actions: Mapping[str, str]
    #: (``percent`` | ``count``, n): repair pauses while more than n (percent) of the group is
    #: unhealthy; (``percentUp``, 20): the gate's fixed 20% of the NodePool, rounded up; None:
    #: EKS's default (more than 20% once the group has more than 5 nodes).
    unhealthy_bound: tuple[str, int] | None
    #: (``percent`` | ``count``, n) repaired at once; None on Karpenter (no limit).
    parallel: tuple[str, int] | None
    #: A managed group's ``repair.overrides``: one ``nodeRepairConfigOverrides`` entry per fault;
    #: without them EKS applies its own action per reason (``node_health.EKS_DEFAULT_ACTION``).
    overrides: bool = False

    def action(self, reason: str) -> str:
        """What repair does to a node whose AcceleratedHardwareReady is False with ``reason``:
        ``Reboot``, ``Replace``, ``eksDefault`` (no overrides: EKS reboots or replaces as it decides
        per reason) or ``alertOnly`` (off, ``NoAction``, an event-only reason, or one EKS repairs
        no node for)."""
        fault = node_health.FAULTS_BY_REASON.get(reason)
        if not self.enabled or fault is None:
            return ALERT_ONLY
        if self.eks_actions:
            return ALERT_ONLY if reason in node_health.EKS_NO_ACTION_REASONS else node_health.EKS_DEFAULT_ACTION
        action = self.actions[fault.fault_class]
        return ALERT_ONLY if action == "NoAction" else action

    def node_repair_config(self) -> dict[str, Any]:
        """The node group's ``nodeRepairConfig`` in the EKS API's names (botocore ``eks``
        NodeRepairConfig): ``enabled`` and the bounds, and with ``overrides`` one override per fault
        with a fixed reason, so every GPU fault's action is declared rather than left to EKS's
        default (config/repair.py says why that is not the default)."""
        if not self.enabled:
            return {"enabled": False}
        config: dict[str, Any] = {"enabled": True}
        if self.unhealthy_bound is not None:
            kind, n = self.unhealthy_bound
            config["maxUnhealthyNodeThreshold" + ("Percentage" if kind == "percent" else "Count")] = n
        if self.parallel is not None:
            kind, n = self.parallel
            config["maxParallelNodesRepaired" + ("Percentage" if kind == "percent" else "Count")] = n
        if not self.overrides:
            return config
        config["nodeRepairConfigOverrides"] = [
            {
                "nodeMonitoringCondition": node_health.ACCELERATED_HARDWARE_READY,
                "nodeUnhealthyReason": f.reason,
                "minRepairWaitTimeMins": self.wait_minutes,
                "repairAction": self.actions[f.fault_class],
            }
            for f in node_health.FAULTS
        ]
        return config

    def summary(self) -> dict[str, Any]:
        """The policy as the stack outputs and the change-impact summary name it."""
        if not self.enabled:
            return {"enabled": False, "by": self.by}
        out: dict[str, Any] = {"enabled": True, "by": self.by}
        if self.eks_actions:
            out["actions"] = node_health.EKS_DEFAULT_ACTION
        else:
            out |= {"waitMinutes": self.wait_minutes, "actions": dict(self.actions)}
        out["pausedAbove"] = self.bound_words
        if self.parallel is not None:
            out["atOnce"] = f"{self.parallel[1]}{'%' if self.parallel[0] == 'percent' else ''}"
        return out

    @property
    def eks_actions(self) -> bool:
        """A managed group without overrides: EKS's own action per reason."""
        return not self.gate and not self.overrides

    @property
    def bound_words(self) -> str:
        if self.gate:
            return f"{node_health.KARPENTER_UNHEALTHY_PERCENT}% unhealthy (rounded up)"
        if self.unhealthy_bound is None:
            return (
                f"{node_health.EKS_DEFAULT_UNHEALTHY_PERCENT}% unhealthy once more than "
                f"{node_health.EKS_DEFAULT_UNHEALTHY_FLOOR_NODES} nodes"
            )
        kind, n = self.unhealthy_bound
        return f"{n}% unhealthy" if kind == "percent" else f"{n} unhealthy nodes"

    def words(self) -> str:
        """One line: how the group's nodes are repaired."""
        if not self.enabled:
            return "repair off"
        if self.eks_actions:
            return (
                f"repair by {self.by} with EKS's own actions (reboot or replace per reason, after "
                f"{node_health.DEFAULT_WAIT_MINUTES}m; none on {', '.join(node_health.EKS_NO_ACTION_REASONS)}); "
                f"paused above {self.bound_words}"
            )
        acts = ", ".join(f"{c} {a}" for c, a in self.actions.items())
        return f"repair by {self.by} after {self.wait_minutes}m ({acts}); paused above {self.bound_words}"


def repair_policy(group: GpuNodeGroupSettings) -> RepairPolicy:
    """The repair policy of ``group`` (validated settings: a Karpenter group sets only ``enabled``)."""
    r, provider = group.repair, group.provider
    if provider.repair_gate:
        return RepairPolicy(
            group=group.name,
            by=provider.repair_by,
            gate=True,
            enabled=r.enabled,
            wait_minutes=node_health.DEFAULT_WAIT_MINUTES,
            actions=MappingProxyType(dict.fromkeys(node_health.FAULT_CLASSES, "Replace")),
            unhealthy_bound=("percentUp", node_health.KARPENTER_UNHEALTHY_PERCENT),
            parallel=None,
        )
    bound = (
        ("percent", r.max_unhealthy_percent)
        if r.max_unhealthy_percent is not None
        else ("count", r.max_unhealthy_count)
        if r.max_unhealthy_count is not None
        else None
    )
    parallel = (
        ("percent", r.max_parallel_percent)
        if r.max_parallel_percent is not None
        else ("count", r.max_parallel_count if r.max_parallel_count is not None else 1)
    )
    return RepairPolicy(
        group=group.name,
        by=provider.repair_by,
        gate=False,
        enabled=r.enabled,
        wait_minutes=r.wait_minutes,
        actions=MappingProxyType({c: r.actions.of(c) for c in node_health.FAULT_CLASSES}),
        unhealthy_bound=bound,
        parallel=parallel,
        overrides=r.overrides,
    )
