"""GpuCapacity: GPU node groups, the gpu-operator (+ autoscaler, + verification) on an existing EKS cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..autoscaler.component import ClusterAutoscaler
from ..cluster.iam import declare_node_role, partition_of
from ..config.fields import ec2_id_problem
from ..config.settings import GpuCapacitySettings
from ..gpu_operator.component import GpuOperator
from ..nodegroups.component import GpuNodeGroup
from ..verification.component import TimeSlicingVerification
from .declare import ClusterTarget, declare_gpu_capacity, group_outputs

TYPE_NAME = "gpu-eks:index:GpuCapacity"


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
                node_role_arn=self.node_role_arn,
                subnet_ids=args.subnet_ids,
                provider=self.provider,
                oidc_provider_arn=args.oidc_provider_arn,
                oidc_provider_url=args.oidc_provider_url,
                ready=args.wait_for,
            ),
            settings=s,
            tags=tags,
            # A plain name whenever the autoscaler is enabled (_args_problems checks it).
            autoscaler_cluster_name=args.cluster_name if isinstance(args.cluster_name, str) else None,
            node_groups=args.node_groups,
        )
        self.gpu_node_groups = parts.gpu_node_groups
        self.operator = parts.operator
        self.autoscaler = parts.autoscaler
        self.verification = parts.verification
        self.observability = parts.observability
        all_groups = {**self.gpu_node_groups, **{g.settings.name: g for g in args.node_groups}}
        self.register_outputs(
            {
                "nodeRoleArn": self.node_role_arn,
                "gpuNodeGroups": group_outputs(all_groups),
                **({"observability": self.observability.outputs} if self.observability else {}),
            }
        )


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
    obs = args.settings.observability
    if obs.enabled and obs.cloudwatch and (args.oidc_provider_arn is None or args.oidc_provider_url is None):
        problems.append(
            f"GpuCapacity {name!r}: observability.pipeline {obs.pipeline!r} needs oidc_provider_arn and "
            "oidc_provider_url (the CloudWatch agent gets AWS access through IRSA)"
        )
    return problems
