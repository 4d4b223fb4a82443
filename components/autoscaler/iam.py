"""The IAM documents of Cluster Autoscaler's role (IRSA, least privilege)."""

from __future__ import annotations

import json

from ..blocks import iam as cluster_iam
from ..plan.asg import cluster_tag
from .values import NAMESPACE, SERVICE_ACCOUNT

#: Read actions CA needs (cloudprovider/aws/README.md, "Full Cluster Autoscaler Features Policy").
READ_ACTIONS: tuple[str, ...] = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
)
#: The only actions that change anything; allowed only on ASGs tagged for this cluster.
MUTATING_ACTIONS: tuple[str, ...] = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)


def autoscaler_policy(cluster_name: str, partition: str, region: str, account_id: str) -> str:
    """The least-privilege policy document (JSON) of CA's role."""
    asg_arns = f"arn:{partition}:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/*"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "Read", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": "*"},
                {
                    # Labels and taints of managed node groups, this cluster's only.
                    "Sid": "DescribeNodegroups",
                    "Effect": "Allow",
                    "Action": "eks:DescribeNodegroup",
                    "Resource": f"arn:{partition}:eks:{region}:{account_id}:nodegroup/{cluster_name}/*/*",
                },
                {
                    "Sid": "ScaleThisClustersGroups",
                    "Effect": "Allow",
                    "Action": list(MUTATING_ACTIONS),
                    "Resource": asg_arns,
                    "Condition": {"StringEquals": {f"aws:ResourceTag/{cluster_tag(cluster_name)}": "owned"}},
                },
            ],
        },
        sort_keys=False,
    )


def irsa_trust_policy(oidc_provider_arn: str, oidc_provider_url: str) -> str:
    """Trust policy letting only kube-system/cluster-autoscaler assume the role (IRSA)."""
    return cluster_iam.irsa_trust_policy(oidc_provider_arn, oidc_provider_url, NAMESPACE, SERVICE_ACCOUNT)
