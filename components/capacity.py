"""GPU capacity on a cluster: the GPU node groups, the gpu-operator and the verification.

``declare_gpu_capacity`` is the one declaration of these pieces. ``GpuCluster`` calls it for the
cluster it creates; ``GpuCapacity`` calls it for an existing cluster (created elsewhere: another
stack, another tool), given by name plus the few facts that cannot be looked up::

    from components import GpuCapacity, GpuCapacityArgs, load_capacity_settings
    gpu = GpuCapacity("ml-gpu", GpuCapacityArgs(
        cluster_name="ml-platform",
        subnet_ids=["subnet-0a...", "subnet-0b..."],
        kubeconfig=platform.get_output("kubeconfig"),
        settings=load_capacity_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": [{"name": "t4"}]}),
    ))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from .autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from .cluster import declare_node_role, partition_of
from .nodegroup import GpuNodeGroup, GpuNodeGroupArgs
from .operator import GpuOperator, GpuOperatorArgs
from .settings import (
    AUTOSCALER_CHILD,
    OPERATOR_CHILD,
    VERIFICATION_CHILD,
    AutoscalerSettings,
    GpuCapacitySettings,
    GpuNodeGroupSettings,
    GpuOperatorSettings,
    VerificationSettings,
    ec2_id_problem,
)
from .verification import TimeSlicingVerification, TimeSlicingVerificationArgs

TYPE_NAME = "gpu-eks:index:GpuCapacity"


@dataclass
class ClusterTarget:
    """The cluster GPU capacity goes to: what node groups, the operator and the autoscaler need."""

    cluster_name: pulumi.Input[str]
    #: The cluster's Kubernetes version (EKS AMI releases are per version).
    kubernetes_version: str
    node_role_arn: pulumi.Input[str]
    #: Private subnets of the GPU nodes.
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    #: A Kubernetes provider for the cluster (the operator and the verification use it).
    provider: k8s.Provider
    #: The cluster's IAM OIDC provider, for IRSA roles (the cluster autoscaler's).
    oidc_provider_arn: pulumi.Input[str] | None = None
    oidc_provider_url: pulumi.Input[str] | None = None
    #: What the operator waits for: an untainted node to run on (e.g. the system node group).
    ready: Sequence[pulumi.Resource] = ()


@dataclass
class GpuCapacityParts:
    gpu_node_groups: dict[str, GpuNodeGroup]
    operator: GpuOperator
    autoscaler: ClusterAutoscaler | None
    verification: TimeSlicingVerification | None


@dataclass
class AutoscalerTarget:
    """A Cluster Autoscaler for the GPU node groups: its settings and the cluster's plain name
    (it names the ASG discovery tag ``k8s.io/cluster-autoscaler/<name>`` and scopes the IAM policy)."""

    settings: AutoscalerSettings
    cluster_name: str


def declare_gpu_capacity(
    name: str,
    *,
    parent: pulumi.Resource,
    target: ClusterTarget,
    groups: Sequence[GpuNodeGroupSettings],
    operator: GpuOperatorSettings,
    verify: bool,
    verification: VerificationSettings,
    tags: Mapping[str, pulumi.Input[str]],
    node_groups: Sequence[GpuNodeGroup] = (),
    autoscaler: AutoscalerTarget | None = None,
) -> GpuCapacityParts:
    """Declare ``{name}-<group>`` per group, ``{name}-gpu-operator``, with ``autoscaler``
    ``{name}-autoscaler`` (and the groups' ASG tags), and with ``verify`` ``{name}-verify``, all
    children of ``parent``.

    ``node_groups`` are GPU node groups declared by the caller for the same cluster: the operator
    covers them too (and the verification checks them).
    """
    gpu_node_groups = {
        g.name: GpuNodeGroup(
            f"{name}-{g.name}",
            GpuNodeGroupArgs(
                settings=g,
                cluster_name=target.cluster_name,
                node_role_arn=target.node_role_arn,
                subnet_ids=target.subnet_ids,
                tags=tags,
                # Scale-from-zero template tags on each group's ASG (autoscaling.asg_tags).
                autoscaler_cluster_name=autoscaler.cluster_name if autoscaler else None,
                kubernetes_version=target.kubernetes_version,
            ),
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for g in groups
    }
    covered = [*gpu_node_groups.values(), *node_groups]

    k8s_providers = {"kubernetes": target.provider}
    gpu_operator = GpuOperator(
        f"{name}-{OPERATOR_CHILD}",
        GpuOperatorArgs(
            settings=operator,
            gpu_node_groups=covered,
            # The operator, NFD master and gc need an untainted node to run on.
            wait_for=list(target.ready),
        ),
        opts=pulumi.ResourceOptions(parent=parent, providers=k8s_providers),
    )

    # --- Cluster Autoscaler: scales the GPU groups, from zero too (issue 9) -------------------
    cluster_autoscaler = None
    if autoscaler is not None:
        if target.oidc_provider_arn is None or target.oidc_provider_url is None:
            raise ValueError(
                f"{name}: the Cluster Autoscaler needs the cluster's IAM OIDC provider (IRSA): "
                "received no oidc_provider_arn/oidc_provider_url"
            )
        cluster_autoscaler = ClusterAutoscaler(
            f"{name}-{AUTOSCALER_CHILD}",
            ClusterAutoscalerArgs(
                settings=autoscaler.settings,
                cluster_name=autoscaler.cluster_name,
                kubernetes_version=target.kubernetes_version,
                oidc_provider_arn=target.oidc_provider_arn,
                oidc_provider_url=target.oidc_provider_url,
                # CA runs on an untainted node (the system node group).
                wait_for=list(target.ready),
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=parent, providers=k8s_providers),
        )

    check = None
    if verify:
        check = TimeSlicingVerification(
            f"{name}-{VERIFICATION_CHILD}",
            TimeSlicingVerificationArgs(
                settings=verification,
                gpu_node_groups=covered,
                # With an autoscaler, the warm-up Jobs are what bring a group's first node.
                wait_for=[gpu_operator, *([cluster_autoscaler] if cluster_autoscaler else [])],
                autoscaling=cluster_autoscaler is not None,
            ),
            opts=pulumi.ResourceOptions(parent=parent, providers=k8s_providers),
        )
    return GpuCapacityParts(
        gpu_node_groups=gpu_node_groups, operator=gpu_operator, autoscaler=cluster_autoscaler, verification=check
    )


def group_outputs(groups: Mapping[str, GpuNodeGroup]) -> dict[str, dict[str, object]]:
    """What workloads need to land on each group (README, "Stack outputs")."""
    return {
        group_name: {
            "nodeSelector": g.node_selector,
            "tolerations": g.tolerations,
            "gpusPerNode": g.gpus_per_node,
            "advertisedGpusPerNode": g.advertised_gpus_per_node,
            "resourceName": g.resource_name,
            "sharedSlotsPerNode": g.advertised_gpus_per_node,
            "sharedSlotsAtMaxSize": g.advertised_gpus_at_max_size,
            "autoscalingGroupName": g.autoscaling_group_name,
        }
        for group_name, g in groups.items()
    }


@dataclass
class GpuCapacityArgs:
    """GPU capacity for an EKS cluster that exists already (created outside this library)."""

    #: The existing cluster's name (a string, or an Output, e.g. from a StackReference).
    cluster_name: pulumi.Input[str]
    #: Private subnets for the GPU nodes (in the cluster's VPC; at least two zones recommended).
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    #: The GPU keys of the stack configuration (``load_capacity_settings``), including the
    #: cluster's ``kubernetesVersion``.
    settings: GpuCapacitySettings
    #: A Kubernetes provider for the cluster; or give ``kubeconfig`` and one is created.
    k8s_provider: k8s.Provider | None = None
    kubeconfig: pulumi.Input[str] | None = None
    #: The role of the GPU nodes. None: a role is created with the EKS worker, CNI, ECR read-only
    #: and SSM managed policies. A given role must be able to join the cluster (an EKS access
    #: entry of type EC2_LINUX, or the aws-auth ConfigMap), which this component cannot check.
    node_role_arn: pulumi.Input[str] | None = None
    #: The cluster's IAM OIDC provider (for the cluster autoscaler's IRSA role).
    oidc_provider_arn: pulumi.Input[str] | None = None
    oidc_provider_url: pulumi.Input[str] | None = None
    #: GPU node groups the caller declared for this cluster (its own GpuNodeGroup components,
    #: declared before this component): the operator covers them too.
    node_groups: Sequence[GpuNodeGroup] = ()
    #: Resources the operator waits for (e.g. your untainted node group: the operator, NFD master
    #: and gc need an untainted node).
    wait_for: Sequence[pulumi.Resource] = ()
    tags: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class GpuCapacity(pulumi.ComponentResource):
    """GPU node groups + gpu-operator (+ optional verification) on an existing EKS cluster."""

    gpu_node_groups: dict[str, GpuNodeGroup]
    operator: GpuOperator
    autoscaler: ClusterAutoscaler | None
    verification: TimeSlicingVerification | None
    node_role_arn: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: GpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        problems = _args_problems(name, args)
        if problems:
            raise ValueError("\n".join(problems))
        super().__init__(TYPE_NAME, name, None, opts)
        s = args.settings
        tags = {**s.tags, **args.tags}

        if args.k8s_provider is not None:
            self.provider = args.k8s_provider
        else:
            self.provider = k8s.Provider(
                f"{name}-k8s",
                kubeconfig=pulumi.Output.secret(args.kubeconfig),
                opts=pulumi.ResourceOptions(parent=self),
            )
        if args.node_role_arn is not None:
            self.node_role_arn = pulumi.Output.from_input(args.node_role_arn)
        else:
            _, self.node_role_arn = declare_node_role(
                f"{name}-node-role", parent=self, partition=partition_of(self), tags=tags
            )

        parts = declare_gpu_capacity(
            name,
            parent=self,
            target=ClusterTarget(
                cluster_name=args.cluster_name,
                kubernetes_version=s.kubernetes_version,
                node_role_arn=self.node_role_arn,
                subnet_ids=args.subnet_ids,
                provider=self.provider,
                oidc_provider_arn=args.oidc_provider_arn,
                oidc_provider_url=args.oidc_provider_url,
                ready=args.wait_for,
            ),
            groups=s.gpu_node_groups,
            operator=s.gpu_operator,
            verify=s.verify_time_slicing,
            verification=s.verification,
            tags=tags,
            node_groups=args.node_groups,
            autoscaler=AutoscalerTarget(s.autoscaler, args.cluster_name) if s.autoscaler_enabled else None,
        )
        self.gpu_node_groups = parts.gpu_node_groups
        self.operator = parts.operator
        self.autoscaler = parts.autoscaler
        self.verification = parts.verification
        all_groups = {**self.gpu_node_groups, **{g.settings.name: g for g in args.node_groups}}
        self.register_outputs({"nodeRoleArn": self.node_role_arn, "gpuNodeGroups": group_outputs(all_groups)})


def _args_problems(name: str, args: GpuCapacityArgs) -> list[str]:
    problems = []
    if (args.k8s_provider is None) == (args.kubeconfig is None):
        problems.append(f"GpuCapacity {name!r}: give exactly one of k8s_provider and kubeconfig")
    if not args.settings.gpu_node_groups and not args.node_groups:
        problems.append(f"GpuCapacity {name!r}: no GPU node group (settings gpuNodeGroups or node_groups)")
    # Plain subnet ids are checked now, by the rule of network.privateSubnetIds (EKS CreateNodegroup
    # refuses anything else); an Output, or a list that is one, reaches EKS as it resolves.
    if isinstance(args.subnet_ids, (list, tuple)):
        for i, subnet in enumerate(args.subnet_ids):
            problem = ec2_id_problem("subnet", subnet)
            if problem:
                problems.append(f"GpuCapacity {name!r}: subnet_ids[{i}]: received {subnet!r}; expected {problem}")
    if args.settings.autoscaler_enabled:
        if not isinstance(args.cluster_name, str):
            problems.append(
                f"GpuCapacity {name!r}: autoscaler.enabled needs cluster_name as a plain string (it names the "
                "ASG discovery tag k8s.io/cluster-autoscaler/<cluster name>); received an Output"
            )
        if args.oidc_provider_arn is None or args.oidc_provider_url is None:
            problems.append(
                f"GpuCapacity {name!r}: autoscaler.enabled needs oidc_provider_arn and oidc_provider_url (the "
                "Cluster Autoscaler gets AWS access through IRSA)"
            )
    return problems
