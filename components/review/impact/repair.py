"""The repair policy of each GPU node group in the change-impact summary: what a change of a managed
node group's ``nodeRepairConfig`` or of Karpenter's ``nodeRepair`` gate means, in words, from the
renders alone. Neither replaces a node: ``nodeRepairConfig`` is part of EKS UpdateNodegroupConfig
(botocore ``eks`` UpdateNodegroupConfigRequest.nodeRepairConfig; not one of aws_eks_node_group's
ForceNew arguments, ``rules.RULES``), and the gate is a value of the Karpenter release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...catalog import node_health
from .rules import HELM_RELEASE_TYPE, NODE_GROUP_TYPE, dig

_CONFIG = "nodeRepairConfig"
_OVERRIDES = "nodeRepairConfigOverrides"
#: Said where a node group stops sending its overrides: whether EKS then drops the ones it has is not
#: known. The AWS provider's ``node_repair_config`` block is Optional and Computed (hashicorp/
#: terraform-provider-aws internal/service/eks/node_group.go; pulumi-aws 7.51.1 types
#: ``NodeGroup.node_repair_config`` as always set, its mark of a computed attribute), and its
#: ``node_repair_config_overrides`` list came with provider v6.20.0 (PR #44894, "Optional, List");
#: whether an update without the list sends EKS an empty list or none, and whether EKS's
#: UpdateNodegroupConfig then clears or keeps the overrides it has, neither source says (the EKS API
#: reference does not), and nothing here was sent to EKS.
DROPPED_OVERRIDES = (
    "whether EKS drops the nodeRepairConfigOverrides no longer sent is not verified: check "
    "`aws eks describe-nodegroup` after the update (UPGRADING.md)"
)
_GATE = ("values", "settings", "featureGates", node_health.KARPENTER_REPAIR_GATE)


def policy_words(config: Mapping[str, Any] | None) -> str:
    """A node group's ``nodeRepairConfig`` (render inputs, the EKS API's names) in one line."""
    if not config or not config.get("enabled"):
        return "repair off"
    overrides = config.get("nodeRepairConfigOverrides") or []
    by_class: dict[str, set[str]] = {}
    waits = sorted({o.get("minRepairWaitTimeMins") for o in overrides if o.get("minRepairWaitTimeMins")})
    for o in overrides:
        fault = node_health.FAULTS_BY_REASON.get(str(o.get("nodeUnhealthyReason")))
        by_class.setdefault(fault.fault_class if fault else "other", set()).add(str(o.get("repairAction")))
    acts = ", ".join(f"{c} {'/'.join(sorted(a))}" for c, a in by_class.items()) or "EKS's default actions"
    after = f" after {'/'.join(str(w) for w in waits)}m" if waits else ""
    bound = next(
        (
            f"{config[k]}{'%' if k.endswith('Percentage') else ''} unhealthy"
            for k in ("maxUnhealthyNodeThresholdPercentage", "maxUnhealthyNodeThresholdCount")
            if k in config
        ),
        f"EKS's default ({node_health.EKS_DEFAULT_UNHEALTHY_PERCENT}% unhealthy once more than "
        f"{node_health.EKS_DEFAULT_UNHEALTHY_FLOOR_NODES} nodes)",
    )
    parallel = next(
        (
            f"; at most {config[k]}{'%' if k.endswith('Percentage') else ''} at once"
            for k in ("maxParallelNodesRepairedPercentage", "maxParallelNodesRepairedCount")
            if k in config
        ),
        "",
    )
    return f"repair on{after} ({acts}); paused above {bound}{parallel}"


def collapse(impacts: Mapping[str, Any]) -> None:
    """One ``nodeRepairConfig`` in a node group's changed inputs, not one line per override."""
    for r in impacts.values():
        if r.type == NODE_GROUP_TYPE and any(c.startswith(f"{_CONFIG}.") for c in r.changed):
            kept = [c for c in r.changed if not c.startswith(f"{_CONFIG}.")]
            r.changed = [*kept, _CONFIG]


def notes(new_items: Sequence[Mapping[str, Any]], old_items: Mapping[str, Mapping[str, Any]], ref: Any) -> list[str]:
    """A note per node group whose repair policy is new or changes, and per Karpenter release whose
    ``nodeRepair`` gate changes (``old_items``: the old item of each new one, by ``ref`` of the new one)."""
    out: list[str] = []
    for item in new_items:
        before = old_items.get(ref(item))
        old_inputs = (before or {}).get("inputs") or {}
        inputs = item.get("inputs") or {}
        if item["type"] == NODE_GROUP_TYPE and _CONFIG in inputs and inputs.get(_CONFIG) != old_inputs.get(_CONFIG):
            if before is None:
                out.append(f"node group {item['name']} (new): {policy_words(inputs.get(_CONFIG))}")
                continue
            dropped = (old_inputs.get(_CONFIG) or {}).get(_OVERRIDES) and not inputs[_CONFIG].get(_OVERRIDES)
            out.append(
                f"node group {item['name']}: {policy_words(inputs.get(_CONFIG))} (was: "
                f"{policy_words(old_inputs.get(_CONFIG))}); nodeRepairConfig is updated in place "
                "(EKS UpdateNodegroupConfig): no node is replaced by this change"
                + (f"; {DROPPED_OVERRIDES}" if dropped else "")
            )
        if item["type"] == HELM_RELEASE_TYPE and dig(inputs, *_GATE) is not None:
            now, was = bool(dig(inputs, *_GATE)), bool(dig(old_inputs, *_GATE))
            if before is not None and now != was:
                out.append(
                    f"Karpenter release {item['name']}: node repair {'on' if now else 'off'} for every NodePool "
                    f"(settings.featureGates.{node_health.KARPENTER_REPAIR_GATE}): the controller restarts, no node is "
                    "replaced by this change"
                )
    return out
