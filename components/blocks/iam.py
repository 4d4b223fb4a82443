"""IAM of a cluster: the node role, the partition of ARNs, and the keys of EKS access entries."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from ..config.errors import CONFIG_NAMESPACE, Problem

#: AWS managed policies of the node role, by the suffix of their attachment's resource name.
#: SSM lets operators reach nodes without SSH. ARNs: ``managed_policy_arn(partition, name)``.
NODE_ROLE_POLICIES: dict[str, str] = {
    "worker": "AmazonEKSWorkerNodePolicy",
    "cni": "AmazonEKS_CNI_Policy",
    "ecr": "AmazonEC2ContainerRegistryReadOnly",
    "ssm": "AmazonSSMManagedInstanceCore",
}
#: The EKS access policy given to ``adminPrincipalArns``. ARN: ``cluster_access_policy_arn``.
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def irsa_trust_policy(oidc_provider_arn: str, oidc_provider_url: str, namespace: str, service_account: str) -> str:
    """Trust policy letting only ``namespace/service_account`` assume a role through the cluster's
    OIDC provider (IRSA: EKS User Guide, "Assign IAM roles to Kubernetes service accounts": the
    ``<issuer>:sub`` and ``<issuer>:aud`` conditions)."""
    issuer = oidc_provider_url.removeprefix("https://")
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": oidc_provider_arn},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {
                        "StringEquals": {
                            f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                            f"{issuer}:aud": "sts.amazonaws.com",
                        }
                    },
                }
            ],
        }
    )


def managed_policy_arn(partition: str, policy_name: str) -> str:
    """``arn:<partition>:iam::aws:policy/<name>``: AWS managed policies live in every partition
    under the account alias ``aws`` (IAM User Guide, "AWS managed policies"; e.g.
    ``arn:aws-us-gov:iam::aws:policy/AmazonEKSWorkerNodePolicy`` in GovCloud)."""
    return f"arn:{_known(partition)}:iam::aws:policy/{policy_name}"


def cluster_access_policy_arn(partition: str, policy_name: str = CLUSTER_ADMIN_POLICY) -> str:
    """``arn:<partition>:eks::aws:cluster-access-policy/<name>`` (EKS User Guide, "Access
    policy permissions": the ARNs have the partition of the cluster's region)."""
    return f"arn:{_known(partition)}:eks::aws:cluster-access-policy/{policy_name}"


def _known(partition: str) -> str:
    # aws.getPartition always answers in a real deployment; a unit test's mocks may not.
    if not partition:
        raise ValueError(
            "aws.getPartition returned no partition (under Pulumi mocks, answer the call "
            "'aws:index/getPartition:getPartition' with {'partition': 'aws'}: see docs/testing.md)"
        )
    return partition


def principal_partition_problems(arns: Sequence[str], partition: str) -> list[Problem]:
    """Principals of another partition than the cluster's: EKS refuses their access entries."""
    return [
        Problem(
            key=f"{CONFIG_NAMESPACE}:adminPrincipalArns[{i}]",
            received=arn,
            expected=f"an ARN of the provider's partition, arn:{partition}:...",
        )
        for i, arn in enumerate(arns)
        if arn.split(":")[1:2] != [partition]
    ]


def partition_of(parent: pulumi.Resource) -> pulumi.Output[str]:
    """The partition (``aws``, ``aws-us-gov``, ``aws-cn``) of ``parent``'s AWS provider."""
    return aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=parent)).partition


def declare_node_role(
    name: str, *, parent: pulumi.Resource, partition: pulumi.Input[str], tags: Mapping[str, pulumi.Input[str]]
) -> tuple[aws.iam.Role, pulumi.Output[str]]:
    """The EC2 node role ``{name}`` and its managed-policy attachments ``{name}-<short>``.

    Returns the role and its ARN as an Output that resolves only once every policy is attached
    (node groups must not start before the role can pull images and join).
    """
    role = aws.iam.Role(
        name,
        assume_role_policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-{short}",
            role=role.name,
            policy_arn=pulumi.Output.from_input(partition).apply(
                lambda p, policy=policy: managed_policy_arn(p, policy)
            ),
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for short, policy in NODE_ROLE_POLICIES.items()
    ]
    return role, pulumi.Output.all(role.arn, *[a.id for a in attachments]).apply(lambda xs: xs[0])


def _plain_access_entry_key(principal_arn: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", principal_arn.split(":")[-1]).strip("-")


def access_entry_keys(principal_arns: Sequence[str]) -> dict[str, str]:
    """A stable key per principal ARN; pulumi-eks names each AccessEntry resource after its key.

    The key is ``role-Admin`` for ``arn:aws:iam::123456789012:role/Admin`` (the scheme of earlier
    releases, so existing entries keep their resource names). When two ARNs would share a key (the
    same role name in two accounts), the first listed keeps it and the later ones get their account
    in front, ``222222222222-role-Admin`` (and, should that still collide because two paths flatten
    alike, a short hash of the ARN at the end). Appending an ARN therefore never renames an existing
    entry; a rename would fail the update, because EKS keeps one access entry per principal and
    Pulumi creates the renamed entry before it deletes the old one (botocore ``eks``
    CreateAccessEntryRequest.principalArn: "You can't specify the same ARN in more than one access
    entry").
    """

    def with_account(arn: str) -> str:
        return f"{arn.split(':')[4]}-{_plain_access_entry_key(arn)}"

    def with_hash(arn: str) -> str:
        return f"{with_account(arn)}-{hashlib.sha256(arn.encode()).hexdigest()[:8]}"

    keys: dict[str, str] = {}
    for arn in dict.fromkeys(principal_arns):
        taken = set(keys.values())
        keys[arn] = next(k for k in (_plain_access_entry_key(arn), with_account(arn), with_hash(arn)) if k not in taken)
    return keys
