"""Issue 15: every NVIDIA GPU family EKS runs on AL2023, from one catalog (components/catalog/).

The catalog rows against their sources (moto 5.2.5's copy of ec2:DescribeInstanceTypes; the EKS
max-pods tables are checked in test_device_plugin_rules.py), and group plans of each family with
literal labels, AMI type, slots and Cluster Autoscaler node-template tags.
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
from typing import Any

import pytest

from components import catalog
from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.config.instance_types import sharing_problem
from components.gpu_operator import values as operator_values
from components.plan.group import GroupPlan, plan_group
from tests.support.reference import CHART_VERSIONS, load_reference_yaml
from tooling import docgen

TEMPLATE = "k8s.io/cluster-autoscaler/node-template/"


def _moto_instance_types() -> dict[str, Any]:
    data = importlib.resources.files("moto.ec2") / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(data.read_bytes()))


def plan(instance_types: list[str], replicas: int, **extra: Any) -> GroupPlan:
    group = {"name": "g", "instanceTypes": instance_types, "timeSlicing": {"replicas": replicas}, **extra}
    return plan_group(load_settings({"clusterName": "c", "gpuNodeGroups": [group]}).gpu_node_groups[0])


def problems(group: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", **group}]})
    return [str(p) for p in info.value.problems]


# ---------------------------------------------------------------------------------------------
# The catalog against EC2 (moto's DescribeInstanceTypes data, botocore 1.44.5 / moto 5.2.5)
# ---------------------------------------------------------------------------------------------


def test_every_row_matches_describe_instance_types():
    ec2 = _moto_instance_types()
    for name, row in catalog.GPU_INSTANCE_TYPES.items():
        info = ec2[name]
        (gpu,) = info["GpuInfo"]["Gpus"]
        assert info["VCpuInfo"]["DefaultVCpus"] == row.vcpus, name
        assert info["MemoryInfo"]["SizeInMiB"] == row.memory_mib, name
        assert gpu["Manufacturer"] == "NVIDIA", name
        assert gpu["Name"] == row.gpu_model, name
        assert gpu["Count"] == row.ec2_gpus, name
        assert gpu["MemoryInfo"]["SizeInMiB"] == row.gpu_memory_mib_per_gpu, name
        assert info["ProcessorInfo"]["SupportedArchitectures"] == [row.architecture], name


def test_the_catalog_holds_every_size_of_its_families():
    """No size of a catalogued family is missing (moto's data holds every type EC2 lists)."""
    ec2 = _moto_instance_types()
    families = set(catalog.FAMILIES)
    assert sorted(n for n in ec2 if n.split(".")[0] in families) == sorted(catalog.GPU_INSTANCE_TYPES)
    assert len(catalog.GPU_INSTANCE_TYPES) == 50


def test_every_nvidia_family_ec2_lists_is_catalogued_or_left_out_with_a_reason():
    ec2 = _moto_instance_types()
    nvidia = {
        n.split(".")[0]
        for n, info in ec2.items()
        if info.get("GpuInfo", {}).get("Gpus", [{}])[0].get("Manufacturer") == "NVIDIA"
    }
    assert sorted(nvidia - set(catalog.FAMILIES)) == ["g7", "g7e", "p3dn", "p6-b200", "p6-b300"]
    assert sorted(catalog.EXCLUDED_GPU_FAMILIES) == [
        "g7",
        "g7e",
        "p3",
        "p3dn",
        "p6-b200",
        "p6-b300",
        "p6e-gb200",
        "p6e-gb300",
    ]
    assert not set(catalog.EXCLUDED_GPU_FAMILIES) & set(catalog.FAMILIES)


def test_families_and_what_they_share():
    assert {f: (x.gpu_model, x.architecture, x.supports_mig, x.kernel_module) for f, x in catalog.FAMILIES.items()} == {
        "g4dn": ("T4", "x86_64", False, "nvidia (proprietary, GSP disabled)"),
        "g5": ("A10G", "x86_64", False, "nvidia (proprietary, GSP disabled)"),
        "g5g": ("T4g", "arm64", False, "nvidia (proprietary, GSP disabled)"),
        "g6": ("L4", "x86_64", False, "nvidia-open"),
        "gr6": ("L4", "x86_64", False, "nvidia-open"),
        "g6e": ("L40S", "x86_64", False, "nvidia-open"),
        "p4d": ("A100", "x86_64", True, "nvidia-open"),
        "p4de": ("A100", "x86_64", True, "nvidia-open"),
        "p5": ("H100", "x86_64", True, "nvidia-open"),
        "p5e": ("H200", "x86_64", True, "nvidia-open"),
        "p5en": ("H200", "x86_64", True, "nvidia-open"),
        "g6f": ("L4", "x86_64", False, "nvidia-open-grid"),
        "gr6f": ("L4", "x86_64", False, "nvidia-open-grid"),
    }
    shared = {f for f, x in catalog.FAMILIES.items() if x.sharing == {"time-slicing", "mps"}}
    assert shared == set(catalog.FAMILIES) - {"g6f", "gr6f"}
    assert catalog.FAMILIES["g6f"].sharing == frozenset() == catalog.FAMILIES["gr6f"].sharing


def test_accelerator_labels_use_the_autoscaler_names_where_it_has_them():
    """CA's availableGPUTypes (aws_cloud_provider.go, cluster-autoscaler-1.35.2): nvidia-tesla-t4,
    nvidia-a10g, nvidia-l4, nvidia-l40s, nvidia-tesla-a100; the others follow its pattern."""
    assert {t: catalog.GPU_INSTANCE_TYPES[t].accelerator for t in ("g4dn.xlarge", "g5.xlarge", "g6.xlarge")} == {
        "g4dn.xlarge": "nvidia-tesla-t4",
        "g5.xlarge": "nvidia-a10g",
        "g6.xlarge": "nvidia-l4",
    }
    assert [catalog.GPU_INSTANCE_TYPES[t].accelerator for t in ("g6e.xlarge", "p4d.24xlarge", "p4de.24xlarge")] == [
        "nvidia-l40s",
        "nvidia-tesla-a100",
        "nvidia-tesla-a100",
    ]
    assert [catalog.GPU_INSTANCE_TYPES[t].accelerator for t in ("p5.48xlarge", "p5en.48xlarge", "g5g.xlarge")] == [
        "nvidia-h100",
        "nvidia-h200",
        "nvidia-t4g",
    ]


def test_fractional_rows():
    rows = {t: catalog.GPU_INSTANCE_TYPES[t] for t in ("g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge")}
    rows["gr6f.4xlarge"] = catalog.GPU_INSTANCE_TYPES["gr6f.4xlarge"]
    assert {
        t: (r.gpus, r.ec2_gpus, str(r.gpu_fraction), r.vgpu_profile, r.gpu_memory_mib_per_gpu) for t, r in rows.items()
    } == {
        "g6f.large": (1, 0, "1/8", "L4-3Q", 2861),
        "g6f.xlarge": (1, 0, "1/8", "L4-3Q", 2861),
        "g6f.2xlarge": (1, 0, "1/4", "L4-6Q", 5722),
        "g6f.4xlarge": (1, 0, "1/2", "L4-12Q", 11444),
        "gr6f.4xlarge": (1, 0, "1/2", "L4-12Q", 11444),
    }
    whole = catalog.GPU_INSTANCE_TYPES["g6.xlarge"]
    assert (whole.gpus, whole.ec2_gpus, whole.gpu_fraction, whole.vgpu_profile) == (1, 1, None, None)


def test_ami_types_and_their_ssm_parameters():
    assert catalog.GPU_AMI_TYPES == {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}
    assert catalog.AMI_SSM_PARAMETER["AL2023_ARM_64_NVIDIA"].format(version="1.35") == (
        "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/nvidia/recommended/image_id"
    )


# ---------------------------------------------------------------------------------------------
# Group plans per family: labels, AMI type, slots, node-template tags
# ---------------------------------------------------------------------------------------------


def _tags(accelerator: str, gpus: str, slots: str) -> dict[str, str]:
    return {
        TEMPLATE + "label/k8s.amazonaws.com/accelerator": accelerator,
        TEMPLATE + "label/gpu-eks.io/gpu-count": gpus,
        TEMPLATE + "label/nvidia.com/device-plugin.config": "g",
        TEMPLATE + "label/gpu-eks.io/node-group": "g",
        TEMPLATE + "taint/nvidia.com/gpu": "true:NoSchedule",
        TEMPLATE + "resources/nvidia.com/gpu": slots,
    }


@pytest.mark.parametrize(
    ("types", "replicas", "ami", "accelerator", "gpus", "slots", "max_pods", "usable", "memory", "smallest"),
    [
        (
            ["g5.24xlarge", "g5.12xlarge"],
            4,
            "AL2023_x86_64_NVIDIA",
            "nvidia-a10g",
            4,
            16,
            250,
            243,
            22888,
            ("48", "196608Mi"),
        ),
        (["g5.xlarge"], 8, "AL2023_x86_64_NVIDIA", "nvidia-a10g", 1, 8, 58, 51, 22888, None),
        (["g6.xlarge", "g6.2xlarge"], 2, "AL2023_x86_64_NVIDIA", "nvidia-l4", 1, 2, 58, 51, 22888, None),
        (["gr6.4xlarge", "g6.xlarge"], 4, "AL2023_x86_64_NVIDIA", "nvidia-l4", 1, 4, 58, 51, 22888, ("4", "16384Mi")),
        (["g6e.xlarge"], 3, "AL2023_x86_64_NVIDIA", "nvidia-l40s", 1, 3, 58, 51, 45776, None),
        (["p5.48xlarge"], 4, "AL2023_x86_64_NVIDIA", "nvidia-h100", 8, 32, 100, 92, 81920, None),
        (["p5e.48xlarge"], 2, "AL2023_x86_64_NVIDIA", "nvidia-h200", 8, 16, 100, 92, 144384, None),
        (["p4d.24xlarge"], 1, "AL2023_x86_64_NVIDIA", "nvidia-tesla-a100", 8, 8, 250, 242, 40960, None),
        (["g5g.xlarge", "g5g.2xlarge"], 4, "AL2023_ARM_64_NVIDIA", "nvidia-t4g", 1, 4, 58, 51, 16384, None),
        (["g5g.16xlarge"], 3, "AL2023_ARM_64_NVIDIA", "nvidia-t4g", 2, 6, 250, 243, 16384, None),
    ],
)
def test_a_group_of_each_family(types, replicas, ami, accelerator, gpus, slots, max_pods, usable, memory, smallest):
    """``smallest``: the CA template's CPU and memory tags of a group whose first type is larger
    than another (the smallest vCPUs and memory, EC2's numbers); None: no such tags."""
    p = plan(types, replicas)
    assert p.ami_type == ami
    assert p.architecture == ("arm64" if ami == "AL2023_ARM_64_NVIDIA" else "x86_64")
    assert dict(p.node_labels) == {
        "k8s.amazonaws.com/accelerator": accelerator,
        "gpu-eks.io/gpu-count": str(gpus),
        "nvidia.com/device-plugin.config": "g",
        "gpu-eks.io/node-group": "g",
    }
    assert (p.gpus_per_node, p.slots_per_node, p.max_pods, p.usable_pod_slots) == (gpus, slots, max_pods, usable)
    assert p.instance.gpu_memory_mib_per_gpu == memory
    sized = (
        {}
        if smallest is None
        else {TEMPLATE + "resources/cpu": smallest[0], TEMPLATE + "resources/memory": smallest[1]}
    )
    assert dict(p.node_template_tags) == {**_tags(accelerator, str(gpus), str(slots)), **sized}


@pytest.mark.parametrize(
    ("instance_type", "replicas", "ec2_mib", "driver_mib", "per_slot_mib"),
    [
        # nvidia-smi's "<used>MiB / <total>MiB" per model (catalog.DRIVER_MEMORY_MIB cites them).
        ("g4dn.xlarge", 4, 16384, 15360, 3840),
        ("g5g.xlarge", 4, 16384, 15360, 3840),
        ("g5.xlarge", 4, 22888, 23028, 5757),
        ("g6.xlarge", 2, 22888, 23034, 11517),
        ("gr6.4xlarge", 3, 22888, 23034, 7678),
        ("g6e.xlarge", 4, 45776, 46068, 11517),
        ("p4d.24xlarge", 8, 40960, 40960, 5120),
        ("p4de.24xlarge", 8, 81920, 81920, 10240),
        ("p5.48xlarge", 4, 81920, 81559, 20389),
        ("p5e.48xlarge", 2, 144384, 143771, 71885),
        ("p5en.48xlarge", 48, 144384, 143771, 2995),
        # A vGPU slice: its profile's framebuffer, as EC2 reports it (not shared further).
        ("g6f.large", 1, 2861, 2861, 2861),
    ],
)
def test_memory_per_slot_divides_what_the_driver_reports(instance_type, replicas, ec2_mib, driver_mib, per_slot_mib):
    row = catalog.GPU_INSTANCE_TYPES[instance_type]
    assert (row.gpu_memory_mib_per_gpu, row.driver_memory_mib_per_gpu) == (ec2_mib, driver_mib)
    assert row.memory_per_client_mib(replicas) == per_slot_mib


def test_every_whole_gpu_family_has_its_driver_memory():
    whole = sorted(name for name, f in catalog.FAMILIES.items() if not f.fractional)
    assert sorted(catalog.DRIVER_MEMORY_MIB) == whole


def test_a_fractional_group_advertises_one_slot_and_is_labelled_one_gpu():
    p = plan(["g6f.large", "g6f.xlarge"], 1)
    assert (p.ami_type, p.gpus_per_node, p.slots_per_node, p.max_pods, p.usable_pod_slots) == (
        "AL2023_x86_64_NVIDIA",
        1,
        1,
        20,
        13,
    )
    assert p.instance.gpu_memory_mib_per_gpu == 2861
    assert dict(p.node_labels)["gpu-eks.io/gpu-count"] == "1"
    assert dict(p.node_template_tags) == _tags("nvidia-l4", "1", "1")
    assert "sharing" not in p.device_plugin_config


# ---------------------------------------------------------------------------------------------
# Mixed-type groups, unknown types, sharing a vGPU slice
# ---------------------------------------------------------------------------------------------


def test_g4dn_with_g5_is_refused():
    assert problems({"instanceTypes": ["g4dn.xlarge", "g5.xlarge"]}) == [
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["g4dn.xlarge", "g5.xlarge"]; expected instance types '
        "with the same GPU model, memory per GPU, GPU count and CPU architecture, since the labels, slots and AMI "
        "are per node group (got g4dn.xlarge=1x T4 16384 MiB x86_64, g5.xlarge=1x A10G 22888 MiB x86_64); split "
        "them into separate node groups"
    ]


@pytest.mark.parametrize(
    ("types", "detail"),
    [
        (["g4dn.xlarge", "g5g.xlarge"], "g4dn.xlarge=1x T4 16384 MiB x86_64, g5g.xlarge=1x T4g 16384 MiB arm64"),
        (
            ["p4d.24xlarge", "p4de.24xlarge"],
            "p4d.24xlarge=8x A100 40960 MiB x86_64, p4de.24xlarge=8x A100 81920 MiB x86_64",
        ),
        (["g6.xlarge", "g6f.xlarge"], "g6.xlarge=1x L4 22888 MiB x86_64, g6f.xlarge=1x L4 2861 MiB x86_64"),
        (["g6f.large", "g6f.2xlarge"], "g6f.large=1x L4 2861 MiB x86_64, g6f.2xlarge=1x L4 5722 MiB x86_64"),
        (["g6.xlarge", "g6.12xlarge"], "g6.xlarge=1x L4 22888 MiB x86_64, g6.12xlarge=4x L4 22888 MiB x86_64"),
    ],
)
def test_groups_the_scheduler_could_tell_apart_are_refused(types, detail):
    (line,) = problems({"instanceTypes": types, "timeSlicing": {"replicas": 1}})
    assert f"(got {detail}); split them into separate node groups" in line


def test_same_model_and_count_across_sizes_and_families_is_accepted():
    assert plan(["g6.xlarge", "g6.2xlarge"], 4).instance_types == ("g6.xlarge", "g6.2xlarge")
    assert plan(["p5e.48xlarge", "p5en.48xlarge"], 2).max_pods == 100
    assert plan(["g6f.4xlarge", "gr6f.4xlarge"], 1).slots_per_node == 1


@pytest.mark.parametrize("types", [["g6f.large"], ["gr6f.4xlarge"], ["g6f.2xlarge"]])
def test_time_slicing_a_vgpu_slice_is_refused(types):
    assert problems({"instanceTypes": types, "timeSlicing": {"replicas": 2}}) == [
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 2; expected 1 (not shared) for "
        f"{types[0]}: no time-slicing there, since a g6f/gr6f vGPU slice is already a time-sliced share of an L4, "
        "scheduled by the hypervisor; neither NVIDIA (k8s-device-plugin, gpu-operator) nor AWS documents "
        "time-slicing or MPS on top of a vGPU slice, so the library does not offer it: one pod per slice, or whole "
        "L4s (g6, gr6) to share"
    ]


def test_mps_on_a_vgpu_slice_is_refused():
    assert problems({"instanceTypes": ["g6f.large"], "mps": {"replicas": 2}}) == [
        "gpu-eks:gpuNodeGroups[0].mps.replicas: received 2; expected no mps (timeSlicing: {replicas: 1} instead) "
        "for g6f.large: no mps there, since a g6f/gr6f vGPU slice is already a time-sliced share of an L4, "
        "scheduled by the hypervisor; neither NVIDIA (k8s-device-plugin, gpu-operator) nor AWS documents "
        "time-slicing or MPS on top of a vGPU slice, so the library does not offer it: one pod per slice, or whole "
        "L4s (g6, gr6) to share"
    ]


def test_the_family_rule_and_the_other_mps_rules_are_reported_together_family_first():
    # The memory floor ("at most 2") is left out where the family refuses MPS: it would suggest 2 works.
    lines = problems({"instanceTypes": ["g6f.large"], "mps": {"replicas": 20}, "timeSlicing": {"replicas": 1}})
    assert [line.split(";")[0] for line in lines] == [
        "gpu-eks:gpuNodeGroups[0].mps.replicas: received 20",
        'gpu-eks:gpuNodeGroups[0].mps: received {"replicas": 20}',
    ]
    assert lines[0].startswith(
        "gpu-eks:gpuNodeGroups[0].mps.replicas: received 20; expected no mps (timeSlicing: {replicas: 1} instead) "
        "for g6f.large"
    )
    assert lines[1].startswith(
        'gpu-eks:gpuNodeGroups[0].mps: received {"replicas": 20}; expected either mps or timeSlicing'
    )


def test_the_default_replicas_on_a_vgpu_slice_is_refused_too():
    (line,) = problems({"instanceTypes": ["g6f.xlarge"]})
    assert line.startswith("gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 4; expected 1 (not shared)")


def test_the_sharing_rule_keys_on_a_shared_group_whatever_the_mode():
    """config.instance_types.sharing_problem: the same refusal for MPS, pointing at the exclusive mode."""
    assert sharing_problem(["g6f.large"], catalog.MPS, shared=False) is None
    assert sharing_problem(["g6.xlarge"], catalog.MPS, shared=True) is None
    assert sharing_problem(["gr6f.4xlarge"], catalog.MPS, shared=True) == (
        "no mps (timeSlicing: {replicas: 1} instead) for gr6f.4xlarge: no mps there, since a g6f/gr6f vGPU slice "
        "is already a time-sliced share of an L4, scheduled by the hypervisor; neither NVIDIA (k8s-device-plugin, "
        "gpu-operator) nor AWS documents time-slicing or MPS on top of a vGPU slice, so the library does not offer "
        "it: one pod per slice, or whole L4s (g6, gr6) to share"
    )


def test_the_readme_families_table_is_generated_from_the_catalog():
    readme = docgen.CONFIGURATION.read_text()
    assert readme == docgen.readme_with_families(readme), (
        "docs/configuration.md's GPU families table is stale: python -m tooling docs"
    )
    assert (
        "| `g6f` | L4 | 1/8 (L4-3Q): large xlarge, 1/4 (L4-6Q): 2xlarge, 1/2 (L4-12Q): 4xlarge | 2,861 MiB: large "
        "xlarge, 5,722 MiB: 2xlarge, 11,444 MiB: 4xlarge | x86_64 (`AL2023_x86_64_NVIDIA`) | `nvidia-l4` | none (vGPU "
        "slice: one pod per node) |"
    ) in readme
    assert (
        "| `g5g` | T4g | 1: xlarge 2xlarge 4xlarge 8xlarge, 2: 16xlarge metal | 16,384 MiB | arm64 "
        "(`AL2023_ARM_64_NVIDIA`) | `nvidia-t4g` | time-slicing and MPS |"
    ) in readme


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_mig_capable_nodes_run_mig_manager_too(version):
    """gpu-operator controllers/state_manager.go (v25.3.1, v25.10.1, v26.7.0): with the container
    workload config, a node whose GPU is MIG-capable gets nvidia.com/gpu.deploy.mig-manager=true;
    the chart enables migManager and our values leave it on, so one more DaemonSet pod runs there."""
    chart = load_reference_yaml("gpu-operator", version, "values.yaml")
    ours = operator_values.gpu_operator_values((plan(["p5.48xlarge"], 2),), version)
    assert chart["migManager"]["enabled"] is True and "migManager" not in ours
    # An MPS profile adds the operator's MPS control daemon on top (assets/state-mps-control-daemon).
    assert catalog.daemonset_pods("g4dn.xlarge", mps=True)[-1] == "nvidia-device-plugin-mps-control-daemon"
    assert catalog.daemonset_pods("p5.48xlarge", mps=True)[-2:] == (
        "nvidia-mig-manager",
        "nvidia-device-plugin-mps-control-daemon",
    )
    assert (catalog.usable_pod_slots("g4dn.xlarge"), catalog.usable_pod_slots("g4dn.xlarge", mps=True)) == (22, 21)
    assert catalog.daemonset_pods("p5.48xlarge")[-1] == "nvidia-mig-manager"
    assert [len(catalog.daemonset_pods(t)) for t in ("p4d.24xlarge", "p5e.48xlarge", "g6e.xlarge", "g6f.large")] == [
        8,
        8,
        7,
        7,
    ]


# ---------------------------------------------------------------------------------------------
# The first AMI release a family runs on
# ---------------------------------------------------------------------------------------------


def test_only_the_vgpu_families_need_a_minimum_ami_release():
    """awslabs/amazon-eks-ami d8f3b70a (#2265, 2025-06-04) added the GRID guest module for the L4
    vGPU subdevices; `git tag --contains d8f3b70a` starts at v20250610."""
    assert {f.name: f.min_ami_release for f in catalog.FAMILIES.values() if f.min_ami_release} == {
        "g6f": "20250610",
        "gr6f": "20250610",
    }


def _pinned(types: list[str], release: str) -> dict[str, Any]:
    return {
        "clusterName": "c",
        "kubernetesVersion": "1.32",
        "gpuNodeGroups": [
            {"name": "g", "instanceTypes": types, "timeSlicing": {"replicas": 1}, "amiReleaseVersion": release}
        ],
    }


@pytest.mark.parametrize("types", [["g6f.large", "g6f.xlarge"], ["gr6f.4xlarge"]])
def test_a_vgpu_group_pinned_before_the_grid_driver_is_refused(types):
    with pytest.raises(ConfigError) as info:
        load_settings(_pinned(types, "1.32.3-20250519"))
    assert [str(p) for p in info.value.problems] == [
        'gpu-eks:gpuNodeGroups[0].amiReleaseVersion: received "1.32.3-20250519"; expected an AMI release of '
        f"20250610 or later (<x.y.z>-20250610), or none (the latest), for {', '.join(types)}: the AL2023 NVIDIA AMI "
        "loads the driver they need (nvidia-open-grid) from release v20250610 (catalog.instances), so an older one "
        "boots them without a usable GPU"
    ]


@pytest.mark.parametrize(
    ("types", "release"),
    [
        (["g6f.large"], "1.32.3-20250610"),  # the first release with the GRID module
        (["gr6f.4xlarge"], "1.32.9-20251002"),
        (["g6.xlarge"], "1.32.3-20250519"),  # whole L4s: nvidia-open, any release
        (["g4dn.xlarge"], "1.32.0-20250116"),
    ],
)
def test_a_release_the_family_runs_on_is_accepted(types, release):
    settings = load_settings(_pinned(types, release))
    assert settings.gpu_node_groups[0].ami_release_version == release
