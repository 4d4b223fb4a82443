"""The EFA device plugin's Helm values, from the group plans: it runs on the EFA groups' nodes only.

The chart's required node affinity is ``<key> In <values>`` for each key of
``supportedInstanceLabels`` (catalog/efa.py); its key here is the library's node-group label and its values
the EFA groups' names, so the DaemonSet lands on exactly the nodes of ``efa: true`` groups (not on a
node of the same type in a group without EFA, whose instance has no EFA interface). Its tolerations
are those of the EFA groups' taints (the chart adds ``CriticalAddonsOnly``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..catalog.labels import NODE_GROUP_LABEL
from ..plan.group import GroupPlan


def efa_plans(plans: Iterable[GroupPlan]) -> list[GroupPlan]:
    """The plans of the groups with EFA devices."""
    return [p for p in plans if p.efa_devices]


def efa_plugin_values(plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The chart's values for the EFA groups among ``plans`` (at least one)."""
    mine = efa_plans(plans)
    if not mine:
        raise ValueError("the EFA device plugin needs a group with efa: true; received none")
    tolerations: list[dict[str, str]] = []
    for plan in mine:
        for toleration in plan.tolerations:
            if dict(toleration) not in tolerations:
                tolerations.append(dict(toleration))
    return {
        "supportedInstanceLabels": {"keys": [NODE_GROUP_LABEL], "values": [p.name for p in mine]},
        "tolerations": tolerations,
    }
