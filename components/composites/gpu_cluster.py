"""GpuCluster: the whole GPU-ready EKS cluster from one validated Settings object.

This is what this repository's own program (__main__.py) declares and what other Pulumi
stacks import::

    from components import GpuCluster, GpuClusterArgs, load_settings
    gpu = GpuCluster("ml", GpuClusterArgs(settings=load_settings({"clusterName": "ml", ...})))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..autoscaler.component import ClusterAutoscaler
from ..check.settings import Settings
from ..check.warnings import settings_warnings
from ..cluster.component import Cluster, ClusterArgs
from ..config.capacity_provider import needs_karpenter
from ..config.names import CLUSTER_CHILD, KARPENTER_CHILD
from ..gpu_operator.component import GpuOperator
from ..karpenter import values as karpenter_values
from ..karpenter.component import Karpenter, KarpenterArgs
from ..nodegroups.component import GpuNodeGroup
from ..nodegroups.node_pool import KarpenterTarget
from ..observability.component import GpuObservability
from ..plan.karpenter import DISCOVERY_TAG
from ..teams.component import Teams
from ..verification.component import GpuVerification
from .declare import ClusterTarget, declare_gpu_capacity, group_outputs
from .resolve import checked_setting_tags

TYPE_NAME = "gpu-eks:index:GpuCluster"


@dataclass
class GpuClusterArgs:
    settings: Settings


class GpuCluster(pulumi.ComponentResource):
    """Cluster + system node group + GPU node groups + gpu-operator (+ Cluster Autoscaler, + optional
    verification)."""

    # Children are annotated where they are assigned, not here: Pulumi's schema analyzer reads
    # class-level annotations (of subclasses too, see multilang.GpuCluster) as outputs.

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        s = args.settings
        # Legal but risky settings, as Pulumi warnings on this component (GpuCapacity does the same):
        # a consumer's `pulumi up` shows them under it, `gpu-eks-review render` in its header.
        for warning in settings_warnings(s):
            pulumi.log.warn(f"gpu-eks config: {warning}", resource=self)
        # Tag values given as Outputs are checked by the tag rules when they resolve.
        tags = {"gpu-eks/cluster": s.cluster_name, **checked_setting_tags(s.tags)}
        uses_karpenter = needs_karpenter(s.gpu_node_groups)

        self.cluster: Cluster = Cluster(
            f"{name}-{CLUSTER_CHILD}",
            ClusterArgs(
                cluster_name=s.cluster_name,
                kubernetes_version=s.kubernetes_version,
                network=s.network,
                system_node_group=s.system_node_group,
                admin_principal_arns=s.admin_principal_arns,
                endpoint_public_access_cidrs=s.endpoint_public_access_cidrs,
                control_plane_log_types=s.control_plane_log_types,
                deletion_protection=s.deletion_protection,
                tags=tags,
                # Karpenter's EC2NodeClasses select the subnets the cluster creates by this tag.
                private_subnet_tags={DISCOVERY_TAG: s.cluster_name} if uses_karpenter else {},
                node_monitoring_addon_version=s.node_monitoring_addon_version,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

        # The GPU node groups, the operator and the verification: the same declaration as
        # GpuCapacity's (names and parents unchanged: `<name>-<group>`, `<name>-gpu-operator`,
        # `<name>-verify`, children of this component).
        # --- Karpenter: only when a GPU group asks for it (issue 26) ------------------------
        self.karpenter: Karpenter | None = None
        karpenter_target = None
        if uses_karpenter:
            self.karpenter = Karpenter(
                f"{name}-{KARPENTER_CHILD}",
                KarpenterArgs(
                    cluster_name=s.cluster_name,
                    oidc_provider_arn=self.cluster.oidc_provider_arn,
                    oidc_provider_url=self.cluster.oidc_provider_url,
                    # The security group EKS creates and attaches to every managed node.
                    cluster_security_group_id=aws.eks.get_cluster_output(
                        name=self.cluster.cluster_name, opts=pulumi.InvokeOutputOptions(parent=self)
                    ).vpc_config.cluster_security_group_id,
                    subnet_ids=self.cluster.private_subnet_ids,
                    subnet_count=_private_subnet_count(s),
                    node_overlay=karpenter_values.node_overlay_needed(s.plans),
                    reserved_capacity=karpenter_values.reserved_capacity_needed(s.plans),
                    system_nodes=s.system_node_group.scaling.min_size,
                    node_repair=karpenter_values.node_repair_needed(s.plans),
                    wait_for=[self.cluster.system_node_group],
                    tags=tags,
                ),
                opts=pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.cluster.provider}),
            )
            karpenter_target = KarpenterTarget(
                node_role=self.karpenter.node_role_name,
                discovery=s.cluster_name,
                provider=self.cluster.provider,
                depends_on=[self.karpenter.release],
            )

        parts = declare_gpu_capacity(
            name,
            parent=self,
            target=ClusterTarget(
                cluster_name=self.cluster.cluster_name,
                node_role_arn=self.cluster.node_role_arn,
                subnet_ids=self.cluster.private_subnet_ids,
                provider=self.cluster.provider,
                oidc_provider_arn=self.cluster.oidc_provider_arn,
                oidc_provider_url=self.cluster.oidc_provider_url,
                ready=[self.cluster.system_node_group],
            ),
            settings=s,
            tags=tags,
            autoscaler_cluster_name=s.cluster_name,
            karpenter=karpenter_target,
        )
        self.gpu_node_groups: dict[str, GpuNodeGroup] = parts.gpu_node_groups
        self.operator: GpuOperator = parts.operator
        self.autoscaler: ClusterAutoscaler | None = parts.autoscaler
        self.verification: GpuVerification | None = parts.verification
        self.observability: GpuObservability | None = parts.observability
        self.teams: Teams | None = parts.teams

        self.register_outputs(self.stack_outputs())

    def stack_outputs(self) -> dict[str, Any]:
        """The outputs a stack exports (README, "Stack outputs")."""
        return {
            "clusterName": self.cluster.cluster_name,
            "kubeconfig": self.cluster.kubeconfig,
            "oidcProviderArn": self.cluster.oidc_provider_arn,
            "oidcProviderUrl": self.cluster.oidc_provider_url,
            "gpuNodeGroups": group_outputs(self.gpu_node_groups),
            # Where the GPU metrics land (observability.enabled only).
            **({"observability": self.observability.outputs} if self.observability else {}),
            # The groups no verification Job targets, or whose NCCL check pulumi up does not wait for.
            **(self.verification.stack_outputs() if self.verification else {}),
        }


def _private_subnet_count(settings: Settings) -> int:
    """How many private subnets need a discovery Tag resource (``Karpenter``): those of an existing
    VPC; the subnets the cluster creates carry the tag in their own tags (``ClusterArgs``)."""
    net = settings.network
    if not net.existing_vpc:
        return 0
    if not isinstance(net.private_subnet_ids, (list, tuple)):
        raise ValueError(
            "network.privateSubnetIds: received an Output; expected a list (of ids or Outputs) with a Karpenter "
            "group: each private subnet gets the karpenter.sh/discovery tag, one resource per subnet"
        )
    return len(net.private_subnet_ids)
