"""EKS managed node groups: the shared launch-template + node-group pair, and the GPU node group.

Both the system node group and the GPU node groups are ``aws.eks.NodeGroup`` with a launch
template this library owns (rather than pulumi-eks's ManagedNodeGroup), so that the user data,
IMDS settings and root volume are declared here, visible in previews and tested under mocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from . import autoscaling, catalog, coverage, nodeconfig, placement
from .settings import LAUNCH_TEMPLATE_SUFFIX, GpuNodeGroupSettings, Scaling

TYPE_PREFIX = "gpu-eks:nodegroup"

#: AL2023 AMIs boot from /dev/xvda.
ROOT_DEVICE = "/dev/xvda"
#: IMDSv2 only. A hop limit of 1 keeps pods (one network hop further) away from the node's
#: instance-role credentials, as the EKS best-practices guide recommends; host-network pods
#: (VPC CNI, kube-proxy) are unaffected. Workloads get AWS access through IRSA / Pod Identity.
IMDS_HOP_LIMIT = 1


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


def declare_managed_node_group(
    name: str,
    spec: ManagedNodeGroupSpec,
    *,
    parent: pulumi.Resource,
    cluster_name: pulumi.Input[str],
    node_role_arn: pulumi.Input[str],
    subnet_ids: pulumi.Input[Sequence[str]],
    tags: Mapping[str, pulumi.Input[str]],
) -> tuple[aws.ec2.LaunchTemplate, aws.eks.NodeGroup]:
    """Declare ``{name}-lt`` and ``{name}`` as children of ``parent`` (no other options)."""
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
        instance_types=list(spec.instance_types),
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
        # Labels and taints are NOT set here: GPU nodes get them from kubelet via nodeadm.
        tags=dict(tags),
        opts=pulumi.ResourceOptions(
            parent=parent,
            # A cluster autoscaler owns desiredSize once the group exists.
            ignore_changes=["scalingConfig.desiredSize"],
        ),
    )
    return launch_template, node_group


@dataclass
class GpuNodeGroupArgs:
    settings: GpuNodeGroupSettings
    #: The EKS cluster's name: a string, or an Output (e.g. ``GpuCluster.cluster.cluster_name``).
    #: The cluster's GpuOperator must cover this group (``coverage``): declare the group first and
    #: pass it to the operator.
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    tags: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: Tag the group's Auto Scaling group for this EKS cluster's Cluster Autoscaler (discovery and
    #: scale-from-zero template tags, ``autoscaling.asg_tags``). None: no CA tags.
    autoscaler_cluster_name: str | None = None
    #: The cluster's Kubernetes minor, so the nodes follow control-plane upgrades (see
    #: ManagedNodeGroupSpec.kubernetes_version). None: the cluster's version at creation only.
    kubernetes_version: str | None = None


class GpuNodeGroup(pulumi.ComponentResource):
    """An EKS managed node group of g4dn instances on the AL2023 NVIDIA AMI.

    Its nodes register with the GPU-count, sharing-profile and node-group labels and with the
    group's taints, through a nodeadm NodeConfig in the launch template's user data.
    """

    #: The validated settings the group was declared from (the operator computes its values from them).
    settings: GpuNodeGroupSettings
    node_group: aws.eks.NodeGroup
    launch_template: aws.ec2.LaunchTemplate
    #: Labels to select this group's nodes (plain values, known at preview).
    node_selector: dict[str, str]
    #: Tolerations for this group's taints.
    tolerations: list[dict[str, str]]
    gpus_per_node: int
    advertised_gpus_per_node: int
    #: The extended resource pods request (``nvidia.com/gpu`` unless renamed).
    resource_name: str
    #: Shared GPU slots (``resource_name``) at the group's maxSize.
    advertised_gpus_at_max_size: int
    #: Name of the Auto Scaling group EKS created for the node group.
    autoscaling_group_name: pulumi.Output[str]
    #: The Cluster Autoscaler tags on that Auto Scaling group, by tag key (empty without CA).
    asg_tags: dict[str, aws.autoscaling.Tag]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        # Before anything is declared: a group its cluster's operator does not cover is an error.
        coverage.register_node_group(name, self, args.cluster_name)
        super().__init__(f"{TYPE_PREFIX}:GpuNodeGroup", name, None, opts)
        s = self.settings = args.settings
        self.node_selector = nodeconfig.gpu_node_labels(s)
        self.tolerations = placement.tolerations_for(s.taint_list)
        self.gpus_per_node = s.gpus_per_node
        self.advertised_gpus_per_node = s.advertised_gpus_per_node
        self.resource_name = s.time_slicing.resource_name
        self.advertised_gpus_at_max_size = s.advertised_gpus_per_node * s.scaling.max_size

        spec = ManagedNodeGroupSpec(
            ami_type=catalog.GPU_AMI_TYPE,
            instance_types=s.instance_types,
            capacity_type=s.capacity_type,
            scaling=s.scaling,
            disk_size_gib=s.disk_size_gib,
            release_version=s.ami_release_version,
            kubernetes_version=args.kubernetes_version,
            user_data=nodeconfig.render_user_data([nodeconfig.gpu_node_config(s)]),
        )
        self.launch_template, self.node_group = declare_managed_node_group(
            name,
            spec,
            parent=self,
            cluster_name=args.cluster_name,
            node_role_arn=args.node_role_arn,
            subnet_ids=args.subnet_ids,
            tags={**args.tags, "gpu-eks/node-group": s.name},
        )
        # EKS creates one ASG per managed node group and copies no node group tags to it.
        self.autoscaling_group_name = self.node_group.resources.apply(
            lambda resources: resources[0].autoscaling_groups[0].name
        )
        # The tag set is known from the settings; only the ASG's name waits for the node group.
        # Named by tag key, so adding a label or taint adds one Tag and renames none.
        self.asg_tags = {}
        if args.autoscaler_cluster_name is not None:
            for key, value in autoscaling.asg_tags(s, args.autoscaler_cluster_name).items():
                self.asg_tags[key] = aws.autoscaling.Tag(
                    f"{name}-asg-tag-{key.removeprefix(autoscaling.TAG_PREFIX + '/')}",
                    autoscaling_group_name=self.autoscaling_group_name,
                    tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                    opts=pulumi.ResourceOptions(parent=self),
                )
        self.register_outputs(
            {
                "nodeGroupName": self.node_group.node_group_name,
                "autoscalingGroupName": self.autoscaling_group_name,
                "advertisedGpusAtMaxSize": self.advertised_gpus_at_max_size,
                "nodeSelector": self.node_selector,
                "tolerations": self.tolerations,
                "gpusPerNode": self.gpus_per_node,
                "advertisedGpusPerNode": self.advertised_gpus_per_node,
                "resourceName": self.resource_name,
            }
        )
