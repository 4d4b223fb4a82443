"""Promises about the cluster: what is sent to pulumi-eks's Cluster and awsx's Vpc (remote
components, whose children are never built under mocks), the node IAM role, the CoreDNS
add-on and the Kubernetes provider. Literal expectations for dev, prod and the variant."""

from __future__ import annotations

import json

import pytest
from pulumi.runtime import rpc

from tests.data.promised import (
    CLUSTER_ADMIN_POLICY_ARN,
    CLUSTER_NAME,
    CREATED_VPC_ID,
    NODE_ROLE_POLICY_ARNS,
    PRIVATE_SUBNETS,
    PUBLIC_SUBNETS,
    RUNS,
    TAGS,
)
from tests.data.samples import DEFAULTS, VARIANT
from tests.support.simulation import simulate_run
from tooling.simulation import Simulation

ALL_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


def admin_entry(principal: str) -> dict:
    return {
        "principalArn": principal,
        "accessPolicies": {
            "cluster-admin": {"policyArn": CLUSTER_ADMIN_POLICY_ARN, "accessScope": {"type": "cluster"}},
        },
    }


CORE_DNS_OFF = {"enabled": False, "resolveConflictsOnCreate": "OVERWRITE", "resolveConflictsOnUpdate": "OVERWRITE"}

#: Every input of pulumi-eks's Cluster, per run.
EKS_CLUSTER_INPUTS = {
    "dev": {
        "name": "gpu-eks-dev",
        "version": "1.35",
        "vpcId": CREATED_VPC_ID,
        "privateSubnetIds": PRIVATE_SUBNETS["dev"],
        "publicSubnetIds": PUBLIC_SUBNETS["dev"],
        "nodeAssociatePublicIpAddress": False,
        "endpointPrivateAccess": True,
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["203.0.113.0/24"],
        "authenticationMode": "API",
        "accessEntries": {"role-PlatformAdmin": admin_entry("arn:aws:iam::123456789012:role/PlatformAdmin")},
        "skipDefaultNodeGroup": True,
        "createOidcProvider": True,
        "enabledClusterLogTypes": ALL_LOG_TYPES,
        "corednsAddonOptions": CORE_DNS_OFF,
        "deletionProtection": False,
        "tags": TAGS["dev"],
    },
    "prod": {
        "name": "gpu-eks-prod",
        "version": "1.35",
        "vpcId": CREATED_VPC_ID,
        "privateSubnetIds": PRIVATE_SUBNETS["prod"],
        "publicSubnetIds": PUBLIC_SUBNETS["prod"],
        "nodeAssociatePublicIpAddress": False,
        "endpointPrivateAccess": True,
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["203.0.113.0/24"],
        "authenticationMode": "API",
        "accessEntries": {"role-PlatformAdmin": admin_entry("arn:aws:iam::123456789012:role/PlatformAdmin")},
        "skipDefaultNodeGroup": True,
        "createOidcProvider": True,
        "enabledClusterLogTypes": ALL_LOG_TYPES,
        "corednsAddonOptions": CORE_DNS_OFF,
        "deletionProtection": True,
        "tags": TAGS["prod"],
    },
    VARIANT: {
        "name": "ml-variant",
        "version": "1.34",
        "vpcId": "vpc-0b10c000000000001",
        "privateSubnetIds": PRIVATE_SUBNETS[VARIANT],
        "publicSubnetIds": PUBLIC_SUBNETS[VARIANT],
        "nodeAssociatePublicIpAddress": False,
        "endpointPrivateAccess": True,
        # No CIDRs: no public endpoint, and no publicAccessCidrs input at all.
        "endpointPublicAccess": False,
        "authenticationMode": "API",
        "accessEntries": {
            "role-Bob": admin_entry("arn:aws:iam::123456789012:role/Bob"),
            "user-alice": admin_entry("arn:aws:iam::123456789012:user/alice"),
        },
        "skipDefaultNodeGroup": True,
        "createOidcProvider": True,
        "enabledClusterLogTypes": ["api", "audit"],
        "corednsAddonOptions": CORE_DNS_OFF,
        "deletionProtection": True,
        "tags": TAGS[VARIANT],
    },
    DEFAULTS: {
        "name": "gpu-eks-defaults",
        "version": "1.35",
        "vpcId": CREATED_VPC_ID,
        "privateSubnetIds": PRIVATE_SUBNETS[DEFAULTS],
        "publicSubnetIds": PUBLIC_SUBNETS[DEFAULTS],
        "nodeAssociatePublicIpAddress": False,
        "endpointPrivateAccess": True,
        # No CIDRs by default: private endpoint only.
        "endpointPublicAccess": False,
        "authenticationMode": "API",
        "accessEntries": {},
        "skipDefaultNodeGroup": True,
        "createOidcProvider": True,
        "enabledClusterLogTypes": ALL_LOG_TYPES,
        "corednsAddonOptions": CORE_DNS_OFF,
        "deletionProtection": False,
        "tags": TAGS[DEFAULTS],
    },
}

SUBNET_SPECS = [
    {"type": "Private", "tags": {"kubernetes.io/role/internal-elb": "1"}},
    {"type": "Public", "tags": {"kubernetes.io/role/elb": "1"}},
]
VPC_INPUTS = {
    "dev": {
        "cidrBlock": "10.0.0.0/16",
        "numberOfAvailabilityZones": 2,
        "subnetStrategy": "Auto",
        "natGateways": {"strategy": "Single"},
        "subnetSpecs": SUBNET_SPECS,
        "tags": TAGS["dev"],
    },
    "prod": {
        "cidrBlock": "10.20.0.0/16",
        "numberOfAvailabilityZones": 3,
        "subnetStrategy": "Auto",
        "natGateways": {"strategy": "OnePerAz"},
        "subnetSpecs": SUBNET_SPECS,
        "tags": TAGS["prod"],
    },
    VARIANT: None,  # an existing VPC: none is created
    DEFAULTS: {
        "cidrBlock": "10.0.0.0/16",
        "numberOfAvailabilityZones": 2,
        "subnetStrategy": "Auto",
        "natGateways": {"strategy": "Single"},
        "subnetSpecs": SUBNET_SPECS,
        "tags": TAGS[DEFAULTS],
    },
}

NODE_ROLE_TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


# --- pulumi-eks Cluster ---------------------------------------------------------------------


def test_eks_cluster_inputs(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one("eks:index:Cluster", "gpu-eks-cluster-eks").inputs == EKS_CLUSTER_INPUTS[name]


def test_eks_cluster_authentication_mode_is_api(run: tuple[str, Simulation]):
    _, sim = run
    assert sim.one("eks:index:Cluster").inputs["authenticationMode"] == "API"


def test_eks_cluster_access_entries_are_keyed_by_principal_with_the_admin_policy(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one("eks:index:Cluster").inputs["accessEntries"] == EKS_CLUSTER_INPUTS[name]["accessEntries"]


def test_eks_cluster_private_endpoint_always_public_only_with_cidrs(run: tuple[str, Simulation]):
    name, sim = run
    i = sim.one("eks:index:Cluster").inputs
    assert i["endpointPrivateAccess"] is True
    assert i["endpointPublicAccess"] is {"dev": True, "prod": True, VARIANT: False, DEFAULTS: False}[name]
    assert (
        i.get("publicAccessCidrs")
        == {"dev": ["203.0.113.0/24"], "prod": ["203.0.113.0/24"], VARIANT: None, DEFAULTS: None}[name]
    )


def test_eks_cluster_log_types(run: tuple[str, Simulation]):
    name, sim = run
    assert (
        sim.one("eks:index:Cluster").inputs["enabledClusterLogTypes"]
        == {
            "dev": ALL_LOG_TYPES,
            "prod": ALL_LOG_TYPES,
            VARIANT: ["api", "audit"],
            DEFAULTS: ALL_LOG_TYPES,
        }[name]
    )


def test_eks_cluster_coredns_addon_of_pulumi_eks_is_disabled(run: tuple[str, Simulation]):
    """pulumi-eks's own add-on would be created before any node and time out DEGRADED (#1819)."""
    _, sim = run
    assert sim.one("eks:index:Cluster").inputs["corednsAddonOptions"]["enabled"] is False


def test_eks_cluster_deletion_protection_and_protect(run: tuple[str, Simulation]):
    name, sim = run
    cluster = sim.one("eks:index:Cluster")
    expected = {"dev": False, "prod": True, VARIANT: True, DEFAULTS: False}[name]
    assert cluster.inputs["deletionProtection"] is expected
    assert cluster.protect is expected


def test_eks_cluster_nodes_never_get_public_ips_and_no_default_node_group(run: tuple[str, Simulation]):
    _, sim = run
    i = sim.one("eks:index:Cluster").inputs
    assert i["nodeAssociatePublicIpAddress"] is False
    assert i["skipDefaultNodeGroup"] is True
    assert i["createOidcProvider"] is True


# --- awsx Vpc ---------------------------------------------------------------------------------


def test_vpc_inputs(run: tuple[str, Simulation]):
    name, sim = run
    vpcs = sim.by_type("awsx:ec2:Vpc")
    if VPC_INPUTS[name] is None:
        assert vpcs == []
    else:
        (vpc,) = vpcs
        assert vpc.name == "gpu-eks-cluster-vpc"
        assert vpc.inputs == VPC_INPUTS[name]


# --- Node IAM role ----------------------------------------------------------------------------


def test_node_role_trust_policy_and_tags(run: tuple[str, Simulation]):
    name, sim = run
    role = sim.one("aws:iam/role:Role", "gpu-eks-cluster-node-role")
    assert set(role.inputs) == {"assumeRolePolicy", "tags"}
    assert json.loads(role.inputs["assumeRolePolicy"]) == NODE_ROLE_TRUST_POLICY
    assert role.inputs["tags"] == TAGS[name]


def test_node_role_has_exactly_the_four_policies(run: tuple[str, Simulation]):
    name, sim = run
    attachments = sim.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert {a.name: a.inputs for a in attachments} == {
        **{
            name: {"policyArn": arn, "role": "gpu-eks-cluster-node-role"} for name, arn in NODE_ROLE_POLICY_ARNS.items()
        },
        # Observability (dev, variant): the CloudWatch agent's policy is on its own IRSA role, never
        # on the node role (a node role change must not touch the nodes).
        **(
            {
                "gpu-eks-observability-cloudwatch-policy": {
                    "policyArn": "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy",
                    "role": "gpu-eks-observability-cloudwatch-role",
                }
            }
            if name in ("dev", VARIANT)
            else {}
        ),
    }


# --- CoreDNS add-on and the Kubernetes provider -----------------------------------------------


def test_coredns_addon_inputs(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one("aws:eks/addon:Addon", "gpu-eks-cluster-coredns").inputs == {
        "addonName": "coredns",
        "clusterName": CLUSTER_NAME[name],
        "resolveConflictsOnCreate": "OVERWRITE",
        "resolveConflictsOnUpdate": "OVERWRITE",
        "tags": TAGS[name],
    }


def test_node_monitoring_agent_addon_inputs(run: tuple[str, Simulation]):
    """The agent's v1.7.0 add-on build on every stack's 1.35 (catalog.node_health), on the GPU groups'
    nodes only, its DCGM host engine tolerating every taint (cluster.node_monitoring)."""
    name, sim = run
    addon = sim.one("aws:eks/addon:Addon", "gpu-eks-cluster-node-monitoring-agent").inputs
    assert json.loads(addon.pop("configurationValues")) == {
        "dcgmAgent": {"tolerations": [{"operator": "Exists"}]},
        "nodeAgent": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "eks.amazonaws.com/compute-type",
                                        "operator": "NotIn",
                                        "values": ["fargate", "auto", "hybrid"],
                                    },
                                    {
                                        "key": "sagemaker.amazonaws.com/compute-type",
                                        "operator": "NotIn",
                                        "values": ["hyperpod"],
                                    },
                                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                                    {"key": "gpu-eks.io/node-group", "operator": "Exists"},
                                ]
                            }
                        ]
                    }
                }
            }
        },
    }
    assert addon == {
        "addonName": "eks-node-monitoring-agent",
        "addonVersion": "v1.7.0-eksbuild.1",
        "clusterName": CLUSTER_NAME[name],
        "resolveConflictsOnCreate": "OVERWRITE",
        "resolveConflictsOnUpdate": "OVERWRITE",
        "tags": TAGS[name],
    }


def test_kubernetes_provider_gets_the_clusters_kubeconfig_as_a_secret(run: tuple[str, Simulation]):
    name, sim = run
    provider = sim.one("pulumi:providers:kubernetes", "gpu-eks-cluster-k8s")
    assert set(provider.inputs) == {"kubeconfig"}
    kubeconfig = provider.inputs["kubeconfig"]
    assert kubeconfig[rpc._special_sig_key] == rpc._special_secret_sig
    doc = json.loads(kubeconfig["value"])
    # The fake cloud's kubeconfig for this cluster (tooling/simulation.py _fake_kubeconfig).
    assert doc["clusters"][0]["name"] == CLUSTER_NAME[name]
    assert doc["users"][0]["user"]["exec"]["args"] == ["eks", "get-token", "--cluster-name", CLUSTER_NAME[name]]
