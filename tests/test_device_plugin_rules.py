"""The rules of the real consumers of our values: the NVIDIA device plugin (its config file),
the gpu-operator (mig.strategy, its operands), kubelet and the API server (node labels and
taints) and the node's pod capacity. Each test names the upstream source of its rule.

The upstream facts were read in the sources at the versions our three charts pin (chart
v25.3.1 → k8s-device-plugin v0.17.2, v25.10.1 → v0.18.1, v26.7.0 → v0.20.0; the mapping is
checked below against each chart's values.yaml) and are encoded here, not copied.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components import catalog
from components.catalog import labels
from components.check.loading import load_settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError
from components.gpu_operator import values as operator_values
from components.plan import userdata
from components.plan.group import GroupPlan, plan_groups
from tests.support.paths import ROOT
from tests.support.reference import CHART_VERSIONS, load_reference_yaml, reference_path
from tests.support.standins.device_plugin import PLUGIN_FIELDS, RESOURCE_FIELDS, plugin_config_problems
from tooling.simulation import Simulation, run_stack

#: The k8s-device-plugin (and GFD) release each validated chart deploys.
DEVICE_PLUGIN_OF_CHART = {"v25.3.1": "v0.17.2", "v25.10.1": "v0.18.1", "v26.7.0": "v0.20.0"}


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


def groups(*specs: dict, **top: Any) -> tuple[GroupPlan, ...]:
    """The plans of the GPU node groups of a cluster config."""
    return plan_groups(load_settings({"clusterName": "c", "gpuNodeGroups": list(specs), **top}).gpu_node_groups)


# ---------------------------------------------------------------------------------------------
# 1. replicas: 1 means "not shared"
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_each_chart_deploys_the_device_plugin_release_whose_rules_we_encode(version):
    values = load_reference_yaml("gpu-operator", version, "values.yaml")
    assert values["devicePlugin"]["version"] == DEVICE_PLUGIN_OF_CHART[version]
    assert values["gfd"]["version"] == DEVICE_PLUGIN_OF_CHART[version]


def test_the_checker_refuses_what_the_plugin_refuses():
    """k8s-device-plugin api/config/v1/replicas.go (v0.17.2, v0.18.1, v0.20.0): "number of
    replicas must be >= 2" and "no resources specified"; a config without sharing is valid."""
    one = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}}
    assert plugin_config_problems(yaml.safe_dump(one)) == ["number of replicas must be >= 2"]
    empty = {"version": "v1", "sharing": {"timeSlicing": {"resources": []}}}
    assert plugin_config_problems(yaml.safe_dump(empty)) == ["no resources specified"]
    assert plugin_config_problems("version: v1\nflags:\n  migStrategy: none\n") == []


@pytest.mark.parametrize("version", CHART_VERSIONS)
@pytest.mark.parametrize("replicas", [1, 2, 4, 22])
def test_every_generated_config_file_loads_in_the_device_plugin(version, replicas):
    # Rule source: k8s-device-plugin api/config/v1/replicas.go at DEVICE_PLUGIN_OF_CHART[version].
    (g,) = groups({"name": "t4", "timeSlicing": {"replicas": replicas}})
    data = operator_values.gpu_operator_values([g], version)["devicePlugin"]["config"]["data"]
    assert list(data) == ["t4"]
    assert plugin_config_problems(data["t4"]) == []


@pytest.mark.parametrize("replicas", [1, 4])
def test_every_key_we_write_is_a_field_the_plugin_reads(replicas):
    (g,) = groups({"name": "t4", "timeSlicing": {"replicas": replicas}})
    config = yaml.safe_load(operator_values.gpu_operator_values([g], "v26.7.0")["devicePlugin"]["config"]["data"]["t4"])
    for path, fields in PLUGIN_FIELDS.items():
        node = config
        for key in path:
            node = node.get(key, {})
        assert set(node) <= fields, (path, set(node) - fields)
    for r in config.get("sharing", {}).get("timeSlicing", {}).get("resources", []):
        assert set(r) <= RESOURCE_FIELDS


def test_replicas_one_is_an_unshared_profile():
    """replicas 1: no sharing block (the plugin's "none" strategy, api/config/v1/sharing.go
    SharingStrategy), each GPU advertised once as nvidia.com/gpu."""
    exclusive, shared = groups(
        {"name": "exclusive", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 1}},
        {"name": "shared", "timeSlicing": {"replicas": 4}},
    )
    assert exclusive.device_plugin_config == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
    }
    assert (exclusive.slots_per_node, exclusive.resource_name) == (4, "nvidia.com/gpu")
    data = operator_values.gpu_operator_values([exclusive, shared], "v26.7.0")["devicePlugin"]["config"]["data"]
    assert yaml.safe_load(data["exclusive"]) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert yaml.safe_load(data["shared"])["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 4}
    ]


def test_sharing_options_without_sharing_are_errors():
    lines = problems(
        {
            "gpuNodeGroups": [
                {"name": "a", "timeSlicing": {"replicas": 1, "renameByDefault": True}},
                {"name": "b", "timeSlicing": {"replicas": 1, "failRequestsGreaterThanOne": True}},
            ]
        }
    )
    assert lines == [
        "gpu-eks:gpuNodeGroups[0].timeSlicing.renameByDefault: received true; expected false or no key: with "
        "replicas 1 the GPU is not shared, so there is no <name>.shared resource to rename to",
        "gpu-eks:gpuNodeGroups[1].timeSlicing.failRequestsGreaterThanOne: received true; expected no key: with "
        "replicas 1 the GPU is not shared, so there are no shares to limit",
    ]
    # renameByDefault: false says nothing either way and is accepted.
    assert groups({"name": "a", "timeSlicing": {"replicas": 1, "renameByDefault": False}})[0].sharing.replicas == 1


# ---------------------------------------------------------------------------------------------
# 2. The profile label is stable across sharing changes
# ---------------------------------------------------------------------------------------------

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
BASE_GROUP = {
    "name": "t4",
    "instanceTypes": ["g4dn.xlarge", "g4dn.2xlarge"],
    "scaling": {"minSize": 2, "desiredSize": 3, "maxSize": 6},
    "timeSlicing": {"replicas": 4},
}


def _prod(group: dict, chart_version: str = "v26.7.0") -> Simulation:
    overrides: dict[str, Any] = {
        "gpu-eks:gpuNodeGroups": [group],
        "gpu-eks:gpuOperator": {"chartVersion": chart_version},
    }
    if group.get("timeSlicing", {}).get("renameByDefault"):
        # Refused with the Cluster Autoscaler (CA's GPU readiness check needs nvidia.com/gpu):
        # the autoscaler's resources are not node inputs, so switching it off changes none.
        overrides["gpu-eks:autoscaler"] = {"enabled": False}
    return run_stack("prod", ROOT, config_overrides=overrides)


def _node_inputs(sim: Simulation) -> dict[str, str]:
    """Every launch template's and node group's inputs, serialized byte for byte."""
    regs = sim.by_type(LT) + sim.by_type(NG)
    assert len(regs) == 4, [r.name for r in regs]  # system + t4, each a launch template and a node group
    return {r.name: json.dumps(r.wire_inputs, sort_keys=True) for r in regs}


def _plugin_config(sim: Simulation) -> dict[str, Any]:
    return sim.one(RELEASE, "gpu-eks-gpu-operator-release").inputs["values"]["devicePlugin"]["config"]


@pytest.fixture(scope="module")
def base() -> Simulation:
    return _prod(BASE_GROUP)


@pytest.mark.parametrize(
    "change",
    [{"replicas": 8}, {"replicas": 4, "renameByDefault": True}, {"replicas": 4, "failRequestsGreaterThanOne": False}],
    ids=["replicas", "renameByDefault", "failRequestsGreaterThanOne"],
)
def test_a_sharing_change_touches_no_launch_template_or_node_group(base, change):
    """The device plugin's config-manager switches profile only on a change of the node label
    (cmd/config-manager/main.go); the operator mounts the ConfigMap by name, so a new
    content-hashed name rolls the device-plugin and GFD DaemonSets. The label must not change,
    or every node is replaced and not-yet-replaced nodes point at a key the new ConfigMap lacks."""
    changed = _prod({**BASE_GROUP, "timeSlicing": change})
    assert _node_inputs(changed) == _node_inputs(base)
    before, after = _plugin_config(base), _plugin_config(changed)
    assert after["name"] != before["name"]
    assert after["default"] == before["default"] == "t4"
    assert list(after["data"]) == list(before["data"]) == ["t4"]
    assert after["data"]["t4"] != before["data"]["t4"]


def test_a_chart_version_change_touches_no_launch_template_or_node_group(base):
    changed = _prod(BASE_GROUP, chart_version="v25.10.1")
    assert _node_inputs(changed) == _node_inputs(base)
    assert (
        base.one(RELEASE, "gpu-eks-gpu-operator-release").inputs["version"],
        changed.one(RELEASE, "gpu-eks-gpu-operator-release").inputs["version"],
    ) == ("v26.7.0", "v25.10.1")
    # The config content does not depend on the chart; the chart upgrade itself rolls the operands.
    assert _plugin_config(changed) == _plugin_config(base)


def test_the_pinned_legacy_profile_name_is_kept_across_replicas_changes():
    """Our stacks pin timeSlicing.profile: timeslice-x4 (the 0.1.0 default name), so their
    existing nodes keep their label; a replicas change still touches no node."""
    pinned = {**BASE_GROUP, "timeSlicing": {"replicas": 4, "profile": "timeslice-x4"}}
    a = _prod(pinned)
    b = _prod({**pinned, "timeSlicing": {"replicas": 2, "profile": "timeslice-x4"}})
    assert _node_inputs(a) == _node_inputs(b)
    assert _plugin_config(a)["name"] != _plugin_config(b)["name"]
    assert list(_plugin_config(b)["data"]) == ["timeslice-x4"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stacks_pin_the_profile_name_their_nodes_already_carry(stack):
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    (group,) = config["gpu-eks:gpuNodeGroups"]
    assert group["timeSlicing"] == {"replicas": 4, "profile": "timeslice-x4"}


def test_default_profile_is_the_group_name():
    a, b = groups({"name": "small", "timeSlicing": {"replicas": 2}}, {"name": "big"})
    assert (a.profile_name, b.profile_name) == ("small", "big")
    assert a.node_labels[labels.DEVICE_PLUGIN_CONFIG_LABEL] == "small"


def test_two_groups_may_share_a_profile_with_the_same_settings():
    a, b = groups({"name": "a"}, {"name": "b", "timeSlicing": {"profile": "a"}})
    data = operator_values.gpu_operator_values([a, b], "v26.7.0")["devicePlugin"]["config"]["data"]
    assert list(data) == ["a"]


def test_a_profile_collision_names_the_precise_key():
    (line,) = problems(
        {
            "gpuNodeGroups": [
                {"name": "a", "timeSlicing": {"replicas": 2}},
                {"name": "b", "timeSlicing": {"profile": "a"}},
            ]
        }
    )
    assert line.startswith('gpu-eks:gpuNodeGroups[1].timeSlicing.profile: received "a"; expected a profile name not')


# ---------------------------------------------------------------------------------------------
# 3. One setting drives the chart's mig.strategy and the config file's flags.migStrategy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_mig_strategy_reaches_the_chart_and_the_config_file(version):
    """gpu-operator controllers/object_controls.go applyMIGConfiguration (v25.3.1, v25.10.1,
    v26.7.0) sets MIG_STRATEGY from the ClusterPolicy's mig.strategy; the device plugin's
    mig-strategy flag reads MIG_STRATEGY (cmd/nvidia-device-plugin/main.go) and overrides the
    file (api/config/v1/flags.go UpdateFromCLIFlags). The chart's default is "single"."""
    values_yaml = load_reference_yaml("gpu-operator", version, "values.yaml")
    assert values_yaml["mig"] == {"strategy": "single"}
    values = operator_values.gpu_operator_values(
        groups({"name": "a"}, {"name": "b", "timeSlicing": {"replicas": 2}}), version
    )
    assert values["mig"] == {"strategy": "none"}
    for text in values["devicePlugin"]["config"]["data"].values():
        assert yaml.safe_load(text)["flags"]["migStrategy"] == values["mig"]["strategy"]


def test_mig_strategy_of_groups_must_agree():
    with pytest.raises(ValueError, match="disagree on migStrategy"):
        operator_values.mig_strategy([type("G", (), {"mig_strategy": m})() for m in ("none", "single")])  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# 4. kubelet and API server rules for --node-labels and --register-with-taints
# ---------------------------------------------------------------------------------------------


def kubelet_parse_node_labels(flag: str) -> dict[str, str]:
    """kubelet's --node-labels parsing (k8s.io/component-base cli/flag MapStringString:
    split on ',', then each pair on the first '=')."""
    out = {}
    for pair in flag.removeprefix("--node-labels=").split(","):
        key, sep, value = pair.partition("=")
        assert sep, f"kubelet refuses {pair!r}: no '='"
        out[key.strip()] = value.strip()
    return out


def test_node_labels_flag_parses_back_to_the_labels():
    (g,) = groups({"name": "gpu", "labels": {"team.example.com/owner": "ml", "node.kubernetes.io/pool": "a.b_c-1"}})
    flags = userdata.gpu_node_config(g.node_labels, g.taints)["spec"]["kubelet"]["flags"]
    assert kubelet_parse_node_labels(flags[0]) == g.node_labels


@pytest.mark.parametrize(
    ("key", "why"),
    [
        # k8s.io/apimachinery pkg/util/validation IsQualifiedName: prefix a DNS-1123 subdomain
        # of at most 253 characters, name at most 63 characters.
        ("a" * 254 + "/x", "a prefix that is a DNS subdomain"),
        ("example.com/" + "n" * 64, "a name of at most 63 characters"),
        ("Example.com/x", "a prefix that is a DNS subdomain"),
        ("a/b/c", "a qualified name with at most one '/'"),
        ("-x", "a name of at most 63 characters"),
        # kubelet ValidateKubeletFlags + k8s.io/kubelet IsKubeletLabel: kubernetes.io/k8s.io only
        # under node.kubernetes.io, kubelet.kubernetes.io or the well-known set.
        ("node-role.kubernetes.io/gpu", "a key outside the kubernetes.io and k8s.io namespaces"),
        ("node-restriction.kubernetes.io/x", "a key outside the kubernetes.io and k8s.io namespaces"),
        ("example.k8s.io/x", "a key outside the kubernetes.io and k8s.io namespaces"),
        # Accepted by kubelet, but owned by kubelet / the cloud controller manager.
        ("kubernetes.io/arch", "a key kubelet or the cloud controller manager does not set itself"),
        ("topology.kubernetes.io/zone", "a key kubelet or the cloud controller manager does not set itself"),
        ("node.kubernetes.io/instance-type", "a key kubelet or the cloud controller manager does not set itself"),
    ],
)
def test_label_keys_kubelet_or_the_api_server_refuse(key, why):
    (line,) = problems({"gpuNodeGroups": [{"name": "g", "labels": {key: "v"}}]})
    assert line.startswith(f"gpu-eks:gpuNodeGroups[0].labels.{key}: received {json.dumps(key)}; expected {why}")


def test_longest_legal_label_key_is_accepted():
    key = ".".join(["a" * 63] * 4)[:253].rstrip(".") + "/" + "n" * 63
    assert len(key.split("/")[0]) <= 253
    # Without the Cluster Autoscaler: with it, a key over 82 characters is refused, since its ASG
    # template tag would exceed the 128-character tag key (tests/test_autoscaler.py).
    (g,) = groups({"name": "g", "labels": {key: "v" * 63}}, autoscaler={"enabled": False})
    assert g.settings.labels == {key: "v" * 63}


@pytest.mark.parametrize("value", ["v" * 64, "a,b", "a=b", "has space", "-a", "a-", "ü"])
def test_label_values_kubelet_refuses(value):
    # k8s.io/apimachinery IsValidLabelValue: at most 63, [A-Za-z0-9_.-], alphanumeric ends.
    # ',' and '=' would also break kubelet's --node-labels parsing.
    (line,) = problems({"gpuNodeGroups": [{"name": "g", "labels": {"example.com/k": value}}]})
    assert line.startswith(f"gpu-eks:gpuNodeGroups[0].labels.example.com/k: received {json.dumps(value)}; expected")


@pytest.mark.parametrize(
    ("taint", "key"),
    [
        ({"key": "a/b/c", "effect": "NoSchedule"}, "taints[0].key"),
        ({"key": "example.com/" + "n" * 64, "effect": "NoSchedule"}, "taints[0].key"),
        ({"key": "dedicated", "value": "v" * 64, "effect": "NoSchedule"}, "taints[0].value"),
        ({"key": "dedicated", "value": "a:b", "effect": "NoSchedule"}, "taints[0].value"),
        ({"key": "dedicated", "value": "a=b", "effect": "NoSchedule"}, "taints[0].value"),
        ({"key": "dedicated", "effect": "NoEvict"}, "taints[0].effect"),
    ],
)
def test_taints_kubelet_refuses(taint, key):
    """kubelet's --register-with-taints: k8s.io/kubernetes pkg/util/taints ParseTaints (key a
    qualified name, value a label value, effect NoSchedule/PreferNoSchedule/NoExecute)."""
    (line,) = problems({"gpuNodeGroups": [{"name": "g", "taints": [taint]}]})
    assert line.startswith(f"gpu-eks:gpuNodeGroups[0].{key}: received")


def test_taints_must_be_unique_by_key_and_effect():
    """k8s.io/kubernetes pkg/apis/core/validation validateNodeTaints: "taints must be unique by
    key and effect pair" (the Node is refused); ParseTaints refuses the flag the same way."""
    lines = problems(
        {
            "gpuNodeGroups": [
                {
                    "name": "g",
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                    ],
                }
            ]
        }
    )
    assert lines == [
        f'gpu-eks:gpuNodeGroups[0].taints[{i}]: received {{"effect": "NoSchedule", "key": "nvidia.com/gpu", '
        f'"value": "{v}"}}; expected a taint whose key and effect differ from taints[0] (nvidia.com/gpu:NoSchedule): '
        "a Node's taints must be unique by key and effect, or the API server refuses it"
        for i, v in ((1, "present"), (2, "true"))
    ]
    # The same key with two effects is two taints, and legal for Kubernetes (the Cluster
    # Autoscaler's ASG taint tags hold one effect per key: see tests/test_autoscaler.py).
    (g,) = groups(
        {"name": "g", "taints": [{"key": "spot", "effect": "NoSchedule"}, {"key": "spot", "effect": "NoExecute"}]},
        autoscaler={"enabled": False},
    )
    assert userdata.gpu_node_config(g.node_labels, g.taints)["spec"]["kubelet"]["flags"][1] == (
        "--register-with-taints=spot:NoSchedule,spot:NoExecute"
    )


# ---------------------------------------------------------------------------------------------
# 5. Capacity: advertised slots against max pods
# ---------------------------------------------------------------------------------------------


def test_max_pods_match_the_eks_ami_table_and_nodeadm_formula():
    """awslabs/amazon-eks-ami templates/shared/runtime/eni-max-pods.txt (v20260318) and
    nodeadm/internal/kubelet/instance-info.jsonl (v20260724) with nodeadm's formula
    ENIs x (IPv4 per ENI - 1) + 2 (nodeadm/internal/kubelet/eni_max_pods.go)."""
    table = {}
    for line in reference_path("eks", "eni-max-pods.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, pods = line.split()
            table[name] = int(pods)
    info = {}
    for line in reference_path("eks", "instance-info.jsonl").read_text().splitlines():
        row = json.loads(line)
        info[row["instanceType"]] = row["defaultMaxENIs"] * (row["ipv4AddressesPerInterface"] - 1) + 2
    for name, spec in catalog.GPU_INSTANCE_TYPES.items():
        assert spec.eni_max_pods == table[name] == info[name], name
    assert catalog.GPU_INSTANCE_TYPES["g4dn.xlarge"].eni_max_pods == 29
    assert catalog.GPU_INSTANCE_TYPES["g6.4xlarge"].eni_max_pods == 234


def test_max_pods_are_capped_by_eks_managed_node_groups():
    """EKS User Guide (awsdocs/amazon-eks-user-guide 4d52b4d, cni-increase-ip-addresses-procedure
    and create-managed-node-group.adoc; awsdocs PR #663): a managed node group on an EKS AMI caps
    maxPods at 110 for instances with less than 30 vCPUs and 250 for all others."""
    pods = {t: catalog.GPU_INSTANCE_TYPES[t].max_pods for t in catalog.GPU_INSTANCE_TYPES}
    assert pods["g6.4xlarge"] == 110  # 16 vCPUs, ENI 234
    assert pods["p5.4xlarge"] == 110  # 16 vCPUs, ENI 118
    assert pods["g6.16xlarge"] == 250  # 64 vCPUs, ENI 737
    assert pods["p4d.24xlarge"] == 250  # 96 vCPUs, ENI 737
    assert pods["g4dn.metal"] == 250  # 96 vCPUs, ENI 737
    assert pods["g6e.12xlarge"] == 250  # 48 vCPUs, ENI 292
    assert pods["g4dn.xlarge"] == 29  # under the cap: unchanged
    assert pods["g4dn.12xlarge"] == 234  # 48 vCPUs, under 250
    assert pods["g6f.large"] == 20
    capped = sorted(t for t, row in catalog.GPU_INSTANCE_TYPES.items() if row.max_pods < row.eni_max_pods)
    assert len(capped) == 23
    assert (catalog.managed_max_pods_cap(29), catalog.managed_max_pods_cap(30)) == (110, 250)
    # The AMI's max-pods-calculator.sh (amazon-eks-ami v20260304) used `-gt 30` for 250: no row
    # sits at exactly 30 vCPUs, where the two readings would differ.
    assert 30 not in {row.vcpus for row in catalog.GPU_INSTANCE_TYPES.values()}


def test_more_shares_than_a_capped_node_runs_pods_is_refused():
    """g6.4xlarge: the ENI formula says 234, EKS runs the kubelet with 110; 200 shares never fit."""
    (line,) = problems(
        {
            "verification": {"enabled": True},
            "gpuNodeGroups": [{"name": "g", "instanceTypes": ["g6.4xlarge"], "timeSlicing": {"replicas": 200}}],
        }
    )
    assert line == (
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 200; expected at most 101 for g6.4xlarge: 1 GPU(s) "
        "x 200 = 200 advertised, but a node runs at most 101 pods besides its 9 DaemonSet pods (max pods 234 with "
        "the VPC CNI defaults, capped at 110 by EKS managed node groups (16 vCPUs: 110 below 30, 250 from 30)) "
        "(the verification packs that many pods on one node, so it could never succeed)"
    )


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_daemonset_pods_on_a_gpu_node_follow_from_the_chart_values(version):
    """The operator deploys an operand on a node when the operand is enabled and the node has
    its nvidia.com/gpu.deploy.<operand> label (gpu-operator controllers/state_manager.go
    gpuStateLabels, container workload config; assets/state-*/ nodeSelectors). With our
    values exactly four run on a T4 node; plus the NFD worker, aws-node and kube-proxy."""
    chart = load_reference_yaml("gpu-operator", version, "values.yaml")
    ours = operator_values.gpu_operator_values(groups({"name": "a"}), version)

    def enabled(component: str) -> bool:
        return ours.get(component, {}).get("enabled", chart[component].get("enabled", True))

    on_gpu_node = {"devicePlugin", "gfd", "dcgmExporter", "validator"}
    assert all(enabled(c) for c in on_gpu_node)
    assert not any(enabled(c) for c in ("driver", "toolkit", "dcgm", "nodeStatusExporter", "gds", "gdrcopy"))
    assert not any(enabled(c) for c in ("vgpuManager",))
    # vfio/vgpu-device/sandbox/kata/cc operands only get deploy labels with sandbox workloads;
    # mig-manager only on MIG-capable GPUs (the T4 is not); the MPS daemon only on mps.capable nodes.
    assert chart["sandboxWorkloads"]["enabled"] is False
    assert not catalog.GPU_INSTANCE_TYPES["g4dn.xlarge"].supports_mig
    assert chart["nfd"]["enabled"] is True and "node-feature-discovery" in ours
    assert len(on_gpu_node) + 1 + 2 == len(catalog.GPU_NODE_DAEMONSET_PODS) == 7


def test_usable_pod_slots():
    g4dn = {t: catalog.usable_pod_slots(t) for t in catalog.GPU_INSTANCE_TYPES if t.startswith("g4dn.")}
    assert g4dn == {
        "g4dn.xlarge": 22,
        "g4dn.2xlarge": 22,
        "g4dn.4xlarge": 22,
        "g4dn.8xlarge": 51,
        "g4dn.16xlarge": 51,
        "g4dn.12xlarge": 227,
        "g4dn.metal": 243,  # 250, the managed-node-group cap, not the ENI formula's 737
    }
    (g,) = groups({"name": "g", "instanceTypes": ["g4dn.8xlarge", "g4dn.xlarge"]})
    assert g.usable_pod_slots == 22  # the smallest type of the group
    # MIG-capable GPUs run mig-manager too (8 DaemonSet pods); g6f.large has 20 max pods; p4d and
    # g5.48xlarge are capped at 250 (ENI 737 and 345).
    assert [catalog.usable_pod_slots(t) for t in ("p5.48xlarge", "p4d.24xlarge", "g6f.large", "g5.48xlarge")] == [
        92,
        242,
        13,
        243,
    ]


def capacity_warnings(settings) -> list:
    return [w for w in settings_warnings(settings) if w.key.endswith("timeSlicing.replicas")]


def test_more_shares_than_pods_with_verification_is_an_error():
    # 9 DaemonSet pods: the 7 of every GPU node and the node monitoring agent's two (agent, dcgm-server).
    (line,) = problems(
        {"verification": {"enabled": True}, "gpuNodeGroups": [{"name": "g", "timeSlicing": {"replicas": 21}}]}
    )
    assert line == (
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 21; expected at most 20 for g4dn.xlarge: 1 GPU(s) "
        "x 21 = 21 advertised, but a node runs at most 20 pods besides its 9 DaemonSet pods (max pods 29 with the "
        "VPC CNI defaults) (the verification packs that many pods on one node, so it could never "
        "succeed)"
    )
    ok = load_settings(
        {
            "clusterName": "c",
            "verification": {"enabled": True},
            "gpuNodeGroups": [{"name": "g", "timeSlicing": {"replicas": 20}}],
        }
    )
    assert capacity_warnings(ok) == []


def test_more_shares_than_pods_without_verification_is_a_warning():
    s = load_settings(
        {
            "clusterName": "c",
            "gpuNodeGroups": [{"name": "g", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 57}}],
        }
    )
    (w,) = capacity_warnings(s)
    assert str(w) == (
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 57; expected at most 56 for g4dn.12xlarge: "
        "4 GPU(s) x 57 = 228 advertised, but a node runs at most 225 pods besides its 9 DaemonSet pods (max pods "
        "234 with the VPC CNI defaults)"
    )
    assert capacity_warnings(load_settings({"clusterName": "c"})) == []


# ---------------------------------------------------------------------------------------------
# 6. The values the rendered ClusterPolicy reads (encoded here against each chart's values.yaml;
#    tests/test_operator_chart.py renders each whole chart with every example's values)
# ---------------------------------------------------------------------------------------------

#: Values whose defaults the chart's ClusterPolicy template copies into the ClusterPolicy spec
#: and that the operator acts on (gpu-operator deployments/gpu-operator/templates/clusterpolicy.yaml).
RELIED_ON = (
    ("devicePlugin", "config", "create"),
    ("devicePlugin", "config", "name"),
    ("devicePlugin", "config", "default"),
    ("devicePlugin", "config", "data"),
    ("mig", "strategy"),
    ("driver", "enabled"),
    ("toolkit", "enabled"),
    ("cdi", "enabled"),
    ("daemonsets", "tolerations"),
    ("nfd", "enabled"),
    ("sandboxWorkloads", "enabled"),
    ("node-feature-discovery", "worker", "tolerations"),
)


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_every_value_we_rely_on_exists_in_the_chart(version):
    values = load_reference_yaml("gpu-operator", version, "values.yaml")
    for path in RELIED_ON:
        node: Any = values
        for key in path:
            assert isinstance(node, dict) and key in node, f"{'.'.join(path)} missing in gpu-operator {version}"
            node = node[key]
    # The chart's own defaults we override: no ConfigMap, MIG "single", driver and toolkit on.
    assert values["devicePlugin"]["config"] == {"create": False, "name": "", "default": "", "data": {}}
    assert (values["driver"]["enabled"], values["toolkit"]["enabled"]) == (True, True)
