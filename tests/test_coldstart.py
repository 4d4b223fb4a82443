"""Issue 27: the cold-start levers (gpuNodeGroups[].coldStart) against their consumers (nodeadm's
NodeConfig CRD, EC2's gp3 limits, kubelet's config validation), what they change in the launch
template, and the cold-start model's numbers for the dev and prod stacks as literals."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import botocore.loaders
import jsonschema
import pytest
import yaml

from components.check.loading import load_settings, load_stack
from components.check.warnings import settings_warnings
from components.coldstart import model
from components.config.coldstart import ColdStart
from components.config.errors import ConfigError
from components.plan import userdata
from components.review import impact
from components.review import values as render_values
from tests.support.copies import copy_project
from tests.support.paths import ROOT
from tests.support.standins.crds import strict
from tooling import __main__ as tooling_main
from tooling import render

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def settings(**cold: Any) -> Any:
    group = {"name": "g", "instanceTypes": cold.pop("types", ["g5.xlarge"]), "timeSlicing": {"replicas": 1}}
    if "disk" in cold:
        group["diskSizeGiB"] = cold.pop("disk")
    group["coldStart"] = cold
    return load_settings({"clusterName": "c", "gpuNodeGroups": [group]})


def problems(**cold: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        settings(**cold)
    return [str(p) for p in info.value.problems]


def node_config(**cold: Any) -> dict[str, Any]:
    part, _boot = userdata.parse_mime(base64.b64decode(settings(**cold).plans[0].user_data).decode())
    return yaml.safe_load(part[1])


# ---------------------------------------------------------------------------------------------
# The rules (config/coldstart.py): each against its consumer
# ---------------------------------------------------------------------------------------------


def test_local_storage_is_refused_on_a_type_without_instance_store():
    assert problems(types=["g5g.xlarge", "g5g.2xlarge"], localStorage="RAID0") == [
        'gpu-eks:gpuNodeGroups[0].coldStart.localStorage: received "RAID0"; expected no key: g5g.xlarge, g5g.2xlarge '
        "have no NVMe instance store (ec2:DescribeInstanceTypes InstanceStorageSupported false), and nodeadm's "
        "setup-local-disks then does nothing ('no NVMe instance storage disks found!', awslabs/amazon-eks-ami "
        "v20260724); raise coldStart.rootVolumeThroughput instead"
    ]


@pytest.mark.parametrize("strategy", ["RAID10", "Mount", "raid0"])
def test_only_raid0_is_offered(strategy):
    (problem,) = problems(localStorage=strategy)
    assert problem.startswith("gpu-eks:gpuNodeGroups[0].coldStart.localStorage: received")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rootVolumeThroughput", 124),
        ("rootVolumeThroughput", 2001),
        ("rootVolumeIops", 2999),
        ("rootVolumeIops", 80001),
    ],
)
def test_gp3_ranges_from_botocore(key, value):
    (problem,) = problems(
        **{key: value, "rootVolumeIops": 80000, "disk": 200} if key == "rootVolumeThroughput" else {key: value}
    )
    assert problem.startswith(f"gpu-eks:gpuNodeGroups[0].coldStart.{key}: received {value}")


def test_gp3_throughput_per_iops_and_iops_per_gib_are_reported_together():
    assert problems(types=["g5g.xlarge"], disk=20, rootVolumeThroughput=1000, rootVolumeIops=12000) == [
        "gpu-eks:gpuNodeGroups[0].coldStart.rootVolumeIops: received 12000; expected at most 10000 with diskSizeGiB 20 "
        "(gp3 allows 500 IOPS per GiB: EBS User Guide, General Purpose SSD volumes)"
    ]
    assert problems(rootVolumeThroughput=751) == [
        "gpu-eks:gpuNodeGroups[0].coldStart.rootVolumeThroughput: received 751; expected at most 750 MiB/s with 3000 "
        "IOPS (gp3 allows 0.25 MiB/s per IOPS: EBS User Guide, General Purpose SSD volumes); raise "
        "coldStart.rootVolumeIops to at least 3004"
    ]
    settings(rootVolumeThroughput=750)  # 0.25 x 3,000: the edge is allowed


def test_fast_image_pull_is_refused_on_an_ami_release_whose_nodeadm_does_not_know_it():
    """nodeadm names the gate FastImagePull from amazon-eks-ami v20250821 (commit 28454ab9, "rename
    feature flag"; v20250819 reads AggressiveImagePull only) and ignores a feature gate it does not
    know: on an older pinned AMI the lever would silently do nothing."""

    def group(release: str) -> dict[str, Any]:
        return {
            "name": "g",
            "instanceTypes": ["g5.xlarge"],
            "timeSlicing": {"replicas": 1},
            "amiReleaseVersion": release,
            "coldStart": {"fastImagePull": True, "localStorage": "RAID0"},
        }

    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "kubernetesVersion": "1.33", "gpuNodeGroups": [group("1.33.3-20250819")]})
    assert [str(p) for p in info.value.problems] == [
        "gpu-eks:gpuNodeGroups[0].coldStart.fastImagePull: received true; expected false, or an amiReleaseVersion "
        "of <x.y.z>-20250821 or later (or none, the latest): nodeadm reads the FastImagePull gate from amazon-eks-ami "
        "v20250821 and ignores a gate it does not know, so 1.33.3-20250819 would not use it"
    ]
    load_settings({"clusterName": "c", "kubernetesVersion": "1.33", "gpuNodeGroups": [group("1.33.4-20250821")]})
    # The model's comparison offers only valid settings: no fastImagePull on such a group.
    (old,) = load_settings(
        {
            "clusterName": "c",
            "kubernetesVersion": "1.33",
            "gpuNodeGroups": [{**group("1.33.3-20250819"), "coldStart": {}}],
        }
    ).plans
    assert list(model.lever_options(old)) == ["no levers", "localStorage: RAID0"]


def test_an_ami_before_v20251217_keeps_the_soci_store_on_the_root_volume():
    """amazon-eks-ami v20251217 (commit 89cf1baf, PR #2548) is the first whose setup-local-disks
    bind-mounts /var/lib/soci-snapshotter-grpc onto the instance store (v20251209's binds kubelet,
    containerd and the pod logs only): with both levers and a release pinned from v20250821 to
    v20251209, FastImagePull unpacks onto the root volume. A warning, and the model's disk is the root's."""

    def cluster(release: str | None, **cold: Any) -> Any:
        group = {"name": "g", "instanceTypes": ["g5.xlarge"], "timeSlicing": {"replicas": 1}}
        group["coldStart"] = {"localStorage": "RAID0", "fastImagePull": True, **cold}
        if release:
            group["amiReleaseVersion"] = release
        return load_settings({"clusterName": "c", "kubernetesVersion": "1.33", "gpuNodeGroups": [group]})

    def cold_warnings(settings: Any) -> list[str]:  # 1.33 is in extended support: that warning aside
        return [str(w) for w in settings_warnings(settings) if ".coldStart." in w.key]

    expected = (
        "gpu-eks:gpuNodeGroups[0].coldStart.fastImagePull: received true; expected an amiReleaseVersion of "
        "<x.y.z>-20251217 or later (or none, the latest) with coldStart.localStorage: before amazon-eks-ami "
        "v20251217 (PR #2548) setup-local-disks leaves /var/lib/soci-snapshotter-grpc, where FastImagePull unpacks, "
        "on the root volume (125 MiB/s), so {release} pulls at the root volume's rate, not the instance store's"
    )
    for release in ("1.33.4-20250821", "1.33.5-20251209"):
        old = cluster(release)
        assert cold_warnings(old) == [expected.format(release=release)]
        disk = model.cold_start_model(old.plans[0], 8).disk
        assert disk == (
            f"SOCI store on the root volume (AMI {release}, before v20251217): gp3 root volume 125 MiB/s, instance "
            "EBS 437.5 MB/s at burst (DescribeInstanceTypes): 125 MiB/s"
        )
        # The comparison does not offer the lever that gives less here.
        assert list(model.lever_options(old.plans[0])) == ["no levers", "localStorage: RAID0"]
    for release in ("1.33.6-20251217", None):
        new = cluster(release)
        assert cold_warnings(new) == []
        assert model.cold_start_model(new.plans[0], 8).disk == (
            "instance store RAID0 of 1 NVMe disk(s): 1000 MiB/s (ASSUMPTION)"
        )
    # Without localStorage nothing moves: the rule is about the store the instance store should hold.
    root_only = cluster("1.33.4-20250821", localStorage=None)
    assert [w for w in cold_warnings(root_only) if "soci" in w] == []
    assert "SOCI" not in model.cold_start_model(root_only.plans[0], 8).disk


def test_warnings_name_what_a_lever_will_not_give():
    found = settings_warnings(
        settings(types=["g6f.large"], rootVolumeThroughput=1000, rootVolumeIops=4000, fastImagePull=True)
    )
    assert [str(w) for w in found] == [
        "gpu-eks:gpuNodeGroups[0].coldStart.rootVolumeThroughput: received 1000; expected at most 596 MiB/s: "
        "g6f.large's EBS bandwidth is 625 MB/s at most (117 baseline), shared by all its volumes "
        "(ec2:DescribeInstanceTypes EbsOptimizedInfo); the rest is paid for and never used",
        "gpu-eks:gpuNodeGroups[0].coldStart.fastImagePull: received true; expected false on g6f.large: nodeadm ignores "
        "FastImagePull below 4 vCPUs or 7 GiB of memory (awslabs/amazon-eks-ami v20260724 "
        "nodeadm/internal/containerd/config.go UseSOCISnapshotter)",
    ]
    slow = settings_warnings(settings(fastImagePull=True))
    assert [w.key for w in slow] == ["gpu-eks:gpuNodeGroups[0].coldStart.fastImagePull"]
    assert "the root volume gives 125 MiB/s" in slow[0].expected
    assert settings_warnings(settings(fastImagePull=True, localStorage="RAID0")) == []
    assert settings_warnings(settings(types=["g5g.2xlarge"], rootVolumeThroughput=560)) == []


# ---------------------------------------------------------------------------------------------
# The NodeConfig (nodeadm CRD) and the launch template
# ---------------------------------------------------------------------------------------------


def test_every_lever_lands_in_the_node_config_and_satisfies_the_crd(nodeconfig_schema):
    doc = node_config(localStorage="RAID0", fastImagePull=True)
    assert {k: v for k, v in doc["spec"].items() if k != "kubelet"} == {
        "featureGates": {"FastImagePull": True},
        "instance": {"localStorage": {"strategy": "RAID0"}},
    }
    assert list(doc["spec"]["kubelet"]) == ["flags"]
    assert doc["spec"]["kubelet"]["flags"][0].startswith("--node-labels=")
    jsonschema.validate(doc, strict(nodeconfig_schema))
    for one in ({"localStorage": "RAID0"}, {"fastImagePull": True}):
        jsonschema.validate(node_config(**one), strict(nodeconfig_schema))


def test_the_crd_refuses_what_nodeadm_would_not_take(nodeconfig_schema):
    doc = node_config(localStorage="RAID0")
    doc["spec"]["instance"]["localStorage"]["strategy"] = "RAID5"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, nodeconfig_schema)
    doc = node_config(fastImagePull=True)
    doc["spec"]["featureGates"]["FastImagePull"] = "yes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, nodeconfig_schema)
    # kubelet.config: the CRD's generated schema types every value as an object, so a scalar fails
    # the schema the library checks its NodeConfigs against; nodeadm itself takes any JSON value there
    # (RawExtension; its doc/examples.md sets shutdownGracePeriod: 30s), so this is the schema's limit,
    # not nodeadm's. maxParallelImagePulls is not offered because nodeadm already pulls without a limit
    # (config/coldstart.py); the setting is refused as an unknown key.
    doc = node_config()
    doc["spec"]["kubelet"]["config"] = {"maxParallelImagePulls": 3}
    with pytest.raises(jsonschema.ValidationError, match="3 is not of type 'object'"):
        jsonschema.validate(doc, nodeconfig_schema)
    with pytest.raises(ConfigError):
        settings(maxParallelImagePulls=3)


def test_no_lever_leaves_the_node_config_as_before():
    assert list(node_config()["spec"]) == ["kubelet"]
    assert list(node_config()["spec"]["kubelet"]) == ["flags"]
    assert settings().plans[0].user_data == settings(rootVolumeThroughput=500).plans[0].user_data


# ---------------------------------------------------------------------------------------------
# Day 2: a lever is a new launch template version, which rolls the group (components/review/impact)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_render() -> dict[str, Any]:
    return render_values.load(render.render_stack("dev", ROOT))


def _changed_dev(project: Path, cold: str) -> dict[str, Any]:
    stack = project / "stacks" / "Pulumi.dev.yaml"
    original = stack.read_text()
    old = "      timeSlicing:\n        replicas: 4\n"
    assert old in original
    stack.write_text(original.replace(old, f"      coldStart: {cold}\n{old}"))
    return render_values.load(render.render_stack("dev", project))


def test_turning_levers_on_rolls_the_group_through_its_launch_template(dev_render, tmp_path):
    project = copy_project(tmp_path)
    new = _changed_dev(project, "{localStorage: RAID0, fastImagePull: true, rootVolumeThroughput: 400}")
    summary = impact.summarize("dev", dev_render, new)
    assert summary.of("replace") == []
    (roll,) = summary.node_rolls
    assert (roll.node_group, roll.how, roll.gpu) == ("gpu-eks-t4", "rolled", True)
    lt = next(r for r in summary.resources if r.label == f"{LAUNCH_TEMPLATE} gpu-eks-t4-lt")
    assert lt.effects == ["new-launch-template-version"]
    assert any(p.startswith("userData") for p in lt.changed)
    assert any(p.startswith("blockDeviceMappings") for p in lt.changed)
    template = next(r for r in new["resources"] if r["type"] == LAUNCH_TEMPLATE and r["name"] == "gpu-eks-t4-lt")
    (ebs,) = [m["ebs"] for m in template["inputs"]["blockDeviceMappings"]]
    assert (ebs["throughput"], ebs["volumeType"]) == (400, "gp3")
    assert "iops" not in ebs


# ---------------------------------------------------------------------------------------------
# The model: dev and prod pinned
# ---------------------------------------------------------------------------------------------


def _plans(stack: str) -> Any:
    return load_stack(stack, ROOT)[1].plans


def test_dev_model():
    (plan,) = _plans("dev")
    m = model.cold_start_model(plan, 8)
    assert (m.instance_type, m.slots, m.pull_bound) == ("g4dn.xlarge", 4, "disk writes")
    assert [s.seconds for s in m.steps] == [10, 60, 30, 10, 20, 15, 10, 196.6]
    assert (m.first_pod_seconds, m.all_slots_seconds) == (351.6, 356.6)
    options = {label: model.cold_start_model(plan, 8, cold) for label, cold in model.lever_options(plan).items()}
    assert {label: (round(o.first_pod_seconds, 1), o.pull_bound) for label, o in options.items()} == {
        "no levers": (351.6, "disk writes"),
        "localStorage: RAID0": (323.8, "unpack (1 at a time)"),
        "localStorage: RAID0, fastImagePull": (201.0, "unpack (4 at a time)"),
    }


def test_prod_model():
    (plan,) = _plans("prod")
    m = model.cold_start_model(plan, 8)
    assert (m.instance_type, m.first_pod_seconds, m.all_slots_seconds) == ("g4dn.xlarge", 351.6, 356.6)


def test_a_karpenter_group_starts_with_karpenters_batch_window_not_cas_scan():
    """Karpenter decides on a batch of pending pods at most batchMaxDuration (10s) after the first
    (karpenter chart 1.14.1 values.yaml settings), not on CA's 10 s scan."""
    group = {
        "name": "k",
        "instanceTypes": ["g5.xlarge"],
        "capacityProvider": "karpenter",
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    }
    (plan,) = load_settings({"clusterName": "c", "gpuNodeGroups": [group]}).plans
    first = model.cold_start_model(plan, 8).steps[0]
    assert (first.name, first.seconds) == ("Karpenter batches the pending pods, creates a NodeClaim", 10)
    assert "batchMaxDuration default 10s" in first.source


def test_every_figure_names_a_source():
    (plan,) = _plans("dev")
    lit = model.cold_start_model(plan, 8, ColdStart(local_storage="RAID0", fast_image_pull=True))
    assert all(s.source for s in lit.steps)
    assert "nodeadm builds the instance store's RAID0" in [s.name for s in lit.steps]
    sourced = [s for s in lit.steps if not s.source.startswith(model.ASSUMPTION)]
    assert [s.seconds for s in sourced] == [10, 10, 41.0]


def test_a_group_without_instance_store_compares_the_fastest_root_volume():
    plan = settings(types=["g5g.xlarge", "g5g.2xlarge"]).plans[0]
    options = model.lever_options(plan)
    # g5g.xlarge's EBS bandwidth: 593.75 MB/s at burst = 566 MiB/s; 566 <= 0.25 x 3,000 IOPS. Below
    # nodeadm's 600 MiB/s for FastImagePull, so no option with it (the warning's rule).
    assert list(options) == ["no levers", "rootVolumeThroughput: 566, rootVolumeIops: 3000"]
    seconds = [round(model.cold_start_model(plan, 8, c).first_pod_seconds, 1) for c in options.values()]
    assert seconds == [351.6, 318.8]
    big = settings(types=["g5g.4xlarge"]).plans[0]
    assert list(model.lever_options(big)) == [
        "no levers",
        "rootVolumeThroughput: 566, rootVolumeIops: 3000",
    ]
    bigger = settings(types=["g5g.8xlarge"], disk=200).plans[0]
    assert list(model.lever_options(bigger)) == [
        "no levers",
        "rootVolumeThroughput: 1132, rootVolumeIops: 4528",
        "rootVolumeThroughput: 1132, rootVolumeIops: 4528, fastImagePull",
    ]
    assert [
        round(model.cold_start_model(bigger, 8, c).first_pod_seconds, 1) for c in model.lever_options(bigger).values()
    ] == [351.6, 318.8, 176.7]
    # Each option is a valid setting.
    for cold in model.lever_options(bigger).values():
        found = settings(types=["g5g.8xlarge"], disk=200, **cold.model_dump(by_alias=True, exclude_defaults=True))
        assert settings_warnings(found) == []


def test_mps_groups_wait_for_the_control_daemon_and_small_types_pull_without_fast_pull():
    mps = load_settings(
        {"clusterName": "c", "gpuNodeGroups": [{"name": "m", "instanceTypes": ["g6.xlarge"], "mps": {"replicas": 2}}]}
    ).plans[0]
    assert "MPS control daemon starts" in [s.name for s in model.cold_start_model(mps, 8).steps]
    small = load_settings(
        {
            "clusterName": "c",
            "gpuNodeGroups": [
                {
                    "name": "f",
                    "instanceTypes": ["g6f.large"],
                    "timeSlicing": {"replicas": 1},
                    "coldStart": {"fastImagePull": True},
                }
            ],
        }
    ).plans[0]
    assert not model.fast_image_pull_applies("g6f.large")
    assert model.cold_start_model(small, 8).pull_bound == "disk writes"
    assert list(model.lever_options(small)) == ["no levers", "localStorage: RAID0"]


def test_the_command_prints_the_model(capsys):
    assert tooling_main.main(["coldstart", "--stack", "dev", "--image-gib", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Cold start from zero nodes: stack dev, image 4 GiB (compressed)\n")
    assert "## group t4: g4dn.xlarge, 4 slot(s) per node, timeSlicing" in out
    assert "first pod running: 253s" in out
    assert tooling_main.main(["coldstart", "--stack", "nope"]) == 2
    assert tooling_main.main(["coldstart", "--image-gib", "0"]) == 2


def test_the_gp3_limits_are_botocores():
    """The ranges of rootVolumeThroughput and rootVolumeIops, read from botocore 1.44.5's EC2 model
    (LaunchTemplateEbsBlockDeviceRequest: what the launch template's block device takes)."""
    shape = botocore.loaders.Loader().load_service_model("ec2", "service-2")["shapes"]
    members = shape["LaunchTemplateEbsBlockDeviceRequest"]["members"]
    throughput = re.sub("<[^>]+>", "", members["Throughput"]["documentation"])
    iops = re.sub("<[^>]+>", "", members["Iops"]["documentation"])
    assert "Minimum value of 125. Maximum value of 2,000." in throughput
    assert "gp3: 3,000 - 80,000 IOPS" in iops
    fields = ColdStart.model_json_schema(by_alias=True)["properties"]
    assert [f["anyOf"][0].get("minimum") for f in (fields["rootVolumeThroughput"], fields["rootVolumeIops"])] == [
        125,
        3000,
    ]
    assert [f["anyOf"][0].get("maximum") for f in (fields["rootVolumeThroughput"], fields["rootVolumeIops"])] == [
        2000,
        80000,
    ]
