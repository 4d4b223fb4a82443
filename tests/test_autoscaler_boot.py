"""The Cluster Autoscaler and the boot stage: a managed MIG node that reboots before it registers.

CA deletes a node that has not registered within ``--max-node-provision-time`` (15 minutes by
default; kubernetes/autoscaler cluster-autoscaler-1.35.2 config/flags/flags.go, core/
static_autoscaler.go ``removeOldUnregisteredNodes``). On AWS the per-ASG
``autoscaling-options/maxnodeprovisiontime`` tag is not read (cloudprovider/aws/aws_manager.go
``GetAsgOptions`` at 1.32.7 to 1.36.1), so the library raises the flag itself where a group's stage
may reboot a node (components/autoscaler/values.py ``max_node_provision_time``).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.autoscaler import values as ca_values
from components.check.loading import load_settings
from components.plan import boot
from components.plan.group import plan_groups
from tests.support.simulation import example
from tests.support.tokens import RELEASE

A100_MIG = {"name": "a100", "instanceTypes": ["p4d.24xlarge"], "migStrategy": "mixed", "mig": {"layout": "all-1g.5gb"}}
H100_MIG = {"name": "h100", "instanceTypes": ["p5.48xlarge"], "migStrategy": "mixed", "mig": {"layout": "all-1g.10gb"}}
KARPENTER = {"capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}
T4 = {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "migStrategy": "mixed", "timeSlicing": {"replicas": 4}}


def plans(*groups: dict[str, Any]) -> Any:
    settings = load_settings({"clusterName": "c", "gpuNodeGroups": list(groups)})
    return plan_groups(settings.gpu_node_groups)


def test_the_unit_limit_and_the_time_to_register():
    """Two boots, each the stage's own limit (TimeoutStartSec=20min) and 10 minutes of boot
    (an assumption): 60 minutes; one boot without a reboot, 30."""
    assert "TimeoutStartSec=20min\n" in boot.unit_text()
    assert boot.minutes_to_register(reboots=True) == 60
    assert boot.minutes_to_register(reboots=False) == 30


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ((A100_MIG,), "60m"),
        ((H100_MIG,), "60m"),  # the stage's reboot path is the same on any managed MIG node
        ((T4,), None),
        ((T4, A100_MIG), "60m"),
        ((A100_MIG, T4), "60m"),
        (({**A100_MIG, **KARPENTER},), None),  # a Karpenter node never reboots
        (({**A100_MIG, **KARPENTER}, T4), None),
    ],
)
def test_the_flag_where_a_groups_stage_may_reboot(groups, expected):
    got = plans(*groups)
    assert [p.boot.reboots for p in got] == [
        "mig" in g and g.get("capacityProvider", "managed") == "managed" for g in groups
    ]
    assert ca_values.max_node_provision_time(got) == expected
    args = ca_values.extra_args(load_settings({"clusterName": "c"}).autoscaler, got)
    assert args.get("max-node-provision-time") == expected


def test_the_mig_example_renders_the_flag():
    """Through the program: the CA release of the A100 MIG example carries the flag (the chart makes
    ``--max-node-provision-time=60m`` of it: templates/deployment.yaml at cluster-autoscaler-chart-9.59.0
    renders ``--<key>=<value>`` per extraArgs entry)."""
    mig = example("mig-a100").one(RELEASE, "gpu-eks-autoscaler-release").inputs["values"]["extraArgs"]
    assert mig == {
        "scale-down-unneeded-time": "10m",
        "expander": "least-waste",
        "balance-similar-node-groups": True,
        "skip-nodes-with-local-storage": False,
        "startup-taint": "gpu-eks.io/boot-stage",
        "status-taint": "gpu-eks.io/boot-stage-failed",
        "max-node-provision-time": "60m",
    }
    # Without a managed MIG group (dev, prod: their literal extraArgs in test_promises_autoscaler.py) none.


def test_no_asg_tag_claims_a_per_group_provision_time():
    """The per-ASG option is not read by CA's AWS provider: the library writes no such tag."""
    for p in plans(A100_MIG, T4):
        assert not [k for k in p.node_template_tags if k.endswith("/maxnodeprovisiontime")]
