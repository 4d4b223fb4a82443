"""gpu-operator values: every path exists upstream (all validated chart versions), tolerations
keep the chart's entries, NFD runs only on GPU nodes, the sharing config is consistent."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest
import yaml

from components.catalog import gpu_operator as chart
from components.catalog import labels
from components.catalog.charts import GPU_OPERATOR
from components.check.loading import load_settings
from components.config.groups import Taint
from components.gpu_operator import values as operator_values
from components.plan import device_plugin, placement
from components.plan.group import GroupPlan, plan_groups
from tests.support.chart_values import FREE_FORM, NFD, leaf_paths
from tests.support.reference import CHART_VERSIONS, load_reference_yaml, reference_path
from tests.support.standins.scheduling import node_matches_affinity


def lookup(tree: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(tree, Mapping) or key not in tree:
            return False, None
        tree = tree[key]
    return True, tree


def reference_default(version: str, path: tuple[str, ...]) -> tuple[bool, Any]:
    """Look ``path`` up in the chart's values.yaml, then (for NFD paths) the subchart's."""
    found, default = lookup(load_reference_yaml("gpu-operator", version, "values.yaml"), path)
    if not found and path[0] == NFD:
        sub = load_reference_yaml("gpu-operator", version, "charts", NFD, "values.yaml")
        found, default = lookup(sub, path[1:])
    return found, default


def groups(*specs: dict, autoscaler: bool = True) -> tuple[GroupPlan, ...]:
    """The plans of the GPU node groups of a cluster config (what GpuOperator computes its values from)."""
    raw = {"clusterName": "c", "gpuNodeGroups": list(specs), "autoscaler": {"enabled": autoscaler}}
    return plan_groups(load_settings(raw).gpu_node_groups)


DEFAULT_GROUPS = groups({"name": "t4"})
CUSTOM_GROUPS = groups(
    {"name": "a", "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]},
    {
        "name": "b",
        "instanceTypes": ["g4dn.12xlarge"],
        "timeSlicing": {"replicas": 2},
        "taints": [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "spot", "effect": "NoExecute"},
        ],
    },
)


@pytest.mark.parametrize("version", CHART_VERSIONS)
@pytest.mark.parametrize("node_groups", [DEFAULT_GROUPS, CUSTOM_GROUPS], ids=["default", "custom"])
def test_every_values_path_exists_in_the_chart(version, node_groups):
    values = operator_values.gpu_operator_values(node_groups, version)
    paths = list(leaf_paths(values))
    assert ("devicePlugin", "config", "data") in paths and (NFD, "worker", "affinity") in paths
    for path in paths:
        found, default = reference_default(version, path)
        assert found, f"{'.'.join(path)} is not a value of gpu-operator {version}"
        mine = lookup(values, path)[1]
        if default not in (None, "") and path[-1] not in FREE_FORM:
            assert type(mine) is type(default), f"{'.'.join(path)}: {type(mine)} vs chart {type(default)}"


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_chart_defaults_table_matches_upstream(version):
    row = chart.SUPPORTED_CHART_VERSIONS[version]
    values = load_reference_yaml("gpu-operator", version, "values.yaml")
    assert list(row.daemonset_tolerations) == values["daemonsets"]["tolerations"]
    assert list(row.nfd_worker_tolerations) == values[NFD]["worker"]["tolerations"]
    lock = load_reference_yaml("gpu-operator", version, "Chart.lock")
    (dep,) = [d for d in lock["dependencies"] if d["name"] == NFD]
    assert dep["version"] == row.nfd_chart_version


def test_supported_versions_are_published_in_the_chart_repository():
    index = load_reference_yaml("gpu-operator", "gh-pages-stable-index.yaml")
    published = {e["version"] for e in index["entries"]["gpu-operator"]}
    assert set(chart.SUPPORTED_CHART_VERSIONS) <= published
    newest = max(chart.SUPPORTED_CHART_VERSIONS, key=lambda v: tuple(int(x) for x in v[1:].split(".")))
    assert newest == chart.DEFAULT_CHART_VERSION


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_driver_and_toolkit_off_cdi_pinned(version):
    values = operator_values.gpu_operator_values(DEFAULT_GROUPS, version)
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert values["cdi"] == {"enabled": False}
    assert operator_values.gpu_operator_values(DEFAULT_GROUPS, version, cdi_enabled=True)["cdi"] == {"enabled": True}


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_tolerations_keep_chart_entries_and_tolerate_every_taint(version):
    values = operator_values.gpu_operator_values(CUSTOM_GROUPS, version)
    row = chart.SUPPORTED_CHART_VERSIONS[version]
    taints = [t for g in CUSTOM_GROUPS for t in g.taints]
    assert {t.key for t in taints} == {"dedicated", "nvidia.com/gpu", "spot"}
    for got, chart_own in [
        (values["daemonsets"]["tolerations"], row.daemonset_tolerations),
        (values[NFD]["worker"]["tolerations"], row.nfd_worker_tolerations),
    ]:
        assert got[: len(chart_own)] == list(chart_own), "the chart's own entries come first, unchanged"
        for taint in taints:
            assert any(placement.tolerates(t, taint) for t in got), f"{taint} not tolerated by {got}"
        # nvidia.com/gpu=true:NoSchedule is already tolerated by the chart's Exists entry: not added twice.
        assert sum(t["key"] == "nvidia.com/gpu" for t in got) == 1


def test_tolerates_is_kubernetes_semantics():
    taint = Taint(key="dedicated", value="ml", effect="NoSchedule")
    assert placement.tolerates({"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}, taint)
    assert placement.tolerates({"key": "dedicated", "operator": "Exists"}, taint)
    assert placement.tolerates({"operator": "Exists"}, taint)
    assert not placement.tolerates(
        {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}, taint
    )
    assert not placement.tolerates({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, taint)
    assert not placement.tolerates({"key": "other", "operator": "Exists"}, taint)


SYSTEM_NODE = {
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": "m6i.large",
    "eks.amazonaws.com/nodegroup": "gpu-eks-cluster-system",
}


def test_nfd_worker_runs_only_on_gpu_nodes():
    affinity = operator_values.gpu_operator_values(CUSTOM_GROUPS, "v26.7.0")[NFD]["worker"]["affinity"]
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": key, "operator": "Gt", "values": ["0"]}]}
        for key in (
            labels.GPU_COUNT_LABEL,
            "karpenter.k8s.aws/instance-gpu-count",
            "eks.amazonaws.com/instance-gpu-count",
        )
    ]
    for g in CUSTOM_GROUPS:
        assert node_matches_affinity({**SYSTEM_NODE, **g.node_labels}, affinity)
    assert not node_matches_affinity(SYSTEM_NODE, affinity)
    assert node_matches_affinity({"karpenter.k8s.aws/instance-gpu-count": "1"}, affinity)
    assert node_matches_affinity({"eks.amazonaws.com/instance-gpu-count": "4"}, affinity)
    assert not node_matches_affinity({"karpenter.k8s.aws/instance-gpu-count": "0"}, affinity)


def test_nfd_values_satisfy_the_subchart_schema():
    """v26.7.0 ships a JSON schema for the NFD subchart (with Kubernetes' own definitions of
    affinity and tolerations): the merged NFD values must satisfy it."""
    schema = json.loads(reference_path("gpu-operator", "v26.7.0", "charts", NFD, "values.schema.json").read_text())
    sub = load_reference_yaml("gpu-operator", "v26.7.0", "charts", NFD, "values.yaml")
    parent = load_reference_yaml("gpu-operator", "v26.7.0", "values.yaml")[NFD]
    ours = operator_values.gpu_operator_values(CUSTOM_GROUPS, "v26.7.0")[NFD]
    merged = deep_merge(deep_merge(sub, parent), ours)
    jsonschema.validate(merged, schema)
    broken = deep_merge(
        merged, {"worker": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}}}
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def deep_merge(base: Any, over: Any) -> Any:
    """Helm's merge: maps merge recursively, everything else (lists too) is replaced."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        return {**base, **{k: deep_merge(base.get(k), v) for k, v in over.items()}}
    return over


def test_device_plugin_config_has_one_profile_per_sharing_setting():
    config = operator_values.gpu_operator_values(CUSTOM_GROUPS, "v26.7.0")["devicePlugin"]["config"]
    assert config["create"] is True
    # Default profile names: the group names.
    assert sorted(config["data"]) == ["a", "b"]
    assert config["default"] == "a"
    x2 = yaml.safe_load(config["data"]["b"])
    assert x2 == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
            }
        },
    }
    # Each node group's label names a profile that exists.
    for g in CUSTOM_GROUPS:
        assert g.node_labels[labels.DEVICE_PLUGIN_CONFIG_LABEL] in config["data"]


def test_config_map_name_follows_the_sharing_settings():
    """A changed sharing setting renames the ConfigMap, which rolls the device plugin
    (device_plugin.config_map_name explains why); unchanged settings keep the name."""

    def name(**ts):
        # renameByDefault is refused with the Cluster Autoscaler (its GPU readiness check).
        g = groups({"name": "t4", "timeSlicing": ts}, autoscaler=False)
        return operator_values.gpu_operator_values(g, "v26.7.0")["devicePlugin"]["config"]["name"]

    assert name(replicas=4) == name(replicas=4)
    assert len({name(replicas=4), name(replicas=8), name(replicas=4, renameByDefault=True)}) == 3
    assert name(replicas=4).startswith("time-slicing-config-")


def test_values_need_a_gpu_node_group():
    with pytest.raises(ValueError, match="at least one GPU node group, received none"):
        operator_values.gpu_operator_values([], "v26.7.0")


def test_unvalidated_chart_version_uses_newest_known_defaults():
    values = operator_values.gpu_operator_values(DEFAULT_GROUPS, "v27.0.0")
    assert values["daemonsets"]["tolerations"][:1] == list(
        chart.SUPPORTED_CHART_VERSIONS["v26.7.0"].daemonset_tolerations
    )


def test_sharing_config_round_trips_as_yaml():
    data = device_plugin.device_plugin_config_data(operator_values.profile_configs(CUSTOM_GROUPS))
    assert all(isinstance(v, str) for v in data.values())
    assert {k: yaml.safe_load(v)["sharing"]["timeSlicing"]["resources"][0]["replicas"] for k, v in data.items()} == {
        "a": 4,
        "b": 2,
    }


def test_an_unvalidated_chart_version_is_named_in_a_warning():
    assert GPU_OPERATOR.unvalidated_warning("v26.7.0") is None
    assert GPU_OPERATOR.unvalidated_warning("v27.1.0") == (
        "gpu-operator chart v27.1.0 is not one this library was validated against (v25.3.1, v25.10.1, "
        "v26.7.0); its values paths are unchecked."
    )
