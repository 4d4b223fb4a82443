"""The IAM documents of Karpenter's controller role (IRSA) and the node role's policies.

The controller policy is Karpenter 1.14.1's reference policy, statement by statement
(aws/karpenter-provider-aws 1d927085 website/.../getting-started-with-karpenter/cloudformation.yaml:
NodeLifecyclePolicy, IAMIntegrationPolicy, EKSIntegrationPolicy, InterruptionPolicy,
ZonalShiftPolicy, ResourceDiscoveryPolicy), with ``${ClusterName}``, partition, region, account,
the node role and the queue filled in: every mutating action is scoped to this cluster's tags, the
reads to the region. Tests compare each statement to the template's, so the role can grant no
more than it. One inline policy rather than six managed ones (an inline policy lives and dies
with the role; the managed policies' 6,144-character limit is per policy, the role's inline
limit 10,240: the document is about 7,000 characters).

IRSA, not EKS Pod Identity: as the Cluster Autoscaler (autoscaler/component.py), the cluster
already has an IAM OIDC provider, so IRSA needs no agent DaemonSet and no add-on, and works for an
existing cluster that has one. The chart takes the role as a ServiceAccount annotation.
"""

from __future__ import annotations

import json
from typing import Any

from ..blocks import iam as cluster_iam
from .values import NAMESPACE, SERVICE_ACCOUNT

#: The node role's managed policies (cloudformation.yaml KarpenterNodeRole ManagedPolicyArns).
NODE_ROLE_POLICIES: dict[str, str] = {
    "worker": "AmazonEKSWorkerNodePolicy",
    "cni": "AmazonEKS_CNI_Policy",
    "ecr": "AmazonEC2ContainerRegistryPullOnly",
    "ssm": "AmazonSSMManagedInstanceCore",
}


def controller_statements(
    cluster: str, partition: str, region: str, account: str, node_role_arn: str, queue_arn: str
) -> list[dict[str, Any]]:
    """The controller's statements, in the template's order (Sids kept)."""
    ec2 = f"arn:{partition}:ec2:{region}"
    profiles = f"arn:{partition}:iam::{account}:instance-profile/*"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    request_owned = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster,
    }
    tagged_resources = [
        f"{ec2}:*:{kind}/*"
        for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
    ]
    cluster_arn = f"arn:{partition}:eks:{region}:{account}:cluster/{cluster}"
    return [
        # --- NodeLifecyclePolicy
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{ec2}::image/*",
                f"{ec2}::snapshot/*",
                f"{ec2}:*:security-group/*",
                f"{ec2}:*:subnet/*",
                f"{ec2}:*:capacity-reservation/*",
                f"{ec2}:*:placement-group/*",
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": tagged_resources,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {
                "StringEquals": request_owned,
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": tagged_resources,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {
                    **request_owned,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": owned,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        # --- IAMIntegrationPolicy
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {
                "StringEquals": {**request_owned, "aws:RequestTag/topology.kubernetes.io/region": region},
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {
                    **owned,
                    "aws:ResourceTag/topology.kubernetes.io/region": region,
                    **request_owned,
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                },
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Condition": {
                "StringEquals": {**owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        # --- EKSIntegrationPolicy
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": cluster_arn,
            "Action": "eks:DescribeCluster",
        },
        # --- InterruptionPolicy
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        },
        # --- ZonalShiftPolicy
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Resource": "*",
            "Action": ["arc-zonal-shift:GetManagedResource"],
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
        },
        # --- ResourceDiscoveryPolicy
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": "iam:GetInstanceProfile",
        },
    ]


def controller_policy(
    cluster: str, partition: str, region: str, account: str, node_role_arn: str, queue_arn: str
) -> str:
    """The controller role's policy document (JSON)."""
    statements = controller_statements(cluster, partition, region, account, node_role_arn, queue_arn)
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def irsa_trust_policy(oidc_provider_arn: str, oidc_provider_url: str) -> str:
    """Only the chart's ServiceAccount (``kube-system/karpenter``) may assume the controller role."""
    return cluster_iam.irsa_trust_policy(oidc_provider_arn, oidc_provider_url, NAMESPACE, SERVICE_ACCOUNT)


def node_trust_policy() -> str:
    """EC2 may assume the node role (cloudformation.yaml KarpenterNodeRole)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
            ],
        }
    )
