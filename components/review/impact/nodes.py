"""What a render says about the nodes a roll replaces, for the summary's words: whether their GPUs
are time-sliced (pods sharing one GPU all go when its node drains; MIG slices, MPS and whole GPUs
give each pod its own share, and the words must not say otherwise), and whether they run on reserved
capacity (a managed node group's rolling update first launches extra nodes: on a capacity
reservation or a Capacity Block those need free reserved instances). Pure: no Pulumi, no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .rules import HELM_RELEASE_TYPE, LAUNCH_TEMPLATE_TYPE, NODE_GROUP_TYPE, NODECLASS_TYPE, NODEPOOL_TYPE, dig

#: The node label naming a node's device-plugin profile (the gpu-operator's config manager reads it;
#: a node without it gets the release's ``devicePlugin.config.default``).
PROFILE_LABEL = "nvidia.com/device-plugin.config"
#: EKS CreateNodegroup ``capacityType`` and EC2 ``InstanceMarketOptions.MarketType`` of a Capacity Block.
CAPACITY_BLOCK = ("CAPACITY_BLOCK", "capacity-block")


def with_node_facts(rolls: Sequence[Any], new_items: Sequence[Mapping[str, Any]], old_items: Any) -> list[Any]:
    """``rolls`` (the summary's ``NodeRoll``) with ``time_sliced`` and ``reserved`` read from the renders:
    the new one, else the old one for a deleted group."""
    items = [*new_items, *old_items.values()]
    by_ref = {f"{i['type']}::{i['name']}": i for i in items}
    profiles, default = _profiles(items)
    out = []
    for roll in rolls:
        kind, _, name = roll.node_group.rpartition(" ")
        typ = {"NodePool": NODEPOOL_TYPE, "EC2NodeClass": NODECLASS_TYPE}.get(kind, NODE_GROUP_TYPE)
        found = next((i for i in items if i["type"] == typ and i["name"] == name), None)
        if found is None:
            out.append(roll)
            continue
        labels = [_labels(pool, by_ref) for pool in _pools_of(found, items)]
        sliced = any(_time_sliced(profiles.get(ls.get(PROFILE_LABEL, default or ""))) for ls in labels)
        out.append(dataclasses.replace(roll, time_sliced=sliced, reserved=_reserved(found, by_ref)))
    return out


def _profiles(items: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """The device-plugin profiles of the gpu-operator releases (``values.devicePlugin.config``) and the default."""
    profiles: dict[str, Any] = {}
    default = None
    for item in items:
        if item["type"] != HELM_RELEASE_TYPE:
            continue
        config = dig(item, "inputs", "values", "devicePlugin", "config") or {}
        if isinstance(config, Mapping):
            profiles.update(config.get("data") or {})
            default = default or config.get("default")
    return profiles, default


def _time_sliced(profile: Any) -> bool:
    """A k8s-device-plugin config that shares a GPU between pods by time-slicing (``replicas`` > 1)."""
    slicing = ((profile or {}).get("sharing") or {}).get("timeSlicing") if isinstance(profile, Mapping) else None
    return any(int(r.get("replicas", 1)) > 1 for r in (slicing or {}).get("resources") or [])


def _pools_of(item: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The node groups or NodePools whose nodes ``item``'s roll replaces (an EC2NodeClass: its pools)."""
    if item["type"] != NODECLASS_TYPE:
        return [item]
    name = dig(item, "inputs", "metadata", "name")
    pools = [i for i in items if i["type"] == NODEPOOL_TYPE]
    return [p for p in pools if _template(p).get("spec", {}).get("nodeClassRef", {}).get("name") == name]


def _template(pool: Mapping[str, Any]) -> Mapping[str, Any]:
    return dig(pool, "inputs", "spec", "template") or {}


def _launch_template(group: Mapping[str, Any], by_ref: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The inputs of the launch template a managed node group's ``launchTemplate`` comes from."""
    for ref in (group.get("inputDependencies") or {}).get("launchTemplate") or group.get("dependsOn") or []:
        found = by_ref.get(ref)
        if found is not None and found["type"] == LAUNCH_TEMPLATE_TYPE:
            return found.get("inputs") or {}
    return {}


def _labels(item: Mapping[str, Any], by_ref: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """A node's labels: a NodePool's template, or a node group's ``labels`` and its nodeadm user data's
    ``--node-labels`` (plan/userdata.py writes them there)."""
    if item["type"] == NODEPOOL_TYPE:
        return dict((_template(item).get("metadata") or {}).get("labels") or {})
    labels = dict((item.get("inputs") or {}).get("labels") or {})
    user_data = _launch_template(item, by_ref).get("userData")
    parts = user_data.get("parts") or [] if isinstance(user_data, Mapping) else []
    for part in parts:
        content = part.get("content") if isinstance(part, Mapping) else None
        if not isinstance(content, Mapping):
            continue  # a shell script part
        kubelet = (content.get("spec") or {}).get("kubelet") or {}
        for flag in kubelet.get("flags") or []:
            if str(flag).startswith("--node-labels="):
                pairs = str(flag).removeprefix("--node-labels=").split(",")
                labels.update(pair.split("=", 1) for pair in pairs if "=" in pair)
    return labels


def _reserved(item: Mapping[str, Any], by_ref: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The reserved capacity a managed node group runs on, in words, or None: a Capacity Block, or a
    capacity reservation its launch template targets (or ``capacity-reservations-only``)."""
    if item["type"] != NODE_GROUP_TYPE:
        return None
    template = _launch_template(item, by_ref)
    market = (template.get("instanceMarketOptions") or {}).get("marketType")
    if (item.get("inputs") or {}).get("capacityType") in CAPACITY_BLOCK or market in CAPACITY_BLOCK:
        return "its Capacity Block"
    spec = template.get("capacityReservationSpecification") or {}
    if (
        spec.get("capacityReservationTarget")
        or spec.get("capacityReservationPreference") == "capacity-reservations-only"
    ):
        return "its capacity reservation"
    return None
