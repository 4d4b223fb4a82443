"""A Karpenter group's nodes (``CapacityProvider.node_pool``): its EC2NodeClass, NodePool and
NodeOverlay, declared from its plan (plan/karpenter.py builds them) for the cluster's Karpenter
(``KarpenterTarget``: GpuCluster's own, or an existing cluster's given to GpuCapacity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..plan import karpenter as objects
from ..plan.group import GroupPlan
from ..plan.multinode import CLUSTER_STRATEGY


@dataclass
class KarpenterTarget:
    """What a Karpenter group's objects need of the cluster's Karpenter."""

    #: The IAM role (name, not ARN) of the nodes Karpenter launches: EC2NodeClass ``spec.role``.
    node_role: pulumi.Input[str]
    #: The ``karpenter.sh/discovery`` tag value of the nodes' subnets and security groups.
    discovery: pulumi.Input[str]
    #: The cluster's Kubernetes provider.
    provider: k8s.Provider
    #: What must exist first (the Karpenter release: its CRDs).
    depends_on: Sequence[pulumi.Resource] = ()
    tags: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


@dataclass
class GroupObjects:
    node_class: k8s.apiextensions.CustomResource
    node_pool: k8s.apiextensions.CustomResource
    node_overlay: k8s.apiextensions.CustomResource | None


def _custom_resource(name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions):
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


def declare_group_objects(
    name: str,
    plan: GroupPlan,
    target: KarpenterTarget,
    *,
    parent: pulumi.Resource,
    security_groups: Sequence[pulumi.Input[str]] = (),
    wait_for: pulumi.Input[Sequence[pulumi.Resource]] = (),
) -> GroupObjects:
    """``{name}-nodeclass``, ``{name}-nodepool`` and, where the group needs it, ``{name}-overlay``;
    the EC2NodeClass and the NodePool (what launches nodes) also after ``wait_for``."""
    opts = pulumi.ResourceOptions(parent=parent, provider=target.provider, depends_on=list(target.depends_on))
    launching = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=wait_for))
    # An existing placement group (placementGroup) by its name; placement: cluster creates one.
    placement_group = plan.settings.placement_group
    if plan.settings.placement == CLUSTER_STRATEGY:
        # Karpenter resolves it by name (EC2NodeClass placementGroupSelector; its controller policy
        # allows ec2:DescribePlacementGroups and RunInstances on placement-group/*).
        placement_group = aws.ec2.PlacementGroup(
            f"{name}-placement",
            strategy=CLUSTER_STRATEGY,
            tags=dict(target.tags),
            opts=pulumi.ResourceOptions(parent=parent),
        ).name
    node_class = _custom_resource(
        f"{name}-nodeclass",
        objects.ec2_node_class(
            plan,
            role=target.node_role,
            discovery=target.discovery,
            tags=target.tags,
            placement_group=placement_group,
            security_groups=security_groups,
        ),
        launching,
    )
    node_pool = _custom_resource(
        f"{name}-nodepool",
        objects.node_pool(plan),
        pulumi.ResourceOptions.merge(launching, pulumi.ResourceOptions(depends_on=[node_class])),
    )
    overlay = (
        _custom_resource(f"{name}-overlay", objects.node_overlay(plan), opts) if objects.needs_overlay(plan) else None
    )
    return GroupObjects(node_class, node_pool, overlay)
