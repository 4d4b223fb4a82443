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

from .cluster import Cluster, ClusterArgs
from .nodegroup import GpuNodeGroup, GpuNodeGroupArgs
from .operator import GpuOperator, GpuOperatorArgs
from .settings import CLUSTER_CHILD, OPERATOR_CHILD, VERIFICATION_CHILD, Settings
from .verification import TimeSlicingVerification, TimeSlicingVerificationArgs

TYPE_NAME = "gpu-eks:index:GpuCluster"


@dataclass
class GpuClusterArgs:
    settings: Settings


class GpuCluster(pulumi.ComponentResource):
    """Cluster + system node group + GPU node groups + gpu-operator (+ optional verification)."""

    # The child components are annotated where they are assigned (in __init__), not at class level:
    # Pulumi's component analyzer reads class-level annotations of this class (the multi-language
    # face, components/multilang.py, subclasses it) as schema outputs, and it cannot describe these.
    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        s = args.settings
        tags = {"gpu-eks/cluster": s.cluster_name, **s.tags}

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
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.gpu_node_groups: dict[str, GpuNodeGroup] = {
            g.name: GpuNodeGroup(
                f"{name}-{g.name}",
                GpuNodeGroupArgs(
                    settings=g,
                    cluster_name=self.cluster.cluster_name,
                    node_role_arn=self.cluster.node_role_arn,
                    subnet_ids=self.cluster.private_subnet_ids,
                    tags=tags,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for g in s.gpu_node_groups
        }

        k8s_providers = {"kubernetes": self.cluster.provider}
        self.operator: GpuOperator = GpuOperator(
            f"{name}-{OPERATOR_CHILD}",
            GpuOperatorArgs(
                settings=s.gpu_operator,
                gpu_node_groups=s.gpu_node_groups,
                # The operator, NFD master and gc need an untainted node to run on.
                wait_for=[self.cluster.system_node_group],
            ),
            opts=pulumi.ResourceOptions(parent=self, providers=k8s_providers),
        )

        self.verification: TimeSlicingVerification | None = None
        if s.verify_time_slicing:
            self.verification = TimeSlicingVerification(
                f"{name}-{VERIFICATION_CHILD}",
                TimeSlicingVerificationArgs(
                    settings=s.verification,
                    gpu_node_groups=s.gpu_node_groups,
                    wait_for=[self.operator, *self.gpu_node_groups.values()],
                ),
                opts=pulumi.ResourceOptions(parent=self, providers=k8s_providers),
            )

        self.register_outputs(self.stack_outputs())

    def stack_outputs(self) -> dict[str, Any]:
        """The outputs a stack exports (README, "Stack outputs")."""
        return {
            "clusterName": self.cluster.cluster_name,
            "kubeconfig": self.cluster.kubeconfig,
            "oidcProviderArn": self.cluster.oidc_provider_arn,
            "oidcProviderUrl": self.cluster.oidc_provider_url,
            "gpuNodeGroups": {
                group_name: {
                    "nodeSelector": g.node_selector,
                    "tolerations": g.tolerations,
                    "gpusPerNode": g.gpus_per_node,
                    "advertisedGpusPerNode": g.advertised_gpus_per_node,
                    "resourceName": g.resource_name,
                }
                for group_name, g in self.gpu_node_groups.items()
            },
        }
