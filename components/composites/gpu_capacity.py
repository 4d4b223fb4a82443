"""GpuCapacity: GPU node groups, the gpu-operator (+ autoscaler, + verification) on an existing EKS cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..autoscaler.component import ClusterAutoscaler
from ..blocks.iam import declare_node_role, partition_of
from ..check.loading import load_capacity_settings
from ..check.settings import GpuCapacitySettings
from ..check.warnings import settings_warnings
from ..config import capacity_provider
from ..config.errors import is_plain
from ..config.fields import (
    MAX_USER_TAGS,
    cluster_name_problem,
    ec2_id_problem,
    principal_arn_problem,
    tag_key_problem,
    tag_value_problem,
)
from ..gpu_operator.component import GpuOperator
from ..nodegroups.component import GpuNodeGroup
from ..nodegroups.node_pool import KarpenterTarget
from ..observability import values as obs_values
from ..plan import karpenter as karpenter_objects
from ..verification.component import GpuVerification
from .declare import ClusterTarget, declare_gpu_capacity, group_outputs
from .resolve import checked_setting_tags, checked_when_resolved

TYPE_NAME = "gpu-eks:index:GpuCapacity"


@dataclass
class GpuCapacityArgs:
    """GPU capacity for an EKS cluster that exists already (created outside this library)."""

    #: The existing cluster's name (a string, or an Output, e.g. from a StackReference).
    cluster_name: pulumi.Input[str]
    #: Private subnets for the GPU nodes (in the cluster's VPC; at least two zones recommended).
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    #: The GPU keys of the stack configuration, including the cluster's ``kubernetesVersion``:
    #: ``load_capacity_settings(...)``, or the mapping of config keys itself (loaded the same way).
    settings: GpuCapacitySettings | Mapping[str, Any]
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
    #: For ``capacityProvider: karpenter`` groups, the cluster's own Karpenter (1.14 or a later
    #: v1): the IAM role (name) its nodes run as (EC2NodeClass ``spec.role``; the role must be able
    #: to join: an EKS access entry of type EC2_LINUX)...
    karpenter_node_role: pulumi.Input[str] | None = None
    #: ...the ``karpenter.sh/discovery`` tag value of its subnets and security groups (None: the
    #: cluster's name)...
    karpenter_discovery: pulumi.Input[str] | None = None
    #: ...and whether its controller runs with the ``nodeOverlay`` feature gate (chart value
    #: ``settings.featureGates.nodeOverlay: true``), which every shared or g6f/gr6f group needs.
    karpenter_node_overlay: bool = False


class GpuCapacity(pulumi.ComponentResource):
    """GPU node groups + gpu-operator (+ optional verification) on an existing EKS cluster."""

    gpu_node_groups: dict[str, GpuNodeGroup]
    operator: GpuOperator
    autoscaler: ClusterAutoscaler | None
    verification: GpuVerification | None
    node_role_arn: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: GpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        s = _settings_of(name, args.settings)
        problems = _args_problems(name, args, s)
        if problems:
            raise ValueError("\n".join(problems))
        super().__init__(TYPE_NAME, name, None, opts)
        for warning in settings_warnings(s):
            pulumi.log.warn(f"gpu-eks config: {warning}", resource=self)
        # Outputs are checked when they resolve, by the same rules as plain values now.
        tags = {
            **checked_setting_tags(s.tags),
            **{k: _late(name, f"tags.{k}", v, _tag_value_problems) for k, v in args.tags.items()},
        }
        cluster_name = _late(name, "cluster_name", args.cluster_name, _cluster_name_problems)
        subnet_ids = _late(name, "subnet_ids", args.subnet_ids, _subnet_ids_problems)

        if args.k8s_provider is not None:
            self.provider = args.k8s_provider
        else:
            self.provider = k8s.Provider(
                f"{name}-k8s",
                kubeconfig=pulumi.Output.secret(args.kubeconfig),
                opts=pulumi.ResourceOptions(parent=self),
            )
        if args.node_role_arn is not None:
            node_role = _late(name, "node_role_arn", args.node_role_arn, _node_role_problems)
            self.node_role_arn = pulumi.Output.from_input(node_role)
        else:
            _, self.node_role_arn = declare_node_role(
                f"{name}-node-role", parent=self, partition=partition_of(self), tags=tags
            )

        karpenter = None
        if capacity_provider.needs_karpenter(s.gpu_node_groups):
            karpenter = KarpenterTarget(
                node_role=args.karpenter_node_role,
                discovery=args.karpenter_discovery if args.karpenter_discovery is not None else cluster_name,
                provider=self.provider,
            )
        parts = declare_gpu_capacity(
            name,
            parent=self,
            target=ClusterTarget(
                cluster_name=cluster_name,
                node_role_arn=self.node_role_arn,
                subnet_ids=subnet_ids,
                provider=self.provider,
                oidc_provider_arn=args.oidc_provider_arn,
                oidc_provider_url=args.oidc_provider_url,
                ready=args.wait_for,
                authentication_mode=_authentication_mode(self, cluster_name, s),
            ),
            settings=s,
            tags=tags,
            # A plain name whenever the autoscaler is enabled (_args_problems checks it).
            autoscaler_cluster_name=args.cluster_name if isinstance(args.cluster_name, str) else None,
            node_groups=args.node_groups,
            karpenter=karpenter,
        )
        self.gpu_node_groups = parts.gpu_node_groups
        self.operator = parts.operator
        self.autoscaler = parts.autoscaler
        self.verification = parts.verification
        self.observability = parts.observability
        self.teams = parts.teams
        all_groups = {**self.gpu_node_groups, **{g.settings.name: g for g in args.node_groups}}
        self.register_outputs(
            {
                "nodeRoleArn": self.node_role_arn,
                "gpuNodeGroups": group_outputs(all_groups),
                **({"observability": self.observability.outputs} if self.observability else {}),
                **(self.verification.stack_outputs() if self.verification else {}),
            }
        )


def _authentication_mode(parent: pulumi.Resource, cluster_name: Any, s: GpuCapacitySettings) -> Any:
    """The existing cluster's EKS authentication mode (eks:DescribeCluster ``accessConfig``), read
    only when a team has principals: their access entries need API or API_AND_CONFIG_MAP."""
    if not any(t.principals for t in s.teams):
        return None
    cluster = aws.eks.get_cluster_output(name=cluster_name, opts=pulumi.InvokeOutputOptions(parent=parent))
    return cluster.access_configs.apply(lambda configs: configs[0].authentication_mode if configs else None)


def _settings_of(name: str, settings: Any) -> GpuCapacitySettings:
    """``GpuCapacityArgs.settings``: a settings object, or a mapping of config keys loaded with
    ``load_capacity_settings`` (an invalid one raises its ConfigError, every problem at once)."""
    if isinstance(settings, GpuCapacitySettings):
        return settings
    if isinstance(settings, Mapping):
        return load_capacity_settings(settings)
    raise TypeError(
        f"GpuCapacity {name!r}: settings: received a {type(settings).__name__}; expected "
        "load_capacity_settings({...}) or a mapping of its config keys"
    )


def _cluster_name_problems(value: Any) -> list[str]:
    problem = cluster_name_problem(value)
    return [f"received {value!r}; expected {problem}"] if problem else []


def _node_role_problems(value: Any) -> list[str]:
    """EKS CreateNodegroup ``nodeRole``: an IAM role ARN (botocore eks 2017-11-01: "The Amazon
    Resource Name (ARN) of the IAM role to associate with your node group"), by the IAM rules."""
    if not isinstance(value, str):
        return []
    problem = principal_arn_problem(value) if ":role/" in value else None
    if ":role/" not in value:
        problem = "an IAM role ARN such as arn:aws:iam::123456789012:role/gpu-nodes (nodes assume a role)"
    return [f"received {value!r}; expected {problem}"] if problem else []


def _subnet_ids_problems(value: Any) -> list[str]:
    """The rules of ``network.privateSubnetIds`` that hold for a node group's subnets: EC2 subnet
    ids, each once (EKS CreateNodegroup ``subnets``), at least one."""
    if not isinstance(value, (list, tuple)):
        return []  # an Output as a whole: checked when it resolves
    problems = []
    if not value:
        problems.append("received []; expected at least one private subnet id (EKS CreateNodegroup needs one)")
    for i, subnet in enumerate(value):
        problem = ec2_id_problem("subnet", subnet)
        if problem:
            problems.append(f"[{i}]: received {subnet!r}; expected {problem}")
        elif isinstance(subnet, str) and subnet in value[:i]:
            problems.append(f"[{i}]: received {subnet!r}; expected each subnet once")
    return problems


def _tag_value_problems(value: Any) -> list[str]:
    problem = tag_value_problem(value)
    return [f"received {value!r}; expected {problem}"] if problem else []


def _tags_problems(tags: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(argument, problems) per tag of ``GpuCapacityArgs.tags``: the AWS tag rules of the ``tags``
    setting (keys now; plain values now, Outputs when they resolve)."""
    out = []
    for key, value in tags.items():
        found = []
        key_problem = tag_key_problem(key)
        if key_problem:
            found.append(f"received key {key!r}; expected {key_problem}")
        if is_plain(value):
            found += _tag_value_problems(value)
        if found:
            out.append((f"tags.{key}", found))
    return out


def _late(name: str, arg: str, value: Any, rule: Any) -> Any:
    """``value`` as is when plain (checked before anything is declared, ``_args_problems``);
    otherwise an Output that fails the deployment with the rule's message when it resolves to a
    value the rule refuses (a ``pulumi.RunError``: Pulumi shows its message first, unwrapped)."""
    return checked_when_resolved(value, rule, lambda _, found: "\n".join(_arg_problem(name, arg, p) for p in found))


def _arg_problem(name: str, arg: str, problem: str) -> str:
    return f"GpuCapacity {name!r}: {arg}{'' if problem.startswith('[') else ': '}{problem}"


def _args_problems(name: str, args: GpuCapacityArgs, settings: GpuCapacitySettings) -> list[str]:
    problems = []
    if (args.k8s_provider is None) == (args.kubeconfig is None):
        problems.append(f"GpuCapacity {name!r}: give exactly one of k8s_provider and kubeconfig")
    if not settings.gpu_node_groups and not args.node_groups:
        problems.append(f"GpuCapacity {name!r}: no GPU node group (settings gpuNodeGroups or node_groups)")
    # Plain values are checked now, by the rules of GpuCluster's clusterName and
    # network.privateSubnetIds (EKS refuses anything else); Outputs when they resolve.
    problems += [_arg_problem(name, "cluster_name", p) for p in _cluster_name_problems(args.cluster_name)]
    problems += [_arg_problem(name, "node_role_arn", p) for p in _node_role_problems(args.node_role_arn)]
    problems += [_arg_problem(name, "subnet_ids", p) for p in _subnet_ids_problems(args.subnet_ids)]
    problems += [_arg_problem(name, arg, p) for arg, found in _tags_problems(args.tags) for p in found]
    total = len({**settings.tags, **args.tags})
    if total > MAX_USER_TAGS:
        problems.append(
            f"GpuCapacity {name!r}: tags: received {total} tags with the settings' tags; expected at most "
            f"{MAX_USER_TAGS} (AWS allows 50 per resource and the library adds up to 10 of its own)"
        )
    if settings.autoscaler_enabled:
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
    problems += _karpenter_problems(name, args, settings)
    observability = obs_values.oidc_provider_problem(
        settings.observability, args.oidc_provider_arn is not None and args.oidc_provider_url is not None
    )
    if observability:
        problems.append(f"GpuCapacity {name!r}: {observability}")
    return problems


def _karpenter_problems(name: str, args: GpuCapacityArgs, settings: GpuCapacitySettings) -> list[str]:
    """What the cluster's own Karpenter must give its groups: a node role, and the nodeOverlay
    feature gate where a group's nodes advertise other than EC2's GPU count (without it Karpenter
    ignores NodeOverlays: kubernetes-sigs/karpenter v1.14.0 pkg/cloudprovider/overlay/cloudprovider.go,
    pkg/controllers/controllers.go)."""
    groups = [(i, p) for i, p in enumerate(settings.plans) if p.provider.node_pool]
    problems = []
    if groups:
        problems += [
            f"GpuCapacity {name!r}: tags.{key}: {reserved}"
            for key in args.tags
            if (reserved := capacity_provider.reserved_tag_problem(key))
        ]
    if groups and args.karpenter_node_role is None:
        problems.append(
            f"GpuCapacity {name!r}: karpenter_node_role: received nothing; expected the IAM role name of the nodes "
            "the cluster's Karpenter launches (EC2NodeClass spec.role), for the capacityProvider karpenter groups"
        )
    if args.karpenter_node_overlay:
        return problems
    for i, plan in groups:
        if karpenter_objects.needs_overlay(plan):
            advertised = ", ".join(f"{r}={n}" for r, n in plan.advertised_resources.items())
            problems.append(
                f"GpuCapacity {name!r}: gpuNodeGroups[{i}] ({plan.name}) advertises {advertised} per node, not the "
                f"{plan.instance.ec2_gpus} GPU(s) EC2 reports: Karpenter counts it only through a NodeOverlay, "
                "which its controller ignores unless the nodeOverlay feature gate is on. Turn it on in the "
                "cluster's Karpenter (chart value settings.featureGates.nodeOverlay: true, Karpenter 1.7 or later) "
                "and pass karpenter_node_overlay=True"
            )
    return problems
