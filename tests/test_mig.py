"""MIG (issue 24): the catalog against the chart's mig-parted config, the layout rules, the plan of a
MIG group (what its nodes advertise, its labels and ASG tags, its device-plugin profile), and the
gpu-operator values (the mig-parted ConfigMap) against each chart's ClusterPolicy CRD."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
import yaml

from components.catalog import mig as mig_catalog
from components.check.loading import load_settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError
from components.gpu_operator import values as operator_values
from components.observability import dashboard
from components.plan.group import GroupPlan
from components.review.impact import rules as impact_rules
from components.verification import jobs as verification_jobs
from components.verification import mig as mig_verification
from tests.support.reference import CHART_VERSIONS, load_reference_yaml
from tests.support.standins.crds import crd_problems, crd_schema, drop_nulls
from tests.support.tools import helm

P4D = "p4d.24xlarge"
P5 = "p5.48xlarge"


def settings(*groups: dict, **extra: Any):
    return load_settings({"clusterName": "c", "gpuNodeGroups": list(groups), **extra})


def plans(*groups: dict, **extra: Any) -> tuple[GroupPlan, ...]:
    return settings(*groups, **extra).plans


def problems(*groups: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        settings(*groups)
    return [str(p) for p in info.value.problems]


def group(name: str = "m", instance: str = P5, strategy: str = "mixed", **mig: Any) -> dict:
    return {"name": name, "instanceTypes": [instance], "migStrategy": strategy, "mig": mig}


# ---------------------------------------------------------------------------------------------
# 1. The catalog against the chart's default mig-parted config, at every pinned chart
# ---------------------------------------------------------------------------------------------


def chart_layouts(version: str) -> dict[str, dict[str, dict[str, int]]]:
    """Each named layout of the chart's mig-parted config, per MIG GPU of the catalog: the entry
    whose device-filter names the GPU's PCI id (or has none), left out where it names a profile
    the catalog lacks (``+me``, or another GPU's)."""
    doc = load_reference_yaml("gpu-operator", version, "assets", "state-mig-manager", "0400_configmap.yaml")
    config = yaml.safe_load(doc["data"]["config.yaml"])
    out: dict[str, dict[str, dict[str, int]]] = {}
    for gpu in mig_catalog.MIG_GPUS.values():
        for name, entries in config["mig-configs"].items():
            for entry in entries:
                devices = entry.get("mig-devices") or {}
                device_filter = entry.get("device-filter")
                filters = [device_filter] if isinstance(device_filter, str) else device_filter
                if filters is not None and gpu.device_id not in filters:
                    continue
                if entry.get("mig-enabled") and devices and set(devices) <= set(gpu.profiles):
                    out.setdefault(name, {})[gpu.name] = devices
    return out


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_every_named_layout_is_the_charts_for_each_gpu(version):
    ours = {
        name: {gpu: dict(layout) for gpu, layout in per_gpu.items()}
        for name, per_gpu in mig_catalog.NAMED_LAYOUTS.items()
    }
    assert ours == chart_layouts(version)


def test_the_charts_default_config_is_all_disabled_at_every_version():
    for version in CHART_VERSIONS:
        values = load_reference_yaml("gpu-operator", version, "values.yaml")
        assert values["migManager"]["config"]["default"] == mig_catalog.MIG_DISABLED == "all-disabled"


def test_profiles_of_the_h100_as_the_mig_user_guide_lists_them():
    profiles = mig_catalog.MIG_GPUS["H100-80GB-HBM3"].profiles
    assert [(p.name, p.compute_slices, p.memory_slices, p.max_count, p.placements) for p in profiles.values()] == [
        ("1g.10gb", 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
        ("1g.20gb", 1, 2, 4, (0, 2, 4, 6)),
        ("2g.20gb", 2, 2, 3, (0, 2, 4)),
        ("3g.40gb", 3, 4, 2, (0, 4)),
        ("4g.40gb", 4, 4, 1, (0,)),
        ("7g.80gb", 7, 8, 1, (0,)),
    ]
    assert list(mig_catalog.MIG_GPUS["H200-141GB"].profiles) == [
        "1g.18gb",
        "1g.35gb",
        "2g.35gb",
        "3g.71gb",
        "4g.71gb",
        "7g.141gb",
    ]
    assert list(mig_catalog.MIG_GPUS["A100-SXM4-40GB"].profiles) == [
        "1g.5gb",
        "1g.10gb",
        "2g.10gb",
        "3g.20gb",
        "4g.20gb",
        "7g.40gb",
    ]


def test_the_families_with_mig_and_their_gpus():
    assert dict(mig_catalog.FAMILY_MIG_GPU) == {
        "p4d": "A100-SXM4-40GB",
        "p4de": "A100-SXM4-80GB",
        "p5": "H100-80GB-HBM3",
        "p5e": "H200-141GB",
        "p5en": "H200-141GB",
    }


def test_placement_follows_the_start_slices():
    gpu = mig_catalog.MIG_GPUS["A100-SXM4-80GB"].profiles
    fits = mig_catalog.placement_fits
    # 4g at 0-3 beside 3g at 4-7: the chart's own example of a custom config (values.yaml v26.7.0).
    assert fits([gpu["4g.40gb"], gpu["3g.40gb"]])
    assert fits([gpu["3g.40gb"], gpu["3g.40gb"]])
    assert fits([gpu["1g.20gb"]] * 4)
    # A 1-slice instance never starts at memory slice 7: eight of them do not fit.
    assert not fits([gpu["1g.10gb"]] * 8)
    # 4g starts only at 0.
    assert not fits([gpu["4g.40gb"], gpu["4g.40gb"]])
    assert not fits([gpu["7g.80gb"], gpu["1g.10gb"]])


# ---------------------------------------------------------------------------------------------
# 2. The settings: every rule, keyed, with what it received and expects
# ---------------------------------------------------------------------------------------------


def test_a_named_layout_of_another_gpu_is_refused():
    assert problems(group(layout="all-1g.5gb")) == [
        'gpu-eks:gpuNodeGroups[0].mig.layout: received "all-1g.5gb"; expected a layout of the H100-80GB-HBM3 in '
        "the gpu-operator's mig-parted config (all-1g.10gb, all-1g.20gb, all-2g.20gb, all-3g.40gb, all-4g.40gb, "
        "all-7g.80gb, all-balanced) or a map of profile to count"
    ]


def test_custom_layouts_must_fit_the_gpu():
    assert problems(group(migDevices={"1g.5gb": 1})) == [
        'gpu-eks:gpuNodeGroups[0].mig.migDevices: received {"1g.5gb": 1}; expected profiles of the H100-80GB-HBM3 '
        "(1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb); 1g.5gb is not one"
    ]
    assert problems(group(migDevices={"2g.20gb": 4})) == [
        'gpu-eks:gpuNodeGroups[0].mig.migDevices: received {"2g.20gb": 4}; expected at most the profile\'s count '
        "per H100-80GB-HBM3: 2g.20gb x4 (at most 3)"
    ]
    assert problems(group(migDevices={"4g.40gb": 1, "2g.20gb": 2})) == [
        'gpu-eks:gpuNodeGroups[0].mig.migDevices: received {"2g.20gb": 2, "4g.40gb": 1}; expected a layout that '
        "fits one GPU: 8 compute slices (at most 7) and 8 memory slices (at most 8)"
    ]
    assert problems(group(migDevices={"1g.10gb": 0})) == [
        "gpu-eks:gpuNodeGroups[0].mig.migDevices.1g.10gb: received 0; expected a number of at least 1"
    ]


def test_the_layout_is_either_named_or_custom():
    (line,) = problems(group(layout="all-1g.10gb", migDevices={"1g.10gb": 7}))
    assert line == (
        'gpu-eks:gpuNodeGroups[0].mig.layout: received "all-1g.10gb"; expected either layout (a named layout) or '
        "migDevices (a custom one), exactly one"
    )


def test_single_needs_one_profile_and_none_needs_no_layout():
    assert problems(group(strategy="single", layout="all-balanced")) == [
        'gpu-eks:gpuNodeGroups[0].mig.layout: received "all-balanced"; expected one profile with migStrategy single '
        "(this layout has 1g.10gb, 2g.20gb, 3g.40gb): under single the device plugin refuses a node whose MIG "
        "devices differ (NVIDIA/k8s-device-plugin internal/rm/device_map.go requireUniformMIGDevices "
        "(v0.17.2-v0.20.0)); use mixed"
    ]
    assert problems(group(strategy="none", layout="all-1g.10gb")) == [
        'gpu-eks:gpuNodeGroups[0].migStrategy: received "none"; expected single or mixed with a mig layout: with none '
        "the device plugin advertises the GPUs whole and ignores the slices (the chart's mig.strategy, one value for "
        "every group of the cluster)"
    ]


def test_replicas_name_profiles_of_the_layout_and_are_at_least_two():
    assert problems(group(layout="all-1g.10gb", replicas={"2g.20gb": 2})) == [
        "gpu-eks:gpuNodeGroups[0].mig.replicas.2g.20gb: received 2; expected a profile of the layout (1g.10gb)"
    ]
    assert problems(group(layout="all-1g.10gb", replicas={"1g.10gb": 1})) == [
        "gpu-eks:gpuNodeGroups[0].mig.replicas.1g.10gb: received 1; expected a number of at least 2"
    ]


def test_mps_time_slicing_and_an_unshared_allocation_policy_are_refused_on_slices():
    raw = {**group(strategy="single", layout="all-1g.10gb"), "mps": {"replicas": 2}, "timeSlicing": {"replicas": 2}}
    raw["sharedDevicesAllocationPolicy"] = "packed"
    lines = problems(raw)
    assert lines == [
        'gpu-eks:gpuNodeGroups[0].mps: received {"replicas": 2}; expected either mps or timeSlicing, not both: the '
        "device plugin shares a node's GPUs one way ('Time-slicing and MPS are mutually exclusive', "
        "NVIDIA/k8s-device-plugin README v0.20.0; api/config/v1/sharing.go SharingStrategy picks MPS and ignores "
        "timeSlicing)",
        'gpu-eks:gpuNodeGroups[0].mps: received {"replicas": 2}; expected no key with mig: \'Sharing with MPS is '
        "currently not supported on devices with MIG enabled', NVIDIA/k8s-device-plugin README (v0.17.2-v0.20.0)",
        'gpu-eks:gpuNodeGroups[0].timeSlicing: received {"failRequestsGreaterThanOne": true, '
        '"renameByDefault": false, "replicas": 2}; expected no key with mig: time-slice the slices with mig.replicas',
        'gpu-eks:gpuNodeGroups[0].sharedDevicesAllocationPolicy: received "packed"; expected no key: with mig and no '
        "mig.replicas no slice is shared, so there is no shared slot to place",
    ]


def test_mixed_with_mps_is_refused_even_without_a_layout():
    # The plugin's own rule, reachable now that migStrategy takes mixed.
    (line,) = problems({"name": "t4", "migStrategy": "mixed", "mps": {"replicas": 2}})
    assert line == (
        'gpu-eks:gpuNodeGroups[0].migStrategy: received "mixed"; expected none or single with mps: \'using '
        "--mig-strategy=mixed is not supported with MPS' (NVIDIA/k8s-device-plugin cmd/nvidia-device-plugin/main.go "
        "validateFlags (v0.17.2-v0.20.0))"
    )


def test_every_group_of_a_cluster_has_the_one_strategy():
    lines = problems(group(layout="all-1g.10gb"), {"name": "t4"})
    assert lines == [
        'gpu-eks:gpuNodeGroups[0].migStrategy: received "mixed"; expected the same migStrategy in every GPU node group',
        'gpu-eks:gpuNodeGroups[1].migStrategy: received "none"; expected the same migStrategy in every GPU node group',
    ]


# ---------------------------------------------------------------------------------------------
# 3. The plan of a MIG group
# ---------------------------------------------------------------------------------------------


def test_single_advertises_every_slice_as_nvidia_gpu():
    (p,) = plans(group(instance=P4D, strategy="single", layout="all-1g.5gb"))
    assert dict(p.advertised_resources) == {"nvidia.com/gpu": 56}
    assert (p.resource_name, p.slots_per_node, p.sharing_mode, p.memory_per_slot_mib) == (
        "nvidia.com/gpu",
        56,
        "mig",
        5120,
    )
    assert dict(p.mig_layout or {}) == {"1g.5gb": 7}
    # Under single the node advertises nvidia.com/gpu: CA's GPU label stays, CA waits for it.
    assert dict(p.node_labels) == {
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-a100",
        "gpu-eks.io/gpu-count": "8",
        "nvidia.com/device-plugin.config": "m",
        "gpu-eks.io/node-group": "m",
    }
    assert dict(p.device_plugin_config) == {"version": "v1", "flags": {"migStrategy": "single"}}
    tags = {k.removeprefix("k8s.io/cluster-autoscaler/node-template/"): v for k, v in p.node_template_tags.items()}
    assert tags["resources/nvidia.com/gpu"] == "56"
    assert not [k for k in tags if k.startswith("resources/") and k != "resources/nvidia.com/gpu"]


def test_mixed_advertises_one_resource_per_profile_with_time_sliced_small_slices():
    (p,) = plans(group(migDevices={"1g.10gb": 4, "3g.40gb": 1}, replicas={"1g.10gb": 2}))
    assert dict(p.advertised_resources) == {"nvidia.com/mig-1g.10gb": 64, "nvidia.com/mig-3g.40gb": 8}
    assert (p.resource_name, p.slots_per_node, p.memory_per_slot_mib) == ("nvidia.com/mig-1g.10gb", 72, 5120)
    # No CA GPU label: a node of mixed slices never advertises nvidia.com/gpu (kubernetes/autoscaler#8095).
    assert "k8s.amazonaws.com/accelerator" not in p.node_labels
    assert "nvidia.com/mig.config" not in p.node_labels  # mig-manager is off: nothing reads it
    assert dict(p.device_plugin_config) == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}],
            }
        },
    }
    prefix = "k8s.io/cluster-autoscaler/node-template/resources/"
    assert {k.removeprefix(prefix): v for k, v in p.node_template_tags.items() if k.startswith(prefix)} == {
        "nvidia.com/mig-1g.10gb": "64",
        "nvidia.com/mig-3g.40gb": "8",
        "nvidia.com/gpu": "0",
    }


def test_a_layout_change_is_new_user_data_and_keeps_the_labels():
    """The boot stage applies the layout (plan/boot.py): a new layout is new user data, which
    rolls the group's nodes (a new launch template version; Karpenter's drift)."""
    (a,) = plans(group(layout="all-1g.10gb"))
    (b,) = plans(group(layout="all-balanced"))
    assert a.user_data != b.user_data
    assert a.node_labels == b.node_labels
    assert 'MIG_CREATE="1g.10gb:0,1g.10gb:1,1g.10gb:2,1g.10gb:3,1g.10gb:4,1g.10gb:5,1g.10gb:6"' in a.boot.script
    assert 'MIG_CREATE="3g.40gb:4,2g.20gb:0,1g.10gb:2,1g.10gb:3"' in b.boot.script


# ---------------------------------------------------------------------------------------------
# 4. The gpu-operator values: the mig-parted ConfigMap, against each chart
# ---------------------------------------------------------------------------------------------

MIXED_CLUSTER = (
    group("small", instance=P5, migDevices={"1g.10gb": 4, "3g.40gb": 1}, replicas={"1g.10gb": 2}),
    group("balanced", instance="p5e.48xlarge", layout="all-balanced"),
    {"name": "t4", "migStrategy": "mixed"},
)


def test_mig_manager_is_off_in_a_cluster_with_a_mig_group():
    """The boot stage owns MIG mode: mig-manager's mode change stops kubelet on AL2023
    (gpu-operator#2415) and a failed apply never retries (mig-parted v0.15.0)."""
    values = operator_values.gpu_operator_values(plans(*MIXED_CLUSTER), "v26.7.0")
    assert values["migManager"] == {"enabled": False}
    assert values["mig"] == {"strategy": "mixed"}


def test_clusters_without_mig_keep_the_charts_mig_manager():
    values = operator_values.gpu_operator_values(plans({"name": "t4"}), "v26.7.0")
    assert "migManager" not in values
    assert values["mig"] == {"strategy": "none"}


@pytest.mark.parametrize("version", CHART_VERSIONS)
@pytest.mark.parametrize(
    "cluster",
    [
        (group(instance=P4D, strategy="single", layout="all-1g.5gb"),),
        (group(instance="p4de.24xlarge", strategy="single", migDevices={"3g.40gb": 2}, replicas={"3g.40gb": 3}),),
        MIXED_CLUSTER,
    ],
    ids=["single-p4d", "single-p4de-shared", "mixed-p5-p5e-t4"],
)
def test_the_cluster_policy_validates_against_the_charts_crd(version, cluster):
    """What the chart makes of our values, rendered by a real helm (tests/support/tools/helm.py) from the whole
    chart of each version (templates/clusterpolicy.yaml copies ``mig.strategy``,
    ``migManager.enabled`` and ``devicePlugin.env``): mig-manager off (the boot stage applies the
    layouts), and a ClusterPolicy its CRD accepts with no field pruned."""
    values = operator_values.gpu_operator_values(plans(*cluster, gpuOperator={"chartVersion": version}), version)
    defaults = load_reference_yaml("gpu-operator", version, "values.yaml")
    assert defaults["migManager"]["enabled"] is True  # the chart's default, which we turn off
    chart = helm.chart_dir("gpu-operator", version, "chart")
    objects = helm.by_kind_and_name(helm.template(chart, "gpu-operator", "gpu-operator", values))
    policy = objects["ClusterPolicy/cluster-policy"]
    assert policy["spec"]["mig"] == {"strategy": values["mig"]["strategy"]}
    assert policy["spec"]["migManager"]["enabled"] is False
    assert {"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"} in policy["spec"]["devicePlugin"]["env"]
    assert not [k for k in objects if k.startswith("ConfigMap/") and "mig-parted" in k]
    schema = dict(crd_schema("gpu-operator", version, "chart", "crds", "nvidia.com_clusterpolicies.yaml", version="v1"))
    obj = drop_nulls(policy, schema)
    assert crd_problems(obj, schema) == []  # schema, CEL rules, and no field the API server would prune
    strategy = schema["properties"]["spec"]["properties"]["mig"]["properties"]["strategy"]
    assert strategy["enum"] == ["none", "single", "mixed"]


# ---------------------------------------------------------------------------------------------
# 5. The verification of a MIG group: one pod per slot of one node, each proving its slice
# ---------------------------------------------------------------------------------------------


def test_mig_verification_has_one_job_per_resource_all_on_one_node():
    (p,) = plans(group(migDevices={"1g.10gb": 4, "3g.40gb": 1}, replicas={"1g.10gb": 2}))
    specs = mig_verification.mig_job_specs(p, "probe:1")
    assert {r: s["parallelism"] for r, s in specs.items()} == {
        "nvidia.com/mig-1g.10gb": 64,
        "nvidia.com/mig-3g.40gb": 8,
    }
    small, large = specs.values()
    for spec, profile, replicas in ((small, "1g.10gb", 2), (large, "3g.40gb", 1)):
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert container["args"] == [f'exec python3 -c "$MIG_PROBE" {profile} {replicas} 180']
        assert container["resources"] == {"limits": {f"nvidia.com/mig-{profile}": 1}}
        assert spec["template"]["metadata"]["labels"]["gpu-eks.io/mig-check"] == "m"
        # The same required affinity in every Job of the group: all pods on one node.
        assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
            {"labelSelector": {"matchLabels": {"gpu-eks.io/mig-check": "m"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
        assert spec["activeDeadlineSeconds"] == 300
        assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"} in container["env"]


def test_mig_verification_pods_wait_for_no_label():
    """The boot stage cuts the slices before kubelet starts (plan/boot.py): the device plugin
    never advertises a MIG node's GPUs whole, so no verification pod waits for mig-manager's
    ``nvidia.com/mig.config.state`` (which nothing sets any more), and CA's template carries none."""
    for raw in (
        group(instance=P4D, strategy="single", layout="all-1g.5gb"),
        group(migDevices={"1g.10gb": 4, "3g.40gb": 1}, replicas={"1g.10gb": 2}),
        {
            **group(instance=P4D, strategy="single", layout="all-1g.5gb"),
            "capacityProvider": "karpenter",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        },
    ):
        (p,) = plans(raw)
        warmup = verification_jobs.warmup_job_spec(p, "vectoradd:1")
        assert "affinity" not in warmup["template"]["spec"]
        for spec in mig_verification.mig_job_specs(p, "probe:1").values():
            assert "nodeAffinity" not in spec["template"]["spec"]["affinity"]
        assert not [k for k in p.node_template_tags if "mig.config" in k]


def test_single_verification_names_the_layouts_profile():
    (p,) = plans(group(instance=P4D, strategy="single", layout="all-1g.5gb"))
    (spec,) = mig_verification.mig_job_specs(p, "probe:1").values()
    assert spec["parallelism"] == 56
    assert spec["template"]["spec"]["containers"][0]["args"] == ['exec python3 -c "$MIG_PROBE" 1g.5gb 1 180']


def test_the_mig_probe_finds_exactly_one_device_of_its_profile():
    """The probe's pattern against nvidia-smi -L as it prints a MIG device (a GPU line, then one
    indented ``MIG <profile> Device <n>`` line per MIG device visible to the container)."""
    compile(mig_verification.MIG_PROBE_PROGRAM, "probe", "exec")
    pattern = re.search(r're\.findall\(r"(.+?)", listing', mig_verification.MIG_PROBE_PROGRAM)
    assert pattern is not None
    regex = pattern.group(1)  # a raw string in the program
    one = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)\n"
        "  MIG 1g.10gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)\n"
    )
    assert re.findall(regex, one, re.M) == ["1g.10gb"]
    assert re.findall(regex, "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d5ba0d6)\n", re.M) == []
    assert "0.9" in mig_verification.MIG_PROBE_PROGRAM


def test_a_layout_change_is_summarised_as_a_node_roll():
    """A layout is user data now: a new launch template version (the node group rolls its nodes)
    or a new EC2NodeClass spec (Karpenter drifts them); the mig-manager rule is gone."""
    (rule,) = impact_rules.rules_for("aws:ec2/launchTemplate:LaunchTemplate", ("userData",), {})
    assert rule.effect.value == "new-launch-template-version"
    assert "a MIG layout" in rule.why and "the node group rolls its nodes" in rule.why
    (drift,) = impact_rules.rules_for("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", ("spec", "userData"), {})
    assert drift.effect.value == "drift-nodes"
    assert not impact_rules.rules_for(
        "kubernetes:helm.sh/v3:Release", ("values", "migManager", "config", "name"), {"chart": "gpu-operator"}
    )


def test_slots_beyond_the_pods_a_node_runs_are_keyed_at_mig_replicas():
    raw = group(layout="all-1g.10gb", replicas={"1g.10gb": 2})
    (warning,) = settings_warnings(settings(raw))
    assert str(warning) == (
        'gpu-eks:gpuNodeGroups[0].mig.replicas: received {"1g.10gb": 2}; expected fewer slots per GPU than 14 '
        "(slices x mig.replicas) for p5.48xlarge: 8 GPU(s) x 14 = 112 advertised, but a node runs at most 90 pods "
        "besides its 10 DaemonSet pods (max pods 100 with the VPC CNI defaults)"
    )
    with pytest.raises(ConfigError) as info:
        settings(raw, verification={"enabled": True})
    (problem,) = info.value.problems
    assert str(problem).endswith("(the verification packs that many pods on one node, so it could never succeed)")


def test_the_dashboard_shows_memory_per_slice_and_the_layout():
    (p,) = plans(group(migDevices={"1g.10gb": 4, "3g.40gb": 1}, replicas={"1g.10gb": 2}))
    model = dashboard.dashboard([p])
    memory = next(panel for panel in model["panels"] if panel["id"] == 3)
    assert memory["title"] == "GPU memory used per GPU and MIG slice"
    assert memory["targets"][0]["expr"].startswith("max by (node, gpu, GPU_I_ID, GPU_I_PROFILE) (DCGM_FI_DEV_FB_USED")
    table = next(panel for panel in model["panels"] if panel["id"] == 10)["options"]["content"]
    assert "| m | p5.48xlarge | 8 x 4 1g.10gb x 2 + 1 3g.40gb | 5120 MiB |" in table


def test_a_profile_pinned_to_a_mig_groups_name_is_refused_at_the_mig_groups_name():
    lines = problems(
        {"name": "t4", "migStrategy": "mixed", "timeSlicing": {"profile": "m"}},
        group(layout="all-1g.10gb"),
    )
    assert lines == [
        'gpu-eks:gpuNodeGroups[1].name: received "m"; expected a profile name not used by gpuNodeGroups[0] (t4), '
        "whose sharing mode differs: one set of settings per profile name (it is one key of the device-plugin "
        "ConfigMap)"
    ]


def test_within_the_slice_budget_every_layout_places():
    """With the guide's placements, no layout within the profile counts and the 7 compute and 8
    memory slices fails placement on any GPU of the catalog (checked over every layout): the
    placement check of ``layout_problem`` is a guard for a future GPU whose placements differ."""
    for gpu in mig_catalog.MIG_GPUS.values():
        rows = list(gpu.profiles.values())
        within = 0
        for counts in itertools.product(*(range(p.max_count + 1) for p in rows)):
            instances = [p for p, n in zip(rows, counts, strict=True) for _ in range(n)]
            compute = sum(p.compute_slices for p in instances)
            memory = sum(p.memory_slices for p in instances)
            if instances and compute <= 7 and memory <= 8:
                within += 1
                assert mig_catalog.placement_fits(instances), (gpu.name, counts)
        assert within == 77, gpu.name  # the same six profiles (1g, 1g of 2 slices, 2g, 3g, 4g, 7g) on each GPU
