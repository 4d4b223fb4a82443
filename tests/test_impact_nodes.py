"""The change-impact summary's words about the nodes a roll replaces (components/review/impact/nodes.py,
issue 42): the time-slicing line only for groups whose GPUs are time-sliced (never for MIG, MPS or
whole-GPU groups), and the surge of a managed node group's rolling update, which on reserved capacity
needs free reserved instances. One cluster whose groups differ, in the shape of a real render (the
device-plugin profiles of the operator's release, each group's profile label in its launch template's
nodeadm user data: tests/snapshots/dev.yaml); tests/test_impact.py checks dev's real render."""

from __future__ import annotations

from typing import Any

from components.review import impact
from tests.support.documents import doc, item
from tests.support.tokens import LAUNCH_TEMPLATE, NODE_GROUP, NODECLASS, NODEPOOL, RELEASE

PROFILES = {
    "timeslice-x4": {
        "version": "v1",
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    },
    "mps-x4": {"version": "v1", "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}},
    "mig-single": {"version": "v1", "flags": {"migStrategy": "single"}},
    "whole": {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}},
}


def operator() -> dict[str, Any]:
    config = {"create": True, "data": PROFILES, "default": "whole", "name": "time-slicing-config"}
    return item(RELEASE, "gpu-operator", {"chart": "gpu-operator", "values": {"devicePlugin": {"config": config}}})


def group(name: str, profile: str | None, boot: str, launch: dict[str, Any] | None = None, **inputs: Any) -> list:
    """A managed GPU node group and its launch template (``boot``: the user data's shell part)."""
    labels = f"gpu-eks.io/node-group={name}" + (f",nvidia.com/device-plugin.config={profile}" if profile else "")
    node_config = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig"}
    node_config["spec"] = {"kubelet": {"flags": [f"--node-labels={labels}"]}}
    user_data = {
        "sha256": boot,
        "parts": [
            {"contentType": "application/node.eks.aws", "content": node_config},
            {"contentType": "text/x-shellscript", "content": f"#!/bin/bash\n# {boot}\n"},
        ],
    }
    lt = f"{LAUNCH_TEMPLATE}::{name}-lt"
    return [
        item(LAUNCH_TEMPLATE, f"{name}-lt", {"userData": user_data, **(launch or {})}),
        item(
            NODE_GROUP,
            name,
            {
                "amiType": "AL2023_x86_64_NVIDIA",
                "launchTemplate": {"id": "(known after apply)", "version": "(known after apply)"},
                "scalingConfig": {"desiredSize": 0, "maxSize": 2, "minSize": 0},
                "instanceTypes": ["p5.48xlarge"],
                **inputs,
            },
            dependsOn=[lt],
            inputDependencies={"launchTemplate": [lt]},
        ),
    ]


RESERVATION = {"capacityReservationSpecification": {"capacityReservationTarget": {"capacityReservationId": "cr-0123"}}}
BLOCK = {"instanceMarketOptions": {"marketType": "capacity-block"}, **RESERVATION}


def cluster(boot: str, block_types: list[str]) -> dict[str, Any]:
    """Six GPU groups that differ in sharing and capacity; ``boot`` changes their user data (a roll),
    ``block_types`` the Capacity Block group's instance types (a replacement)."""
    return doc(
        operator(),
        *group("ts", "timeslice-x4", boot),
        *group("mps", "mps-x4", boot),
        *group("mig", "mig-single", boot),
        *group("plain", None, boot),  # no label: the release's default profile, whole GPUs
        *group("reserved", "timeslice-x4", boot, RESERVATION),
        *group("block", "mig-single", "same", BLOCK, capacityType="CAPACITY_BLOCK", instanceTypes=block_types),
    )


def test_only_time_sliced_groups_get_the_isolation_line_and_reserved_ones_the_surge_warning():
    summary = impact.summarize("dev", cluster("old", ["p5.48xlarge"]), cluster("new", ["p5e.48xlarge"]))
    rolls = {r.node_group: (r.how, r.time_sliced, r.reserved) for r in summary.node_rolls}
    assert rolls == {
        "ts": ("rolled", True, None),
        "mps": ("rolled", False, None),
        "mig": ("rolled", False, None),
        "plain": ("rolled", False, None),
        "reserved": ("rolled", True, "its capacity reservation"),
        "block": ("replaced", False, "its Capacity Block"),
    }
    lines = impact.lines(summary)
    rescheduled = {text.split(":")[0]: text for head, text in lines if head == "GPU pods rescheduled"}
    isolation = " (time-slicing gives no isolation: every pod sharing a GPU goes at once)"
    assert [name for name, text in rescheduled.items() if text.endswith(isolation)] == [
        "node group ts",
        "node group reserved",
    ]
    assert rescheduled["node group mig"] == (
        "node group mig: its GPU pods are evicted as each node drains and start again on new nodes"
    )
    rolled = {text.split(":")[0]: text for head, text in lines if head == "nodes rolled"}
    surge = "EKS first launches up to 2 extra nodes per zone (maxUnavailable, if more) for their pods"
    assert rolled["node group ts"].endswith(f"(UpdateNodegroupVersion); {surge}")
    assert rolled["node group reserved"].endswith(
        f"{surge}, which on its capacity reservation need free reserved instances: without them the update fails"
    )
    assert rolled["node group block"].endswith(
        "; on its Capacity Block, the new group's nodes need free reserved instances while the old ones hold theirs"
    )


def test_a_karpenter_pool_and_its_node_class_are_time_sliced_by_their_nodes_profile():
    def karpenter(team: str, profile: str) -> dict[str, Any]:
        labels = {"gpu-eks.io/gpu-count": "1", "nvidia.com/device-plugin.config": profile, "team": team}
        template = {"metadata": {"labels": labels}, "spec": {"nodeClassRef": {"name": "gpu-eks-t4"}}}
        return doc(
            operator(),
            item(NODECLASS, "gpu-eks-t4-nodeclass", {"metadata": {"name": "gpu-eks-t4"}, "spec": {"userData": team}}),
            item(NODEPOOL, "gpu-eks-t4-nodepool", {"spec": {"template": template, "limits": {"nodes": "3"}}}),
        )

    for profile, sliced in (("timeslice-x4", True), ("mps-x4", False)):
        summary = impact.summarize("dev", karpenter("a", profile), karpenter("b", profile))
        assert {r.node_group: r.time_sliced for r in summary.node_rolls} == {
            "EC2NodeClass gpu-eks-t4-nodeclass": sliced,
            "NodePool gpu-eks-t4-nodepool": sliced,
        }, profile
