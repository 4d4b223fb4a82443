"""The example stacks of examples/ (issue 15), rendered under mocks like the real stacks: a g5 and
a g6/gr6 group mixing sizes, an arm64 g5g group, a fractional g6f group that scales from zero, two
teams on two groups (issue 25)."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import stackfile
from components.plan import userdata
from tests.support.paths import EXAMPLES, ROOT
from tests.support.reference import CHART_VERSIONS
from tests.support.rendered import asg_tags_of, nodeconfig_of
from tests.support.simulation import example
from tests.support.standins.admission import refusals
from tests.support.standins.autoscaler import fits, pod_from_outputs, template_node
from tests.support.tokens import LAUNCH_TEMPLATE as LT
from tooling.simulation import Simulation, program_from_file, run_program

NG = "aws:eks/nodeGroup:NodeGroup"
JOB = "kubernetes:batch/v1:Job"
IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
TEMPLATE = "k8s.io/cluster-autoscaler/node-template/"


def test_the_examples_are_the_ones_documented():
    assert sorted(p.name for p in Path(EXAMPLES).iterdir()) == [
        "Pulumi.ampere-ada.yaml",
        "Pulumi.fractional.yaml",
        "Pulumi.graviton.yaml",
        "Pulumi.karpenter.yaml",
        "Pulumi.mig-a100.yaml",
        "Pulumi.mig-h100.yaml",
        "Pulumi.multinode.yaml",
        "Pulumi.teams.yaml",
    ]


def group_tags(sim: Simulation, group: str) -> dict[str, str]:
    return {k: v for k, v in asg_tags_of(sim, group).items() if k.startswith(TEMPLATE)}


def labels(group: str, accelerator: str, gpus: str) -> dict[str, str]:
    return {
        "k8s.amazonaws.com/accelerator": accelerator,
        "gpu-eks.io/gpu-count": gpus,
        "nvidia.com/device-plugin.config": group,
        "gpu-eks.io/node-group": group,
    }


def template_tags(group: str, accelerator: str, gpus: str, slots: str) -> dict[str, str]:
    return {
        **{TEMPLATE + "label/" + k: v for k, v in labels(group, accelerator, gpus).items()},
        TEMPLATE + "taint/nvidia.com/gpu": "true:NoSchedule",
        TEMPLATE + "resources/nvidia.com/gpu": slots,
    }


def concurrent_job(sim: Simulation, group: str) -> dict[str, Any]:
    return sim.one(JOB, f"gpu-eks-verify-{group}-concurrent").inputs["spec"]


def test_ampere_ada_mixes_sizes_of_one_gpu_per_group():
    sim = example("ampere-ada")
    a10g, l4 = sim.one(NG, "gpu-eks-a10g").inputs, sim.one(NG, "gpu-eks-l4").inputs
    assert (a10g["amiType"], a10g["instanceTypes"]) == ("AL2023_x86_64_NVIDIA", ["g5.xlarge", "g5.2xlarge"])
    assert (l4["amiType"], l4["instanceTypes"]) == ("AL2023_x86_64_NVIDIA", ["g6.xlarge", "g6.2xlarge", "gr6.4xlarge"])
    assert sim.one(NG, "gpu-eks-cluster-system").inputs["amiType"] == "AL2023_ARM_64_STANDARD"
    assert nodeconfig_of(sim, "a10g")[0] == labels("a10g", "nvidia-a10g", "1")
    assert nodeconfig_of(sim, "l4")[0] == labels("l4", "nvidia-l4", "1")
    assert group_tags(sim, "a10g") == template_tags("a10g", "nvidia-a10g", "1", "4")
    assert group_tags(sim, "l4") == template_tags("l4", "nvidia-l4", "1", "4")
    for group in ("a10g", "l4"):
        spec = concurrent_job(sim, group)
        assert (spec["parallelism"], spec["template"]["spec"]["containers"][0]["image"]) == (4, IMAGE)


def node_config_spec(sim: Simulation, group: str) -> dict[str, Any]:
    mime = base64.b64decode(sim.one(LT, f"gpu-eks-{group}-lt").inputs["userData"]).decode()
    (_, body), _boot = userdata.parse_mime(mime)
    return yaml.safe_load(body)["spec"]


def root_ebs(sim: Simulation, group: str) -> dict[str, Any]:
    (mapping,) = sim.one(LT, f"gpu-eks-{group}-lt").inputs["blockDeviceMappings"]
    return mapping["ebs"]


def test_ampere_ada_a10g_keeps_its_images_on_the_instance_store():
    """Issue 27: the g5 group's containerd on the NVMe RAID0 with FastImagePull; l4 has no levers."""
    sim = example("ampere-ada")
    a10g = node_config_spec(sim, "a10g")
    assert (a10g["featureGates"], a10g["instance"]) == (
        {"FastImagePull": True},
        {"localStorage": {"strategy": "RAID0"}},
    )
    assert list(node_config_spec(sim, "l4")) == ["kubelet"]
    assert "throughput" not in root_ebs(sim, "a10g")


def test_graviton_t4g_gets_a_faster_root_volume():
    """Issue 27: g5g has no instance store; its gp3 root volume gets 560 MiB/s (EC2's IOPS default)."""
    sim = example("graviton")
    ebs = root_ebs(sim, "t4g")
    assert (ebs["volumeType"], ebs["throughput"], ebs["volumeSize"]) == ("gp3", 560, 100)
    assert "iops" not in ebs
    assert list(node_config_spec(sim, "t4g")) == ["kubelet"]


def test_graviton_boots_the_arm64_nvidia_ami():
    sim = example("graviton")
    t4g = sim.one(NG, "gpu-eks-t4g").inputs
    assert (t4g["amiType"], t4g["instanceTypes"]) == ("AL2023_ARM_64_NVIDIA", ["g5g.xlarge", "g5g.2xlarge"])
    assert nodeconfig_of(sim, "t4g")[0] == labels("t4g", "nvidia-t4g", "1")
    assert group_tags(sim, "t4g") == template_tags("t4g", "nvidia-t4g", "1", "4")
    spec = concurrent_job(sim, "t4g")
    # The default image is multi-arch (amd64 and arm64): config.addons.VerificationSettings.
    assert (spec["parallelism"], spec["template"]["spec"]["containers"][0]["image"]) == (4, IMAGE)


def test_graviton_with_an_arm64_image_runs_it_on_arm64_groups_only():
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "Pulumi.graviton.yaml").read_text())["config"]
    groups = [*config["gpu-eks:gpuNodeGroups"], {"name": "t4", "instanceTypes": ["g4dn.xlarge"]}]
    config = {
        **config,
        "gpu-eks:gpuNodeGroups": groups,
        "gpu-eks:verification": {
            **config["gpu-eks:verification"],
            "imageArm64": "registry.example.com/cuda-sample:vectoradd-arm64",
        },
    }
    sim = run_program(
        program_from_file(ROOT / "__main__.py"),
        stackfile.cli_config(config),
        project=stackfile.project_name(ROOT),
        stack="graviton-arm64-image",
    )
    images = {r.name: r.inputs["spec"]["template"]["spec"]["containers"][0]["image"] for r in sim.by_type(JOB)}
    assert images == {
        "gpu-eks-verify-t4g-warmup": "registry.example.com/cuda-sample:vectoradd-arm64",
        "gpu-eks-verify-t4g-isolation": "registry.example.com/cuda-sample:vectoradd-arm64",
        "gpu-eks-verify-t4g-concurrent": "registry.example.com/cuda-sample:vectoradd-arm64",
        "gpu-eks-verify-t4-warmup": IMAGE,
        "gpu-eks-verify-t4-isolation": IMAGE,
        "gpu-eks-verify-t4-concurrent": IMAGE,
    }


def test_fractional_labels_one_gpu_and_advertises_one_slot():
    sim = example("fractional")
    ng = sim.one(NG, "gpu-eks-l4-eighth").inputs
    assert (ng["amiType"], ng["instanceTypes"]) == ("AL2023_x86_64_NVIDIA", ["g6f.large", "g6f.xlarge"])
    assert nodeconfig_of(sim, "l4-eighth")[0] == labels("l4-eighth", "nvidia-l4", "1")
    assert group_tags(sim, "l4-eighth") == template_tags("l4-eighth", "nvidia-l4", "1", "1")
    assert concurrent_job(sim, "l4-eighth")["parallelism"] == 1
    out = sim.outputs["gpuNodeGroups"]["l4-eighth"]
    assert (out["gpusPerNode"], out["advertisedGpusPerNode"], out["sharedSlotsAtMaxSize"]) == (1, 1, 8)


@pytest.mark.parametrize("instance_type", ["g6f.large", "g6f.xlarge"])
def test_fractional_scales_from_zero(instance_type):
    """CA's template node of the group: capacity from its instance list (0 GPUs for g6f), then the
    resources tag (1 nvidia.com/gpu); a pending pod built from the outputs fits it, so CA adds a
    node. Without the tag the pod would never fit."""
    sim = example("fractional")
    out = sim.outputs["gpuNodeGroups"]["l4-eighth"]
    tags = asg_tags_of(sim, "l4-eighth")
    node = template_node(tags, instance_type)
    assert node["capacity"]["nvidia.com/gpu"] == 1
    assert node["labels"]["gpu-eks.io/gpu-count"] == "1"
    assert fits(pod_from_outputs(out), node)
    assert not fits(pod_from_outputs(out, slots=2), node)
    untagged = template_node({k: v for k, v in tags.items() if "/resources/" not in k}, instance_type)
    assert untagged["capacity"]["nvidia.com/gpu"] == 0
    assert not fits(pod_from_outputs(out), untagged)


# ---------------------------------------------------------------------------------------------
# MIG (issue 24): a p4d group under single, a p5 group under mixed, at every supported chart
# ---------------------------------------------------------------------------------------------

_MIG_RUNS: dict[tuple[str, str], Simulation] = {}
RELEASE = "kubernetes:helm.sh/v3:Release"


def mig_example(name: str, chart_version: str) -> Simulation:
    if (name, chart_version) not in _MIG_RUNS:
        config: dict[str, Any] = yaml.safe_load((EXAMPLES / f"Pulumi.{name}.yaml").read_text())["config"]
        config = {**config, "gpu-eks:gpuOperator": {"chartVersion": chart_version}}
        _MIG_RUNS[(name, chart_version)] = run_program(
            program_from_file(ROOT / "__main__.py"),
            stackfile.cli_config(config),
            project=stackfile.project_name(ROOT),
            stack=f"{name}-{chart_version.replace('.', '-')}",
        )
    return _MIG_RUNS[(name, chart_version)]


def mig_values_of(sim: Simulation) -> tuple[dict[str, Any], dict[str, Any]]:
    """The operator's values: mig.strategy and the migManager block."""
    values = sim.one(RELEASE, "gpu-eks-gpu-operator-release").inputs["values"]
    return values["mig"], values["migManager"]


def boot_script_of(sim: Simulation, group: str) -> str:
    """The boot stage's shell part of the group's launch template user data (plan/boot.py)."""
    mime = base64.b64decode(sim.one(LT, f"gpu-eks-{group}-lt").inputs["userData"]).decode()
    _, (content_type, script) = userdata.parse_mime(mime)
    assert content_type == "text/x-shellscript"
    return script


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_mig_a100_single_advertises_56_slices_as_nvidia_gpu(version):
    sim = mig_example("mig-a100", version)
    out = sim.outputs["gpuNodeGroups"]["a100-1g"]
    assert (out["resourceName"], out["sharingMode"], out["advertisedResources"], out["migLayout"]) == (
        "nvidia.com/gpu",
        "mig",
        {"nvidia.com/gpu": 56},
        {"1g.5gb": 7},
    )
    assert nodeconfig_of(sim, "a100-1g")[0] == labels("a100-1g", "nvidia-tesla-a100", "8")
    strategy, manager = mig_values_of(sim)
    # The boot stage cuts the slices before kubelet; mig-manager never changes MIG mode.
    assert strategy == {"strategy": "single"}
    assert manager == {"enabled": False}
    script = boot_script_of(sim, "a100-1g")
    assert "GPUS=8\n" in script
    assert 'MIG_CREATE="1g.5gb:0,1g.5gb:1,1g.5gb:2,1g.5gb:3,1g.5gb:4,1g.5gb:5,1g.5gb:6"\n' in script
    spec = sim.one(JOB, "gpu-eks-verify-a100-1g-gpu").inputs["spec"]
    assert spec["parallelism"] == 56
    assert spec["template"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_mig_h100_mixed_advertises_each_profile(version):
    sim = mig_example("mig-h100", version)
    out = sim.outputs["gpuNodeGroups"]["h100-mixed"]
    assert out["advertisedResources"] == {"nvidia.com/mig-1g.10gb": 64, "nvidia.com/mig-3g.40gb": 8}
    strategy, manager = mig_values_of(sim)
    assert strategy == {"strategy": "mixed"}
    assert manager == {"enabled": False}
    # 1g starts at 0-6 only: the 3g goes to 4 so that four 1g fit at 0-3 (MIG user guide placements).
    assert 'MIG_CREATE="3g.40gb:4,1g.10gb:0,1g.10gb:1,1g.10gb:2,1g.10gb:3"\n' in boot_script_of(sim, "h100-mixed")
    jobs = {r: sim.one(JOB, f"gpu-eks-verify-h100-mixed-{r}").inputs["spec"] for r in ("mig-1g.10gb", "mig-3g.40gb")}
    assert {r: s["parallelism"] for r, s in jobs.items()} == {"mig-1g.10gb": 64, "mig-3g.40gb": 8}
    assert [r.name for r in sim.by_type(JOB)] == [
        "gpu-eks-verify-h100-mixed-warmup",
        "gpu-eks-verify-h100-mixed-isolation",
        "gpu-eks-verify-h100-mixed-mig-1g.10gb",
        "gpu-eks-verify-h100-mixed-mig-3g.40gb",
    ]


#: CA's GPU readiness (cluster-autoscaler-1.35.2 processors/customresources/gpu_processor.go
#: FilterOutNodesWithUnreadyResources; utils/gpu/gpu.go NodeHasGpuAllocatable): a node with the
#: provider's GPULabel (AWS: k8s.amazonaws.com/accelerator) is held unready while its allocatable
#: has no non-zero nvidia.com/gpu (or another vendor's GPU resource).
def ca_counts_gpu_ready(labels: dict[str, str], allocatable: dict[str, int]) -> bool:
    return "k8s.amazonaws.com/accelerator" not in labels or allocatable.get("nvidia.com/gpu", 0) > 0


@pytest.mark.parametrize(
    ("name", "group", "instance_type"),
    [("mig-a100", "a100-1g", "p4d.24xlarge"), ("mig-h100", "h100-mixed", "p5.48xlarge")],
    ids=["single", "mixed"],
)
def test_mig_groups_scale_from_zero_and_ca_sees_their_nodes_ready(name, group, instance_type):
    """From zero, CA's template node (instance list, then the ASG's node-template tags) offers every
    resource the node will advertise: a pod asking for one slot of any of them fits, one asking for
    more than the node has does not. Once the node joins with its slices, CA counts it ready: under
    single it advertises nvidia.com/gpu; under mixed it never does, and carries no GPU label."""
    sim = mig_example(name, "v26.7.0")
    out = sim.outputs["gpuNodeGroups"][group]
    node = template_node(asg_tags_of(sim, group), instance_type)
    for resource, count in out["advertisedResources"].items():
        assert node["capacity"][resource] == count
        pod = {**pod_from_outputs(out), "requests": {resource: 1}}
        assert fits(pod, node)
        assert not fits({**pod, "requests": {resource: count + 1}}, node)
    node_labels, _ = nodeconfig_of(sim, group)
    assert ca_counts_gpu_ready(node_labels, dict(out["advertisedResources"]))
    # Before the slices appear: single waits (GPU label, no nvidia.com/gpu yet), mixed does not.
    assert ca_counts_gpu_ready(node_labels, {}) is (name == "mig-h100")
    if name == "mig-h100":
        # Mixed: no whole GPU to offer (the instance's 8 would be a lie), and no GPU label.
        assert node["capacity"]["nvidia.com/gpu"] == 0
        assert "k8s.amazonaws.com/accelerator" not in node["labels"]


def _refusals(sim: Simulation, team: str, pod_spec: dict[str, Any]) -> list[str]:
    """The team's rendered ValidatingAdmissionPolicy, evaluated (CEL) on a pod of ``pod_spec``."""
    rule = sim.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", f"gpu-eks-teams-{team}-policy"
    )
    return refusals(rule.inputs, {"spec": pod_spec})


def _admitted_by(sim: Simulation, team: str, pod_spec: dict[str, Any]) -> bool:
    return not _refusals(sim, team, pod_spec)


def test_teams_each_team_runs_on_its_own_group_from_the_stack_outputs():
    """Two teams on two groups: a GPU pod written from a group's stack outputs (nodeSelector,
    tolerations, resourceName) is admitted by the policy of the team of that group and refused by the
    other team's."""
    sim = example("teams")
    groups = sim.outputs["gpuNodeGroups"]

    def pod(group: str) -> dict[str, Any]:
        out = groups[group]
        return {
            "nodeSelector": out["nodeSelector"],
            "tolerations": out["tolerations"],
            "containers": [{"name": "main", "image": IMAGE, "resources": {"limits": {out["resourceName"]: "1"}}}],
        }

    assert _admitted_by(sim, "ml", pod("t4")) and not _admitted_by(sim, "ml", pod("a10g"))
    assert _admitted_by(sim, "cv", pod("a10g")) and not _admitted_by(sim, "cv", pod("t4"))
    namespaces = {
        r.inputs["metadata"]["name"] for r in sim.by_type("kubernetes:core/v1:Namespace") if "teams" in r.name
    }
    assert namespaces == {"ml", "vision"}


def test_teams_every_pod_of_a_team_namespace_stays_inside_it():
    """Issue 31 item 3 on the example: the bypasses of a GPU node's GPUs without a GPU request are
    refused by each team's policy, by the rule each names; a plain pod is admitted."""
    sim = example("teams")
    plain = {"containers": [{"name": "web", "image": "nginx"}]}
    t4 = sim.outputs["gpuNodeGroups"]["t4"]
    bypasses = {
        "rule device variables": {
            "containers": [{"name": "c", "image": IMAGE, "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]
        },
        "rule nodeName": {**plain, "nodeName": "ip-10-0-1-23.ec2.internal"},
        "rule GPU taints": {**plain, "tolerations": t4["tolerations"]},
        "rule GPU labels": {**plain, "nodeSelector": t4["nodeSelector"]},
    }
    for team in ("ml", "cv"):
        assert _refusals(sim, team, plain) == []
        for rule, spec in bypasses.items():
            (message,) = _refusals(sim, team, spec)
            assert message.startswith(f"team {team}: {rule}:"), (team, message)


def test_the_karpenter_example_gives_each_group_a_node_pool_and_no_node_group():
    # The rest of it: tests/test_karpenter_cluster.py (the same cached run).
    sim = example("karpenter")
    pools = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["limits"] for r in sim.resources if r.type.endswith("NodePool")
    }
    assert pools == {
        "gpu-eks-l4-shared": {"nodes": "4"},
        "gpu-eks-l40s-mps": {"nodes": "2"},
        "gpu-eks-l4-eighth": {"nodes": "2"},
    }
    assert [r.name for r in sim.resources if r.type == NG] == ["gpu-eks-cluster-system"]


def test_what_the_examples_comments_point_to_exists():
    """A comment naming a page or a README section that is gone sends a reader nowhere (issue 42:
    `Pulumi.mig-h100.yaml` named a README section moved to docs/sharing.md). The README's sections are
    its headings; every docs/ page is a file; the MIG examples say what applies the layout now."""
    headings = {
        line.lstrip("#").strip() for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("#")
    }
    for path in sorted(EXAMPLES.glob("Pulumi.*.yaml")):
        comments = "\n".join(line for line in path.read_text().splitlines() if line.lstrip().startswith("#"))
        for page in re.findall(r"\bdocs/[\w.-]+\.md\b", comments):
            assert (ROOT / page).is_file(), (path.name, page)
        for section in re.findall(r'README,? "([^"]+)"', comments):
            assert section in headings, (path.name, section)
    a100 = (EXAMPLES / "Pulumi.mig-a100.yaml").read_text()
    assert "mig-manager applies" not in a100 and "boot stage cuts the layout before" in a100
