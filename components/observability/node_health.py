"""The node-health alerts of the GPU groups: their rule group in the PrometheusRule, beside the
shared-GPU alerts (``rules``). Pure: no Pulumi. They read the node conditions the EKS node
monitoring agent sets and kubelet's ``Ready`` through kube-state-metrics
(``kube_node_status_condition{condition, status}``, one series per condition and status, 1 for the
node's current status: internal/store/node.go, v2.20.0), and a group's nodes by its label
(``rules._group_nodes``).

* ``GpuNodeRepairPaused``: more of a group is unhealthy than its repair's bound allows, so repair
  stops (a fleet-wide fault must reach a person, not drain the fleet). The bound is the group's
  (``plan.repair.RepairPolicy``): EKS's default (more than 20% once the group has more than 5
  nodes, EKS user guide node-repair), a percent or a count of the group's nodes, or Karpenter's
  fixed 20% of the NodePool rounded up (kubernetes-sigs/karpenter v1.14.1 node/health controller.go
  ``isNodePoolHealthy``).
* ``GpuNodeNotRepaired``: a GPU node whose ``AcceleratedHardwareReady`` stays False well past its
  group's repair wait: a fault repair leaves alone (``NoAction``, repair off), a paused repair, or
  one a reboot did not clear.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..catalog import node_health
from ..plan.group import GroupPlan
from . import rules

GROUP_NAME = "gpu-eks-node-health"
RUNBOOK = "docs/node-health.md"
#: How long past its group's repair wait a GPU fault may stand before a person is told: a reboot
#: and the node's return (minutes) or a replacement's boot and image pulls (the cold-start model's
#: order of magnitude) fit in it.
NOT_REPAIRED_AFTER_WAIT_MINUTES = 20

_HARDWARE_FALSE = (
    f'kube_node_status_condition{{condition="{node_health.ACCELERATED_HARDWARE_READY}", status="false"}} == 1'
)
#: Unhealthy as repair counts it: a GPU fault, or kubelet not Ready (false or unknown).
_NOT_READY = 'kube_node_status_condition{condition="Ready", status!="true"} == 1'
_UNHEALTHY = f"max by (node) (({_HARDWARE_FALSE}) or ({_NOT_READY}))"


def unhealthy_expr(group: str) -> str:
    """How many nodes of ``group`` are unhealthy (no series when none is)."""
    return f"count({_UNHEALTHY} and on (node) {rules._group_nodes([group])})"


def nodes_expr(group: str) -> str:
    return f"count({rules._group_nodes([group])})"


def paused_expr(plan: GroupPlan) -> str:
    """The unhealthy count of ``plan``'s group while its repair is paused by its bound."""
    policy = plan.repair
    unhealthy, nodes = unhealthy_expr(plan.name), nodes_expr(plan.name)
    kind, n = policy.unhealthy_bound or ("eks", node_health.EKS_DEFAULT_UNHEALTHY_PERCENT)
    if kind == "percentUp":
        return f"{unhealthy} > ceil({nodes} * {n / 100})"
    if kind == "percent":
        return f"{unhealthy} > {nodes} * {n / 100}"
    if kind == "count":
        return f"{unhealthy} > {n}"
    return f"{unhealthy} > {nodes} * {n / 100} and {nodes} > {node_health.EKS_DEFAULT_UNHEALTHY_FLOOR_NODES}"


def paused_rule(plan: GroupPlan) -> dict[str, Any]:
    policy = plan.repair
    return rules._alert(
        "GpuNodeRepairPaused",
        paused_expr(plan),
        "5m",
        "critical",
        f"Node repair of GPU node group {plan.name} is paused: {{{{ $value }}}} nodes unhealthy",
        f"More nodes of GPU node group {plan.name} are unhealthy than its repair allows (above {policy.bound_words}), "
        f"so {policy.by} repairs none of them: a fault across many nodes (a driver or AMI release, the agent's DCGM "
        "host engine, the network) is not one broken GPU each.",
        "kubectl get nodes -l gpu-eks.io/node-group=<group> and kubectl describe node (Conditions: "
        "AcceleratedHardwareReady and Ready, their reasons): find what they share; fix it, or repair the nodes "
        "yourself (reboot or terminate the instances)",
        {"node_group": plan.name},
        runbook=RUNBOOK,
    )


def not_repaired_rule(plan: GroupPlan) -> dict[str, Any]:
    policy = plan.repair
    hold = policy.wait_minutes + NOT_REPAIRED_AFTER_WAIT_MINUTES
    return rules._alert(
        "GpuNodeNotRepaired",
        f"max by (node) ({_HARDWARE_FALSE}) and on (node) {rules._group_nodes([plan.name])}",
        f"{hold}m",
        "critical",
        f"GPU node {{{{ $labels.node }}}} of group {plan.name}: {node_health.ACCELERATED_HARDWARE_READY} False "
        f"for {hold}m",
        f"The node monitoring agent reports a GPU fault on this node ({policy.words()}) and it still stands: a fault "
        "repair leaves alone (NoAction: the agent lost its DCGM host engine), repair off or paused "
        "(GpuNodeRepairPaused), or a fault the reboot did not clear.",
        f"kubectl describe node <node> (Conditions: {node_health.ACCELERATED_HARDWARE_READY} reason); DCGMError: the "
        "dcgm-server pod of the eks-node-monitoring-agent add-on on the node; otherwise cordon and drain the node and "
        "terminate the instance",
        {"node_group": plan.name},
        runbook=RUNBOOK,
    )


def rule_group(plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The node-health rule group: per GPU group, its paused-repair alert (where repair is on)
    and its not-repaired alert."""
    out: list[dict[str, Any]] = []
    for p in plans:
        if p.repair.enabled:
            out.append(paused_rule(p))
        out.append(not_repaired_rule(p))
    return {"name": GROUP_NAME, "rules": out}
