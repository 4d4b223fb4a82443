"""Karpenter on a cluster: ``Karpenter`` (the controller, its IAM, interruption queue and discovery
tags), declared by GpuCluster where a group's nodes are a NodePool's. A group's own EC2NodeClass,
NodePool and NodeOverlay are its ``GpuNodeGroup``'s (nodegroups/node_pool.py). Thin: every document
and value comes from the pure modules beside this one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..blocks.helm import helm_release
from ..blocks.iam import managed_policy_arn, partition_of
from ..catalog.charts import KARPENTER
from ..plan.karpenter import DISCOVERY_TAG
from . import iam, interruption, values

TYPE_NAME = "gpu-eks:karpenter:Karpenter"
#: Helm waits for the controller Deployment (on the system node group).
RELEASE_TIMEOUT_SECONDS = 600


@dataclass
class KarpenterArgs:
    #: The cluster's name (plain: it scopes the IAM policy and is the discovery tag's value).
    cluster_name: str
    oidc_provider_arn: pulumi.Input[str]
    oidc_provider_url: pulumi.Input[str]
    #: The cluster security group (EKS's, on every managed node) and the private subnets: tagged
    #: ``karpenter.sh/discovery`` so the EC2NodeClasses select them.
    cluster_security_group_id: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    #: How many of them get a Tag resource here (known from the settings): an existing VPC's
    #: subnets; 0 where the cluster created them with the tag in their own tags.
    subnet_count: int
    #: The controller's ``nodeOverlay`` feature gate (``values.node_overlay_needed``).
    node_overlay: bool
    #: The system node group's minSize (the controller's replicas).
    system_nodes: int
    #: What the release waits for (the system node group).
    wait_for: Sequence[pulumi.Resource] = ()
    #: The controller's ``nodeRepair`` feature gate (``values.node_repair_needed``).
    node_repair: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    #: The controller's ``reservedCapacity`` feature gate, set explicitly (``values.reserved_capacity_needed``).
    reserved_capacity: bool = False


class Karpenter(pulumi.ComponentResource):
    """Karpenter 1.14.1: controller role (IRSA), node role + EC2_LINUX access entry, interruption
    queue + EventBridge rules, discovery tags, and the Helm release in kube-system.

    Pass the cluster's Kubernetes provider with ``opts=ResourceOptions(providers={"kubernetes": p})``.
    """

    node_role: aws.iam.Role
    role: aws.iam.Role
    queue: aws.sqs.Queue
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        tags = dict(args.tags)
        child = pulumi.ResourceOptions(parent=self)
        partition = partition_of(self)
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        self._node_role(name, args, tags, partition, child)
        interruption_ready = self._interruption_queue(name, args, tags, child)
        self._discovery_tags(name, args, child)
        self._controller(name, args, tags, child, partition, region, account)
        self.release = helm_release(
            f"{name}-release",
            KARPENTER,
            values=self.values,
            timeout_seconds=RELEASE_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.wait_for, *interruption_ready]),
        )
        self.register_outputs(
            {
                "roleArn": self.role.arn,
                "nodeRoleName": self.node_role.name,
                "interruptionQueue": self.queue.name,
                "releaseName": self.release.name,
                "chartVersion": KARPENTER.default,
                "nodeOverlay": args.node_overlay,
                "nodeRepair": args.node_repair,
            }
        )

    def _node_role(
        self,
        name: str,
        args: KarpenterArgs,
        tags: dict[str, str],
        partition: pulumi.Output[str],
        child: pulumi.ResourceOptions,
    ) -> None:
        """The nodes' role, and their way into the cluster (access entry, EC2_LINUX): sets
        ``node_role``, ``node_access`` and ``node_role_name``."""
        self.node_role = aws.iam.Role(
            f"{name}-node-role",
            assume_role_policy=iam.node_trust_policy(),
            tags=tags,
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-role-{short}",
                role=self.node_role.name,
                policy_arn=partition.apply(lambda p, policy=policy: managed_policy_arn(p, policy)),
                opts=child,
            )
            for short, policy in iam.NODE_ROLE_POLICIES.items()
        ]
        self.node_access = aws.eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=args.cluster_name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
            tags=tags,
            opts=child,
        )
        # Resolves once the role can join and pull: what the node classes name.
        self.node_role_name = pulumi.Output.all(
            self.node_role.name, self.node_access.id, *[a.id for a in attachments]
        ).apply(lambda xs: xs[0])

    def _interruption_queue(
        self, name: str, args: KarpenterArgs, tags: dict[str, str], child: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """The interruption queue (sets ``queue``) and its EventBridge rules; returns what the
        release waits for (the queue policy and the rules' targets)."""
        # Named after the cluster, as the reference (cloudformation.yaml QueueName: ${ClusterName}):
        # one queue per cluster, and its name is what the chart's settings.interruptionQueue takes.
        self.queue = aws.sqs.Queue(
            f"{name}-queue",
            name=args.cluster_name,
            message_retention_seconds=interruption.MESSAGE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child,
        )
        queue_policy = aws.sqs.QueuePolicy(
            f"{name}-queue-policy",
            queue_url=self.queue.url,
            policy=self.queue.arn.apply(interruption.queue_policy),
            opts=child,
        )
        targets = []
        for rule_name in interruption.EVENT_RULES:
            rule = aws.cloudwatch.EventRule(
                f"{name}-{rule_name}",
                event_pattern=interruption.event_pattern(rule_name),
                tags=tags,
                opts=child,
            )
            targets.append(
                aws.cloudwatch.EventTarget(
                    f"{name}-{rule_name}-target",
                    rule=rule.name,
                    arn=self.queue.arn,
                    target_id="KarpenterInterruptionQueueTarget",
                    opts=child,
                )
            )
        return [queue_policy, *targets]

    def _discovery_tags(self, name: str, args: KarpenterArgs, child: pulumi.ResourceOptions) -> None:
        """karpenter.sh/discovery on the cluster security group and the subnets given here."""
        tag_args = {"key": DISCOVERY_TAG, "value": args.cluster_name}
        aws.ec2.Tag(f"{name}-discovery-sg", resource_id=args.cluster_security_group_id, **tag_args, opts=child)
        subnets = pulumi.Output.from_input(args.subnet_ids)
        for i in range(args.subnet_count):
            aws.ec2.Tag(
                f"{name}-discovery-subnet-{i}",
                resource_id=subnets.apply(lambda ids, i=i: ids[i]),
                **tag_args,
                opts=child,
            )

    def _controller(
        self,
        name: str,
        args: KarpenterArgs,
        tags: dict[str, str],
        child: pulumi.ResourceOptions,
        partition: pulumi.Output[str],
        region: pulumi.Output[str],
        account: pulumi.Output[str],
    ) -> None:
        """The controller's role (IRSA) and policy, and the chart's values that name them: sets
        ``role`` and ``values``."""
        self.role = aws.iam.Role(
            f"{name}-role",
            description=f"Karpenter controller of EKS cluster {args.cluster_name} (IRSA)",
            assume_role_policy=pulumi.Output.all(args.oidc_provider_arn, args.oidc_provider_url).apply(
                lambda a: iam.irsa_trust_policy(a[0], a[1])
            ),
            tags=tags,
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-policy",
            role=self.role.name,
            policy=pulumi.Output.all(partition, region, account, self.node_role.arn, self.queue.arn).apply(
                lambda a: iam.controller_policy(args.cluster_name, *a)
            ),
            opts=child,
        )
        role_arn = pulumi.Output.all(self.role.arn, policy.id).apply(lambda a: a[0])
        self.values = values.karpenter_values(
            cluster_name=args.cluster_name,
            interruption_queue=self.queue.name,
            role_arn=role_arn,
            node_overlay=args.node_overlay,
            reserved_capacity=args.reserved_capacity,
            system_nodes=args.system_nodes,
            node_repair=args.node_repair,
        )
