"""ClusterAutoscaler: the IRSA role of Cluster Autoscaler and its Helm release.

AWS access is IRSA (IAM Roles for Service Accounts), not EKS Pod Identity: the cluster already
has an IAM OIDC provider (``Cluster.oidc_provider_arn``), so IRSA needs no add-on and no agent
DaemonSet on every node, and it works unchanged for a cluster brought from elsewhere as long
as it has an OIDC provider. Pod Identity would need the ``eks-pod-identity-agent`` add-on,
which neither pulumi-eks nor EKS installs by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..blocks.helm import helm_release
from ..blocks.iam import partition_of
from ..catalog.charts import CLUSTER_AUTOSCALER
from ..config.addons import AutoscalerSettings
from ..plan.group import GroupPlan
from . import iam, values

TYPE_NAME = "gpu-eks:autoscaler:ClusterAutoscaler"
#: Helm waits for the Deployment (one pod on the system node group).
RELEASE_TIMEOUT_SECONDS = 600


@dataclass
class ClusterAutoscalerArgs:
    settings: AutoscalerSettings
    #: The EKS cluster name (plain: it names the ASG discovery tag and the IAM scope).
    cluster_name: str
    kubernetes_version: str
    oidc_provider_arn: pulumi.Input[str]
    oidc_provider_url: pulumi.Input[str]
    #: Resources to finish first (the system node group: CA needs an untainted node).
    wait_for: Sequence[pulumi.Resource] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    #: The plans of the GPU groups it scales (the flags some of them need: values.extra_args).
    plans: Sequence[GroupPlan] = ()


class ClusterAutoscaler(pulumi.ComponentResource):
    """IAM role (IRSA, least privilege) + ``cluster-autoscaler`` Helm release in kube-system.

    Pass the cluster's Kubernetes provider with ``opts=ResourceOptions(providers={"kubernetes": p})``.
    """

    role: aws.iam.Role
    policy: aws.iam.RolePolicy
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        s = args.settings
        warning = CLUSTER_AUTOSCALER.unvalidated_warning(s.chart_version)
        if warning:
            pulumi.log.warn(warning, resource=self)
        partition = partition_of(self)
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id

        self.role = aws.iam.Role(
            f"{name}-role",
            description=f"Cluster Autoscaler of EKS cluster {args.cluster_name} (IRSA)",
            assume_role_policy=pulumi.Output.all(args.oidc_provider_arn, args.oidc_provider_url).apply(
                lambda a: iam.irsa_trust_policy(a[0], a[1])
            ),
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.policy = aws.iam.RolePolicy(
            f"{name}-policy",
            role=self.role.name,
            policy=pulumi.Output.all(partition, region, account).apply(
                lambda a: iam.autoscaler_policy(args.cluster_name, a[0], a[1], a[2])
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The pod must not start before its role can act (the role ARN alone would not wait
        # for the policy).
        role_arn = pulumi.Output.all(self.role.arn, self.policy.id).apply(lambda a: a[0])
        self.values = values.autoscaler_values(
            s,
            cluster_name=args.cluster_name,
            kubernetes_version=args.kubernetes_version,
            region=region,
            role_arn=role_arn,
            plans=args.plans,
        )
        self.release = helm_release(
            f"{name}-release",
            CLUSTER_AUTOSCALER,
            version=s.chart_version,
            values=self.values,
            timeout_seconds=RELEASE_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
        )
        self.register_outputs(
            {
                "roleArn": self.role.arn,
                "releaseName": self.release.name,
                "chartVersion": s.chart_version,
                "imageTag": values.image_tag(args.kubernetes_version),
            }
        )
