"""Branches a user can reach that the other tests took only at their defaults (issue 17, section 5):
each with a literal, non-default value, so a one-line change to the branch fails a named test.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.check.loading import decode_config_value, load_capacity_settings, load_settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


def warnings(raw: dict[str, Any]) -> list[str]:
    return [str(w) for w in settings_warnings(load_settings({"clusterName": "c", **raw}))]


FIXED = {"name": "g", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1}}


def test_a_fixed_size_group_without_the_autoscaler_gets_no_warning():
    # minSize = desiredSize = maxSize > 0: nothing needs resizing, so nothing is missing.
    assert warnings({"autoscaler": {"enabled": False}, "gpuNodeGroups": [FIXED]}) == []
    two = {**FIXED, "scaling": {"minSize": 2, "desiredSize": 2, "maxSize": 2}}
    assert warnings({"gpuNodeGroups": [two]}) == []  # autoscaler off by default: no group can change size


def test_only_the_resizable_group_of_several_is_warned_about():
    resizable = {"name": "r", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 3}}
    assert warnings({"autoscaler": {"enabled": False}, "gpuNodeGroups": [FIXED, resizable]}) == [
        'gpu-eks:gpuNodeGroups[1].scaling: received {"desiredSize": 0, "maxSize": 3, "minSize": 0}; expected '
        "autoscaler.enabled: true, or minSize = desiredSize = maxSize > 0: with the Cluster Autoscaler disabled "
        "nothing resizes the group after creation"
    ]


def test_one_resizable_group_among_fixed_ones_turns_the_autoscaler_on():
    resizable = {"name": "r", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 2}}
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [FIXED, resizable]}).autoscaler_enabled is True
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [FIXED]}).autoscaler_enabled is False
    # GpuCapacity: off unless enabled is exactly true, whatever the groups.
    capacity = load_capacity_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": [resizable]})
    assert capacity.autoscaler_enabled is False
    on = load_capacity_settings(
        {"kubernetesVersion": "1.35", "gpuNodeGroups": [FIXED], "autoscaler": {"enabled": True}}
    )
    assert on.autoscaler_enabled is True


def test_a_cidr_with_host_bits_is_refused():
    assert problems({"endpointPublicAccessCidrs": ["203.0.113.7/24"]}) == [
        'gpu-eks:endpointPublicAccessCidrs[0]: received "203.0.113.7/24"; expected a CIDR block such as '
        "203.0.113.0/24 (host bits zero)"
    ]
    assert problems({"network": {"cidrBlock": "10.0.0.1/16"}}) == [
        'gpu-eks:network.cidrBlock: received "10.0.0.1/16"; expected a CIDR block such as 203.0.113.0/24 (host bits '
        "zero)"
    ]


def test_an_empty_tag_key_is_refused():
    assert problems({"tags": {"": "x"}}) == ['gpu-eks:tags.: received ""; expected tag keys of 1 to 128 characters']


def test_structured_config_values_are_decoded_and_anything_else_kept():
    assert decode_config_value('{"minSize": 0}') == {"minSize": 0}
    assert decode_config_value('["a", "b"]') == ["a", "b"]
    assert decode_config_value("{not json") == "{not json"
    assert decode_config_value("[") == "["
    assert decode_config_value("1.35") == "1.35"
    assert decode_config_value(7) == 7


def test_mig_strategy_none_written_out_is_accepted_and_an_unknown_one_refused():
    s = load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", "migStrategy": "none"}]})
    assert s.gpu_node_groups[0].mig_strategy == "none"
    # A group without a layout uses its GPUs whole under any strategy (the cluster's one value).
    s = load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", "migStrategy": "single"}]})
    assert s.plans[0].device_plugin_config["flags"] == {"migStrategy": "single"}
    assert problems({"gpuNodeGroups": [{"name": "g", "migStrategy": "all"}]}) == [
        "gpu-eks:gpuNodeGroups[0].migStrategy: received \"all\"; expected one of 'none', 'single' or 'mixed'"
    ]


def test_the_public_endpoint_warning_is_for_clusters_only():
    # GpuCapacity has no endpoint of its own: the cluster-only rule yields nothing for its settings.
    capacity = load_capacity_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": [FIXED]})
    assert settings_warnings(capacity) == []
