"""Each stack, end to end: the real __main__.py under Pulumi mocks with the stack's config.

What each resource of dev, prod and a variant configuration receives is asserted, with literal
values, in tests/test_promises_*.py; this file covers config overrides and run-level behaviour.

pulumi-eks's Cluster and awsx's Vpc are remote components: under mocks their children are never
built, so these tests check what the program *sends* them, and everything this library builds
itself (launch templates, node groups, IAM, the Helm release, Kubernetes objects) in full.
"""

from __future__ import annotations

import pulumi
import pytest

from tests.support.paths import ROOT, STACKS
from tooling.simulation import run_stack

NG = "aws:eks/nodeGroup:NodeGroup"
JOB = "kubernetes:batch/v1:Job"


def test_both_stacks_exist():
    assert set(STACKS) >= {"dev", "prod"}


def test_public_endpoint_off_without_cidrs():
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:endpointPublicAccessCidrs": []})
    i = sim.one("eks:index:Cluster").inputs
    assert i["endpointPublicAccess"] is False and "publicAccessCidrs" not in i


def test_existing_vpc_is_used_as_is():
    sim = run_stack(
        "dev",
        ROOT,
        config_overrides={
            "gpu-eks:network": {"vpcId": "vpc-0a1b2c3d", "privateSubnetIds": ["subnet-0a0a0a0a", "subnet-0b0b0b0b"]}
        },
    )
    assert sim.by_type("awsx:ec2:Vpc") == []
    i = sim.one("eks:index:Cluster").inputs
    assert (i["vpcId"], i["privateSubnetIds"]) == ("vpc-0a1b2c3d", ["subnet-0a0a0a0a", "subnet-0b0b0b0b"])
    assert {tuple(ng.inputs["subnetIds"]) for ng in sim.by_type(NG)} == {("subnet-0a0a0a0a", "subnet-0b0b0b0b")}


def test_reference_kubernetes_version_132_works():
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:kubernetesVersion": "1.32"})
    assert sim.one("eks:index:Cluster").inputs["version"] == "1.32"


def test_verification_replicas_follow_the_instance_type():
    sim = run_stack(
        "dev",
        ROOT,
        config_overrides={
            "gpu-eks:gpuNodeGroups": [
                {"name": "big", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 3}},
            ]
        },
    )
    assert sim.one(JOB, "gpu-eks-verify-big-concurrent").inputs["spec"]["parallelism"] == 4 * 3
    assert sim.outputs["gpuNodeGroups"]["big"]["advertisedGpusPerNode"] == 12


@pytest.mark.parametrize("run", range(5))
def test_repeated_runs_are_identical(run):
    """Guards the resource-reference race: runs must neither hang nor differ."""
    a = run_stack("dev", ROOT)
    b = run_stack("dev", ROOT)
    assert [(r.urn, r.inputs) for r in a.resources] == [(r.urn, r.inputs) for r in b.resources]


def test_preflight_true_stops_the_program_on_a_failed_check():
    """`preflight: true` runs the account checks before any resource is declared; here the
    (moto) account publishes no EKS AMI parameters, so the AMI checks FAIL."""
    from moto import mock_aws

    # Fake credentials, no AWS_PROFILE or AWS_ENDPOINT_URL: conftest's autouse fixture.
    with mock_aws(), pytest.raises(pulumi.RunError) as info:
        run_stack("dev", ROOT, config_overrides={"gpu-eks:preflight": True})
    message = str(info.value)
    assert message.startswith("preflight failed:")
    assert "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id" in message
