"""Each preflight check against moto (in-process), with a passing and a failing case.

moto gaps, stubbed with botocore.stub.Stubber where a test needs a value (each stub says so):
  - service-quotas GetServiceQuota: moto knows only ServiceCode "vpc" and answers
    NoSuchResourceException for the EC2 G/VT vCPU quotas.
  - eks DescribeClusterVersions: moto answers 404 "Not yet implemented".
  - Error answers (AccessDenied, rejected credentials) that moto does not produce unasked.
The EKS AMI SSM parameters are not stubbed: they are seeded into moto's SSM backend (see
tests/support/preflight.py seed_public_parameter for why).
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
from typing import Any

import pytest
from botocore.stub import Stubber

from components import catalog
from components.check.loading import load_settings
from components.check.settings import Settings
from components.config.groups import GpuNodeGroupSettings, Scaling
from components.config.network import NetworkSettings
from components.preflight import (
    FAIL,
    PASS,
    WARN,
    AwsAccessError,
    CheckResult,
    PreflightFailed,
    check_ami,
    check_existing_vpc,
    check_instance_type,
    check_kubernetes_version,
    check_vcpu_quota,
    check_zones,
    enforce,
    run_checks,
)
from components.preflight.capacity import gpu_mismatches, vcpus_needed
from components.preflight.results import one_line
from tests.support.environment import TODAY  # 1.35: standard support until 2027-03-27, 126 days later
from tests.support.paths import ROOT
from tests.support.preflight import (
    GPU_AMI_ID,
    REGION,
    SESSION,
    SYSTEM_AMI_ID,
    VERSION,
    StubbedSession,
    client,
    cluster_version,
    create_vpc,
    eks_with_versions,
    quota_response,
    run_instance,
    seed_eks_amis,
)

GPU_PARAM = catalog.AMI_SSM_PARAMETER[catalog.GPU_AMI_TYPE].format(version=VERSION)


@pytest.fixture
def ec2(aws: None) -> Any:
    return client("ec2")


@pytest.fixture
def ssm(aws: None) -> Any:
    return client("ssm")


def _group(name: str, types: list[str], capacity: str = "ON_DEMAND", max_size: int = 2) -> GpuNodeGroupSettings:
    return GpuNodeGroupSettings(
        name=name,
        instance_types=types,
        capacity_type=capacity,  # type: ignore[arg-type]
        scaling=Scaling(min_size=0, desired_size=0, max_size=max_size),
    )


# ---------------------------------------------------------------------------------------------
# 1. AMI
# ---------------------------------------------------------------------------------------------


def test_the_arm64_nvidia_ami_is_looked_up_under_its_own_parameter(ssm: Any) -> None:
    seed_eks_amis(ami_types=[catalog.GPU_AMI_TYPE_ARM64])
    result = check_ami(ssm, VERSION, "AL2023_ARM_64_NVIDIA")
    assert (result.check, result.status, result.details["image_id"]) == (
        "ami:AL2023_ARM_64_NVIDIA",
        PASS,
        "ami-0a64a64a64a64a64a",
    )
    assert result.details["parameter"] == (
        f"/aws/service/eks/optimized-ami/{VERSION}/amazon-linux-2023/arm64/nvidia/recommended/image_id"
    )


def test_ami_passes_when_eks_publishes_the_parameter(ssm: Any) -> None:
    seed_eks_amis()
    gpu = check_ami(ssm, VERSION, catalog.GPU_AMI_TYPE)
    system = check_ami(ssm, VERSION, catalog.SYSTEM_AMI_TYPE)
    assert (gpu.check, gpu.status, gpu.details["image_id"]) == ("ami:AL2023_x86_64_NVIDIA", PASS, GPU_AMI_ID)
    assert gpu.reason == f"{GPU_AMI_ID} (SSM {GPU_PARAM})"
    assert (system.status, system.details["image_id"]) == (PASS, SYSTEM_AMI_ID)
    assert "/standard/recommended/image_id" in system.details["parameter"]


def test_ami_fails_when_the_parameter_is_missing(ssm: Any) -> None:
    seed_eks_amis(ami_types=[catalog.SYSTEM_AMI_TYPE])  # the GPU one is missing
    result = check_ami(ssm, VERSION, catalog.GPU_AMI_TYPE)
    assert result.status == FAIL
    assert result.reason == (
        f"EKS publishes no AL2023_x86_64_NVIDIA AMI for Kubernetes 1.35 in us-west-2: "
        f"SSM parameter {GPU_PARAM} does not exist"
    )
    assert check_ami(ssm, VERSION, catalog.SYSTEM_AMI_TYPE).status == PASS


def test_ami_for_another_version_does_not_count(ssm: Any) -> None:
    seed_eks_amis(version="1.34")
    assert check_ami(ssm, VERSION, catalog.GPU_AMI_TYPE).status == FAIL
    assert check_ami(ssm, "1.34", catalog.GPU_AMI_TYPE).status == PASS


def test_ami_access_denied_warns(ssm: Any) -> None:
    # Stubbed: moto does not enforce IAM here, so it never answers AccessDenied by itself.
    with Stubber(ssm) as stub:
        stub.add_client_error("get_parameter", "AccessDeniedException", "not allowed: ssm:GetParameter")
        result = check_ami(ssm, VERSION, catalog.GPU_AMI_TYPE)
    assert result.status == WARN
    assert result.reason == (
        "could not check: GetParameter answered AccessDeniedException: not allowed: ssm:GetParameter"
    )


def test_rejected_credentials_raise_instead_of_warning(ssm: Any) -> None:
    # Stubbed: moto accepts any access key, so it never rejects one.
    with Stubber(ssm) as stub:
        stub.add_client_error("get_parameter", "UnrecognizedClientException", "The security token is invalid")
        with pytest.raises(AwsAccessError, match="AWS rejected the credentials"):
            check_ami(ssm, VERSION, catalog.GPU_AMI_TYPE)


# ---------------------------------------------------------------------------------------------
# 2. Zones and instance types
# ---------------------------------------------------------------------------------------------


def test_zones_of_a_created_vpc_are_the_first_n_by_name(ec2: Any) -> None:
    result = check_zones(ec2, NetworkSettings(availability_zone_count=3))
    assert result.status == PASS
    assert result.details["zones"] == ["us-west-2a", "us-west-2b", "us-west-2c"]


def test_zones_fail_when_the_region_has_fewer_than_requested(ec2: Any) -> None:
    result = check_zones(ec2, NetworkSettings(availability_zone_count=6))
    assert result.status == FAIL
    assert result.reason.startswith(
        "us-west-2 has 4 zone(s) (us-west-2a, us-west-2b, us-west-2c, us-west-2d) but "
        "network.availabilityZoneCount is 6"
    )


def test_zones_of_an_existing_vpc_are_its_private_subnets_zones(ec2: Any) -> None:
    vpc_id, private, _ = create_vpc(ec2, ["us-west-2d", "us-west-2a"])
    result = check_zones(ec2, NetworkSettings(vpc_id=vpc_id, private_subnet_ids=private))
    assert (result.status, result.details["zones"]) == (PASS, ["us-west-2a", "us-west-2d"])


def test_zones_fail_when_no_private_subnet_exists(ec2: Any) -> None:
    network = NetworkSettings(vpc_id="vpc-0abc0abc", private_subnet_ids=["subnet-0aaa0aaa", "subnet-0bbb0bbb"])
    result = check_zones(ec2, network)
    assert (result.status, result.details["zones"]) == (FAIL, [])
    assert "subnet-0aaa0aaa, subnet-0bbb0bbb" in result.reason


def test_gpu_instance_type_passes_when_offered_everywhere(ec2: Any) -> None:
    spec = catalog.GPU_INSTANCE_TYPES["g4dn.12xlarge"]
    result = check_instance_type(ec2, "g4dn.12xlarge", ["us-west-2a", "us-west-2b"], spec)
    assert result.check == "instance-type:g4dn.12xlarge"
    assert result.status == PASS
    assert result.reason == "4x T4 with 16384 MiB, 48 vCPUs as the catalog says; offered in us-west-2a, us-west-2b"


def test_instance_type_fails_when_offered_in_none_of_the_zones(ec2: Any) -> None:
    # moto's offering data, like AWS's, has no g4dn in us-west-2d.
    result = check_instance_type(ec2, "g4dn.xlarge", ["us-west-2d"], catalog.GPU_INSTANCE_TYPES["g4dn.xlarge"])
    assert result.status == FAIL
    assert result.reason == "not offered in any of the node groups' zones (us-west-2d)"
    assert result.details["lacking_zones"] == ["us-west-2d"]


def test_instance_type_warns_naming_the_zones_lacking_it(ec2: Any) -> None:
    result = check_instance_type(
        ec2, "g4dn.xlarge", ["us-west-2a", "us-west-2d"], catalog.GPU_INSTANCE_TYPES["g4dn.xlarge"]
    )
    assert result.status == WARN
    assert result.reason.startswith("not offered in us-west-2d (offered in us-west-2a)")


def test_instance_type_fails_when_the_catalog_disagrees_with_ec2(ec2: Any) -> None:
    wrong = dataclasses.replace(catalog.GPU_INSTANCE_TYPES["g4dn.xlarge"], gpus=2, gpu_memory_mib_per_gpu=8192)
    result = check_instance_type(ec2, "g4dn.xlarge", ["us-west-2a"], wrong)
    assert result.status == FAIL
    table = "the library's table (components/catalog/instances.py GPU_INSTANCE_TYPES)"
    assert f"{table} is wrong for g4dn.xlarge" in result.reason
    assert result.details["mismatches"] == [
        "GPU count: catalog 2, EC2 1",
        "memory per GPU: catalog 8192 MiB, EC2 16384 MiB",
    ]


def test_every_catalog_row_matches_ec2(ec2: Any) -> None:
    for name, spec in catalog.GPU_INSTANCE_TYPES.items():
        info = ec2.describe_instance_types(InstanceTypes=[name])["InstanceTypes"][0]
        assert gpu_mismatches(spec, info) == [], name


def test_unknown_instance_type_fails(ec2: Any) -> None:
    result = check_instance_type(ec2, "g4dn.huge", ["us-west-2a"])
    assert (result.status, result.reason) == (FAIL, "g4dn.huge does not exist in us-west-2")


def test_instance_type_with_unknown_zones_warns(ec2: Any) -> None:
    result = check_instance_type(ec2, "m6i.large", None)
    assert result.status == WARN
    assert result.reason == "zones unknown (see the zones check), zone offerings not checked"


# ---------------------------------------------------------------------------------------------
# 3. vCPU quota
# ---------------------------------------------------------------------------------------------


def test_vcpus_needed_uses_max_size_times_the_largest_type() -> None:
    groups = [
        _group("a", ["g4dn.xlarge", "g4dn.2xlarge"], max_size=6),  # 6 x 8
        _group("b", ["g4dn.12xlarge"], max_size=1),  # 1 x 48
        _group("c", ["g4dn.xlarge"], "SPOT", max_size=3),  # 3 x 4
    ]
    assert vcpus_needed(groups, "ON_DEMAND") == 96
    assert vcpus_needed(groups, "SPOT") == 12


def _quotaclient(code: str, value: float) -> tuple[Any, Stubber]:
    # Stubbed: moto's service-quotas knows only ServiceCode "vpc" (NoSuchResourceException for ec2).
    quotas = client("service-quotas")
    stub = Stubber(quotas)
    stub.add_response("get_service_quota", quota_response(code, value), {"ServiceCode": "ec2", "QuotaCode": code})
    stub.activate()
    return quotas, stub


def test_on_demand_quota_passes_counting_running_g_instances(ec2: Any) -> None:
    run_instance(ec2, "g4dn.xlarge")  # 4 on-demand G vCPUs: counted
    run_instance(ec2, "m5.large", count=2)  # not G: not counted
    run_instance(ec2, "g4dn.2xlarge", spot=True)  # spot: not in the on-demand quota
    quotas, stub = _quotaclient("L-DB2E81BA", 64.0)
    result = check_vcpu_quota(quotas, ec2, "ON_DEMAND", [_group("t4", ["g4dn.xlarge", "g4dn.2xlarge"], max_size=6)])
    stub.assert_no_pending_responses()
    assert result.status == PASS
    assert result.reason == (
        "48 vCPUs at max size + 4 running = 52 of quota L-DB2E81BA (Running On-Demand G and VT instances) 64"
    )


def test_p_family_groups_do_not_count_against_the_g_quota(ec2: Any) -> None:
    """p4d/p5 count against EC2's P-instance quotas, not "Running On-Demand G and VT instances"."""
    quotas, stub = _quotaclient("L-DB2E81BA", 64.0)
    groups = [_group("t4", ["g4dn.2xlarge"], max_size=6), _group("h100", ["p5.48xlarge"], max_size=2)]
    result = check_vcpu_quota(quotas, ec2, "ON_DEMAND", groups)
    stub.assert_no_pending_responses()
    assert (
        result.reason
        == "48 vCPUs at max size + 0 running = 48 of quota L-DB2E81BA (Running On-Demand G and VT instances) 64"
    )


def test_the_catalog_disagreeing_on_architecture_is_reported(ec2: Any) -> None:
    wrong = dataclasses.replace(catalog.GPU_INSTANCE_TYPES["g4dn.xlarge"], family=catalog.FAMILIES["g5g"])
    info = ec2.describe_instance_types(InstanceTypes=["g4dn.xlarge"])["InstanceTypes"][0]
    assert gpu_mismatches(wrong, info) == ["architecture: catalog arm64, EC2 x86_64"]


def test_the_catalog_disagreeing_on_memory_and_gpu_model_is_reported(ec2: Any) -> None:
    info = ec2.describe_instance_types(InstanceTypes=["g5.xlarge"])["InstanceTypes"][0]
    assert (info["MemoryInfo"]["SizeInMiB"], info["GpuInfo"]["Gpus"][0]["Name"]) == (16384, "A10G")
    wrong = dataclasses.replace(catalog.GPU_INSTANCE_TYPES["g5.xlarge"], memory_mib=32768, gpu_model="L4")
    assert gpu_mismatches(wrong, info) == [
        "GPU model: catalog L4, EC2 A10G",
        "memory: catalog 32768 MiB, EC2 16384 MiB",
    ]
    no_gpu = {**info, "GpuInfo": {"Gpus": []}}
    assert gpu_mismatches(catalog.GPU_INSTANCE_TYPES["g5.xlarge"], no_gpu) == [
        "GPU count: catalog 1, EC2 0",
        "GPU model: catalog A10G, EC2 none",
        "memory per GPU: catalog 22888 MiB, EC2 none MiB",
    ]


def test_a_vgpu_slice_matches_ec2_reporting_zero_gpus(ec2: Any) -> None:
    info = ec2.describe_instance_types(InstanceTypes=["g6f.large"])["InstanceTypes"][0]
    assert info["GpuInfo"]["Gpus"][0]["Count"] == 0
    assert gpu_mismatches(catalog.GPU_INSTANCE_TYPES["g6f.large"], info) == []
    whole = dataclasses.replace(catalog.GPU_INSTANCE_TYPES["g6f.large"], gpu_fraction=None)
    assert gpu_mismatches(whole, info) == ["GPU count: catalog 1, EC2 0"]


def test_on_demand_quota_fails_when_running_instances_push_it_over(ec2: Any) -> None:
    run_instance(ec2, "g4dn.xlarge")
    quotas, _ = _quotaclient("L-DB2E81BA", 48.0)
    result = check_vcpu_quota(quotas, ec2, "ON_DEMAND", [_group("t4", ["g4dn.2xlarge"], max_size=6)])
    assert result.status == FAIL
    assert result.reason.startswith(
        "needs 48 vCPUs at max size (t4: 6 x 8) + 4 running = 52, over quota L-DB2E81BA "
        "(Running On-Demand G and VT instances) of 48"
    )
    assert (result.details["needed_vcpus"], result.details["running_vcpus"]) == (48, 4)


def test_spot_quota_fails_naming_the_spot_quota(ec2: Any) -> None:
    run_instance(ec2, "g4dn.2xlarge", spot=True)  # 8 spot vCPUs
    run_instance(ec2, "g4dn.12xlarge")  # on-demand: not in the spot quota
    quotas, _ = _quotaclient("L-3819A6DF", 8.0)
    result = check_vcpu_quota(quotas, ec2, "SPOT", [_group("t4", ["g4dn.xlarge"], "SPOT", max_size=1)])
    assert result.check == "vcpu-quota:SPOT"
    assert result.status == FAIL
    assert "4 vCPUs at max size (t4: 1 x 4) + 8 running = 12, over quota L-3819A6DF" in result.reason


def test_stopped_instances_do_not_count(ec2: Any) -> None:
    ec2.stop_instances(InstanceIds=run_instance(ec2, "g4dn.12xlarge"))
    quotas, _ = _quotaclient("L-DB2E81BA", 8.0)
    result = check_vcpu_quota(quotas, ec2, "ON_DEMAND", [_group("t4", ["g4dn.2xlarge"], max_size=1)])
    assert (result.status, result.details["running_vcpus"]) == (PASS, 0)


def test_quota_api_without_the_ec2_quota_warns(ec2: Any) -> None:
    # Not stubbed: this is moto's own answer for ServiceCode ec2.
    quotas = client("service-quotas")
    result = check_vcpu_quota(quotas, ec2, "ON_DEMAND", [_group("t4", ["g4dn.xlarge"])])
    assert result.status == WARN
    assert result.reason.startswith("could not check: GetServiceQuota answered NoSuchResourceException")
    assert result.details["needed_vcpus"] == 8


def test_quota_fails_when_the_groups_alone_exceed_it_even_if_instances_cannot_be_listed(aws: None) -> None:
    # Stubbed: an ec2:DescribeInstances denial, which moto does not produce by itself.
    ec2 = client("ec2")
    quotas, _ = _quotaclient("L-DB2E81BA", 0.0)
    with Stubber(ec2) as ec2_stub:
        ec2_stub.add_client_error("describe_instances", "UnauthorizedOperation", "not allowed")
        result = check_vcpu_quota(quotas, ec2, "ON_DEMAND", [_group("t4", ["g4dn.xlarge"], max_size=1)])
    assert result.status == FAIL
    assert result.reason.startswith("node groups need 4 vCPUs at max size (t4: 1 x 4) but quota L-DB2E81BA")


# ---------------------------------------------------------------------------------------------
# 4. Kubernetes version
# ---------------------------------------------------------------------------------------------


def test_version_in_standard_support_passes(aws: None) -> None:
    eks = eks_with_versions(cluster_version("1.34"), cluster_version("1.35"))
    result = check_kubernetes_version(eks, "1.35", TODAY)
    assert result.status == PASS
    assert result.reason == "EKS offers 1.35 in us-west-2, standard support until 2027-03-27"


def test_version_near_end_of_standard_support_warns(aws: None) -> None:
    eks = eks_with_versions(cluster_version("1.35"))
    result = check_kubernetes_version(eks, "1.35", dt.date(2027, 2, 1))
    assert result.status == WARN
    assert result.reason.startswith("Kubernetes 1.35 leaves EKS standard support on 2027-03-27 (in 54 days)")


def test_version_61_days_before_the_end_passes(aws: None) -> None:
    eks = eks_with_versions(cluster_version("1.35"))
    assert check_kubernetes_version(eks, "1.35", dt.date(2027, 1, 25)).status == PASS


def test_version_in_extended_support_warns(aws: None) -> None:
    eks = eks_with_versions(cluster_version("1.32", "EXTENDED_SUPPORT"), cluster_version("1.35"))
    result = check_kubernetes_version(eks, "1.32", TODAY)
    assert result.status == WARN
    assert result.reason.startswith("Kubernetes 1.32 is in EKS extended support until 2027-03-23")


def test_version_not_offered_fails_listing_the_offered_ones(aws: None) -> None:
    eks = eks_with_versions(cluster_version("1.30", "UNSUPPORTED"), cluster_version("1.33"), cluster_version("1.34"))
    result = check_kubernetes_version(eks, "1.35", TODAY)
    assert result.status == FAIL
    assert result.reason == "EKS does not offer Kubernetes 1.35 in us-west-2; expected one of 1.33, 1.34"


def test_unsupported_version_fails(aws: None) -> None:
    eks = eks_with_versions(cluster_version("1.30", "UNSUPPORTED"), cluster_version("1.35"))
    result = check_kubernetes_version(eks, "1.30", TODAY)
    assert (result.status, result.reason) == (
        FAIL,
        "EKS no longer supports Kubernetes 1.30 in us-west-2; expected one of 1.35",
    )


def test_version_api_missing_warns(aws: None) -> None:
    # Not stubbed: moto's own answer.
    result = check_kubernetes_version(client("eks"), "1.35", TODAY)
    assert result.status == WARN
    assert result.reason == "could not check: DescribeClusterVersions answered 404: Not yet implemented"


def test_version_api_missing_still_fails_a_version_past_extended_support(aws: None) -> None:
    # Not stubbed; the library's calendar makes the FAIL certain (1.30 extended support ended 2026-07-23).
    result = check_kubernetes_version(client("eks"), "1.30", TODAY)
    assert result.status == FAIL
    assert result.reason.startswith("Kubernetes 1.30 left EKS extended support on 2026-07-23")


@pytest.mark.parametrize(
    ("today", "status", "reason"),
    [
        (dt.date(2026, 11, 26), WARN, "could not check: DescribeClusterVersions answered 404: Not yet implemented"),
        (
            dt.date(2026, 11, 27),
            FAIL,
            "Kubernetes 1.31 left EKS extended support on 2026-11-26 (the library's calendar): EKS creates no new "
            "cluster at it (ml-new); pick a newer kubernetesVersion",
        ),
    ],
)
def test_a_new_cluster_fails_only_once_its_version_left_extended_support(
    aws: None, today: dt.date, status: str, reason: str
) -> None:
    # Not stubbed: moto answers DescribeClusterVersions with 404 and DescribeCluster with
    # ResourceNotFoundException; the calendar decides, on either side of 1.31's end (issue 42).
    result = check_kubernetes_version(client("eks"), "1.31", today, "ml-new")
    assert (result.status, result.reason) == (status, reason)


def test_an_existing_cluster_past_its_version_warns_what_it_runs(aws: None) -> None:
    """EKS upgraded it itself (to the oldest version in extended support): `pulumi up` with preflight must
    not fail it on a calendar day; the row says what it runs."""
    eks = client("eks")  # moto's CreateCluster (it checks neither the role nor the subnets)
    eks.create_cluster(
        name="ml", version="1.32", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": []}
    )
    result = check_kubernetes_version(eks, "1.31", dt.date(2026, 11, 27), "ml")
    assert (result.status, result.reason) == (
        WARN,
        "Kubernetes 1.31 left EKS extended support on 2026-11-26 (the library's calendar): cluster ml exists and "
        "runs 1.32 (EKS upgrades it itself, to the oldest version in extended support); set kubernetesVersion to "
        "1.32 and upgrade one minor version at a time",
    )
    # EKS's own answer (stubbed: moto has no DescribeClusterVersions) decides the same way.
    stub = Stubber(eks)
    versions = {
        "clusterVersions": [cluster_version("1.31", "UNSUPPORTED"), cluster_version("1.32", "EXTENDED_SUPPORT")]
    }
    stub.add_response("describe_cluster_versions", versions, {"clusterType": "eks", "includeAll": True})
    stub.add_response("describe_cluster", {"cluster": {"name": "ml", "version": "1.32"}}, {"name": "ml"})
    stub.add_response("describe_cluster_versions", versions, {"clusterType": "eks", "includeAll": True})
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", "No cluster found for name: ml-new.")
    with stub:
        existing = check_kubernetes_version(eks, "1.31", dt.date(2026, 11, 27), "ml")
        new = check_kubernetes_version(eks, "1.31", dt.date(2026, 11, 27), "ml-new")
    assert (existing.status, new.status) == (WARN, FAIL)
    assert existing.reason.startswith(
        "EKS no longer supports Kubernetes 1.31 in us-west-2: cluster ml exists and runs 1.32"
    )
    assert new.reason == (
        "EKS no longer supports Kubernetes 1.31 in us-west-2: EKS creates no new cluster at it (ml-new); expected one "
        "of 1.32"
    )


# ---------------------------------------------------------------------------------------------
# 5. Existing VPC
# ---------------------------------------------------------------------------------------------


def test_vpc_check_is_skipped_when_the_program_creates_the_vpc(ec2: Any) -> None:
    result = check_existing_vpc(ec2, NetworkSettings())
    assert (result.status, result.reason) == (PASS, "the program creates the VPC")


def test_existing_vpc_passes_with_two_zones_and_tags(ec2: Any) -> None:
    vpc_id, private, public = create_vpc(ec2, ["us-west-2a", "us-west-2b"], ["us-west-2a"])
    network = NetworkSettings(vpc_id=vpc_id, private_subnet_ids=private, public_subnet_ids=public)
    result = check_existing_vpc(ec2, network)
    assert result.status == PASS
    assert result.reason == f"3 subnet(s) in {vpc_id}, private ones in us-west-2a, us-west-2b, load-balancer tags set"


def test_existing_vpc_fails_on_one_zone_and_missing_tags(ec2: Any) -> None:
    vpc_id, private, public = create_vpc(
        ec2, ["us-west-2a", "us-west-2a"], ["us-west-2b"], tag_private=False, tag_public=False
    )
    network = NetworkSettings(vpc_id=vpc_id, private_subnet_ids=private, public_subnet_ids=public)
    result = check_existing_vpc(ec2, network)
    assert result.status == FAIL
    assert result.reason == (
        "private subnets span 1 zone(s) (us-west-2a); EKS needs at least 2; "
        f"without tag kubernetes.io/role/internal-elb=1: {private[0]}, {private[1]}; "
        f"without tag kubernetes.io/role/elb=1: {public[0]}"
    )


def test_existing_vpc_fails_on_missing_subnets_and_subnets_of_another_vpc(ec2: Any) -> None:
    vpc_id, private, _ = create_vpc(ec2, ["us-west-2a", "us-west-2b"])
    other_vpc, other_private, _ = create_vpc(ec2, ["us-west-2c"], cidr="10.50.0.0/16")
    network = NetworkSettings(vpc_id=vpc_id, private_subnet_ids=[private[0], "subnet-0000dead", other_private[0]])
    result = check_existing_vpc(ec2, network)
    assert result.status == FAIL
    assert "subnets not found in us-west-2: subnet-0000dead" in result.reason
    assert f"subnets outside {vpc_id}: {other_private[0]} is in {other_vpc}" in result.reason
    assert result.details["missing_subnets"] == ["subnet-0000dead"]


def _small_subnet(ec2: Any, vpc_id: str, cidr: str, zone: str, taken: int = 0, public: bool = False) -> str:
    """A /28 (moto: 16 - 5 reserved = 11 free) tagged for private (or public) load balancers,
    ``taken`` of its addresses used by an ENI."""
    key = "kubernetes.io/role/elb" if public else "kubernetes.io/role/internal-elb"
    subnet_id = ec2.create_subnet(
        VpcId=vpc_id,
        CidrBlock=cidr,
        AvailabilityZone=zone,
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [{"Key": key, "Value": "1"}]}],
    )["Subnet"]["SubnetId"]
    if taken:
        ec2.create_network_interface(SubnetId=subnet_id, SecondaryPrivateIpAddressCount=taken - 1)
    return subnet_id


def test_existing_vpc_fails_below_six_free_addresses_and_warns_below_sixteen(ec2: Any) -> None:
    vpc_id = ec2.create_vpc(CidrBlock="10.60.0.0/16")["Vpc"]["VpcId"]
    full = _small_subnet(ec2, vpc_id, "10.60.0.0/28", "us-west-2a", taken=6)  # 5 free
    tight = _small_subnet(ec2, vpc_id, "10.60.0.16/28", "us-west-2b")  # 11 free
    result = check_existing_vpc(ec2, NetworkSettings(vpc_id=vpc_id, private_subnet_ids=[full, tight]))
    assert result.status == FAIL
    # Every problem at once: the subnet under 16 is listed beside the FAIL.
    assert result.reason == (
        f"subnets with fewer than 6 free addresses (EKS needs 6 in each): {full} (5 free); subnets with fewer than "
        f"the 16 free addresses EKS recommends (nodes and pods take theirs in the private ones too): {tight} (11 free)"
    )
    assert result.details["free_addresses"] == {full: 5, tight: 11}

    six = _small_subnet(ec2, vpc_id, "10.60.0.32/28", "us-west-2a", taken=5)  # 6 free: enough
    result = check_existing_vpc(ec2, NetworkSettings(vpc_id=vpc_id, private_subnet_ids=[six, tight]))
    assert result.status == WARN
    assert result.reason == (
        "subnets with fewer than the 16 free addresses EKS recommends (nodes and pods take theirs in the private "
        f"ones too): {six} (6 free), {tight} (11 free)"
    )


def test_public_subnets_need_eks_free_addresses_too(ec2: Any) -> None:
    # components/cluster/component.py gives the EKS cluster the public subnets as well (as pulumi-eks
    # does without subnetIds): EKS may place its control-plane ENIs there.
    vpc_id, private, _ = create_vpc(ec2, ["us-west-2a", "us-west-2b"], cidr="10.62.0.0/16")
    full = _small_subnet(ec2, vpc_id, "10.62.9.0/28", "us-west-2a", taken=6, public=True)  # 5 free
    network = NetworkSettings(vpc_id=vpc_id, private_subnet_ids=private, public_subnet_ids=[full])
    result = check_existing_vpc(ec2, network)
    assert (result.status, result.reason) == (
        FAIL,
        f"subnets with fewer than 6 free addresses (EKS needs 6 in each): {full} (5 free)",
    )
    tight = _small_subnet(ec2, vpc_id, "10.62.9.16/28", "us-west-2b", public=True)  # 11 free
    network = NetworkSettings(vpc_id=vpc_id, private_subnet_ids=private, public_subnet_ids=[tight])
    result = check_existing_vpc(ec2, network)
    assert (result.status, result.reason) == (
        WARN,
        "subnets with fewer than the 16 free addresses EKS recommends (nodes and pods take theirs in the private "
        f"ones too): {tight} (11 free)",
    )


def test_private_subnets_that_cannot_hold_the_nodes_enis_warn(ec2: Any) -> None:
    vpc_id = ec2.create_vpc(CidrBlock="10.63.0.0/16")["Vpc"]["VpcId"]
    tags = [{"Key": "kubernetes.io/role/internal-elb", "Value": "1"}]
    subnets = [
        ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}],
        )["Subnet"]["SubnetId"]
        for cidr, zone in (("10.63.0.0/27", "us-west-2a"), ("10.63.0.32/27", "us-west-2b"))  # 27 free each
    ]
    network = NetworkSettings(vpc_id=vpc_id, private_subnet_ids=subnets)
    # 21 free each besides EKS's 6, 42 in all: nodes needing 42 in all and 21 in one of 2 zones fit.
    fits = {1: 42, 2: 21}
    result = check_existing_vpc(ec2, network, fits.__getitem__)
    assert (result.status, result.details["nodes_need_addresses"]) == (PASS, {"all": 42, "per_subnet": 21})
    # 43 in all and 22 in one do not.
    short = {1: 43, 2: 22}
    result = check_existing_vpc(ec2, network, short.__getitem__)
    assert (result.status, result.reason) == (
        WARN,
        "private subnets with 42 free addresses besides EKS's 6 each, fewer than the 43 the nodes' ENIs hold at the "
        "sizes the subnet rule counts; private subnets with fewer free addresses besides EKS's 6 than the 22 the "
        "nodes of one of 2 zones hold (ceil(nodes / zones) of every group; a node's ENIs use its own subnet): "
        f"{subnets[0]} (21), {subnets[1]} (21)",
    )


def test_existing_vpc_passes_at_sixteen_free_addresses(ec2: Any) -> None:
    vpc_id = ec2.create_vpc(CidrBlock="10.61.0.0/16")["Vpc"]["VpcId"]
    tags = [{"Key": "kubernetes.io/role/internal-elb", "Value": "1"}]
    subnets = []
    for cidr, zone in (("10.61.0.0/27", "us-west-2a"), ("10.61.0.32/27", "us-west-2b")):  # 27 free each
        subnet_id = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}],
        )["Subnet"]["SubnetId"]
        subnets.append(subnet_id)
    ec2.create_network_interface(SubnetId=subnets[0], SecondaryPrivateIpAddressCount=10)  # 11 taken: 16 free
    result = check_existing_vpc(ec2, NetworkSettings(vpc_id=vpc_id, private_subnet_ids=subnets))
    assert result.status == PASS
    assert result.details["free_addresses"] == {subnets[0]: 16, subnets[1]: 27}


# ---------------------------------------------------------------------------------------------
# All checks, enforce
# ---------------------------------------------------------------------------------------------


def _settings(**raw: Any) -> Settings:
    return load_settings({"clusterName": "gpu-eks-test", "kubernetesVersion": VERSION, **raw})


def _statuses(results: list[CheckResult]) -> dict[str, str]:
    return {r.check: r.status for r in results}


def test_run_checks_on_a_healthy_account_passes_everything(aws: None) -> None:
    seed_eks_amis()
    settings = _settings(
        gpuNodeGroups=[
            {"name": "od", "instanceTypes": ["g4dn.xlarge"], "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 2}},
            {
                "name": "spot",
                "instanceTypes": ["g4dn.12xlarge"],
                "capacityType": "SPOT",
                "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1},
            },
        ]
    )
    quotas = client("service-quotas")
    # Stubbed: moto has neither the EC2 quotas nor DescribeClusterVersions.
    with Stubber(quotas) as quota_stub:
        quota_stub.add_response("get_service_quota", quota_response("L-DB2E81BA", 8.0))
        quota_stub.add_response("get_service_quota", quota_response("L-3819A6DF", 48.0))
        session = StubbedSession(eks=eks_with_versions(cluster_version("1.35")), service_quotas=quotas)
        results = run_checks(settings, REGION, session=session, today=TODAY)  # type: ignore[arg-type]
    assert _statuses(results) == {
        "ami:AL2023_x86_64_NVIDIA": PASS,
        "ami:AL2023_x86_64_STANDARD": PASS,
        "kubernetes-version": PASS,
        "vpc": PASS,
        "zones": PASS,
        "instance-type:g4dn.xlarge": PASS,
        "instance-type:g4dn.12xlarge": PASS,
        "instance-type:m6i.large": PASS,
        "vcpu-quota:ON_DEMAND": PASS,
        "vcpu-quota:SPOT": PASS,
    }
    by_check = {r.check: r for r in results}
    assert by_check["vcpu-quota:ON_DEMAND"].details["needed_vcpus"] == 8
    assert by_check["vcpu-quota:SPOT"].details["needed_vcpus"] == 48
    assert by_check["zones"].details["zones"] == ["us-west-2a", "us-west-2b"]


def test_run_checks_with_an_existing_vpc_checks_offerings_in_its_zones(aws: None) -> None:
    seed_eks_amis()
    vpc_id, private, _ = create_vpc(client("ec2"), ["us-west-2c", "us-west-2d"])
    settings = _settings(network={"vpcId": vpc_id, "privateSubnetIds": private})
    results = {r.check: r for r in run_checks(settings, REGION, session=SESSION, today=TODAY)}
    assert results["vpc"].status == PASS
    # The settings' count (tests/test_settings_rules.py): the default groups at maxSize hold 110
    # addresses, 70 in one of 2 zones; create_vpc's /24 subnets have 251 free.
    assert results["vpc"].details["nodes_need_addresses"] == {"all": 110, "per_subnet": 70}
    assert results["zones"].details["zones"] == ["us-west-2c", "us-west-2d"]
    assert results["instance-type:g4dn.xlarge"].status == WARN
    assert results["instance-type:g4dn.xlarge"].details["lacking_zones"] == ["us-west-2d"]
    assert results["instance-type:m6i.large"].status == PASS


def test_enforce_raises_with_one_line_per_failure(aws: None) -> None:
    # Nothing seeded: both AMIs are missing; quota and version WARN (moto lacks them) and pass through.
    with pytest.raises(PreflightFailed) as excinfo:
        enforce(_settings(), REGION, session=SESSION, today=TODAY)
    lines = str(excinfo.value).splitlines()
    assert [line.split(":")[0] + ":" + line.split(":")[1] for line in lines] == [
        "ami:AL2023_x86_64_NVIDIA",
        "ami:AL2023_x86_64_STANDARD",
    ]
    assert lines[0].startswith("ami:AL2023_x86_64_NVIDIA: EKS publishes no AL2023_x86_64_NVIDIA AMI")
    assert {r.check: r.status for r in excinfo.value.results}["kubernetes-version"] == WARN
    assert len(excinfo.value.failures) == 2


def test_enforce_returns_results_when_only_warnings(aws: None) -> None:
    seed_eks_amis()
    results = enforce(_settings(), REGION, session=SESSION, today=TODAY)
    assert _statuses(results)["vcpu-quota:ON_DEMAND"] == WARN
    assert _statuses(results)["kubernetes-version"] == WARN
    assert FAIL not in _statuses(results).values()


def test_check_result_is_frozen_and_serialisable() -> None:
    result = CheckResult("vpc", PASS, "the program creates the VPC", {"skipped": True})
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = FAIL  # type: ignore[misc]
    assert result.to_dict() == {
        "check": "vpc",
        "status": "PASS",
        "reason": "the program creates the VPC",
        "details": {"skipped": True},
    }
    assert hash(result) == hash(CheckResult("vpc", PASS, "the program creates the VPC"))


def test_error_text_becomes_one_line() -> None:
    page = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>Gone</p>\n"
    assert one_line(page) == "404 Not Found"
    assert one_line("denied\n  by   an SCP") == "denied by an SCP"
    assert one_line("x" * 300, limit=20) == "x" * 17 + "..."


def test_run_checks_only_reads(aws: None) -> None:
    """Every AWS call preflight makes is a Describe/Get/List call (what docs/preflight.md lists)."""
    seed_eks_amis()
    vpc_id, private, public = create_vpc(client("ec2"), ["us-west-2a", "us-west-2b"], ["us-west-2a"])
    run_instance(client("ec2"), "g4dn.xlarge", spot=True)
    settings = _settings(
        network={"vpcId": vpc_id, "privateSubnetIds": private, "publicSubnetIds": public},
        gpuNodeGroups=[
            {"name": "od", "instanceTypes": ["g4dn.xlarge"]},
            {"name": "spot", "instanceTypes": ["g4dn.xlarge"], "capacityType": "SPOT"},
        ],
    )
    calls: list[str] = []

    def record(event_name: str, **_: Any) -> None:
        calls.append(event_name.removeprefix("before-call."))

    SESSION.events.register("before-call", record)
    try:
        run_checks(settings, REGION, session=SESSION, today=TODAY)
    finally:
        SESSION.events.unregister("before-call", record)
    assert sorted(set(calls)) == [
        "ec2.DescribeInstanceTypeOfferings",
        "ec2.DescribeInstanceTypes",
        "ec2.DescribeInstances",
        "ec2.DescribeSubnets",
        "eks.DescribeClusterVersions",
        "service-quotas.GetServiceQuota",
        "ssm.GetParameter",
    ]


def test_preflight_package_has_no_pulumi_import() -> None:
    package = ROOT / "components" / "preflight"
    imported: dict[str, list[str]] = {}
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.setdefault(path.name, []).extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.setdefault(path.name, []).append(node.module)
    assert {"__init__.py", "checks.py", "cli.py"} <= set(imported)
    assert [(f, m) for f, mods in imported.items() for m in mods if m.split(".")[0] == "pulumi"] == []
