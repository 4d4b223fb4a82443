"""Defects the property tests (tests/test_properties.py) found, each as a plain example: the input
Hypothesis reduced it to, and the rule that now refuses it (or the fix)."""

from __future__ import annotations

import pytest

from components.check.loading import load_settings
from components.config.errors import ConfigError
from tests.support.contract import render_pure


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "ml", **raw})
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_an_empty_mig_layout_is_refused_on_its_key(strategy):
    # Found: RuntimeError "generator raised StopIteration" in plan_group under mixed, and
    # "min() arg is an empty sequence" in the dashboard under single. The rule: config/mig.py
    # EMPTY_LAYOUT (mig-parted's all-enabled: MIG on, no slice, nothing advertised).
    group = {"name": "a", "instanceTypes": ["p4d.24xlarge"], "migStrategy": strategy, "mig": {"migDevices": {}}}
    (problem,) = problems({"gpuNodeGroups": [group]})
    assert problem.startswith("gpu-eks:gpuNodeGroups[0].mig.migDevices: received {}; expected at least one MIG profile")


KARPENTER = {"capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1}}


@pytest.mark.parametrize(
    "group",
    [
        # 45 labels: 60 ASG tags for a managed group, over EC2 Auto Scaling's 50.
        {"labels": {f"example.com/k{i}": "v" for i in range(45)}},
        # A label key whose CA template tag key would be over 128 characters.
        {"labels": {"a" * 20 + ".example.com/" + "k" * 63: "v"}},
        # Two taints of one key (kubelet allows it: unique by key and effect), one ASG taint tag.
        {"taints": [{"key": "dedicated", "effect": "NoSchedule"}, {"key": "dedicated", "effect": "NoExecute"}]},
    ],
    ids=["tag-count", "tag-key-length", "taint-per-key"],
)
def test_a_karpenter_group_is_not_held_to_the_rules_of_an_asg_it_does_not_have(group):
    # Found exploring what the properties refuse: with autoscaler.enabled, the ASG tag rules
    # (check/autoscaler.py) refused a Karpenter group, which has no ASG (nodegroups/component.py
    # declares neither a managed node group nor an ASG tag for it). The fix: those rules skip it;
    # the same group as a managed node group is still refused.
    raw = {"clusterName": "ml", "autoscaler": {"enabled": True}}
    settings = load_settings({**raw, "gpuNodeGroups": [{"name": "a", **group, **KARPENTER}]})
    assert settings.gpu_node_groups[0].capacity_provider == "karpenter"
    render_pure(settings, "ml")  # its NodePool, EC2NodeClass, NodeOverlay and user data pass their CRDs
    managed = problems({**raw, "gpuNodeGroups": [{"name": "a", **group}]})
    assert any("while the Cluster Autoscaler is enabled" in p or "ASG would need" in p for p in managed), managed
