"""Bounds and rules taken from the consumers' current sources, both sides of each bound with
literal values (issue 17, section 1): root volume sizes, instance type counts, Go durations, EKS
access-entry principals, public endpoint CIDRs, namespace names, image references, networks too
small for their nodes' pods, and topologies whose cluster services could never schedule.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.config.fields import go_duration_ns


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


def accepted(raw: dict[str, Any]) -> Any:
    return load_settings({"clusterName": "c", **raw})


# --- Root volume: 20 GiB (the AL2023 AMI's snapshot) to 65,536 GiB (gp3) ---------------------------
# botocore ec2 2016-11-15 (botocore 1.44.5) LaunchTemplateEbsBlockDeviceRequest.VolumeSize:
# "gp3: 1 - 65,536 GiB"; the library refused anything above 16,384 (gp3's old limit).


@pytest.mark.parametrize("size", [20, 16385, 65536])
def test_root_volumes_up_to_gp3s_65536_gib_are_accepted(size: int):
    s = accepted({"systemNodeGroup": {"diskSizeGiB": size}, "gpuNodeGroups": [{"name": "g", "diskSizeGiB": size}]})
    assert (s.system_node_group.disk_size_gib, s.gpu_node_groups[0].disk_size_gib) == (size, size)


def test_root_volumes_outside_20_to_65536_gib_are_refused():
    assert problems(
        {"systemNodeGroup": {"diskSizeGiB": 65537}, "gpuNodeGroups": [{"name": "g", "diskSizeGiB": 19}]}
    ) == [
        "gpu-eks:gpuNodeGroups[0].diskSizeGiB: received 19; expected a number of at least 20",
        "gpu-eks:systemNodeGroup.diskSizeGiB: received 65537; expected a number of at most 65536",
    ]
    assert problems({"gpuNodeGroups": [{"name": "g", "diskSizeGiB": 65537}]}) == [
        "gpu-eks:gpuNodeGroups[0].diskSizeGiB: received 65537; expected a number of at most 65536"
    ]


# --- Instance types: at most 20 per node group ----------------------------------------------------
# botocore eks 2017-11-01 CreateNodegroupRequest.instanceTypes: "0-20 instance types".

TWENTY_ONE_TYPES = [
    "m6i.large", "m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge", "m6i.8xlarge", "m6i.12xlarge", "m6i.16xlarge",
    "m5.large", "m5.xlarge", "m5.2xlarge", "m5.4xlarge", "m5.8xlarge", "m5.12xlarge", "m5.16xlarge",
    "c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge", "c6i.8xlarge", "c6i.12xlarge", "c6i.16xlarge",
]  # fmt: skip


def test_a_node_group_takes_at_most_20_instance_types():
    assert (
        len(accepted({"systemNodeGroup": {"instanceTypes": TWENTY_ONE_TYPES[:20]}}).system_node_group.instance_types)
        == 20
    )
    (line,) = problems({"systemNodeGroup": {"instanceTypes": TWENTY_ONE_TYPES}})
    assert line.startswith('gpu-eks:systemNodeGroup.instanceTypes: received ["m6i.large", ')
    assert line.endswith("expected at most 20 item(s)")


# --- Go durations (cluster-autoscaler --scale-down-unneeded-time is a Go flag.Duration) --------------
# Go go/src/time/time_test.go parseDurationTests: accepted and refused inputs, with their values.


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("5s", 5_000_000_000),
        ("30s", 30_000_000_000),
        ("1478s", 1_478_000_000_000),
        ("-5s", -5_000_000_000),
        ("+5s", 5_000_000_000),
        ("-0", 0),
        ("5.0s", 5_000_000_000),
        ("5.6s", 5_600_000_000),
        ("5.s", 5_000_000_000),
        (".5s", 500_000_000),
        ("1.004s", 1_004_000_000),
        ("10ns", 10),
        ("11us", 11_000),
        ("12µs", 12_000),
        ("12μs", 12_000),
        ("13ms", 13_000_000),
        ("15m", 900_000_000_000),
        ("16h", 57_600_000_000_000),
        ("3h30m", 12_600_000_000_000),
        ("10.5s4m", 250_500_000_000),
        ("-2m3.4s", -123_400_000_000),
        ("1h2m3s4ms5us6ns", 3_723_004_005_006),
        ("39h9m14.425s", 140_954_425_000_000),
        ("9223372036854775807ns", 9_223_372_036_854_775_807),
        ("2562047h47m16.854775807s", 9_223_372_036_854_775_807),
        ("-9223372036854775808ns", -9_223_372_036_854_775_808),
    ],
)
def test_go_durations_parse_like_time_parse_duration(text: str, ns: int):
    assert go_duration_ns(text) == ns


@pytest.mark.parametrize(
    "text", ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "10 m", "10min", "1e3s", "--5s", "9223372036854775808ns"]
)
def test_what_time_parse_duration_refuses_is_refused(text: str):
    assert go_duration_ns(text) is None


@pytest.mark.parametrize("value", ["1m", "60s", "1.5h", "90m", "48h", "1h0m0s", "60000ms"])
def test_scale_down_unneeded_time_takes_any_go_duration_of_a_minute_or_more(value: str):
    assert accepted({"autoscaler": {"scaleDownUnneededTime": value}}).autoscaler.scale_down_unneeded_time == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("59s", "at least 1m: a shorter time lets CA remove a node before the pod that asked for it lands"),
        ("0", "at least 1m: a shorter time lets CA remove a node before the pod that asked for it lands"),
        ("-10m", "at least 1m: a shorter time lets CA remove a node before the pod that asked for it lands"),
        (
            "1d",
            "a Go duration such as 10m, 1h30m or 1.5h (a number and a unit, ns us ms s m h, repeated; Go's "
            "time.ParseDuration refuses anything else)",
        ),
    ],
)
def test_scale_down_unneeded_time_below_a_minute_or_not_go_is_refused(value: str, expected: str):
    assert problems({"autoscaler": {"scaleDownUnneededTime": value}}) == [
        f'gpu-eks:autoscaler.scaleDownUnneededTime: received "{value}"; expected {expected}'
    ]


# --- Principals EKS access entries refuse ----------------------------------------------------------


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::123456789012:role/Admin",
        "arn:aws:iam::123456789012:role/development/apps/my-role",  # EKS: "it can include a path"
        "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123456789abcdef",
        "arn:aws:iam::123456789012:user/alice",
        "arn:aws:iam::123456789012:role/team/AWSServiceRoleAuditor",  # the name alone is not service-linked
        "arn:aws:iam::123456789012:role/" + "r" * 64,
        "arn:aws-us-gov:iam::123456789012:role/a+b=c,d.e@f_g-h",
    ],
)
def test_role_and_user_arns_eks_accepts(arn: str):
    assert accepted({"adminPrincipalArns": [arn]}).admin_principal_arns == [arn]


@pytest.mark.parametrize(
    ("arn", "expected"),
    [
        (
            "arn:aws:iam::123456789012:role/aws-service-role/emr-containers.amazonaws.com/"
            "AWSServiceRoleForAmazonEMRContainers",
            "a role that is not service-linked (path /aws-service-role/): EKS refuses access entries for "
            "service-linked roles",
        ),
        (
            "arn:aws:iam::123456789012:role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForAmazonEKS",
            "a role that is not service-linked (path /aws-service-role/): EKS refuses access entries for "
            "service-linked roles",
        ),
        (
            "arn:aws:sts::123456789012:assumed-role/Admin/session-1",
            "an IAM role or user ARN; EKS access entries refuse STS assumed-role session ARNs: use the role's ARN, "
            "arn:aws:iam::<account>:role/<name>",
        ),
        (
            "arn:aws:iam::123456789012:role/" + "r" * 65,
            "an IAM role name of 1-64 letters, digits or + = , . @ _ - (the IAM name rule), after the path",
        ),
        (
            "arn:aws:iam::123456789012:user/bob smith",
            "an IAM user name of 1-64 letters, digits or + = , . @ _ - (the IAM name rule), after the path",
        ),
        (
            "arn:aws:iam::123456789012:role//Admin",
            "an IAM path of at most 512 printable ASCII characters between '/' (the IAM path rule)",
        ),
        ("arn:aws:iam::123456789012:root", "an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin"),
        (
            "arn:aws:iam::123456789012:group/admins",
            "an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin",
        ),
    ],
)
def test_principals_eks_refuses_are_refused_with_the_reason(arn: str, expected: str):
    assert problems({"adminPrincipalArns": [arn]}) == [
        f'gpu-eks:adminPrincipalArns[0]: received "{arn}"; expected {expected}'
    ]


# --- Public endpoint CIDRs: at most 40, internet addresses only -------------------------------------


def test_at_most_40_public_endpoint_cidrs():
    forty = [f"198.51.{i}.0/24" for i in range(40)]
    assert len(accepted({"endpointPublicAccessCidrs": forty}).endpoint_public_access_cidrs) == 40
    (line,) = problems({"endpointPublicAccessCidrs": [*forty, "198.51.40.0/24"]})
    assert line.endswith('"198.51.40.0/24"]; expected at most 40 item(s)')


@pytest.mark.parametrize(
    ("cidr", "within"),
    [
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("10.1.2.0/24", "10.0.0.0/8"),
        ("172.31.0.0/16", "172.16.0.0/12"),
        ("192.168.1.7/32", "192.168.0.0/16"),
        ("100.64.1.0/24", "100.64.0.0/10"),
        ("127.0.0.1/32", "127.0.0.0/8"),
        ("169.254.169.254/32", "169.254.0.0/16"),
        ("224.0.0.0/8", "224.0.0.0/4"),
    ],
)
def test_public_endpoint_cidrs_no_internet_client_has_are_refused(cidr: str, within: str):
    assert problems({"endpointPublicAccessCidrs": [cidr]}) == [
        f'gpu-eks:endpointPublicAccessCidrs[0]: received "{cidr}"; expected a block of internet addresses: {cidr} '
        f"is within {within}, which no client on the internet has (EKS refuses reserved addresses; from inside "
        "the VPC the private endpoint is used)"
    ]


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "172.32.0.0/16", "11.0.0.0/8", "100.128.0.0/16", "198.51.100.0/24"])
def test_public_endpoint_cidrs_of_internet_addresses_are_accepted(cidr: str):
    assert accepted({"endpointPublicAccessCidrs": [cidr]}).endpoint_public_access_cidrs == [cidr]


# --- Namespaces: Kubernetes namespace names (DNS-1123 labels, at most 63) ---------------------------


def test_namespaces_of_63_characters_are_accepted_64_refused():
    name63 = "gpu-operator-" + "x" * 50
    assert accepted({"gpuOperator": {"namespace": name63}}).gpu_operator.namespace == name63
    assert problems({"verification": {"namespace": name63 + "x"}}) == [
        f"gpu-eks:verification.namespace: received \"{name63}x\"; expected 1-63 lower-case alphanumerics or '-', "
        "alphanumeric at both ends (a Kubernetes namespace name)"
    ]


# --- Image references: the distribution grammar ---------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        "registry.example.com/" + "a" * 234 + ":" + "t" * 128,  # name 255, tag 128: 384 characters in all
        "nvcr.io/nvidia/k8s/cuda-sample@sha512:" + "b" * 128,
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0@sha384:" + "c" * 96,
    ],
)
def test_image_references_the_distribution_grammar_accepts(image: str):
    assert accepted({"verification": {"image": image}}).verification.image == image


@pytest.mark.parametrize(
    "image",
    [
        "registry.example.com/" + "a" * 235 + ":v1",  # name of 256 characters
        "nvcr.io/nvidia/cuda:" + "t" * 129,  # tag of 129 characters
        "nvcr.io/nvidia/cuda@md5:" + "d" * 32,  # no such digest algorithm
        "nvcr.io/NVIDIA/cuda:12",  # upper-case path
    ],
)
def test_image_references_the_grammar_refuses(image: str):
    assert problems({"verification": {"image": image}}) == [
        f'gpu-eks:verification.image: received "{image}"; expected a container image reference such as '
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    ]


CLOUDWATCH_ON = {"observability": {"enabled": True, "pipeline": "cloudwatch"}}


# --- Networks too small: the VPC CNI holds whole ENIs of subnet addresses ---------------------------
# aws/amazon-vpc-cni-k8s docs/eni-and-ip-target.md (v1.23.0): with the default WARM_ENI_TARGET=1
# an idle node holds one full ENI, a node with pods its used ENIs plus a warm one, a full node
# those its max pods need. A GPU node counts those (g4dn.xlarge 3 x 10 = 30), a system node the
# ENIs its share of the service pods uses and a warm one (m6i.large 2 x 10 = 20; t3.medium
# 2 x 6 = 12 with up to 5 pods), an idle one one ENI (m6i.large 10). Created VPC: one private subnet
# per zone, less AWS's 5 and EKS's 6 addresses each; a node's ENIs come from its own subnet, and
# one subnet may hold ceil(nodes / subnets) of every group. The default groups with the autoscaler
# (on by default) count at maxSize: GPU 2 x 30, system 2 busy (6 service pods, 3 each) x 20 + 1
# idle x 10 = 110 in all; in one of 2 subnets 1 x 30 + 2 x 20 = 70.

NETWORK_TOO_SMALL = (
    'gpu-eks:network.cidrBlock: received "10.0.0.0/24"; expected a larger block: each of its 2 private subnets '
    "holds 53 addresses for nodes and pods (59 usable, less the 6 EKS needs), but at maxSize (the Cluster "
    "Autoscaler scales up to it) one subnet must hold at least 70: a node's ENIs take their addresses from its own "
    "subnet, and each group's nodes spread evenly over the subnets, so ceil(nodes / 2) of every group may share "
    "one (the VPC CNI holds whole ENIs of addresses: a GPU node those its max pods need, g4dn.xlarge 3 x 10 = 30; "
    "a system node those its service pods use and a warm one, m6i.large 2 x 10 = 20)"
)


def test_a_vpc_whose_subnets_hold_the_nodes_enis_is_accepted():
    # /23 over 2 zones: /25 subnets, 123 usable each, 123 - 6 = 117 >= 70.
    s = accepted({"network": {"cidrBlock": "10.0.0.0/23", "availabilityZoneCount": 2}})
    assert (s.nodes_need_addresses(at_max=True), s.nodes_need_addresses(at_max=True, subnets=2)) == (110, 70)


def test_a_vpc_too_small_for_the_nodes_enis_is_refused():
    # /24 over 2 zones: /26 subnets, 59 usable each, 59 - 6 = 53 < 70.
    assert problems({"network": {"cidrBlock": "10.0.0.0/24", "availabilityZoneCount": 2}}) == [NETWORK_TOO_SMALL]


def test_without_the_autoscaler_the_groups_count_at_desired_size():
    fixed = {
        "autoscaler": {"enabled": False},
        "systemNodeGroup": {"scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 3}},
        "gpuNodeGroups": [{"name": "g", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 9}}],
    }
    # /24 over 2 zones: 53 >= 30 + 20 = 50 at desiredSize (at maxSize 9 x 30 + 20 + 2 idle x 10 = 310).
    s = accepted({**fixed, "network": {"cidrBlock": "10.0.0.0/24"}})
    assert (s.nodes_need_addresses(at_max=False), s.nodes_need_addresses(at_max=True)) == (50, 310)
    # /25 over 2 zones: /27 subnets, 27 - 6 = 21 < 50.
    (line,) = problems({**fixed, "network": {"cidrBlock": "10.0.0.0/25"}})
    assert "each of its 2 private subnets holds 21 addresses" in line
    assert "at desiredSize one subnet must hold at least 50" in line


def test_a_karpenter_group_counts_at_max_size_beside_a_managed_group_at_desired_size():
    # Without the autoscaler: the managed group at desiredSize 1 (30), the Karpenter group at its
    # limit, maxSize 3 (3 x 30: Karpenter launches up to it), the system node 20: 140; one of 2
    # subnets holds 1 x 30 + ceil(3 / 2) x 30 + 20 = 110 > 21 of a /25.
    raw = {
        "autoscaler": {"enabled": False},
        "systemNodeGroup": {"scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 3}},
        "gpuNodeGroups": [
            {"name": "m", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 9}},
            {"name": "k", "capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 3}},
        ],
    }
    s = accepted({**raw, "network": {"cidrBlock": "10.0.0.0/23"}})
    assert (s.nodes_need_addresses(at_max=False), s.nodes_need_addresses(at_max=False, subnets=2)) == (140, 110)
    (line,) = problems({**raw, "network": {"cidrBlock": "10.0.0.0/25"}})
    assert (
        "at desiredSize (maxSize for Karpenter groups: Karpenter launches up to it) one subnet must hold at least 110"
        in line
    )


def test_idle_system_nodes_hold_their_enis_addresses():
    # Nine m6i.large system nodes, 5 service pods without the autoscaler: 5 busy x 20 + 4 idle x 10
    # = 140 (they were counted as 9 + 5 pods); one of 2 subnets holds 5 of them, the busiest: 100,
    # with a GPU node 130 > 117 of a /23 over 2 zones.
    raw = {
        "autoscaler": {"enabled": False},
        "network": {"cidrBlock": "10.0.0.0/23"},
        "systemNodeGroup": {"scaling": {"minSize": 1, "desiredSize": 9, "maxSize": 10}},
        "gpuNodeGroups": [{"name": "g", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}}],
    }
    (line,) = problems(raw)
    assert "each of its 2 private subnets holds 117 addresses" in line
    assert "at desiredSize one subnet must hold at least 130" in line
    s = accepted({**raw, "network": {"cidrBlock": "10.0.0.0/22"}})
    assert (s.nodes_need_addresses(at_max=False), s.nodes_need_addresses(at_max=False, subnets=2)) == (170, 130)


def test_one_node_larger_than_a_subnet_is_refused_though_all_subnets_hold_it():
    # /24 over 2 zones: 2 x 53 = 106 in all >= 60 + 20 = 80, but one g5.xlarge (4 x 15 = 60) takes
    # all its ENIs from its own subnet, 53 < 60 + the system node beside it 20.
    raw = {
        "autoscaler": {"enabled": False},
        "network": {"cidrBlock": "10.0.0.0/24"},
        "systemNodeGroup": {"scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}},
        "gpuNodeGroups": [
            {"name": "g", "instanceTypes": ["g5.xlarge"], "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}}
        ],
    }
    (line,) = problems(raw)
    assert "each of its 2 private subnets holds 53 addresses" in line
    assert "at desiredSize one subnet must hold at least 80" in line
    # /23: 117 >= 80.
    assert accepted({**raw, "network": {"cidrBlock": "10.0.0.0/23"}}).nodes_need_addresses(at_max=False) == 80


def test_each_groups_nodes_count_ceil_nodes_over_subnets_in_one_subnet():
    # 3 g4dn.xlarge over 3 zones: 1 per subnet; 4: 2 in one. /24 over 3 zones: /27 subnets, 21 each
    # (too small for any GPU node); /22 over 3: /25, 117 each.
    def raw(gpus: int, cidr: str) -> dict[str, Any]:
        return {
            "autoscaler": {"enabled": False},
            "network": {"cidrBlock": cidr, "availabilityZoneCount": 3},
            "systemNodeGroup": {"scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}},
            "gpuNodeGroups": [{"name": "g", "scaling": {"minSize": 1, "desiredSize": gpus, "maxSize": gpus}}],
        }

    three = accepted(raw(3, "10.0.0.0/22"))
    assert [three.nodes_need_addresses(at_max=False, subnets=n) for n in (1, 2, 3)] == [110, 80, 50]
    four = accepted(raw(4, "10.0.0.0/22"))
    assert [four.nodes_need_addresses(at_max=False, subnets=n) for n in (1, 2, 3)] == [140, 80, 80]
    (line,) = problems(raw(1, "10.0.0.0/24"))
    assert "each of its 3 private subnets holds 21 addresses" in line
    assert "one subnet must hold at least 50" in line


def test_a_gpu_node_counts_all_its_enis_a_system_node_two():
    # g5.xlarge 4 x 15 = 60 per GPU node; t3.micro min(2, 2) x 2 = 4, t3.large 2 x 12 = 24 per system node.
    def need(gpu: str, system: str) -> int:
        s = accepted(
            {
                "autoscaler": {"enabled": False},
                "systemNodeGroup": {
                    "instanceTypes": [system],
                    "scaling": {"minSize": 3, "desiredSize": 3, "maxSize": 3},
                },
                "gpuNodeGroups": [
                    {"name": "g", "instanceTypes": [gpu], "scaling": {"minSize": 2, "desiredSize": 2, "maxSize": 2}}
                ],
            }
        )
        return s.nodes_need_addresses(at_max=False)

    assert need("g5.xlarge", "t3.micro") == 2 * 60 + 3 * 4
    assert need("g4dn.xlarge", "t3.large") == 2 * 30 + 3 * 24
    # p4d.24xlarge: max pods capped at 250 (96 vCPUs), ceil(250 / 49) = 6 of its 15 ENIs of 50.
    assert need("p4d.24xlarge", "m6i.4xlarge") == 2 * 300 + 3 * 60


def test_a_gpu_node_holds_only_the_enis_its_capped_max_pods_need():
    # aws/amazon-vpc-cni-k8s v1.23.0 pkg/ipamd/ipamd.go isDatastorePoolTooLow: no ENI is added once
    # the datastore holds max pods pod addresses (ENI addresses less the primary one).
    from components import catalog

    assert {
        t: catalog.gpu_node_addresses(t)
        for t in ("g4dn.xlarge", "g5.4xlarge", "g5.48xlarge", "g6e.12xlarge", "p4d.24xlarge", "p5.48xlarge")
    } == {
        "g4dn.xlarge": 30,  # max pods 29 (uncapped): all 3 ENIs of 10
        "g5.4xlarge": 120,  # max pods 110: ceil(110 / 29) = 4 of 8 ENIs of 30
        "g5.48xlarge": 300,  # max pods 250: ceil(250 / 49) = 6 of 7 ENIs of 50
        "g6e.12xlarge": 270,  # max pods 250: ceil(250 / 29) = 9 of 10 ENIs of 30
        "p4d.24xlarge": 300,  # max pods 250: 6 of 15 ENIs of 50
        "p5.48xlarge": 100,  # max pods 100 (uncapped): both ENIs of 50
    }


def test_ten_g5_4xlarge_nodes_fit_a_20_block():
    # At maxSize: 10 x 120 + system 2 busy x 20 + 1 idle x 10 = 1250 in all (counted at all 8 ENIs,
    # 10 x 240 + 3 x 20 = 2460, a /20 was refused); one of 2 subnets holds 5 x 120 + 2 x 20 = 640.
    # /21 over 2 zones: /23 subnets, 507 - 6 = 501 < 640; /20: /22 subnets, 1019 - 6 = 1013.
    group = {"name": "a10", "instanceTypes": ["g5.4xlarge"], "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 10}}
    s = accepted({"network": {"cidrBlock": "10.0.0.0/20"}, "gpuNodeGroups": [group]})
    assert (s.nodes_need_addresses(at_max=True), s.nodes_need_addresses(at_max=True, subnets=2)) == (1250, 640)
    (line,) = problems({"network": {"cidrBlock": "10.0.0.0/21"}, "gpuNodeGroups": [group]})
    assert "each of its 2 private subnets holds 501 addresses" in line and "must hold at least 640" in line


@pytest.mark.parametrize(
    ("system", "nodes", "extra", "need"),
    [
        # 6 service pods (coredns x2, gpu-operator, nfd-master, nfd-gc, cluster-autoscaler) on one
        # t3.medium (6 addresses per ENI, 5 for pods): ceil(6 / 5) + 1 = 3 ENIs, 18 (not 2 x 6 = 12).
        ("t3.medium", 1, {}, 18),
        # Spread over 2 nodes: 3 each, 1 ENI in use + the warm one, 2 x 2 x 6 = 24.
        ("t3.medium", 2, {}, 24),
        # Without the autoscaler 5 pods fit one t3.medium ENI: 2 x 6 = 12.
        ("t3.medium", 1, {"autoscaler": {"enabled": False}}, 12),
        # t3.small (3 ENIs of 4, 3 for pods): ceil(6 / 3) + 1 = 3 ENIs, 12; with the CloudWatch
        # controller 7 pods want 4 ENIs, it has 3: still 12.
        ("t3.small", 1, {}, 12),
        ("t3.small", 1, CLOUDWATCH_ON, 12),
        # m6i.large (10 per ENI): 7 pods fit one ENI, 2 x 10 = 20.
        ("m6i.large", 1, CLOUDWATCH_ON, 20),
        # t3.medium with the CloudWatch controller: ceil(7 / 5) + 1 = 3 ENIs, 18.
        ("t3.medium", 1, CLOUDWATCH_ON, 18),
    ],
)
def test_a_system_node_holds_the_enis_its_share_of_the_service_pods_uses(
    system: str, nodes: int, extra: dict[str, Any], need: int
):
    raw = {
        **extra,
        "systemNodeGroup": {"instanceTypes": [system], "scaling": {"minSize": 1, "desiredSize": nodes, "maxSize": 4}},
        "gpuNodeGroups": [{"name": "g", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1}}],
    }
    assert accepted(raw).nodes_need_addresses(at_max=False) == need


def test_an_existing_vpcs_subnet_sizes_are_not_judged_here():
    net = {
        "vpcId": "vpc-0aaaaaaaaaaaaaaa0",
        "privateSubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
    }
    assert accepted({"network": net}).network.existing_vpc is True


# --- Topologies that can never schedule -------------------------------------------------------------


def test_a_system_group_created_without_nodes_is_refused_whatever_the_autoscaler():
    for autoscaler in (True, False):
        assert problems(
            {
                "autoscaler": {"enabled": autoscaler},
                "systemNodeGroup": {"scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 3}},
            }
        ) == [
            "gpu-eks:systemNodeGroup.scaling.desiredSize: received 0; expected at least 1: the system group runs "
            "CoreDNS, the gpu-operator, NFD and the Cluster Autoscaler, so with no node none of them can ever "
            "schedule (nothing else would add the first node)"
        ]


def test_a_system_group_of_one_node_with_min_size_0_is_accepted():
    s = accepted({"systemNodeGroup": {"scaling": {"minSize": 0, "desiredSize": 1, "maxSize": 1}}})
    assert (s.system_node_group.scaling.min_size, s.system_node_group.scaling.desired_size) == (0, 1)


def test_system_nodes_must_hold_the_cluster_service_pods():
    # t3.micro: max pods 4, 2 besides aws-node and kube-proxy. With the autoscaler (the default
    # group is resizable): 6 service pods need 3 nodes; without it 5 pods need 3 too.
    small = {"instanceTypes": ["t3.micro"], "scaling": {"minSize": 1, "desiredSize": 2, "maxSize": 4}}
    assert problems({"systemNodeGroup": small}) == [
        'gpu-eks:systemNodeGroup.instanceTypes: received ["t3.micro"]; expected instance types with more pod room '
        "(e.g. t3.medium, m6i.large), or a desiredSize of at least 3: t3.micro run at most 4 pods, 2 besides the "
        "DaemonSet pods (aws-node, kube-proxy), so 2 node(s) hold 4 of the 6 cluster-service pods (coredns, coredns, "
        "gpu-operator, nfd-master, nfd-gc, cluster-autoscaler)"
    ]
    three = {**small, "scaling": {"minSize": 1, "desiredSize": 3, "maxSize": 4}}
    assert accepted({"systemNodeGroup": three}).system_node_group.instance_types == ["t3.micro"]
    # t3.small runs 11 pods: one node holds them all.
    one_small = {"instanceTypes": ["t3.small"], "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 2}}
    assert accepted({"systemNodeGroup": one_small}).system_node_group.scaling.desired_size == 1


def test_system_nodes_must_hold_karpenters_controller_pods_too():
    # Karpenter's controller runs on the system nodes (karpenter/values.py affinity): 2 replicas from
    # a minSize of 2 (the chart's required anti-affinity puts them on two nodes), else 1.
    karpenter = {
        "gpuNodeGroups": [
            {"name": "k", "capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}
        ]
    }
    three = {"instanceTypes": ["t3.micro"], "scaling": {"minSize": 3, "desiredSize": 3, "maxSize": 3}}
    assert accepted({"systemNodeGroup": three}).system_node_group.instance_types == ["t3.micro"]
    assert problems({"systemNodeGroup": three, **karpenter}) == [
        'gpu-eks:systemNodeGroup.instanceTypes: received ["t3.micro"]; expected instance types with more pod room '
        "(e.g. t3.medium, m6i.large), or a desiredSize of at least 4: t3.micro run at most 4 pods, 2 besides the "
        "DaemonSet pods (aws-node, kube-proxy), so 3 node(s) hold 6 of the 7 cluster-service pods (coredns, coredns, "
        "gpu-operator, nfd-master, nfd-gc, karpenter, karpenter)"
    ]
    one = {"instanceTypes": ["t3.micro"], "scaling": {"minSize": 1, "desiredSize": 3, "maxSize": 3}}
    assert accepted({"systemNodeGroup": one, **karpenter}).system_node_group.instance_types == ["t3.micro"]


# The CloudWatch pipeline's add-on (aws-observability/helm-charts charts/amazon-cloudwatch-observability
# 6.4.0) runs cloudwatch-agent and fluent-bit on every node (tolerations: [{operator: Exists}]),
# dcgm-exporter on the GPU types of its list, and a controller-manager Deployment.
CLOUDWATCH = {"observability": {"enabled": True, "pipeline": "cloudwatch"}}


@pytest.mark.parametrize("pipeline", ["cloudwatch", "both"])
def test_three_t3_micro_system_nodes_are_refused_with_the_cloudwatch_pipeline(pipeline: str):
    three = {"instanceTypes": ["t3.micro"], "scaling": {"minSize": 3, "desiredSize": 3, "maxSize": 3}}
    obs = {"observability": {"enabled": True, "pipeline": pipeline}}
    assert problems({"systemNodeGroup": three, **obs}) == [
        'gpu-eks:systemNodeGroup.instanceTypes: received ["t3.micro"]; expected instance types with more pod room '
        "(e.g. t3.medium, m6i.large); no node count of these helps: t3.micro run at most 4 pods, 0 besides the "
        "DaemonSet pods (aws-node, kube-proxy, cloudwatch-agent, fluent-bit), so 3 node(s) hold 0 of the 7 "
        "cluster-service pods (coredns, coredns, gpu-operator, nfd-master, nfd-gc, cluster-autoscaler, "
        "amazon-cloudwatch-observability-controller-manager)"
    ]


def test_three_t3_micro_system_nodes_are_accepted_without_the_cloudwatch_pipeline():
    three = {"instanceTypes": ["t3.micro"], "scaling": {"minSize": 3, "desiredSize": 3, "maxSize": 3}}
    prometheus = {"observability": {"enabled": True, "pipeline": "prometheus"}}
    for extra in ({}, prometheus, {"observability": {"enabled": False, "pipeline": "cloudwatch"}}):
        assert accepted({"systemNodeGroup": three, **extra}).system_node_group.instance_types == ["t3.micro"]


#: The node monitoring agent off: its two pods on a GPU node are not what these tests count.
NO_AGENT = {"nodeMonitoringAgent": {"enabled": False}}


def test_a_gpu_groups_usable_slots_count_the_cloudwatch_pods():
    # g4dn.xlarge: max pods 29; 7 DaemonSet pods (aws-node, kube-proxy, device plugin, GFD, dcgm-exporter,
    # validator, NFD worker) leave 22; the add-on's agent, fluent-bit and dcgm-exporter leave 19.
    # g6f.large (max pods 20) is not in the add-on's dcgm-exporter list: 20 - 7 - 2 = 11.
    # Without the node monitoring agent (its pods: test_node_health_settings.py).
    groups = [{"name": "t4"}, {"name": "l4", "instanceTypes": ["g6f.large"], "timeSlicing": {"replicas": 1}}]
    base = {"gpuNodeGroups": groups, **NO_AGENT}
    assert [p.usable_pod_slots for p in accepted(base).plans] == [22, 13]
    assert [p.usable_pod_slots for p in accepted({**base, **CLOUDWATCH}).plans] == [19, 11]


def test_the_cloudwatch_dcgm_exporter_runs_on_gr6_not_on_vgpu_slices_or_p5_4xlarge():
    # aws-observability/helm-charts 71a298f (chart 6.4.0) charts/amazon-cloudwatch-observability/values.yaml
    # dcgmExporter.affinity: gr6.4xlarge and gr6.8xlarge are listed (~893-894); p5.4xlarge, g6f.*, gr6f.* not.
    from components import catalog

    assert {
        "p5.4xlarge",
        "g6f.large",
        "g6f.xlarge",
        "g6f.2xlarge",
        "g6f.4xlarge",
        "gr6f.4xlarge",
    } == catalog.CLOUDWATCH_DCGM_EXPORTER_ABSENT
    assert "dcgm-exporter" in catalog.daemonset_pods("gr6.4xlarge", cloudwatch=True)
    assert "dcgm-exporter" not in catalog.daemonset_pods("gr6f.4xlarge", cloudwatch=True)
    # gr6.4xlarge: max pods 110 (16 vCPUs); 7 operator/NFD pods, the agent, fluent-bit and dcgm-exporter.
    assert catalog.usable_pod_slots("gr6.4xlarge", cloudwatch=True) == 100
    assert catalog.usable_pod_slots("gr6.4xlarge") == 103


def test_more_slots_than_a_node_holds_with_the_cloudwatch_pods_is_refused_with_the_verification():
    # 1 GPU x 20 = 20 slots: within g4dn.xlarge's 22 usable pods, not within 19 with the add-on.
    group = {"name": "t4", "timeSlicing": {"replicas": 20}}
    base = {"verification": {"enabled": True}, "gpuNodeGroups": [group], **NO_AGENT}
    assert accepted(base).plans[0].usable_pod_slots == 22
    (line,) = problems({**base, **CLOUDWATCH})
    assert line.startswith("gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 20; expected at most 19 for ")


def test_a_pinned_release_is_judged_only_when_it_is_a_whole_release_version():
    from components.config.instance_types import ami_release_problem

    # g6f needs release 20250610 or later (catalog.instances); a value with trailing text is not a
    # release (the field's own pattern refuses it), so this rule says nothing about it.
    assert ami_release_problem(["g6f.large"], "1.35.0-20250101") == (
        "an AMI release of 20250610 or later (<x.y.z>-20250610), or none (the latest), for g6f.large: the AL2023 "
        "NVIDIA AMI loads the driver they need (nvidia-open-grid) from release v20250610 (catalog.instances), so an "
        "older one boots them without a usable GPU"
    )
    assert ami_release_problem(["g6f.large"], "1.35.0-20250101x") is None
    assert ami_release_problem(["g6f.large"], "1.35.0-20250610") is None


def test_the_small_max_pods_table_is_the_reference_tables():
    from components import catalog
    from tests.support.reference import reference_path

    rows = [line.split() for line in reference_path("eks", "eni-max-pods.txt").read_text().splitlines()]
    table = {r[0]: int(r[1]) for r in rows if len(r) == 2 and not r[0].startswith("#")}
    assert {t: n for t, n in table.items() if n < 8} == catalog.SMALL_MAX_PODS
    assert catalog.SMALL_MAX_PODS["t3.micro"] == 4


def test_a_vpc_just_large_enough_for_one_subnets_nodes_is_accepted():
    # /24 over 2 zones: 59 - 6 = 53 per subnet (always odd, so no even need meets it exactly).
    # Without the autoscaler, at desiredSize: one g4dn.xlarge (30) and t3.micro system nodes, 5 of
    # them with a service pod (2 ENIs of 2 = 4), the others idle (1 ENI, 2); ceil(nodes / 2) per
    # subnet, the busiest: 12 nodes, 6: 30 + 5 x 4 + 2 = 52 <= 53; 13 nodes, 7: 54 > 53.
    def raw(system_nodes: int) -> dict[str, Any]:
        return {
            "autoscaler": {"enabled": False},
            "network": {"cidrBlock": "10.0.0.0/24"},
            "systemNodeGroup": {
                "instanceTypes": ["t3.micro"],
                "scaling": {"minSize": 1, "desiredSize": system_nodes, "maxSize": 14},
            },
            "gpuNodeGroups": [{"name": "g", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}}],
        }

    assert accepted(raw(12)).nodes_need_addresses(at_max=False, subnets=2) == 52
    (line,) = problems(raw(13))
    assert "each of its 2 private subnets holds 53 addresses" in line and "must hold at least 54" in line


def test_the_eni_tables_are_the_reference_instance_info():
    from components import catalog
    from tests.support.reference import reference_path

    lines = reference_path("eks", "instance-info.jsonl").read_text().splitlines()
    rows = {r["instanceType"]: (r["defaultMaxENIs"], r["ipv4AddressesPerInterface"]) for r in map(json.loads, lines)}
    assert set(catalog.GPU_ENIS) == set(catalog.GPU_INSTANCE_TYPES)
    assert {t: rows[t] for t in catalog.GPU_ENIS} == catalog.GPU_ENIS
    assert {t: rows[t] for t in catalog.SYSTEM_ENIS} == catalog.SYSTEM_ENIS
    assert min(min(enis, 2) * per_eni for enis, per_eni in rows.values()) == catalog.MIN_NODE_ADDRESSES == 4
    assert max(per_eni for _, per_eni in rows.values()) * 2 == catalog.MAX_NODE_ADDRESSES == 128
    assert (catalog.GPU_ENIS["g4dn.xlarge"], catalog.SYSTEM_ENIS["m6i.large"]) == ((3, 10), (3, 10))


def test_a_system_type_the_subnet_rule_does_not_know_warns_where_the_network_may_be_too_small():
    raw = {"systemNodeGroup": {"instanceTypes": ["m7i-flex.large"]}}
    # Counted at 4 per busy node and 2 per idle one: 2 x 30 + 2 x 4 + 2 = 70; at 128 per busy node
    # one of 2 subnets holds 30 + 2 x 128 = 286 > 117 of a /23 over 2 zones.
    small = accepted({**raw, "network": {"cidrBlock": "10.0.0.0/23"}})
    assert small.nodes_need_addresses(at_max=True) == 70
    assert warnings({**raw, "network": {"cidrBlock": "10.0.0.0/23"}}) == [
        'gpu-eks:systemNodeGroup.instanceTypes: received ["m7i-flex.large"]; expected types whose ENIs the subnet '
        "check knows (e.g. m6i.large, t3.medium), or private subnets you checked yourself: m7i-flex.large counted "
        "at 4 addresses per node, but with the VPC CNI defaults a node holds 2 ENIs of addresses (ENIs x IPv4 per "
        "ENI in the EC2 instance type's network info; m6i.large 2 x 10 = 20)"
    ]
    # The default /16 holds even 128 per node: no warning.
    assert warnings(raw) == []


def test_user_data_over_12_kib_is_refused_leaving_4_kib_of_ecs_16_for_eks():
    # EC2 user data is limited to 16 KB (botocore ec2 RequestLaunchTemplateData.UserData) and EKS merges
    # its own NodeConfig part (endpoint, base64 CA, ...) into it: our part may take 12,288 bytes.
    # Labels of a 66-character key and a 63-character value: with the boot stage's part (plan/boot.py,
    # the toolkit isolation and the stage's nodeadm drop-in: about 3.6 KB) 60 make 12,265 bytes of
    # user data, 61 12,396.
    def labels(n: int) -> dict[str, str]:
        return {f"l{i}.example.com/" + "k" * 50: "v" * 63 for i in range(n)}

    fits = accepted({"autoscaler": {"enabled": False}, "gpuNodeGroups": [{"name": "g", "labels": labels(60)}]})
    assert len(fits.gpu_node_groups[0].labels) == 60
    assert problems({"autoscaler": {"enabled": False}, "gpuNodeGroups": [{"name": "g", "labels": labels(61)}]}) == [
        "gpu-eks:gpuNodeGroups[0].labels: received 61; expected fewer or shorter labels and taints: the group's "
        "user data (its nodeadm NodeConfig and boot stage) would be 12396 bytes; at most 12288, since EC2 takes 16384 "
        "in all and EKS merges its own NodeConfig part (cluster endpoint and CA) into it"
    ]


def test_a_karpenter_groups_user_data_is_measured_as_sent():
    """A Karpenter group's user data is its EC2NodeClass's (the boot stage and a NodeConfig part with
    only the registration taints), and Karpenter writes the labels into its own part beside it: the
    rule counts both (issue 43; before, it measured the managed node group's text for every group).
    With the labels of the test above: 59 make 12,197 bytes, 60 12,328."""
    from components.plan import karpenter as objects
    from components.plan import userdata

    def labels(n: int) -> dict[str, str]:
        return {f"l{i}.example.com/" + "k" * 50: "v" * 63 for i in range(n)}

    def group(n: int) -> dict[str, Any]:
        scaling = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
        return {"name": "g", "capacityProvider": "karpenter", "scaling": scaling, "labels": labels(n)}

    fits = accepted({"gpuNodeGroups": [group(59)]}).plans[0]
    sent = objects.ec2_node_class(fits, role="r", discovery="c")["spec"]["userData"]
    assert fits.user_data == sent and [t for t, _ in userdata.parse_mime(sent)] == [
        "application/node.eks.aws",
        "text/x-shellscript",
    ]
    labels_flag = userdata.kubelet_flags(fits.node_labels, ())[0]
    assert fits.user_data_bytes == len(sent) + len(labels_flag) == 12197
    assert problems({"gpuNodeGroups": [group(60)]}) == [
        "gpu-eks:gpuNodeGroups[0].labels: received 60; expected fewer or shorter labels and taints: the group's "
        "user data (its boot stage and nodeadm NodeConfig, and the labels Karpenter writes) would be 12328 bytes; "
        "at most 12288, since EC2 takes 16384 in all and Karpenter adds its own NodeConfig part (cluster endpoint "
        "and CA) into it"
    ]


# --- Adjustable EKS quotas: warnings (a quota increase makes them valid) --------------------------


def warnings(raw: dict[str, Any]) -> list[str]:
    from components.check.warnings import settings_warnings

    return [str(w) for w in settings_warnings(accepted(raw))]


def test_node_groups_above_450_nodes_get_a_quota_warning():
    big = {"name": "g", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 451}}
    assert warnings({"gpuNodeGroups": [big], "network": {"cidrBlock": "10.0.0.0/16"}}) == [
        "gpu-eks:gpuNodeGroups[0].scaling.maxSize: received 451; expected at most 450 (the EKS quota of nodes per "
        "managed node group), or a quota increase first: EKS refuses the node group otherwise"
    ]
    assert warnings({"gpuNodeGroups": [{**big, "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 450}}]}) == []


def test_more_than_30_managed_node_groups_get_a_quota_warning():
    fixed = {"scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}}
    assert warnings({"gpuNodeGroups": [{"name": f"g{i}", **fixed} for i in range(29)]}) == []
    assert warnings({"gpuNodeGroups": [{"name": f"g{i}", **fixed} for i in range(30)]}) == [
        "gpu-eks:gpuNodeGroups: received 31; expected at most 30 managed node groups in the cluster (the EKS quota, "
        "system group included), or a quota increase first"
    ]


# --- observability.namespace: an existing namespace, so the namespace rule (63), not the 40 of names ---


def test_an_observability_namespace_of_45_characters_is_accepted():
    name45 = "monitoring-" + "m" * 34
    obs = {"enabled": True, "pipeline": "prometheus", "namespace": name45}
    assert accepted({"observability": obs}).observability.namespace == name45


def test_an_observability_namespace_of_64_characters_is_refused():
    name64 = "monitoring-" + "m" * 53
    assert problems({"observability": {"enabled": True, "pipeline": "prometheus", "namespace": name64}}) == [
        f"gpu-eks:observability.namespace: received \"{name64}\"; expected 1-63 lower-case alphanumerics or '-', "
        "alphanumeric at both ends (a Kubernetes namespace name)"
    ]
