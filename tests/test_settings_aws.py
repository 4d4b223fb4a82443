"""AWS and EKS rules the library knows before deploying (issue 7, sections 2-4).

Each test names the upstream source of its rule. The suite's date is fixed (tests/support/environment.py TODAY,
2026-11-21) unless a test says otherwise.
"""

from __future__ import annotations

import datetime as dt
import gzip
import importlib.resources
import itertools
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components import catalog
from components.blocks.iam import access_entry_keys
from components.check.loading import eks_regions, load_settings, provider_config_keys, settings_from_config
from components.check.settings import Settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError
from components.config.fields import LIBRARY_TAG_ALLOWANCE, MAX_TAGS_PER_RESOURCE, MAX_USER_TAGS
from components.config.names import SYSTEM_SIDE_CHILDREN
from components.config.network import created_subnet_netmask
from tests.support.paths import ROOT
from tests.support.simulation import settings_for_stack
from tooling.simulation import run_stack


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "test", **raw})
    return [str(p) for p in info.value.problems]


def warnings(raw: dict[str, Any]) -> list[str]:
    return [str(w) for w in settings_warnings(load_settings({"clusterName": "test", **raw}))]


def config_problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        settings_from_config(config, "gpu-eks", "dev")
    return [str(p) for p in info.value.problems]


# ---------------------------------------------------------------------------------------------
# Tags. botocore eks 2017-11-01 TagMap (max 50), TagKey (1-128), TagValue (max 256); botocore iam
# 2010-05-08 tagKeyType/tagValueType (pattern [\p{L}\p{Z}\p{N}_.:/=+\-@]); AWS General Reference,
# "Tagging AWS resources": the aws: prefix is reserved.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["aws:cost-center", "AWS:team"])
def test_tag_keys_with_the_reserved_aws_prefix_are_rejected(key):
    assert problems({"tags": {key: "x"}}) == [
        f"gpu-eks:tags.{key}: received \"{key}\"; expected no tag key starting with 'aws:' (reserved for AWS)"
    ]


def test_tag_key_and_value_lengths():
    assert problems({"tags": {"k" * 129: "v", "ok": "v" * 257}}) == [
        f'gpu-eks:tags.{"k" * 129}: received "{"k" * 129}"; expected tag keys of at most 128 characters (got 129)',
        f'gpu-eks:tags.ok: received "{"v" * 257}"; expected tag values of at most 256 characters (got 257)',
    ]
    assert load_settings({"clusterName": "c", "tags": {"k" * 128: "v" * 256}}).tags == {"k" * 128: "v" * 256}


def test_tag_characters_follow_the_iam_rule():
    (line,) = problems({"tags": {"team": "ml;prod"}})
    assert line.startswith('gpu-eks:tags.team: received "ml;prod"; expected tag values of letters, digits')
    (line,) = problems({"tags": {"team#1": "x"}})
    assert line.startswith('gpu-eks:tags.team#1: received "team#1"; expected tag keys of letters')
    # Unicode letters, spaces and the IAM punctuation are fine.
    ok = {"équipe": "données ML", "a_b.c:d/e=f+g-h@i": "x y"}
    assert load_settings({"clusterName": "c", "tags": ok}).tags == ok


def test_at_most_40_user_tags_leaving_10_for_the_library():
    assert (MAX_TAGS_PER_RESOURCE, LIBRARY_TAG_ALLOWANCE, MAX_USER_TAGS) == (50, 10, 40)
    forty = {f"t{i}": "x" for i in range(40)}
    assert len(load_settings({"clusterName": "c", "tags": forty}).tags) == 40
    (line,) = problems({"tags": {**forty, "t40": "x"}})
    assert line.startswith("gpu-eks:tags: received {")
    assert line.endswith(
        "expected at most 40 tags (got 41): AWS allows 50 per resource and the library adds up to 10 of its own"
    )


def test_the_library_adds_no_more_tags_than_it_reserves(prod):
    """Counts what the program really sends: every tags map of every resource in the prod run."""
    user = len(load_settings({"clusterName": "c", "tags": {"environment": "prod"}}).tags)
    most = 0
    for r in prod.resources:
        for key in ("tags",):
            if isinstance(r.inputs.get(key), dict):
                most = max(most, len(r.inputs[key]))
        for spec in r.inputs.get("tagSpecifications") or []:
            most = max(most, len(spec.get("tags") or {}))
    assert 0 < most - user <= LIBRARY_TAG_ALLOWANCE


# ---------------------------------------------------------------------------------------------
# Network. Amazon VPC User Guide, "VPC CIDR blocks": /16 to /28; subnets no smaller than /28.
# pulumi-awsx 3.x awsx/ec2/subnetDistributorNew.ts getSubnetSpecs: per zone ceil(log2(zones)) bits,
# then newBits(2 specs) = 1 bit for the private + public pair.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cidr", "netmask"), [("10.0.0.0/8", 8), ("10.0.0.0/15", 15), ("10.0.0.0/29", 29)])
def test_vpc_netmask_must_be_16_to_28(cidr, netmask):
    assert problems({"network": {"cidrBlock": cidr}}) == [
        f'gpu-eks:network.cidrBlock: received "{cidr}"; expected a netmask from /16 to /28 (the VPC limits)'
    ]


@pytest.mark.parametrize(
    ("zones", "largest_ok"),
    # Computed by hand from awsx's rule: subnet = vpc + ceil(log2(zones)) + 1 <= 28.
    [(2, 26), (3, 25), (4, 25), (5, 24), (6, 24)],
)
def test_vpc_must_hold_the_subnets_awsx_carves(zones, largest_ok):
    ok = f"10.0.0.0/{largest_ok}"
    # Carved fine, but too small for the default groups' pod addresses (tests/test_settings_rules.py).
    (line,) = problems({"network": {"cidrBlock": ok, "availabilityZoneCount": zones}})
    assert line.startswith(
        f'gpu-eks:network.cidrBlock: received "{ok}"; expected a larger block: each of its {zones} private'
    )
    small = f"10.0.0.0/{largest_ok + 1}"
    (line,) = problems({"network": {"cidrBlock": small, "availabilityZoneCount": zones}})
    assert line.startswith(f'gpu-eks:network.cidrBlock: received "{small}"; expected a netmask of /{largest_ok} or')
    assert "would be /29, smaller than the /28 AWS allows" in line


def test_subnets_of_the_prod_vpc_are_the_ones_computed():
    # prod: 10.20.0.0/16 over 3 zones -> /18 per zone -> /19 subnets (awsx's layout).
    assert created_subnet_netmask(16, 3) == 19
    assert created_subnet_netmask(16, 2) == 18


@pytest.mark.parametrize("value", ["203.0.113.7", "10.0.0.0"])
def test_endpoint_cidrs_are_cidr_blocks_not_addresses(value):
    # botocore eks VpcConfigRequest.publicAccessCidrs: "The CIDR blocks that are allowed access".
    assert problems({"endpointPublicAccessCidrs": [value]}) == [
        f'gpu-eks:endpointPublicAccessCidrs[0]: received "{value}"; expected a CIDR block such as '
        f"203.0.113.0/24 (a bare address: write {value}/32)"
    ]


def test_endpoint_cidrs_are_ipv4():
    # botocore eks VpcConfigRequest.publicAccessCidrs: "You can't add IPv6 CIDR blocks to IPv4 clusters".
    (line,) = problems({"endpointPublicAccessCidrs": ["2001:db8::/32"]})
    assert line.endswith("expected an IPv4 CIDR block such as 203.0.113.0/24 (the cluster is IPv4)")


def test_endpoint_open_to_the_internet_is_a_warning():
    # Legal: botocore eks VpcConfigRequest.publicAccessCidrs "The default value is 0.0.0.0/0".
    (line,) = warnings({"endpointPublicAccessCidrs": ["203.0.113.0/24", "0.0.0.0/0"]})
    assert line.startswith(
        'gpu-eks:endpointPublicAccessCidrs[1]: received "0.0.0.0/0"; expected your egress CIDRs: 0.0.0.0/0 '
        "opens the cluster's API endpoint to the whole internet"
    )
    assert warnings({"endpointPublicAccessCidrs": ["203.0.113.0/24"]}) == []


EXISTING = {"vpcId": "vpc-0a1b2c3d", "privateSubnetIds": ["subnet-0a0a0a0a", "subnet-0b0b0b0b"]}


@pytest.mark.parametrize(
    ("key", "value"),
    [("cidrBlock", "10.0.0.0/16"), ("natGateways", "Single"), ("availabilityZoneCount", 2)],
)
def test_created_vpc_settings_with_an_existing_vpc_are_errors(key, value):
    # Set explicitly, even to the default: with vpcId the setting would be silently ignored.
    assert problems({"network": {**EXISTING, key: value}}) == [
        f"gpu-eks:network.{key}: received {json.dumps(value)}; expected no value with vpcId: it applies only to "
        "a VPC the library creates"
    ]


def test_duplicate_subnet_ids_are_errors():
    # EKS CreateCluster resourcesVpcConfig.subnetIds: each subnet once; a subnet is private or public.
    network = {**EXISTING, "privateSubnetIds": ["subnet-0a0a0a0a", "subnet-0a0a0a0a", "subnet-0b0b0b0b"]}
    network["publicSubnetIds"] = ["subnet-0b0b0b0b"]
    assert problems({"network": network}) == [
        'gpu-eks:network.privateSubnetIds[1]: received "subnet-0a0a0a0a"; expected each subnet once (already '
        "listed as privateSubnetIds[0])",
        'gpu-eks:network.publicSubnetIds[0]: received "subnet-0b0b0b0b"; expected each subnet once (already '
        "listed as privateSubnetIds[2])",
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [("vpcId", "vpc-123"), ("vpcId", "subnet-0a0a0a0a"), ("privateSubnetIds", ["subnet-a", "subnet-0b0b0b0b"])],
)
def test_vpc_and_subnet_ids_have_ec2_syntax(key, value):
    # EC2 API reference, "Resource IDs": a prefix and 8 or 17 hexadecimal characters.
    lines = problems({"network": {**EXISTING, key: value}})
    assert len(lines) == 1 and "expected an id such as" in lines[0]
    assert lines[0].startswith(f"gpu-eks:network.{key}")


def test_long_ec2_ids_are_accepted():
    s = load_settings(
        {
            "clusterName": "c",
            "network": {
                "vpcId": "vpc-0123456789abcdef0",
                "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0a0a0a0a"],
            },
        }
    )
    assert s.network.vpc_id == "vpc-0123456789abcdef0"


# ---------------------------------------------------------------------------------------------
# Access entries. botocore eks 2017-11-01 CreateAccessEntryRequest.principalArn: "You can't use the
# STS session principal type with access entries"; IAM ARNs arn:<partition>:iam::<account>:role|user/.
# ---------------------------------------------------------------------------------------------


def test_assumed_role_session_arns_are_refused():
    arn = "arn:aws:sts::123456789012:assumed-role/Admin/jane"
    assert problems({"adminPrincipalArns": [arn]}) == [
        f'gpu-eks:adminPrincipalArns[0]: received "{arn}"; expected an IAM role or user ARN; EKS access entries '
        "refuse STS assumed-role session ARNs: use the role's ARN, arn:aws:iam::<account>:role/<name>"
    ]


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::123456789012:role/Admin",
        "arn:aws:iam::123456789012:user/jane",
        "arn:aws:iam::123456789012:role/platform/Admin",
        "arn:aws-us-gov:iam::123456789012:role/Admin",
        "arn:aws-cn:iam::123456789012:role/Admin",
    ],
)
def test_role_and_user_arns_are_accepted(arn):
    assert load_settings({"clusterName": "c", "adminPrincipalArns": [arn]}).admin_principal_arns == [arn]


@pytest.mark.parametrize(
    "arn", ["arn:aws:iam::123456789012:group/Admins", "arn:aws:iam::12345:role/Admin", "arn:aws:s3:::bucket"]
)
def test_other_arns_are_refused(arn):
    (line,) = problems({"adminPrincipalArns": [arn]})
    assert line.endswith("expected an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin")


def test_the_same_arn_twice_is_an_error():
    arn = "arn:aws:iam::123456789012:role/Admin"
    (line,) = problems({"adminPrincipalArns": [arn, arn]})
    assert (
        line == f'gpu-eks:adminPrincipalArns: received ["{arn}", "{arn}"]; expected each value once (repeated: "{arn}")'
    )


def test_access_entry_keys_stay_unchanged_without_a_collision():
    # The keys name pulumi-eks AccessEntry resources: earlier releases used role-<name>.
    arns = ["arn:aws:iam::111111111111:role/Admin", "arn:aws:iam::111111111111:user/jane"]
    assert access_entry_keys(arns) == {arns[0]: "role-Admin", arns[1]: "user-jane"}


def test_same_role_name_in_two_accounts_is_two_principals():
    a, b = "arn:aws:iam::111111111111:role/Admin", "arn:aws:iam::222222222222:role/Admin"
    other = "arn:aws:iam::111111111111:role/Ops"
    assert access_entry_keys([a, other, b]) == {
        a: "role-Admin",  # listed first: keeps the key (and the resource) it had before b was added
        other: "role-Ops",
        b: "222222222222-role-Admin",
    }
    assert access_entry_keys([b, a]) == {b: "role-Admin", a: "111111111111-role-Admin"}


def test_appending_a_principal_never_renames_an_existing_entry():
    # EKS keeps one access entry per principal (botocore eks CreateAccessEntryRequest.principalArn),
    # so a renamed entry would fail to create while the old one still exists.
    before = ["arn:aws:iam::111111111111:role/Admin", "arn:aws:iam::111111111111:user/jane"]
    added = [*before, "arn:aws:iam::222222222222:role/Admin", "arn:aws:iam::333333333333:user/jane"]
    old, new = access_entry_keys(before), access_entry_keys(added)
    assert {arn: new[arn] for arn in before} == old == {before[0]: "role-Admin", before[1]: "user-jane"}
    assert len(set(new.values())) == 4


def test_paths_that_flatten_alike_get_a_hash():
    a, b = "arn:aws:iam::111111111111:role/a-b/C", "arn:aws:iam::111111111111:role/a/b-C"
    c = "arn:aws:iam::111111111111:role/a/b/C"
    keys = access_entry_keys([a, b, c])
    assert keys[a] == "role-a-b-C" and keys[b] == "111111111111-role-a-b-C"
    assert keys[c].startswith("111111111111-role-a-b-C-") and len(keys[c]) == len("111111111111-role-a-b-C-") + 8


def test_two_accounts_get_two_access_entries_in_the_program():
    a, b = "arn:aws:iam::111111111111:role/Admin", "arn:aws:iam::222222222222:role/Admin"
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:adminPrincipalArns": [a, b]})
    entries = sim.one("eks:index:Cluster").inputs["accessEntries"]
    assert {k: v["principalArn"] for k, v in entries.items()} == {"role-Admin": a, "222222222222-role-Admin": b}


# ---------------------------------------------------------------------------------------------
# Instance types and AMI types. botocore eks AMITypes (AL2023_ARM_64_STANDARD); EC2 User Guide,
# "Amazon EC2 instance type naming conventions" (g = Graviton); the rule is checked below against
# every type in moto's copy of ec2:DescribeInstanceTypes.
# ---------------------------------------------------------------------------------------------


def _moto_instance_types() -> dict[str, Any]:
    data = importlib.resources.files("moto.ec2") / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(data.read_bytes()))


def test_architecture_rule_matches_describe_instance_types():
    types = _moto_instance_types()
    assert len(types) > 1000
    wrong = {
        name: info["ProcessorInfo"]["SupportedArchitectures"]
        for name, info in types.items()
        if catalog.instance_architecture(name)
        != ("arm64" if "arm64" in info["ProcessorInfo"]["SupportedArchitectures"] else "x86_64")
    }
    assert wrong == {}
    assert [catalog.instance_architecture(t) for t in ("m7g.large", "t4g.small", "c6gn.xlarge", "m6i.large")] == [
        "arm64",
        "arm64",
        "arm64",
        "x86_64",
    ]


def test_every_accelerated_type_is_caught():
    types = _moto_instance_types()
    accelerated = {n for n, i in types.items() if {"GpuInfo", "InferenceAcceleratorInfo", "NeuronInfo"} & set(i)}
    assert accelerated and all(catalog.is_accelerated(n) for n in accelerated)
    # Nothing general-purpose is caught, except Trainium types moto lists without NeuronInfo.
    extra = {n.split(".")[0] for n in types if catalog.is_accelerated(n) and n not in accelerated}
    assert extra <= {"trn2u"}


def test_a_graviton_system_group_gets_the_arm64_ami():
    s = load_settings({"clusterName": "c", "systemNodeGroup": {"instanceTypes": ["m7g.large", "c7g.large"]}})
    assert s.system_node_group.ami_type == "AL2023_ARM_64_STANDARD"
    assert load_settings({"clusterName": "c"}).system_node_group.ami_type == "AL2023_x86_64_STANDARD"
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:systemNodeGroup": {"instanceTypes": ["m7g.large"]}})
    ami_types = {ng.name: ng.inputs["amiType"] for ng in sim.by_type("aws:eks/nodeGroup:NodeGroup")}
    assert ami_types == {"gpu-eks-cluster-system": "AL2023_ARM_64_STANDARD", "gpu-eks-t4": "AL2023_x86_64_NVIDIA"}


def test_a_system_group_mixing_architectures_is_an_error():
    (line,) = problems({"systemNodeGroup": {"instanceTypes": ["m7g.large", "m6i.large"]}})
    assert line == (
        'gpu-eks:systemNodeGroup.instanceTypes: received ["m7g.large", "m6i.large"]; expected instance types of one '
        "CPU architecture, since a node group has one AMI (got m7g.large=arm64, m6i.large=x86_64)"
    )


@pytest.mark.parametrize(
    "instance_type", ["g4dn.xlarge", "p4d.24xlarge", "inf2.xlarge", "trn1.2xlarge", "dl1.24xlarge"]
)
def test_accelerated_types_in_the_system_group_are_errors(instance_type):
    (line,) = problems({"systemNodeGroup": {"instanceTypes": [instance_type]}})
    assert line.startswith(
        f'gpu-eks:systemNodeGroup.instanceTypes[0]: received "{instance_type}"; '
        "expected a general-purpose instance type"
    )


def test_duplicate_instance_types_are_errors():
    assert problems(
        {
            "systemNodeGroup": {"instanceTypes": ["m6i.large", "m6i.large"]},
            "gpuNodeGroups": [{"name": "gpu", "instanceTypes": ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.xlarge"]}],
        }
    ) == [
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.xlarge"]; expected '
        'each value once (repeated: "g4dn.xlarge")',
        'gpu-eks:systemNodeGroup.instanceTypes: received ["m6i.large", "m6i.large"]; expected each value once '
        '(repeated: "m6i.large")',
    ]


# ---------------------------------------------------------------------------------------------
# AMI release versions. EKS user guide, "Amazon EKS optimized Amazon Linux AMI versions" and botocore
# eks CreateNodegroupRequest.releaseVersion: <kubernetes x.y.z>-<yyyymmdd> of the group's version.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["20260115", "1.35-20260115", "v1.35.0-20260115", "1.35.0"])
def test_ami_release_version_syntax(release):
    (line,) = problems({"gpuNodeGroups": [{"name": "gpu", "amiReleaseVersion": release}]})
    assert line == (
        f'gpu-eks:gpuNodeGroups[0].amiReleaseVersion: received "{release}"; expected an EKS AMI release version '
        "such as 1.35.0-20260115 (<kubernetes x.y.z>-<yyyymmdd>)"
    )


def test_ami_release_version_must_match_the_cluster_minor():
    lines = problems(
        {
            "kubernetesVersion": "1.35",
            "systemNodeGroup": {"amiReleaseVersion": "1.34.2-20260115"},
            "gpuNodeGroups": [{"name": "gpu", "amiReleaseVersion": "1.35.0-20260115"}],
        }
    )
    assert lines == [
        'gpu-eks:systemNodeGroup.amiReleaseVersion: received "1.34.2-20260115"; expected an AMI release of '
        "Kubernetes 1.35 (1.35.x-yyyymmdd): EKS refuses a node group AMI of another minor than the cluster's"
    ]


# ---------------------------------------------------------------------------------------------
# Kubernetes versions. EKS user guide, "Understand the Kubernetes version lifecycle on EKS" (14
# months standard, 12 months extended support; clusters past extended support are upgraded by EKS
# and no longer created); EKS pricing: $0.10 vs $0.60 per cluster-hour.
# ---------------------------------------------------------------------------------------------


def test_136_is_known_with_its_calendar():
    v = catalog.KUBERNETES_VERSIONS["1.36"]
    assert (v.released, v.end_of_standard_support, v.end_of_extended_support) == (
        dt.date(2026, 6, 2),
        dt.date(2027, 8, 2),
        dt.date(2028, 8, 2),
    )
    assert load_settings({"clusterName": "c", "kubernetesVersion": "1.36"}).kubernetes_version == "1.36"
    assert warnings({"kubernetesVersion": "1.36"}) == []


PAST_131 = (
    'gpu-eks:kubernetesVersion: received "1.31"; expected a version EKS supports: 1.31 left EKS extended support '
    "on 2026-11-26; EKS creates no cluster at it and upgrades an existing one itself to 1.32, the oldest version in "
    "extended support, still billed $0.60 per cluster-hour instead of $0.10 (about $365 a month more). Upgrade one "
    "minor version at a time (each an EKS cluster update, then the nodes): 1.32 -> 1.33 -> 1.34 (standard support "
    "until 2026-12-02)"
)
#: (No Cluster Autoscaler release exists for 1.30 or 1.31 in the reference table: it is switched off.)
NO_CA = {"autoscaler": {"enabled": False}}


def test_a_version_past_extended_support_is_a_warning_not_an_error():
    """A date never turns a stack that rendered into an error (issue 42): 1.30 left extended support on
    2026-07-23, before the suite's date; preflight fails a new cluster at it (test_preflight_checks)."""
    assert load_settings({"clusterName": "c", "kubernetesVersion": "1.30", **NO_CA}).kubernetes_version == "1.30"
    (line,) = [w for w in warnings({"kubernetesVersion": "1.30", **NO_CA}) if "kubernetesVersion" in w]
    assert line.startswith(
        'gpu-eks:kubernetesVersion: received "1.30"; expected a version EKS supports: 1.30 left EKS extended support '
        "on 2026-07-23; EKS creates no cluster at it and upgrades an existing one itself to 1.31, the oldest version "
        "in extended support"
    )
    assert line.endswith("1.31 -> 1.32 -> 1.33 -> 1.34 (standard support until 2026-12-02)")
    # A version the calendar does not hold is still an error: the library knows nothing of it.
    (line,) = problems({"kubernetesVersion": "1.29"})
    assert "1.29 has left EKS extended support" in line


def test_the_date_decides_the_warning_never_an_error(monkeypatch):
    """1.31's extended support ended 2026-11-26 (catalog: the EKS calendar): the day before and the day
    after, the same stack loads; only the warning changes, from the cost to the end and the upgrade path."""
    raw = {"clusterName": "c", "kubernetesVersion": "1.31", **NO_CA}
    monkeypatch.setattr(catalog, "today", lambda: dt.date(2026, 11, 26))
    assert [w for w in warnings(raw) if "kubernetesVersion" in w] == [
        'gpu-eks:kubernetesVersion: received "1.31"; expected a version in standard support: 1.31 is in EKS '
        "extended support until 2026-11-26, billed $0.60 per cluster-hour instead of $0.10 ($0.50/h, about $365 a "
        "month more); after that date EKS upgrades the control plane itself"
    ]
    monkeypatch.setattr(catalog, "today", lambda: dt.date(2026, 11, 27))
    assert load_settings(raw).kubernetes_version == "1.31"
    assert [w for w in warnings(raw) if "kubernetesVersion" in w] == [PAST_131]


def test_a_version_in_extended_support_is_a_warning_with_date_and_cost():
    assert warnings({"kubernetesVersion": "1.32"}) == [
        'gpu-eks:kubernetesVersion: received "1.32"; expected a version in standard support: 1.32 is in EKS '
        "extended support until 2027-03-23, billed $0.60 per cluster-hour instead of $0.10 ($0.50/h, about $365 a "
        "month more); after that date EKS upgrades the control plane itself"
    ]
    assert warnings({"kubernetesVersion": "1.35"}) == []


def test_a_version_newer_than_the_calendar_is_an_error():
    (line,) = problems({"kubernetesVersion": "1.37"})
    assert line.startswith('gpu-eks:kubernetesVersion: received "1.37"; expected one of 1.31')
    assert "1.37 is newer than the EKS calendar this library knows" in line


def test_the_stacks_are_valid_on_the_real_date(monkeypatch):
    monkeypatch.setattr(catalog, "today", dt.date.today)
    from components.config import stackfile

    for stack in stackfile.available_stacks(ROOT):
        assert settings_for_stack(stack, ROOT).kubernetes_version == "1.35"


# ---------------------------------------------------------------------------------------------
# Resource names: the GPU group's resources are named <component>-<group>...; the cluster's own
# children are <component>-cluster..., -gpu-operator..., -verify... (derived from gpu_cluster.py).
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["cluster", "cluster-system", "cluster-node-role", "gpu-operator", "verify", "verify-x", "t4-lt"]
)
def test_group_names_that_would_read_as_the_clusters_resources_are_errors(name):
    (line,) = problems({"gpuNodeGroups": [{"name": name}]})
    assert line.startswith(f'gpu-eks:gpuNodeGroups[0].name: received "{name}"; expected a name that')


def test_the_reserved_names_are_those_the_program_declares(dev):
    """Every resource of a run that is not inside a GPU node group is named <component>-<child>[-...]
    with a child from SYSTEM_SIDE_CHILDREN: the rule above covers all of them."""
    inside_groups = {r.urn for r in dev.resources if r.type == "gpu-eks:nodegroup:GpuNodeGroup"}
    changed = True
    while changed:
        before = len(inside_groups)
        inside_groups |= {r.urn for r in dev.resources if r.parent_urn in inside_groups}
        changed = len(inside_groups) != before
    outside = [r.name for r in dev.resources if r.urn not in inside_groups and r.type != "gpu-eks:index:GpuCluster"]
    assert outside
    stems = [f"gpu-eks-{child}" for child in SYSTEM_SIDE_CHILDREN]
    assert [n for n in outside if not any(n == s or n.startswith(f"{s}-") for s in stems)] == []


def test_duplicate_group_names_name_the_second_group():
    assert problems({"gpuNodeGroups": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}) == [
        'gpu-eks:gpuNodeGroups[2].name: received "a"; expected a name of its own (gpuNodeGroups[0] has it)'
    ]


# ---------------------------------------------------------------------------------------------
# Namespaces. Kubernetes docs, "Namespaces" (initial namespaces default, kube-node-lease,
# kube-public, kube-system): the library creates its namespaces, so these fail "already exists".
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "default"])
def test_operator_and_verification_namespaces_are_not_kubernetes_own(namespace):
    lines = problems({"gpuOperator": {"namespace": namespace}, "verification": {"namespace": namespace}})
    assert [line.split(": received")[0] for line in lines] == [
        "gpu-eks:gpuOperator.namespace",
        "gpu-eks:verification.namespace",
    ]
    assert all("expected a namespace of its own, not one Kubernetes creates" in line for line in lines)


def test_verification_namespace_differs_from_the_operators():
    assert problems({"verification": {"enabled": True, "namespace": "gpu-operator"}}) == [
        'gpu-eks:verification.namespace: received "gpu-operator"; expected a namespace other than '
        "gpuOperator.namespace: each component creates its namespace"
    ]


@pytest.mark.parametrize(
    "image", ["", " ", "nvcr.io/nvidia/k8s/cuda-sample:", "CudaSample:tag", "a b", "nvcr.io/Nvidia/x"]
)
def test_verification_image_is_a_plausible_reference(image):
    (line,) = problems({"verification": {"image": image}})
    assert line.startswith(f"gpu-eks:verification.image: received {json.dumps(image)}; expected a container image")


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        "busybox",
        "localhost:5000/team/app:1.0",
        "registry.example.com/app@sha256:" + "a" * 64,
    ],
)
def test_verification_image_references_that_work(image):
    assert load_settings({"clusterName": "c", "verification": {"image": image}}).verification.image == image


# ---------------------------------------------------------------------------------------------
# Lists whose duplicates are meaningless (botocore eks LogSetup.types, VpcConfigRequest lists).
# ---------------------------------------------------------------------------------------------


def test_duplicate_log_types_and_cidrs_are_errors():
    assert problems(
        {
            "controlPlaneLogTypes": ["api", "audit", "api"],
            "endpointPublicAccessCidrs": ["203.0.113.0/24", "203.0.113.0/24"],
        }
    ) == [
        'gpu-eks:endpointPublicAccessCidrs: received ["203.0.113.0/24", "203.0.113.0/24"]; expected each value once '
        '(repeated: "203.0.113.0/24")',
        'gpu-eks:controlPlaneLogTypes: received ["api", "audit", "api"]; expected each value once (repeated: "api")',
    ]


# ---------------------------------------------------------------------------------------------
# Region (botocore endpoint data, offline: boto3 Session.get_available_regions("eks", partition)).
# ---------------------------------------------------------------------------------------------


def test_region_must_have_eks():
    base = {"gpu-eks:kubernetesVersion": "1.35"}
    assert settings_from_config({**base, "aws:region": "us-west-2"}, "gpu-eks", "dev").kubernetes_version == "1.35"
    settings_from_config({**base, "aws:region": "us-gov-west-1"}, "gpu-eks", "dev")
    settings_from_config({**base, "aws:region": "cn-north-1"}, "gpu-eks", "dev")
    assert config_problems({**base, "aws:region": "us-wset-2"}) == [
        f'aws:region: received "us-wset-2"; expected a region where EKS runs (botocore\'s '
        f"endpoint data lists {len(eks_regions())}); did you mean us-west-2?"
    ]


def test_the_eks_regions_are_boto3s():
    # eks_regions reads botocore's endpoint data without importing boto3: the same answer.
    import boto3

    session = boto3.session.Session()
    regions = {
        r for partition in ("aws", "aws-us-gov", "aws-cn") for r in session.get_available_regions("eks", partition)
    }
    assert eks_regions() == regions
    assert {"us-west-2", "us-gov-west-1", "cn-north-1"} <= regions


# ---------------------------------------------------------------------------------------------
# Section 3: config that the program never reads. Known namespaces: the library's, Pulumi's and the
# providers'; a bare key is not a Pulumi config key (pulumi/pulumi sdk/go/common/resource/config/
# key.go ParseKey: "configuration keys should be of the form <namespace>:<name>").
# ---------------------------------------------------------------------------------------------


def test_a_namespace_typo_is_an_error_with_a_suggestion():
    assert config_problems({"gpueks:deletionProtection": "true", "aws:region": "us-west-2"}) == [
        'gpueks:deletionProtection: received "true"; expected a key in a namespace the program reads (gpu-eks, '
        "pulumi, aws, awsx, eks, kubernetes): no code reads gpueks:; did you mean gpu-eks:deletionProtection?"
    ]


def test_an_unrelated_namespace_suggests_ours_when_the_name_is_a_setting():
    (line,) = config_problems({"platform:kubernetesVersion": "1.35"})
    assert line.startswith('platform:kubernetesVersion: received "1.35"; expected a key in a namespace')
    assert line.endswith("no code reads platform:; did you mean gpu-eks:kubernetesVersion?")
    (line,) = config_problems({"datadog:apiKey": "x"})
    assert line.startswith('datadog:apiKey: received "x"; expected a key in a namespace the program reads')


def test_a_bare_key_is_an_error():
    assert config_problems({"kubernetesVersion": "1.35"}) == [
        'kubernetesVersion: received "1.35"; expected a namespaced key such as gpu-eks:kubernetesVersion'
    ]


def test_known_namespaces_pass():
    config = {
        "aws:region": "us-west-2",
        "aws:profile": "x",
        "awsx:x": "y",
        "eks:x": "y",
        "kubernetes:enableServerSideApply": "true",
        "pulumi:tags": "{}",
    }
    assert settings_from_config(config, "gpu-eks", "dev").cluster_name == "gpu-eks-dev"


def test_a_provider_key_typo_is_an_error_in_this_repositorys_stacks():
    """pulumi-aws 7.51.1 reads its config keys in pulumi_aws/config/vars.py (``__config__.get('region')``);
    ``aws:regin`` reaches no code, and the stack would deploy to the default region."""
    assert config_problems({"aws:regin": "us-west-2"}) == [
        'aws:regin: received "us-west-2"; expected a key the aws provider reads (pulumi_aws/config/vars.py): '
        "did you mean aws:region?"
    ]
    assert {"region", "profile", "defaultTags", "assumeRoles"} <= provider_config_keys("aws")
    assert provider_config_keys("eks") is None  # pulumi-eks ships no config module: its keys are not judged


def test_a_consumers_program_reads_its_gpu_eks_keys_and_leaves_the_others_alone():
    """A consumer's project (not named gpu-eks): its own namespace and other providers' are its
    program's business (issue 42); a near miss of the library's namespace holding a library key is not."""
    config = {
        "aws:region": "us-west-2",
        "gpu-eks:kubernetesVersion": "1.35",
        "ml-platform:costCenter": "cc-42",
        "datadog:apiKey": "x",
        "aws:anything": "the consumer's program reads its providers' keys",
    }
    assert settings_from_config(config, "ml-platform", "dev").cluster_name == "ml-platform-dev"
    with pytest.raises(ConfigError) as info:
        settings_from_config({**config, "gpu_eks:gpuNodeGroups": "[]"}, "ml-platform", "dev")
    assert [str(p) for p in info.value.problems] == [
        'gpu_eks:gpuNodeGroups: received "[]"; expected a key in the library\'s namespace (gpu-eks:): did you mean '
        "gpu-eks:gpuNodeGroups?"
    ]
    # The same keys in this repository's project: each is a key no code reads.
    assert [line.split(":", 2)[0] + ":" + line.split(":", 2)[1] for line in config_problems(config)] == [
        "ml-platform:costCenter",
        "datadog:apiKey",
        "aws:anything",
    ]


def test_the_program_refuses_unknown_namespaces():
    with pytest.raises(pulumi.RunError) as info:
        run_stack("dev", ROOT, config_overrides={"gpueks:deletionProtection": True})
    assert "gpueks:deletionProtection: received" in str(info.value)
    assert "did you mean gpu-eks:deletionProtection?" in str(info.value)


def test_render_refuses_unknown_namespaces_bare_keys_and_regions(tmp_path: Path):
    from tests.support.commands import tooling_cli as cli
    from tests.support.copies import copy_project

    root = copy_project(tmp_path)
    doc = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["gpueks:deletionProtection"] = True
    doc["config"]["kubernetesVersion"] = "1.35"
    doc["config"]["aws:region"] = "mars-1"
    doc["config"]["aws:regin"] = "us-west-2"
    (root / "stacks" / "Pulumi.bad.yaml").write_text(yaml.safe_dump(doc))
    done = cli("render", "--stack", "bad", cwd=root)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "invalid stack configuration (4 problems)" in done.stderr
    assert 'aws:regin: received "us-west-2"; expected a key the aws provider reads' in done.stderr
    assert 'gpueks:deletionProtection: received "true"; expected a key in a namespace the program reads' in done.stderr
    assert "no code reads gpueks:; did you mean gpu-eks:deletionProtection?" in done.stderr
    assert (
        'kubernetesVersion: received "1.35"; expected a namespaced key such as gpu-eks:kubernetesVersion' in done.stderr
    )
    assert 'aws:region: received "mars-1"; expected' in done.stderr


# ---------------------------------------------------------------------------------------------
# Section 4: no pydantic phrasing anywhere. Every field is fed values of every wrong shape.
# ---------------------------------------------------------------------------------------------

PYDANTIC_PHRASES = (
    "Input should",
    "valid integer",
    "valid string",
    "valid list",
    "valid dictionary",
    "Field required",
    "after validation",
    "Value error",
    "should have at least",
    "should have at most",
    "String should",
    "Extra inputs",
    "validation error",
    "type=",
    "Assertion failed",
)
WRONG_VALUES: tuple[Any, ...] = (None, True, 3, -1, 2.5, "text", "", [], ["x"], [1], {}, {"x": 1}, [{"x": 1}])


def _paths(model: type, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of the settings, nested models and list items included (by alias)."""
    from pydantic import BaseModel

    out = []
    for name, f in model.model_fields.items():
        key = (*prefix, f.alias or name)
        out.append(key)
        for arg in (f.annotation, *getattr(f.annotation, "__args__", ())):
            inner = getattr(arg, "__args__", (arg,))
            for t in (arg, *inner):
                if isinstance(t, type) and issubclass(t, BaseModel):
                    sub = key + ((0,) if arg is not t else ())
                    out += _paths(t, sub)
    return out


def _put(raw: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    raw = json.loads(json.dumps(raw))
    node: Any = raw
    for part, nxt in itertools.pairwise(path):
        if isinstance(part, int):
            while len(node) <= part:
                node.append({"name": "gpu"})
            node = node[part]
        else:
            node = node.setdefault(part, [] if isinstance(nxt, int) else {})
    node[path[-1]] = value
    return raw


def test_no_pydantic_phrasing_leaks_for_any_field_or_shape():
    paths = _paths(Settings)
    assert ("gpuNodeGroups", 0, "timeSlicing", "replicas") in paths and ("network", "vpcId") in paths
    seen = 0
    for path in paths:
        for value in WRONG_VALUES:
            try:
                load_settings(_put({"clusterName": "c"}, path, value))
            except ConfigError as err:
                for p in err.problems:
                    seen += 1
                    text = str(p)
                    assert not any(phrase in text for phrase in PYDANTIC_PHRASES), (path, value, text)
                    assert p.key.startswith(("gpu-eks:", "gpu-eks")), text
    assert seen > 300
    # The whole settings, or a missing required key.
    for raw in ([1], "text", {}):
        with pytest.raises(ConfigError) as info:
            load_settings(raw if isinstance(raw, dict) else {"clusterName": "c", "gpuNodeGroups": raw})
        assert not any(phrase in str(info.value) for phrase in PYDANTIC_PHRASES), str(info.value)


def test_a_missing_cluster_name_is_reported_plainly():
    with pytest.raises(ConfigError) as info:
        load_settings({})
    assert [str(p) for p in info.value.problems] == ["gpu-eks:clusterName: received nothing; expected a value"]


def test_render_prints_the_warnings(tmp_path: Path):
    from tests.support.copies import copy_project
    from tooling import render

    root = copy_project(tmp_path)
    doc = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["gpu-eks:endpointPublicAccessCidrs"] = ["0.0.0.0/0"]
    doc["config"]["gpu-eks:kubernetesVersion"] = "1.32"
    (root / "stacks" / "Pulumi.open.yaml").write_text(yaml.safe_dump(doc))
    _, _, notes = render.stack_config("open", root)
    assert [n.split(";")[0] for n in notes] == [
        'warning: gpu-eks:endpointPublicAccessCidrs[0]: received "0.0.0.0/0"',
        'warning: gpu-eks:kubernetesVersion: received "1.32"',
    ]


def test_the_readme_error_example_is_what_the_program_prints():
    import re

    readme = (ROOT / "docs" / "configuration.md").read_text()
    (example,) = re.findall(r"```\n(error: invalid stack configuration.*?)```", readme, flags=re.S)
    config = {"gpueks:deletionProtection": "true", "gpu-eks:gpuNodeGroups": '[{"name": "t4"}, {"name": "t4"}]'}
    with pytest.raises(ConfigError) as info:
        settings_from_config(config, "gpu-eks", "dev")
    assert example == f"error: {info.value.report()}\n"
