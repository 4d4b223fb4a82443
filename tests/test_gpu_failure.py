"""A group with one failed GPU, simulated without hardware (tests/support/standins/gpu_failure.py models the device
plugin and node repair): the slots lost before the repair and restored after it, per sharing mode
and capacity provider."""

from __future__ import annotations

from typing import Any

from components.check.loading import load_settings
from tests.support.standins.gpu_failure import GpuNode


def plan(**group: Any):
    (p,) = load_settings({"clusterName": "c", "autoscaler": {"enabled": False}, "gpuNodeGroups": [group]}).plans
    return p


KARPENTER = {"capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}


def test_a_time_sliced_t4_that_falls_off_the_bus_keeps_three_dead_slots_until_replaced():
    node = GpuNode(plan(name="t4", timeSlicing={"replicas": 4}))
    assert (node.advertised, node.working) == (4, 4)
    node.xid(0, 79)
    # One device per GPU is marked: 3 slots stay advertised on a GPU that no longer works.
    assert (node.advertised, node.working, node.condition_reason) == (3, 0, "NvidiaXID79Error")
    # Without overrides EKS reboots or replaces it as it decides (issue 41: the default form).
    assert node.repair() == "eksDefault"
    assert (node.advertised, node.working, node.condition_reason) == (4, 4, None)


def test_one_of_four_shared_gpus_with_a_double_bit_error_is_rebooted_back():
    node = GpuNode(
        plan(name="big", instanceTypes=["g4dn.12xlarge"], timeSlicing={"replicas": 4}, repair={"overrides": True})
    )
    assert (node.advertised, node.working) == (16, 16)
    node.xid(2, 48)
    assert (node.advertised, node.working) == (15, 12)
    assert node.repair() == "Reboot"
    assert (node.advertised, node.working) == (16, 16)


def test_exclusive_gpus_lose_exactly_the_failed_one():
    node = GpuNode(
        plan(name="x", instanceTypes=["g4dn.12xlarge"], timeSlicing={"replicas": 1}, repair={"overrides": True})
    )
    node.xid(1, 79)
    assert (node.advertised, node.working) == (3, 3)
    assert node.repair() == "Replace"
    assert (node.advertised, node.working) == (4, 4)


def test_an_application_xid_loses_nothing_and_repairs_nothing():
    node = GpuNode(plan(name="t4", timeSlicing={"replicas": 4}))
    node.xid(0, 13)
    assert (node.advertised, node.working, node.condition_reason, node.repair()) == (4, 4, None, "none")


def test_an_xid_the_agent_does_not_know_only_alerts():
    node = GpuNode(plan(name="t4", timeSlicing={"replicas": 4}))
    node.xid(0, 92)  # not in WellKnownXidCodes: a Warning event, no condition
    assert (node.advertised, node.working, node.condition_reason, node.repair()) == (3, 0, None, "none")


def test_a_lost_dcgm_host_engine_only_alerts_on_a_managed_group_and_replaces_on_karpenter():
    managed = GpuNode(plan(name="t4", timeSlicing={"replicas": 4}))
    managed.lose_dcgm()
    assert (managed.repair(), managed.condition_reason, managed.advertised) == ("alertOnly", "DCGMError", 4)
    karpenter = GpuNode(plan(name="l4", instanceTypes=["g6.xlarge"], timeSlicing={"replicas": 4}, **KARPENTER))
    karpenter.lose_dcgm()
    assert (karpenter.repair(), karpenter.condition_reason) == ("Replace", None)


def test_a_karpenter_group_replaces_what_a_managed_group_reboots():
    node = GpuNode(plan(name="l4", instanceTypes=["g6.12xlarge"], timeSlicing={"replicas": 2}, **KARPENTER))
    node.xid(3, 48)
    assert (node.advertised, node.working) == (7, 6)
    assert node.repair() == "Replace"
    assert (node.advertised, node.working) == (8, 8)


def test_repair_off_leaves_the_node_as_it_is():
    node = GpuNode(plan(name="t4", timeSlicing={"replicas": 4}, repair={"enabled": False}))
    node.xid(0, 79)
    assert (node.repair(), node.advertised, node.working) == ("alertOnly", 3, 0)


def test_a_row_remap_failure_replaces_the_node_a_reboot_would_keep_it_on():
    """XID 64: the row remap could not be recorded, so a reset brings the bad row back (issue 41)."""
    node = GpuNode(
        plan(name="x", instanceTypes=["g4dn.12xlarge"], timeSlicing={"replicas": 1}, repair={"overrides": True})
    )
    node.xid(3, 64)
    assert (node.advertised, node.condition_reason) == (3, "NvidiaXID64Error")
    assert node.repair() == "Replace"
    assert node.advertised == 4
