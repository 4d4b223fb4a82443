"""EKS managed node groups: the launch-template + node-group pair shared by the system node group and
the GPU node groups.

Both are ``aws.eks.NodeGroup`` with a launch template this library owns (rather than pulumi-eks's
ManagedNodeGroup), so that the user data, IMDS settings and root volume are declared here, visible in
previews and tested under mocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from ..catalog import IMDS_HOP_LIMIT, ROOT_DEVICE
from ..config.groups import Scaling
from ..config.names import LAUNCH_TEMPLATE_SUFFIX


@dataclass
class ManagedNodeGroupSpec:
    """What a managed node group needs besides its cluster wiring."""

    ami_type: str
    instance_types: Sequence[str]
    capacity_type: str
    scaling: Scaling
    disk_size_gib: int
    release_version: str | None = None
    #: Base64 MIME user data (nodeadm NodeConfig parts), or None for none.
    user_data: str | None = None
    #: The cluster's Kubernetes minor. Set, the node group follows a control-plane upgrade (EKS
    #: UpdateNodegroupVersion, a rolling update, ``maxUnavailable`` at a time); None, EKS uses the
    #: cluster's version at creation and never upgrades the nodes (aws_eks_node_group ``version``:
    #: "Defaults to EKS Cluster Kubernetes version", drift detected only when set).
    kubernetes_version: str | None = None
    #: gp3 root volume throughput (MiB/s) and IOPS; None: not set, EC2's defaults (125, 3,000).
    root_volume_throughput: int | None = None
    root_volume_iops: int | None = None
    #: A multi-node group's launch template additions in EC2's ``LaunchTemplateData`` shape
    #: (``plan.multinode``): its EFA ``NetworkInterfaces``, ``Placement.GroupName``,
    #: ``CapacityReservationSpecification``, ``InstanceMarketOptions`` and, for a Capacity Block, the
    #: ``InstanceType``. Empty: as before.
    launch_template_data: Mapping[str, Any] = field(default_factory=dict)
    #: ``nodeRepairConfig`` in the EKS API's names (``plan.repair.RepairPolicy.node_repair_config``);
    #: None: not set (the system node group). An in-place update of the node group (EKS
    #: UpdateNodegroupConfig takes it; aws_eks_node_group marks no part of it ForceNew).
    node_repair_config: Mapping[str, Any] | None = None


def _network_interface(ec2: Mapping[str, Any]) -> aws.ec2.LaunchTemplateNetworkInterfaceArgs:
    """One ``NetworkInterfaces`` item (EC2's shape) as the launch template's argument."""
    return aws.ec2.LaunchTemplateNetworkInterfaceArgs(
        network_card_index=ec2["NetworkCardIndex"],
        device_index=ec2["DeviceIndex"],
        interface_type=ec2["InterfaceType"],
        # A string in the provider (Terraform's tri-state bool).
        delete_on_termination=str(ec2["DeleteOnTermination"]).lower(),
        security_groups=ec2["Groups"],
    )


def _capacity_reservation(
    ec2: Mapping[str, Any] | None,
) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    if ec2 is None:
        return None
    target = ec2.get("CapacityReservationTarget")
    return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
        capacity_reservation_preference=ec2.get("CapacityReservationPreference"),
        capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=target.get("CapacityReservationId"),
            capacity_reservation_resource_group_arn=target.get("CapacityReservationResourceGroupArn"),
        )
        if target
        else None,
    )


def _multinode_args(data: Mapping[str, Any]) -> dict[str, Any]:
    """The launch template's multi-node arguments from ``LaunchTemplateData`` additions; none for a
    group without them (so its launch template's inputs are exactly as before)."""
    args: dict[str, Any] = {}
    if data.get("NetworkInterfaces"):
        args["network_interfaces"] = [_network_interface(i) for i in data["NetworkInterfaces"]]
    if "Placement" in data:
        args["placement"] = aws.ec2.LaunchTemplatePlacementArgs(group_name=data["Placement"]["GroupName"])
    if "CapacityReservationSpecification" in data:
        args["capacity_reservation_specification"] = _capacity_reservation(data["CapacityReservationSpecification"])
    if "InstanceMarketOptions" in data:
        args["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type=data["InstanceMarketOptions"]["MarketType"]
        )
    if "InstanceType" in data:
        args["instance_type"] = data["InstanceType"]
    return args


def declare_managed_node_group(
    name: str,
    spec: ManagedNodeGroupSpec,
    *,
    parent: pulumi.Resource,
    cluster_name: pulumi.Input[str],
    node_role_arn: pulumi.Input[str],
    subnet_ids: pulumi.Input[Sequence[str]],
    tags: Mapping[str, pulumi.Input[str]],
    wait_for: pulumi.Input[Sequence[pulumi.Resource]] = (),
) -> tuple[aws.ec2.LaunchTemplate, aws.eks.NodeGroup]:
    """Declare ``{name}-lt`` and ``{name}`` as children of ``parent``; the node group (what launches
    nodes) after ``wait_for``."""
    launch_template = aws.ec2.LaunchTemplate(
        f"{name}-{LAUNCH_TEMPLATE_SUFFIX}",
        description=f"EKS managed node group {name}",
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled",
            http_tokens="required",
            http_put_response_hop_limit=IMDS_HOP_LIMIT,
        ),
        block_device_mappings=[
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=ROOT_DEVICE,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=spec.disk_size_gib,
                    volume_type="gp3",
                    throughput=spec.root_volume_throughput,
                    iops=spec.root_volume_iops,
                    encrypted="true",
                    delete_on_termination="true",
                ),
            )
        ],
        # No key pair: nodes are reached through SSM Session Manager, never SSH.
        user_data=spec.user_data,
        tag_specifications=[
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags={**tags, "Name": name})
            for kind in ("instance", "volume")
        ],
        tags=dict(tags),
        **_multinode_args(spec.launch_template_data),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    node_group = aws.eks.NodeGroup(
        name,
        cluster_name=cluster_name,
        node_role_arn=node_role_arn,
        subnet_ids=subnet_ids,
        ami_type=spec.ami_type,
        version=spec.kubernetes_version,
        release_version=spec.release_version,
        # A Capacity Block's launch template names the type; EKS then refuses instanceTypes.
        instance_types=None if "InstanceType" in spec.launch_template_data else list(spec.instance_types),
        capacity_type=spec.capacity_type,
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=spec.scaling.min_size,
            desired_size=spec.scaling.desired_size,
            max_size=spec.scaling.max_size,
        ),
        # Replace one node at a time: GPU capacity is scarce and each node carries N pods.
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
            id=launch_template.id, version=launch_template.latest_version.apply(str)
        ),
        node_repair_config=node_repair_args(spec.node_repair_config),
        # Labels and taints are NOT set here: GPU nodes get them from kubelet via nodeadm.
        tags=dict(tags),
        opts=pulumi.ResourceOptions(
            parent=parent,
            # A cluster autoscaler owns desiredSize once the group exists.
            ignore_changes=["scalingConfig.desiredSize"],
            depends_on=wait_for,
        ),
    )
    return launch_template, node_group


def node_repair_args(config: Mapping[str, Any] | None) -> aws.eks.NodeGroupNodeRepairConfigArgs | None:
    """pulumi-aws 7.51.1 ``NodeGroupNodeRepairConfig`` from ``nodeRepairConfig`` in the EKS API's names."""
    if config is None:
        return None
    return aws.eks.NodeGroupNodeRepairConfigArgs(
        enabled=config["enabled"],
        max_unhealthy_node_threshold_percentage=config.get("maxUnhealthyNodeThresholdPercentage"),
        max_unhealthy_node_threshold_count=config.get("maxUnhealthyNodeThresholdCount"),
        max_parallel_nodes_repaired_percentage=config.get("maxParallelNodesRepairedPercentage"),
        max_parallel_nodes_repaired_count=config.get("maxParallelNodesRepairedCount"),
        node_repair_config_overrides=[
            aws.eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(
                node_monitoring_condition=o["nodeMonitoringCondition"],
                node_unhealthy_reason=o["nodeUnhealthyReason"],
                min_repair_wait_time_mins=o["minRepairWaitTimeMins"],
                repair_action=o["repairAction"],
            )
            for o in config.get("nodeRepairConfigOverrides", ())
        ]
        or None,
    )
