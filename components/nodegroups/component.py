"""The GPU node group (``GpuNodeGroup``): one group's nodes from its plan, a managed node group
(``blocks/managed.py``, with the group's ASG tags and multi-node resources) or, where its capacity
provider's nodes are a NodePool's, the Karpenter objects (``node_pool.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from ..blocks import coverage
from ..blocks.managed import ManagedNodeGroupSpec, declare_managed_node_group
from ..config.groups import GpuNodeGroupSettings
from ..config.isolation import ENFORCED, IsolationName
from ..plan import asg, multinode
from ..plan import karpenter as karpenter_objects
from ..plan.group import GroupPlan, plan_group
from .node_pool import GroupObjects, KarpenterTarget, declare_group_objects

TYPE_PREFIX = "gpu-eks:nodegroup"


@dataclass(kw_only=True)
class GpuNodeGroupArgs:
    # Keywords only: 0.3.0's first field was ``settings``, and its positional calls must not bind
    # the settings to ``cluster_name`` (UPGRADING.md, issue 43).
    #: The EKS cluster's name: a string, or an Output (e.g. ``GpuCluster.cluster.cluster_name``).
    #: The cluster's GpuOperator must cover this group (``coverage``): declare the group first and
    #: pass it to the operator.
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    #: The group's plan, made once with the cluster's inputs by whoever composes the cluster: an
    #: entry of ``Settings.plans`` or ``GpuCapacitySettings.plans`` (for a group of your own,
    #: ``load_capacity_settings({...}).plans[0]`` with your cluster's keys). Every component of the
    #: cluster reads this one plan; nothing plans the group again.
    plan: GroupPlan | None = None
    #: Instead of ``plan``: the group's settings, planned here (``plan_group(settings,
    #: isolation=isolation)``): with no add-on's DaemonSet pods counted on its nodes (the CloudWatch
    #: pipeline's, the node monitoring agent's), which only the cluster's settings know.
    settings: GpuNodeGroupSettings | None = None
    tags: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: Tag the group's Auto Scaling group for this EKS cluster's Cluster Autoscaler (discovery and
    #: scale-from-zero template tags, ``asg.asg_tags``). None: no CA tags.
    autoscaler_cluster_name: str | None = None
    #: The cluster's Kubernetes minor, so the nodes follow control-plane upgrades (see
    #: ManagedNodeGroupSpec.kubernetes_version). None: the cluster's version at creation only.
    kubernetes_version: str | None = None
    #: The cluster's Karpenter, for a ``capacityProvider: karpenter`` group (required there).
    karpenter: KarpenterTarget | None = None
    #: With ``settings``: the cluster's ``gpuOperator.isolation`` (config/isolation.py), the
    #: container-toolkit settings of the nodes' boot stage (a plan carries its own). The cluster's
    #: GpuOperator refuses a group whose value is not its own.
    isolation: IsolationName = ENFORCED
    #: What launches nodes (the managed node group; a Karpenter group's EC2NodeClass and NodePool)
    #: waits for: the cluster's gpu-operator release (``declare_gpu_capacity`` passes it), so that
    #: nodes with new toolkit settings launch after the release; the operator applies its strategy
    #: to the device plugin's DaemonSet shortly after, on its own (docs/node-boot-stage.md).
    #: An Output is allowed (the release is declared after the groups it covers).
    wait_for: pulumi.Input[Sequence[pulumi.Resource]] = ()

    def group_plan(self) -> GroupPlan:
        """``plan``, or the plan of ``settings``; a TypeError unless exactly one is given."""
        if (self.plan is None) == (self.settings is None):
            raise TypeError(
                "GpuNodeGroupArgs: give plan (the group's plan, e.g. an entry of Settings.plans) or settings, "
                f"not {'both' if self.plan is not None else 'neither'}"
            )
        if self.plan is not None:
            return self.plan
        return plan_group(self.settings, isolation=self.isolation)


class GpuNodeGroup(pulumi.ComponentResource):
    """One GPU node group's nodes on the AL2023 NVIDIA AMI, of any GPU family of the catalog
    (``catalog/instances.py``): an EKS managed node group and its launch template or, when the
    group's capacity provider is Karpenter, its EC2NodeClass, NodePool and NodeOverlay.

    Its nodes register with the GPU-count, sharing-profile and node-group labels and with the
    group's taints, through a nodeadm NodeConfig in the user data its capacity provider is sent.
    """

    #: The group's one plan (``GpuNodeGroupArgs.plan``): the operator, the autoscaler, the
    #: verification, the teams and the observability read it from here.
    plan: GroupPlan
    #: The validated settings it was made from (``plan.settings``).
    settings: GpuNodeGroupSettings
    #: The managed node group and its launch template (None for a Karpenter group).
    node_group: aws.eks.NodeGroup | None
    launch_template: aws.ec2.LaunchTemplate | None
    #: A Karpenter group's EC2NodeClass, NodePool and NodeOverlay (None for a managed node group).
    karpenter_objects: GroupObjects | None
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
    #: Name of the Auto Scaling group EKS created for the node group (None for a Karpenter group).
    autoscaling_group_name: pulumi.Output[str] | None
    #: The Cluster Autoscaler tags on that Auto Scaling group, by tag key (empty without CA).
    asg_tags: dict[str, aws.autoscaling.Tag]
    #: An ``efa`` group's EFA security group and a ``placement: cluster`` group's placement group.
    efa_security_group: aws.ec2.SecurityGroup | None
    placement_group: aws.ec2.PlacementGroup | None

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        plan = self.plan = args.group_plan()
        s = self.settings = plan.settings
        # Before anything is declared: a group its cluster's operator does not cover is an error.
        coverage.register_node_group(name, self, args.cluster_name)
        super().__init__(f"{TYPE_PREFIX}:GpuNodeGroup", name, None, opts)
        self.node_selector = dict(plan.node_labels)
        self.tolerations = [dict(t) for t in plan.tolerations]
        self.gpus_per_node = plan.gpus_per_node
        self.advertised_gpus_per_node = plan.slots_per_node
        self.resource_name = plan.resource_name
        self.advertised_gpus_at_max_size = plan.slots_at_max_size

        self.asg_tags = {}
        self.karpenter_objects = None
        self.efa_security_group = self.placement_group = None
        # The one branch on the capacity provider: which resources are the group's nodes.
        if plan.provider.node_pool:
            self._declare_karpenter(name, args)
            return
        subnet_ids, launch_template_data = args.subnet_ids, {}
        if multinode.is_multinode(s):
            subnet_ids, launch_template_data = self._declare_multinode(name, args)
        spec = ManagedNodeGroupSpec(
            ami_type=plan.ami_type,
            instance_types=s.instance_types,
            capacity_type=s.capacity_type,
            scaling=s.scaling,
            disk_size_gib=s.disk_size_gib,
            release_version=s.ami_release_version,
            kubernetes_version=args.kubernetes_version,
            user_data=plan.user_data,
            root_volume_throughput=s.cold_start.root_volume_throughput,
            root_volume_iops=s.cold_start.root_volume_iops,
            node_repair_config=plan.repair.node_repair_config(),
            launch_template_data=launch_template_data,
        )
        self.launch_template, self.node_group = declare_managed_node_group(
            name,
            spec,
            parent=self,
            cluster_name=args.cluster_name,
            node_role_arn=args.node_role_arn,
            subnet_ids=subnet_ids,
            tags={**args.tags, "gpu-eks/node-group": s.name},
            wait_for=args.wait_for,
        )
        # EKS creates one ASG per managed node group and copies no node group tags to it.
        self.autoscaling_group_name = self.node_group.resources.apply(
            lambda resources: resources[0].autoscaling_groups[0].name
        )
        # The tag set is known from the plan; only the ASG's name waits for the node group.
        # Named by tag key, so adding a label or taint adds one Tag and renames none.
        if args.autoscaler_cluster_name is not None:
            for key, value in asg.asg_tags(plan.node_template_tags, args.autoscaler_cluster_name).items():
                self.asg_tags[key] = aws.autoscaling.Tag(
                    f"{name}-asg-tag-{key.removeprefix(asg.TAG_PREFIX + '/')}",
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
                "repair": plan.repair.summary(),
            }
        )

    def _declare_multinode(self, name: str, args: GpuNodeGroupArgs) -> tuple[Any, dict[str, Any]]:
        """A multi-node group's own resources (``plan.multinode``): with ``efa`` the EFA security group
        ``{name}-efa`` (self-referencing all-traffic rules) on every EFA interface beside the cluster
        security group, with ``placement: cluster`` the placement group ``{name}-placement``
        (``placementGroup``: the existing one by name); the subnets narrowed to ``availabilityZone``.
        Returns the node group's subnets and its launch template's additions: the plan's, with the
        interfaces and the placement group."""
        s, opts = self.settings, pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, "gpu-eks/node-group": s.name}
        data: dict[str, Any] = dict(self.plan.launch_template_data)
        if s.efa:
            # The cluster's VPC and the security group EKS puts on nodes whose launch template names none.
            cluster = aws.eks.get_cluster_output(name=args.cluster_name, opts=pulumi.InvokeOutputOptions(parent=self))
            sg = self._declare_efa_security_group(name, cluster.vpc_config.vpc_id, tags)
            groups = [cluster.vpc_config.cluster_security_group_id, sg.id]
            data["NetworkInterfaces"] = multinode.network_interfaces(s.instance_types[0], groups)
        if s.placement == multinode.CLUSTER_STRATEGY:
            self.placement_group = aws.ec2.PlacementGroup(
                f"{name}-placement", strategy=multinode.CLUSTER_STRATEGY, tags=tags, opts=opts
            )
            data["Placement"] = {"GroupName": self.placement_group.name}
        elif s.placement_group is not None:
            data["Placement"] = {"GroupName": s.placement_group}
        subnet_ids = args.subnet_ids
        if s.availability_zone is not None:
            subnet_ids = subnets_in_zone(self, args.subnet_ids, s.availability_zone, s.name)
        return subnet_ids, data

    def _declare_efa_security_group(self, name: str, vpc_id: Any, tags: Mapping[str, Any]) -> aws.ec2.SecurityGroup:
        """``{name}-efa``: the EFA security group of the group's nodes, one ingress and one egress rule,
        all traffic to and from itself (plan/multinode.py)."""
        opts = pulumi.ResourceOptions(parent=self)
        sg = self.efa_security_group = aws.ec2.SecurityGroup(
            f"{name}-efa",
            description=(
                f"EFA traffic between the nodes of GPU node group {self.settings.name} (all, to and from itself)"
            ),
            vpc_id=vpc_id,
            tags={**tags, "Name": f"{name}-efa"},
            opts=opts,
        )
        for direction, rule in (
            ("ingress", aws.vpc.SecurityGroupIngressRule),
            ("egress", aws.vpc.SecurityGroupEgressRule),
        ):
            rule(
                f"{name}-efa-{direction}",
                security_group_id=sg.id,
                referenced_security_group_id=sg.id,
                ip_protocol=multinode.ALL_TRAFFIC,
                # EC2's rule descriptions allow no apostrophe (a-zA-Z0-9 ._-:/()#,@[]+=;{}!$*).
                description=f"EFA: all traffic {'from' if direction == 'ingress' else 'to'} the nodes of the group",
                tags=dict(tags),
                opts=opts,
            )
        return sg

    def _declare_karpenter(self, name: str, args: GpuNodeGroupArgs) -> None:
        """A Karpenter group: its EC2NodeClass, NodePool and NodeOverlay; no node group, no ASG."""
        if args.karpenter is None:
            raise ValueError(
                f"{name}: capacityProvider karpenter needs the cluster's Karpenter (GpuNodeGroupArgs.karpenter): "
                "received none"
            )
        self.node_group = self.launch_template = self.autoscaling_group_name = None
        target = args.karpenter
        tagged = KarpenterTarget(
            node_role=target.node_role,
            discovery=target.discovery,
            provider=target.provider,
            depends_on=target.depends_on,
            tags={**target.tags, **args.tags, "gpu-eks/node-group": self.settings.name},
        )
        # Karpenter puts the EC2NodeClass's efa-only interfaces on every node of the group, with the
        # security groups it selects: the cluster's (discovery) and this one.
        security_groups = []
        if self.settings.efa:
            cluster = aws.eks.get_cluster_output(name=args.cluster_name, opts=pulumi.InvokeOutputOptions(parent=self))
            tags = {**args.tags, "gpu-eks/node-group": self.settings.name}
            security_groups = [self._declare_efa_security_group(name, cluster.vpc_config.vpc_id, tags).id]
        self.karpenter_objects = declare_group_objects(
            name, self.plan, tagged, parent=self, security_groups=security_groups, wait_for=args.wait_for
        )
        self.register_outputs(
            {
                "nodePoolName": karpenter_objects.object_name(self.plan),
                "advertisedGpusAtMaxSize": self.advertised_gpus_at_max_size,
                "nodeSelector": self.node_selector,
                "tolerations": self.tolerations,
                "gpusPerNode": self.gpus_per_node,
                "advertisedGpusPerNode": self.advertised_gpus_per_node,
                "resourceName": self.resource_name,
                "repair": self.plan.repair.summary(),
            }
        )


def subnets_in_zone(parent: pulumi.Resource, subnet_ids: Any, zone: str, group: str) -> pulumi.Output[list[str]]:
    """Those of ``subnet_ids`` in ``zone`` (ec2:DescribeSubnets filtered by id and zone), failing
    the deployment with the key when none is (the node group would have no subnet)."""
    found = aws.ec2.get_subnets_output(
        filters=[
            aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=subnet_ids),
            aws.ec2.GetSubnetsFilterArgs(name="availability-zone", values=[zone]),
        ],
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )

    def checked(ids: list[str]) -> list[str]:
        problem = multinode.zone_subnets_problem(ids, zone, group)
        if problem:
            raise pulumi.RunError(problem)
        return list(ids)

    return found.ids.apply(checked)
