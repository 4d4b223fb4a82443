"""Issues 32, 41: preflight of multi-node groups (components/preflight/reservations.py, efa.py), read-only.

The zone offering runs under moto (its DescribeInstanceTypeOfferings data). moto 5.2.5 implements
no Capacity Reservation API, so the reservation check runs against botocore's Stubber, which
checks every request and reply against botocore's ``ec2`` model (DescribeCapacityReservations)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from components.check.loading import load_settings
from components.preflight.efa import check_vpc_cni, efa_only_groups
from components.preflight.reservations import check_reservation, check_zone_offering
from components.preflight.run import run_checks
from tests.support.environment import TODAY
from tests.support.preflight import REGION, VERSION, client, cluster_version, seed_eks_amis
from tests.support.preflight import StubbedSession as _Session
from tests.support.preflight import eks_with_versions as _eks_with_versions

CR = "cr-0123456789abcdef0"
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
START = dt.datetime(2026, 11, 30, 11, 30, tzinfo=dt.UTC)


def group(**keys: Any) -> Any:
    return load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", **keys}]}).gpu_node_groups[0]


BLOCK = {
    "instanceTypes": ["p5.48xlarge"],
    "timeSlicing": {"replicas": 1},
    "capacityType": "CAPACITY_BLOCK",
    "capacityReservation": {"id": CR},
    "availabilityZone": "us-east-2a",
    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
}
ODCR = {
    "instanceTypes": ["p4d.24xlarge"],
    "timeSlicing": {"replicas": 1},
    "capacityReservation": {"id": CR},
    "availabilityZone": "us-east-2b",
    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4},
}


# --- zone offering, under moto ------------------------------------------------------------------


@mock_aws
def test_the_zone_offers_the_type():
    ec2 = boto3.client("ec2", region_name="us-east-2")
    result = check_zone_offering(ec2, group(**BLOCK))
    assert (result.check, result.status, result.reason) == ("zone-offering:g", "PASS", "us-east-2a offers p5.48xlarge")


@mock_aws
def test_a_zone_without_the_type_fails_naming_those_with_it():
    ec2 = boto3.client("ec2", region_name="us-west-2")
    result = check_zone_offering(
        ec2, group(instanceTypes=["p5e.48xlarge"], timeSlicing={"replicas": 1}, availabilityZone="us-west-2a")
    )
    assert (result.status, result.reason) == (
        "FAIL",
        "us-west-2a does not offer p5e.48xlarge (gpuNodeGroups[g].availabilityZone); zones that do: "
        "p5e.48xlarge: us-west-2c",
    )


# --- the reservation, against botocore's model ----------------------------------------------------


def reservation(**overrides: Any) -> dict[str, Any]:
    return {
        "CapacityReservationId": CR,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-2a",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "StartDate": START,
        "EndDate": dt.datetime(2026, 12, 14, 11, 30, tzinfo=dt.UTC),
        **overrides,
    }


def check(settings: dict[str, Any], reply: dict[str, Any], now: dt.datetime = NOW) -> Any:
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations", {"CapacityReservations": [reply]}, {"CapacityReservationIds": [CR]}
        )
        result = check_reservation(ec2, group(**settings), now)
        stub.assert_no_pending_responses()
    return result


def test_an_active_capacity_block_reports_its_window():
    result = check(BLOCK, reservation())
    assert (result.check, result.status) == ("capacity-reservation:g", "PASS")
    assert result.reason == (
        "cr-0123456789abcdef0 is active; its window is 2026-11-30T11:30:00+00:00 to 2026-12-14T11:30:00+00:00"
    )
    assert dict(result.details) == {
        "id": CR,
        "state": "active",
        "reservation_type": "capacity-block",
        "instance_type": "p5.48xlarge",
        "zone": "us-east-2a",
        "total_instances": 2,
        "available_instances": 2,
        "start": "2026-11-30T11:30:00+00:00",
        "end": "2026-12-14T11:30:00+00:00",
        "placement_group_arn": None,
    }


def test_a_capacity_block_ending_soon_warns_with_the_scale_in_time():
    result = check(BLOCK, reservation(EndDate=dt.datetime(2026, 12, 1, 18, 30, tzinfo=dt.UTC)))
    assert (result.status, result.reason) == (
        "WARN",
        "it ends in 6h30m: drain and scale the group to 0 before 2026-12-01T18:00:00+00:00 (EC2 terminates what "
        "still runs)",
    )


def test_a_scheduled_block_warns():
    result = check(BLOCK, reservation(State="scheduled"), now=START - dt.timedelta(days=2))
    assert (result.status, result.reason) == (
        "WARN",
        "cr-0123456789abcdef0 is scheduled: no node launches into it until it is active",
    )


def test_an_expired_reservation_wrong_type_and_zone_fail_together():
    result = check(ODCR, reservation(State="expired", ReservationType="default", InstanceType="p5.48xlarge"))
    assert result.status == "FAIL"
    assert result.reason == (
        "cr-0123456789abcdef0 is expired: nothing launches into it; it holds p5.48xlarge, not p4d.24xlarge; it is in "
        "us-east-2a, the group's availabilityZone is us-east-2b"
    )


def test_an_odcr_smaller_than_max_size_warns_that_launches_beyond_it_fail():
    # EC2 never falls back to On-Demand from a reservation targeted by id (issue 41).
    result = check(
        ODCR,
        reservation(ReservationType="default", InstanceType="p4d.24xlarge", AvailabilityZone="us-east-2b"),
    )
    assert (result.status, result.reason) == (
        "WARN",
        "it holds 2 instance(s), maxSize is 4: launches beyond it fail (EC2 does not fall back to On-Demand from a "
        "reservation targeted by id)",
    )


def test_a_karpenter_odcr_smaller_than_max_size_warns_that_karpenter_runs_the_rest_on_demand():
    karpenter = {**ODCR, "capacityProvider": "karpenter"}
    result = check(
        karpenter,
        reservation(ReservationType="default", InstanceType="p4d.24xlarge", AvailabilityZone="us-east-2b"),
    )
    assert (result.status, result.reason) == (
        "WARN",
        "it holds 2 instance(s), maxSize is 4: Karpenter launches the others On-Demand (its NodePool allows "
        "on-demand beside reserved)",
    )


def test_a_capacity_block_on_an_on_demand_group_fails():
    result = check(ODCR, reservation(InstanceType="p4d.24xlarge", AvailabilityZone="us-east-2b", TotalInstanceCount=4))
    assert (result.status, result.reason) == (
        "FAIL",
        "it is a Capacity Block: capacityType must be CAPACITY_BLOCK (a block is launched with market type "
        "capacity-block)",
    )


def test_an_unknown_reservation_fails():
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "describe_capacity_reservations", service_error_code="InvalidCapacityReservationId.NotFound"
        )
        result = check_reservation(ec2, group(**BLOCK), NOW)
    assert (result.status, result.reason) == ("FAIL", "cr-0123456789abcdef0 does not exist in this account and region")


@pytest.mark.parametrize("state", ["cancelled", "failed", "payment-failed"])
def test_unusable_states_fail(state):
    assert check(BLOCK, reservation(State=state)).status == "FAIL"


# --- run_checks: both checks for each zoned, reserved group -----------------------------------------


class _Ec2WithReservations:
    """moto's EC2 client, with DescribeCapacityReservations (which moto lacks) answered from
    ``reply`` after botocore's validator accepts the request."""

    def __init__(self, ec2: Any, reply: dict[str, Any]):
        self._ec2, self._reply = ec2, reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)

    def describe_capacity_reservations(self, **params: Any) -> dict[str, Any]:
        from botocore.validate import validate_parameters

        validate_parameters(
            params, self._ec2.meta.service_model.operation_model("DescribeCapacityReservations").input_shape
        )
        return {"CapacityReservations": [self._reply]}


@pytest.mark.usefixtures("aws")
def test_run_checks_reads_the_zone_and_the_reservation() -> None:
    seed_eks_amis()
    ec2 = _Ec2WithReservations(client("ec2"), reservation(AvailabilityZone="us-west-2a"))
    # The test region is us-west-2: the block's zone there.
    settings = load_settings(
        {
            "clusterName": "c",
            "kubernetesVersion": VERSION,
            "gpuNodeGroups": [{"name": "g", **BLOCK, "availabilityZone": "us-west-2a"}],
        }
    )
    session = _Session(eks=_eks_with_versions(cluster_version("1.35")), ec2=ec2)
    results = {r.check: r for r in run_checks(settings, REGION, session=session, today=TODAY, now=NOW)}  # type: ignore[arg-type]
    assert results["zone-offering:g"].status == "PASS"
    assert results["capacity-reservation:g"].status == "PASS"
    assert results["capacity-reservation:g"].details["end"] == "2026-12-14T11:30:00+00:00"
    # A Capacity Block has no vCPU quota code: no quota check (and no quota call) for it.
    assert not [c for c in results if c.startswith("vcpu-quota")]


# --- the VPC CNI of an existing cluster with efa-only interfaces (issue 41) ---------------------------


P4D_EFA = {
    "instanceTypes": ["p4d.24xlarge"],
    "timeSlicing": {"replicas": 1},
    "efa": True,
    "availabilityZone": "us-east-2b",
}


def eks_stub(addon: dict[str, Any] | None, cluster: bool = True) -> tuple[Any, Stubber]:
    eks = boto3.client("eks", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(eks)
    if not cluster:
        stub.add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "c"})
        return eks, stub
    stub.add_response("describe_cluster", {"cluster": {"name": "c"}}, {"name": "c"})
    if addon is None:
        stub.add_client_error(
            "describe_addon", "ResourceNotFoundException", expected_params={"clusterName": "c", "addonName": "vpc-cni"}
        )
    else:
        stub.add_response("describe_addon", {"addon": addon}, {"clusterName": "c", "addonName": "vpc-cni"})
    return eks, stub


def vpc_cni(addon: dict[str, Any] | None, *groups: dict[str, Any], cluster: bool = True) -> Any:
    eks, stub = eks_stub(addon, cluster)
    settings = [group(**g) for g in (groups or (P4D_EFA,))]
    with stub:
        result = check_vpc_cni(eks, "c", settings)
        stub.assert_no_pending_responses()
    return result


def test_which_groups_have_efa_only_interfaces():
    zero = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
    assert efa_only_groups([group(**P4D_EFA)]) == ["g"]
    # One card: its one interface is efa on a managed group, no efa-only.
    single = {"instanceTypes": ["g6.12xlarge"], "efa": True, "availabilityZone": "us-east-2b"}
    assert efa_only_groups([group(**single)]) == []
    # A Karpenter group's card 0 EFA is an efa-only interface beside the primary.
    assert efa_only_groups([group(**single, capacityProvider="karpenter", scaling=zero)]) == ["g"]
    assert efa_only_groups([group(instanceTypes=["p4d.24xlarge"], timeSlicing={"replicas": 1})]) == []


def test_an_old_vpc_cni_fails():
    result = vpc_cni({"addonName": "vpc-cni", "addonVersion": "v1.18.3-eksbuild.3"})
    assert (result.check, result.status, result.reason) == (
        "vpc-cni",
        "FAIL",
        "vpc-cni v1.18.3-eksbuild.3 on c: the efa-only interfaces of g need v1.18.5 or later (EKS User Guide, "
        "node-efa); update the add-on first",
    )


@pytest.mark.parametrize("version", ["v1.18.5-eksbuild.1", "v1.20.4-eksbuild.2"])
def test_a_vpc_cni_from_1_18_5_passes(version):
    result = vpc_cni({"addonName": "vpc-cni", "addonVersion": version})
    assert (result.status, result.reason) == ("PASS", f"vpc-cni {version} takes efa-only interfaces (g)")


def test_a_self_managed_vpc_cni_warns_what_to_check():
    result = vpc_cni(None)
    assert (result.status, result.reason) == (
        "WARN",
        "c has no vpc-cni add-on (a self-managed VPC CNI?): the aws-node image must be v1.18.5 or later for the "
        "efa-only interfaces of g",
    )


def test_a_cluster_the_program_creates_or_groups_without_efa_only_are_not_checked():
    assert vpc_cni(None, cluster=False) is None
    eks = boto3.client("eks", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(eks) as stub:  # no call at all
        assert check_vpc_cni(eks, "c", [group(instanceTypes=["g6.xlarge"])]) is None
        stub.assert_no_pending_responses()


# --- a reservation in a cluster placement group (issue 41) -------------------------------------------

PG_ARN = "arn:aws:ec2:us-east-2:123456789012:placement-group/odcr-pg"


def test_a_reservation_in_a_placement_group_needs_the_group_to_name_it():
    in_pg = reservation(
        ReservationType="default", InstanceType="p4d.24xlarge", AvailabilityZone="us-east-2b", TotalInstanceCount=4
    )
    in_pg["PlacementGroupArn"] = PG_ARN
    result = check({**ODCR, "placementGroup": "odcr-pg"}, in_pg)
    assert (result.status, result.details["placement_group_arn"]) == ("PASS", PG_ARN)
    assert "it is in placement group odcr-pg, the group's placementGroup" in result.reason
    for keys, have in (
        ({}, "the group names none"),
        ({"placement": "cluster"}, "placement: cluster creates another"),
        ({"placementGroup": "other"}, "placementGroup is other"),
    ):
        result = check({**ODCR, **keys}, in_pg)
        assert (result.status, result.reason) == (
            "FAIL",
            f"it was created in placement group odcr-pg: only instances launched into it use it, and {have} (set "
            "placementGroup: odcr-pg)",
        )
