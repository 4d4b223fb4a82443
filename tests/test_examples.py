"""The example stacks of examples/ (issue 15), rendered under mocks like the real stacks: a g5 and
a g6/gr6 group mixing sizes, an arm64 g5g group, a fractional g6f group that scales from zero, two
teams on two groups (issue 25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cel
import pytest
import yaml

from components.config import stackfile
from tests.support import ROOT
from tests.test_autoscaler import asg_tags_of, fits, nodeconfig_of, pod_from_outputs, template_node
from tooling.simulation import Simulation, program_from_file, run_program

EXAMPLES = ROOT / "examples"
NG = "aws:eks/nodeGroup:NodeGroup"
JOB = "kubernetes:batch/v1:Job"
IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
TEMPLATE = "k8s.io/cluster-autoscaler/node-template/"

_RUNS: dict[str, Simulation] = {}


def example(name: str) -> Simulation:
    if name not in _RUNS:
        config: dict[str, Any] = yaml.safe_load((EXAMPLES / f"Pulumi.{name}.yaml").read_text())["config"]
        _RUNS[name] = run_program(
            program_from_file(ROOT / "__main__.py"),
            stackfile.cli_config(config),
            project=stackfile.project_name(ROOT),
            stack=name,
        )
    return _RUNS[name]


def test_the_examples_are_the_ones_documented():
    assert sorted(p.name for p in Path(EXAMPLES).iterdir()) == [
        "Pulumi.ampere-ada.yaml",
        "Pulumi.fractional.yaml",
        "Pulumi.graviton.yaml",
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
        "gpu-eks:verification": {"imageArm64": "registry.example.com/cuda-sample:vectoradd-arm64"},
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
        "gpu-eks-verify-t4g-concurrent": "registry.example.com/cuda-sample:vectoradd-arm64",
        "gpu-eks-verify-t4-warmup": IMAGE,
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


def _admitted_by(sim: Simulation, team: str, pod_spec: dict[str, Any]) -> bool:
    """The team's rendered ValidatingAdmissionPolicy, evaluated (CEL) on a pod of ``pod_spec``."""
    spec = sim.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", f"gpu-eks-teams-{team}-policy"
    )
    ctx = {"object": {"spec": pod_spec}}
    if not all(cel.evaluate(c["expression"], ctx) for c in spec.inputs["spec"]["matchConditions"]):
        return True
    return all(cel.evaluate(v["expression"], ctx) for v in spec.inputs["spec"]["validations"])


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
