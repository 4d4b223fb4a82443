"""``migStrategy: single`` with time-slicing on the slices (issue 31 item 6): a p4de with
``{3g.40gb: 2}`` per GPU and 3 replicas advertises 8 x 2 x 3 = 48 ``nvidia.com/gpu`` everywhere the
count is used: the plan, the ASG's template tags, Karpenter's NodeOverlay, the verification, a
team's quota. And a two-profile custom layout under single is refused at its key (the device
plugin would refuse the node: k8s-device-plugin internal/rm/device_map.go requireUniformMIGDevices,
v0.17.2-v0.20.0)."""

from __future__ import annotations

from typing import Any

from components.check import teams
from components.check.loading import load_settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError
from components.plan import asg
from components.plan import karpenter as objects
from components.verification import mig as mig_verification

P4DE_SHARED = {
    "name": "a100",
    "instanceTypes": ["p4de.24xlarge"],
    "migStrategy": "single",
    "mig": {"migDevices": {"3g.40gb": 2}, "replicas": {"3g.40gb": 3}},
    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
}


def settings(group: dict[str, Any], **extra: Any) -> Any:
    return load_settings({"clusterName": "c", "gpuNodeGroups": [group], **extra})


def test_the_plan_advertises_48_slots():
    (p,) = settings(P4DE_SHARED).plans
    assert dict(p.advertised_resources) == {"nvidia.com/gpu": 48}
    assert (p.resource_name, p.slots_per_node, p.slots_at_max_size) == ("nvidia.com/gpu", 48, 96)
    assert dict(p.device_plugin_config) == {
        "version": "v1",
        "flags": {"migStrategy": "single"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 3}],
            }
        },
    }
    # The boot stage cuts two 3g.40gb per GPU, at memory slices 0 and 4.
    assert 'MIG_CREATE="3g.40gb:0,3g.40gb:4"' in p.boot.script
    assert "GPUS=8\n" in p.boot.script


def test_the_asg_template_and_the_node_overlay_say_48():
    (p,) = settings(P4DE_SHARED).plans
    tags = asg.asg_tags(dict(p.node_template_tags), "c")
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "48"
    assert tags["k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator"] == "nvidia-tesla-a100"
    (k,) = settings({**P4DE_SHARED, "capacityProvider": "karpenter"}).plans
    assert objects.needs_overlay(k)
    assert objects.node_overlay(k)["spec"]["capacity"] == {"nvidia.com/gpu": "48"}


def test_the_verification_runs_48_pods_on_one_node():
    (p,) = settings(P4DE_SHARED).plans
    ((resource, spec),) = mig_verification.mig_job_specs(p, "probe:1").items()
    assert (resource, spec["parallelism"], spec["completions"]) == ("nvidia.com/gpu", 48, 48)
    assert spec["template"]["spec"]["containers"][0]["args"] == ['exec python3 -c "$MIG_PROBE" 3g.40gb 3 180']


def test_a_teams_quota_counts_48_per_node():
    team = {"name": "ml", "quota": {"nvidia.com/gpu": 96}, "nodeGroups": ["a100"]}
    s = settings(P4DE_SHARED, teams=[team])
    assert teams.slots_at_max_size(s.plans, "nvidia.com/gpu") == 96
    assert not [w for w in settings_warnings(s) if "quota" in str(w)]
    over = settings(P4DE_SHARED, teams=[{**team, "quota": {"nvidia.com/gpu": 97}}])
    assert teams.oversubscribed_quotas(over.teams, over.plans) == [
        (0, "nvidia.com/gpu", 97, 96, "the team's node groups")
    ]


def test_a_two_profile_custom_layout_under_single_is_refused_at_its_key():
    group = {**P4DE_SHARED, "mig": {"migDevices": {"3g.40gb": 1, "2g.20gb": 2}}}
    try:
        settings(group)
    except ConfigError as err:
        assert [str(p) for p in err.problems] == [
            'gpu-eks:gpuNodeGroups[0].mig.migDevices: received {"2g.20gb": 2, "3g.40gb": 1}; expected one profile '
            "with migStrategy single (this layout has 3g.40gb, 2g.20gb): under single the device plugin refuses a "
            "node whose MIG devices differ (NVIDIA/k8s-device-plugin internal/rm/device_map.go "
            "requireUniformMIGDevices (v0.17.2-v0.20.0)); use mixed"
        ]
    else:
        raise AssertionError("a two-profile layout under single was accepted")
