"""Issue 32: what an EFA group's nodes advertise (the plan), through the autoscaler's node template
and the teams' quotas, with every sharing mode (exclusive, time-sliced, MPS, MIG)."""

from __future__ import annotations

from typing import Any

import pytest

from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.plan.group import plan_group

TEMPLATE = "k8s.io/cluster-autoscaler/node-template/resources/"


def settings(group: dict[str, Any], **extra: Any) -> Any:
    return load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", **group}], **extra})


def plan(**group: Any) -> Any:
    # An EFA group names its one zone (config/multinode.py, issue 41).
    zone = {"availabilityZone": "us-west-2a"} if group.get("efa") else {}
    return plan_group(settings({**zone, **group}).gpu_node_groups[0])


def resource_tags(p: Any) -> dict[str, str]:
    return {k.removeprefix(TEMPLATE): v for k, v in p.node_template_tags.items() if k.startswith(TEMPLATE)}


def test_without_efa_nothing_changes():
    p = plan(instanceTypes=["p5.48xlarge"], timeSlicing={"replicas": 1})
    assert p.efa_devices == 0
    assert dict(p.node_resources) == {"nvidia.com/gpu": 8}
    assert resource_tags(p) == {"nvidia.com/gpu": "8"}


@pytest.mark.parametrize(
    ("group", "resources"),
    [
        ({"instanceTypes": ["p5.48xlarge"], "timeSlicing": {"replicas": 1}}, {"nvidia.com/gpu": 8}),
        ({"instanceTypes": ["p5.48xlarge"], "timeSlicing": {"replicas": 2}}, {"nvidia.com/gpu": 16}),
        ({"instanceTypes": ["p5.48xlarge"], "mps": {"replicas": 4}}, {"nvidia.com/gpu": 32}),
        (
            {"instanceTypes": ["p5.48xlarge"], "migStrategy": "mixed", "mig": {"layout": "all-3g.40gb"}},
            {"nvidia.com/mig-3g.40gb": 16},
        ),
    ],
    ids=["exclusive", "time-sliced", "mps", "mig-mixed"],
)
def test_efa_composes_with_every_sharing_mode(group, resources):
    p = plan(**group, efa=True)
    assert p.efa_devices == 32
    assert dict(p.advertised_resources) == resources
    assert dict(p.node_resources) == {**resources, "vpc.amazonaws.com/efa": 32}
    assert resource_tags(p)["vpc.amazonaws.com/efa"] == "32"
    for name, count in resources.items():
        assert resource_tags(p)[name] == str(count)


def test_efa_devices_per_family():
    assert plan(instanceTypes=["p4d.24xlarge"], timeSlicing={"replicas": 1}, efa=True).efa_devices == 4
    assert plan(instanceTypes=["p5en.48xlarge"], timeSlicing={"replicas": 1}, efa=True).efa_devices == 16
    assert plan(instanceTypes=["g6.12xlarge"], efa=True).efa_devices == 1


def _teams(quota: dict[str, int], efa: bool) -> Any:
    groups = [
        {
            "name": "train",
            "instanceTypes": ["p4d.24xlarge"],
            "timeSlicing": {"replicas": 1},
            "efa": efa,
            "availabilityZone": "us-west-2a",
        },
        {"name": "infer", "instanceTypes": ["g6.xlarge"]},
    ]
    return load_settings(
        {
            "clusterName": "c",
            "gpuNodeGroups": groups,
            "teams": [{"name": "ml", "nodeGroups": ["train"], "quota": quota}],
        }
    )


def test_a_team_quota_may_name_efa_of_its_efa_group():
    s = _teams({"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}, efa=True)
    assert s.teams[0].quota == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}


def test_a_team_quota_on_efa_without_an_efa_group_is_refused():
    with pytest.raises(ConfigError) as info:
        _teams({"vpc.amazonaws.com/efa": 4}, efa=False)
    assert [str(p) for p in info.value.problems] == [
        'gpu-eks:teams[0].quota.vpc.amazonaws.com/efa: received "vpc.amazonaws.com/efa"; expected a resource the '
        "team's node groups advertise (nvidia.com/gpu): a pod asking for another never lands on them"
    ]


# --- the cold-start model's view of reserved capacity --------------------------------------------

CR = "cr-0123456789abcdef0"
BLOCK = {
    "instanceTypes": ["p5.48xlarge"],
    "timeSlicing": {"replicas": 1},
    "capacityType": "CAPACITY_BLOCK",
    "capacityReservation": {"id": CR},
    "availabilityZone": "us-east-2a",
    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
}


def test_the_cold_start_model_says_a_capacity_block_runs_only_in_its_window():
    from components.coldstart.model import cold_start_model, render_text

    p = plan(**BLOCK)
    assert cold_start_model(p, 10).capacity == (
        "only inside the Capacity Block's window (preflight prints its start and end): before it the launch fails and "
        "the pod stays pending (the Cluster Autoscaler backs the group off and retries; Karpenter finds no reserved "
        "offering); at its end EC2 terminates the nodes"
    )
    assert "  capacity: only inside the Capacity Block's window" in render_text((p,), 10, "t")


ARN = "arn:aws:resource-groups:us-west-2:123456789012:group/odcrs"


@pytest.mark.parametrize(
    ("group", "note"),
    [
        (
            {"capacityReservation": {"id": CR}, "availabilityZone": "us-west-2a"},
            "only into the Capacity Reservation while it has a free instance: else the launch fails (EC2 does not "
            "fall back to On-Demand from a reservation targeted by id) and the pod stays pending",
        ),
        (
            {
                "capacityReservation": {"id": CR},
                "capacityProvider": "karpenter",
                "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            },
            "into the Capacity Reservation while it has a free instance, else On-Demand (Karpenter's own fallback: EC2 "
            "never falls back from a reservation targeted by id)",
        ),
        (
            {"capacityReservation": {"resourceGroupArn": ARN}},
            "into a reservation of the group while one has a free instance, else On-Demand (EC2's fallback)",
        ),
        (
            {"capacityReservation": {"resourceGroupArn": ARN, "preference": "capacity-reservations-only"}},
            "only into a reservation of the group while one has a free instance: else the launch fails",
        ),
        (
            {"capacityReservation": {"preference": "capacity-reservations-only"}},
            "only while an open Capacity Reservation has a free instance: else the launch fails",
        ),
        ({"capacityReservation": {"preference": "open"}}, ""),
        ({}, ""),
    ],
)
def test_the_cold_start_model_of_reservations(group, note):
    from components.coldstart.model import cold_start_model

    assert (
        cold_start_model(plan(instanceTypes=["p4d.24xlarge"], timeSlicing={"replicas": 1}, **group), 10).capacity
        == note
    )
