"""The EKS cluster: VPC (existing or new), control plane through pulumi-eks, the node IAM role,
the untainted system node group, and a Kubernetes provider for the cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_awsx as awsx
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from ..blocks.iam import (
    _known,
    access_entry_keys,
    cluster_access_policy_arn,
    declare_node_role,
    partition_of,
    principal_partition_problems,
)
from ..blocks.managed import ManagedNodeGroupSpec, declare_managed_node_group
from ..catalog import node_health
from ..config.errors import ConfigError, deploy_time_error, is_plain
from ..config.fields import CONTROL_PLANE_LOG_TYPES
from ..config.network import NetworkSettings, check_resolved_network
from ..config.system_group import SystemNodeGroupSettings
from . import node_monitoring

TYPE_NAME = "gpu-eks:cluster:Cluster"


def resolve_network(net: NetworkSettings) -> tuple[Any, Any, Any]:
    """(vpc id, private subnet ids, public subnet ids) of an existing VPC, as Inputs.

    Plain values were validated at load time and are returned as they are. When any is an
    Output, the three are validated again, together, when they resolve (the same rules as at
    load time; a ConfigError naming the key fails the deployment).
    """
    raw = {"vpcId": net.vpc_id, "privateSubnetIds": net.private_subnet_ids, "publicSubnetIds": net.public_subnet_ids}
    if is_plain(list(raw.values())):
        return net.vpc_id, list(net.private_subnet_ids), list(net.public_subnet_ids)
    checked = pulumi.Output.all(**raw).apply(_check_resolved_network)
    return (
        checked.apply(lambda n: n.vpc_id),
        checked.apply(lambda n: list(n.private_subnet_ids)),
        checked.apply(lambda n: list(n.public_subnet_ids)),
    )


def _check_resolved_network(resolved: dict[str, Any]) -> NetworkSettings:
    try:
        return check_resolved_network(resolved)
    except ConfigError as err:
        raise deploy_time_error(err) from None


@dataclass
class ClusterArgs:
    #: EKS cluster name (the physical name, not the Pulumi resource name).
    cluster_name: pulumi.Input[str]
    kubernetes_version: str
    network: NetworkSettings
    system_node_group: SystemNodeGroupSettings
    #: IAM principals granted cluster-admin through EKS access entries.
    admin_principal_arns: Sequence[str] = ()
    #: CIDRs allowed on the public endpoint; empty: private endpoint only.
    endpoint_public_access_cidrs: Sequence[str] = ()
    control_plane_log_types: Sequence[str] = CONTROL_PLANE_LOG_TYPES
    #: EKS deletion protection, plus Pulumi `protect` on the control plane.
    deletion_protection: bool = False
    tags: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: Tags of the private subnets the cluster creates, besides the ELB one (Karpenter's discovery
    #: tag): in the subnets' own tags, never a separate ``aws.ec2.Tag`` on a subnet whose resource
    #: manages its tags (the two would undo each other after a refresh).
    private_subnet_tags: Mapping[str, str] = field(default_factory=dict)
    #: The ``eks-node-monitoring-agent`` add-on version to install (``Settings.node_monitoring_addon_version``);
    #: None: no add-on.
    node_monitoring_addon_version: str | None = None


class Cluster(pulumi.ComponentResource):
    """An EKS cluster with API authentication mode and an untainted system node group."""

    cluster_name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_provider_url: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[Sequence[str]]
    provider: k8s.Provider

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        tags = dict(args.tags)
        partition = partition_of(self)
        public_subnet_ids = self._network(name, args, tags)
        self._control_plane(name, args, tags, partition, public_subnet_ids)

        # --- Node role (shared by every managed node group of this cluster) -----------------
        self.node_role, self.node_role_arn = declare_node_role(
            f"{name}-node-role", parent=self, partition=partition, tags=tags
        )
        self._system_nodes(name, args, tags)

        # --- Kubernetes provider -------------------------------------------------------------
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "kubeconfig": self.kubeconfig,
                "oidcProviderArn": self.oidc_provider_arn,
                "oidcProviderUrl": self.oidc_provider_url,
                "nodeRoleArn": self.node_role_arn,
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
            }
        )

    def _network(self, name: str, args: ClusterArgs, tags: dict[str, str]) -> pulumi.Input[Sequence[str]]:
        """The VPC (created, or the existing one resolved): sets ``vpc_id`` and
        ``private_subnet_ids``; returns the public subnets (the control plane's)."""
        net = args.network
        public_subnet_ids: pulumi.Input[Sequence[str]]
        if net.existing_vpc:
            vpc_id, private_subnet_ids, public_subnet_ids = resolve_network(net)
            self.vpc_id = pulumi.Output.from_input(vpc_id)
            self.private_subnet_ids = pulumi.Output.from_input(private_subnet_ids)
        else:
            vpc = awsx.ec2.Vpc(
                f"{name}-vpc",
                cidr_block=net.cidr_block,
                number_of_availability_zones=net.availability_zone_count,
                subnet_strategy=awsx.ec2.SubnetAllocationStrategy.AUTO,
                nat_gateways=awsx.ec2.NatGatewayConfigurationArgs(strategy=net.nat_gateways),
                subnet_specs=[
                    # The tags EKS (and the AWS Load Balancer Controller) use to pick subnets.
                    awsx.ec2.SubnetSpecArgs(
                        type=awsx.ec2.SubnetType.PRIVATE,
                        tags={"kubernetes.io/role/internal-elb": "1", **args.private_subnet_tags},
                    ),
                    awsx.ec2.SubnetSpecArgs(type=awsx.ec2.SubnetType.PUBLIC, tags={"kubernetes.io/role/elb": "1"}),
                ],
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.vpc_id = vpc.vpc_id
            self.private_subnet_ids = vpc.private_subnet_ids
            public_subnet_ids = vpc.public_subnet_ids
        return public_subnet_ids

    def _control_plane(
        self,
        name: str,
        args: ClusterArgs,
        tags: dict[str, str],
        partition: pulumi.Output[str],
        public_subnet_ids: pulumi.Input[Sequence[str]],
    ) -> None:
        """The EKS cluster with its admins' access entries: sets ``eks``, ``cluster_name``,
        ``kubeconfig`` and the OIDC provider's ARN and URL."""
        access_entries = _admin_access_entries(args.admin_principal_arns, partition)
        public = bool(args.endpoint_public_access_cidrs)
        self.eks = eks.Cluster(
            f"{name}-eks",
            name=args.cluster_name,
            version=args.kubernetes_version,
            vpc_id=self.vpc_id,
            private_subnet_ids=self.private_subnet_ids,
            public_subnet_ids=public_subnet_ids,
            node_associate_public_ip_address=False,
            endpoint_private_access=True,
            endpoint_public_access=public,
            public_access_cidrs=list(args.endpoint_public_access_cidrs) if public else None,
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=access_entries,
            # Nodes come from managed node groups declared below, never the default group.
            skip_default_node_group=True,
            create_oidc_provider=True,
            enabled_cluster_log_types=list(args.control_plane_log_types),
            # pulumi-eks would create the CoreDNS add-on inside the cluster component, before any
            # node exists: it stays DEGRADED and the first `pulumi up` times out after 20 minutes
            # (pulumi/pulumi-eks#1819). It is declared below, after the system node group.
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            deletion_protection=args.deletion_protection,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.deletion_protection),
        )
        # The cluster name is known up front (we chose it), which keeps previews readable; deriving
        # it from the component's URN makes everything that uses it wait for the control plane.
        self.cluster_name = pulumi.Output.all(self.eks.urn, args.cluster_name).apply(lambda xs: xs[1])
        self.kubeconfig = pulumi.Output.secret(self.eks.kubeconfig_json)
        self.oidc_provider_arn = self.eks.oidc_provider_arn
        self.oidc_provider_url = self.eks.oidc_provider_url

    def _system_nodes(self, name: str, args: ClusterArgs, tags: dict[str, str]) -> None:
        """The system node group (untainted, for CoreDNS, gpu-operator, NFD master/gc) and the
        CoreDNS add-on that needs it, and the node monitoring agent add-on: sets ``system_node_group``,
        ``coredns`` and ``node_monitoring_agent``."""
        system = args.system_node_group
        _, self.system_node_group = declare_managed_node_group(
            f"{name}-system",
            ManagedNodeGroupSpec(
                ami_type=system.ami_type,
                instance_types=system.instance_types,
                capacity_type="ON_DEMAND",
                scaling=system.scaling,
                disk_size_gib=system.disk_size_gib,
                release_version=system.ami_release_version,
                kubernetes_version=args.kubernetes_version,
            ),
            parent=self,
            cluster_name=self.cluster_name,
            node_role_arn=self.node_role_arn,
            subnet_ids=self.private_subnet_ids,
            tags=tags,
        )

        # CoreDNS is a Deployment: its add-on only becomes ACTIVE once a node can run it. The EKS
        # default add-on version for the cluster's Kubernetes version is used.
        self.coredns = aws.eks.Addon(
            f"{name}-coredns",
            cluster_name=self.cluster_name,
            addon_name="coredns",
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group]),
        )

        # The node monitoring agent: the node conditions node repair acts on (node_monitoring.py).
        # After the system node group, like CoreDNS: the add-on is ACTIVE once its pods run.
        self.node_monitoring_agent = None
        if args.node_monitoring_addon_version is not None:
            self.node_monitoring_agent = aws.eks.Addon(
                f"{name}-node-monitoring-agent",
                cluster_name=self.cluster_name,
                addon_name=node_health.NODE_MONITORING_AGENT_ADDON,
                addon_version=args.node_monitoring_addon_version,
                configuration_values=node_monitoring.addon_configuration_json(),
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group]),
            )


def _admin_access_entries(principal_arns: Sequence[str], partition: pulumi.Output[str]) -> dict[str, Any]:
    """The cluster-admin access entry of each admin principal, keyed by principal, not position:
    pulumi-eks names the AccessEntry resources after the key, so reordering the list must not
    rename (replace) them. Principals must be of the provider's partition; checked when the
    partition is known."""
    admin_arns = list(principal_arns)
    checked_partition = partition.apply(lambda p: _same_partition(admin_arns, p))
    keys = access_entry_keys(principal_arns)
    return {
        keys[arn]: eks.AccessEntryArgs(
            principal_arn=checked_partition.apply(lambda _, arn=arn: arn),
            access_policies={
                "cluster-admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=checked_partition.apply(cluster_access_policy_arn),
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                )
            },
        )
        for arn in admin_arns
    }


def _same_partition(arns: Sequence[str], partition: str) -> str:
    problems = principal_partition_problems(arns, _known(partition))
    if problems:
        # Called inside apply: the library's message first, not Pulumi's wrapping of a ValueError.
        raise deploy_time_error(ConfigError(problems))
    return partition
