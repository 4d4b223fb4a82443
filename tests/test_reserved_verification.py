"""Issue 41, point 1: verification that does not make `pulumi up` depend on capacity that is not there
by design. A Capacity Block group gets no verification Job by default (its nodes launch only inside
the block's window), the stack outputs and the change-impact summary say so; ``verify`` runs them;
``ncclAdvisory`` declares the NCCL Job without Pulumi's await; preflight compares the reservation's
state and free instances with what the Jobs need (config/verification.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.config.verification import instances_needed
from components.preflight.reservations import check_reservation
from components.review import impact
from components.review.render import render_document
from tests.support.simulation import example, example_config, run_example
from tests.support.simulation import simulate as simulate_stack

JOB = "kubernetes:batch/v1:Job"
CR = "cr-0a1b2c3d4e5f60718"
EXAMPLE = example_config("multinode")
SKIPPED = (
    "capacityType CAPACITY_BLOCK: its nodes launch only inside the block's window, so no verification Job targets "
    "it (verification.capacityBlocks: skip); set verify for an update made inside the window"
)


def jobs_of(sim: Any, group: str) -> list[str]:
    return sorted(r.name for r in sim.by_type(JOB) if r.name.startswith(f"gpu-eks-verify-{group}-"))


def simulate(groups: tuple[dict[str, Any], ...] = (), **verification: Any) -> Any:
    """The multinode example with ``verification`` overrides, and ``groups`` beside its own."""
    return run_example(
        "multinode",
        {
            "gpu-eks:verification": {**EXAMPLE["gpu-eks:verification"], **verification},
            "gpu-eks:gpuNodeGroups": [*EXAMPLE["gpu-eks:gpuNodeGroups"], *groups],
        },
    )


# --- the example deploys with its Capacity Block group unverified ---------------------------------


def test_the_capacity_block_group_of_the_example_gets_no_job_and_the_outputs_say_why():
    sim = example("multinode")
    assert jobs_of(sim, "h100-block") == []
    # The ODCR group next to it is verified as before: warm-up, isolation, concurrent, exclusive, NCCL.
    assert jobs_of(sim, "a100-odcr") == [
        "gpu-eks-verify-a100-odcr-concurrent",
        "gpu-eks-verify-a100-odcr-exclusive",
        "gpu-eks-verify-a100-odcr-isolation",
        "gpu-eks-verify-a100-odcr-nccl",
        "gpu-eks-verify-a100-odcr-warmup",
    ]
    assert sim.outputs["verification"] == {"skipped": {"h100-block": SKIPPED}}
    # The node group itself is declared as before (the block's nodes come for pending pods).
    assert sim.one("aws:eks/nodeGroup:NodeGroup", "gpu-eks-h100-block").inputs["capacityType"] == "CAPACITY_BLOCK"


def test_verify_runs_the_capacity_block_groups_jobs_too():
    sim = simulate(capacityBlocks="verify")
    assert jobs_of(sim, "h100-block") == [
        "gpu-eks-verify-h100-block-concurrent",
        "gpu-eks-verify-h100-block-exclusive",
        "gpu-eks-verify-h100-block-isolation",
        "gpu-eks-verify-h100-block-nccl",
        "gpu-eks-verify-h100-block-warmup",
    ]
    assert "verification" not in sim.outputs


def test_an_advisory_nccl_check_is_declared_without_pulumis_await():
    sim = simulate(ncclAdvisory=True)
    annotations = {r.name: r.inputs["metadata"]["annotations"] for r in sim.by_type(JOB)}
    nccl = {n: a for n, a in annotations.items() if n.endswith("-nccl")}
    assert sorted(nccl) == ["gpu-eks-verify-a100-odcr-nccl", "gpu-eks-verify-h100-karpenter-nccl"]
    assert all(a["pulumi.com/skipAwait"] == "true" for a in nccl.values())
    # Every other Job still holds the update.
    assert [n for n, a in annotations.items() if "pulumi.com/skipAwait" in a and n not in nccl] == []
    assert sim.outputs["verification"] == {
        "skipped": {"h100-block": SKIPPED},
        "ncclAdvisory": ["a100-odcr", "h100-karpenter"],
    }


def test_only_the_nccl_groups_are_advisory_beside_a_shared_group():
    """A time-sliced group beside the exclusive EFA groups gets its Jobs, no NCCL check, and is not
    named among the advisory checks."""
    shared = {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "timeSlicing": {"replicas": 4}}
    sim = simulate((shared,), ncclAdvisory=True)
    assert jobs_of(sim, "t4") == [
        "gpu-eks-verify-t4-concurrent",
        "gpu-eks-verify-t4-isolation",
        "gpu-eks-verify-t4-warmup",
    ]
    assert sim.outputs["verification"] == {
        "skipped": {"h100-block": SKIPPED},
        "ncclAdvisory": ["a100-odcr", "h100-karpenter"],
    }


def test_the_impact_summary_says_which_groups_pulumi_up_does_not_verify():
    sim = simulate(ncclAdvisory=True)
    new = render_document(sim.resources, sim.wire_outputs, "multinode", "gpu-eks")
    notes = impact.summarize("multinode", new, new).notes
    assert [n for n in notes if "verification" in n or "NCCL" in n] == [
        f"GPU node group h100-block: pulumi up runs no verification Job on it ({SKIPPED})",
        "NCCL check of a100-odcr, h100-karpenter: declared without Pulumi's await (verification.ncclAdvisory): "
        "pulumi up does not wait for its verdict; read the Job's status and log",
    ]


# --- the settings ---------------------------------------------------------------------------------


GROUPS = [
    {
        "name": "block",
        "instanceTypes": ["p5.48xlarge"],
        "timeSlicing": {"replicas": 1},
        "capacityType": "CAPACITY_BLOCK",
        "capacityReservation": {"id": CR},
        "availabilityZone": "us-east-2a",
        "efa": True,
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    },
    {
        "name": "odcr",
        "instanceTypes": ["p4d.24xlarge"],
        "timeSlicing": {"replicas": 1},
        "capacityReservation": {"id": "cr-0f1e2d3c4b5a69788"},
        "availabilityZone": "us-east-2b",
        "efa": True,
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4},
    },
    {"name": "t4", "instanceTypes": ["g4dn.xlarge"]},
]


def settings(**verification: Any) -> Any:
    return load_settings(
        {
            "clusterName": "c",
            "gpuNodeGroups": GROUPS,
            "verification": {"enabled": True, "ncclAllReduce": True, "ncclImage": "example.com/nccl:1", **verification},
        }
    )


@pytest.mark.parametrize(
    ("verification", "needed"),
    [
        ({}, {"block": 0, "odcr": 2, "t4": 1}),
        ({"capacityBlocks": "verify"}, {"block": 2, "odcr": 2, "t4": 1}),
        ({"ncclAdvisory": True}, {"block": 0, "odcr": 1, "t4": 1}),
    ],
)
def test_the_instances_each_groups_jobs_wait_for(verification, needed):
    s = settings(**verification)
    assert {g.name: instances_needed(g, s) for g in s.gpu_node_groups} == needed


def test_without_the_verification_nothing_is_needed_or_said():
    s = load_settings({"clusterName": "c", "gpuNodeGroups": GROUPS})
    assert {g.name: instances_needed(g, s) for g in s.gpu_node_groups} == {"block": 0, "odcr": 0, "t4": 0}
    assert "verification" not in simulate_stack("prod").outputs  # prod runs no verification


def test_an_advisory_check_without_the_check_is_refused():
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "verification": {"ncclAdvisory": True}})
    assert [str(p) for p in info.value.problems] == [
        "gpu-eks:verification.ncclAdvisory: received true; expected false without verification.ncclAllReduce (no check)"
    ]


def test_capacity_blocks_takes_skip_or_verify():
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "verification": {"capacityBlocks": "defer"}})
    assert [p.key for p in info.value.problems] == ["gpu-eks:verification.capacityBlocks"]


# --- preflight: the reservation against what the Jobs need ----------------------------------------


NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def reservation(group: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    block = group.get("capacityType") == "CAPACITY_BLOCK"
    return {
        "CapacityReservationId": group["capacityReservation"]["id"],
        "InstanceType": group["instanceTypes"][0],
        "AvailabilityZone": group["availabilityZone"],
        "TotalInstanceCount": group["scaling"]["maxSize"],
        "AvailableInstanceCount": group["scaling"]["maxSize"],
        "State": "active",
        "ReservationType": "capacity-block" if block else "default",
        "StartDate": NOW - dt.timedelta(days=1),
        "EndDate": NOW + dt.timedelta(days=6),
        **overrides,
    }


def check(group: dict[str, Any], reply: dict[str, Any], needed: int) -> Any:
    g = load_settings({"clusterName": "c", "gpuNodeGroups": [group]}).gpu_node_groups[0]
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [reply]},
            {"CapacityReservationIds": [group["capacityReservation"]["id"]]},
        )
        return check_reservation(ec2, g, NOW, needed)


def test_a_verified_capacity_block_that_is_not_active_fails_preflight():
    block = GROUPS[0]
    result = check(block, reservation(block, State="scheduled"), needed=2)
    assert (result.status, result.reason) == (
        "FAIL",
        "verification.capacityBlocks is verify but the block is scheduled: pulumi up would wait for 2 node(s) of the "
        "group that cannot launch before it is active (set skip, or deploy inside the window)",
    )
    # Skipped (needed 0): a block before its window only warns that nothing launches yet.
    assert check(block, reservation(block, State="scheduled"), needed=0).status == "WARN"


def test_an_odcr_with_fewer_free_instances_than_the_nccl_check_needs_warns():
    odcr = GROUPS[1]
    result = check(odcr, reservation(odcr, AvailableInstanceCount=1), needed=2)
    assert (result.status, result.reason) == (
        "WARN",
        "the verification Jobs need 2 free instance(s) of it at once (the NCCL check two), it has 1: pulumi up waits "
        "for them until the Jobs' deadlines (verification.ncclAdvisory: true declares the NCCL check without the "
        "wait)",
    )
    assert check(odcr, reservation(odcr, AvailableInstanceCount=2), needed=2).status == "PASS"
    # A Karpenter group launches On-Demand when its reservation is full: nothing to warn.
    karpenter = {**odcr, "capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4}}
    assert check(karpenter, reservation(karpenter, AvailableInstanceCount=0), needed=2).status == "PASS"
