"""``gpuOperator.isolation: migrating`` in the program and in the change-impact summary (issue 40):
the dev stack rendered with it (the nodes' boot stage, the plugin's strategy, the isolation Job left
out, the outputs saying isolation is not enforced), and the summary of each step of the upgrade from
0.2.0, of the direct jump and of the upgrade from 0.3.0, from the renders."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.config.isolation import NOT_ENFORCED
from components.review import impact
from components.review import render as review_render
from components.review import values as render_values
from tests.support.paths import ROOT
from tooling import render

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
OPERATOR = "gpu-eks-gpu-operator-release"


def dev(isolation: str | None = None) -> tuple[dict[str, Any], Any]:
    """The dev stack's render (loaded as the review tools read it) and its simulation."""
    config, project, _ = render.stack_config("dev", ROOT)
    if isolation is not None:
        operator = json.loads(config["gpu-eks:gpuOperator"])
        config["gpu-eks:gpuOperator"] = json.dumps({**operator, "isolation": isolation})
    sim = review_render.simulate("dev", ROOT, config, project)
    document = review_render.render_document(sim.resources, sim.wire_outputs, "dev", project)
    return render_values.load(render.render_text(document)), sim


@pytest.fixture(scope="module")
def enforced() -> tuple[dict[str, Any], Any]:
    return dev()


@pytest.fixture(scope="module")
def migrating() -> tuple[dict[str, Any], Any]:
    return dev("migrating")


def resource(document: dict[str, Any], typ: str, name: str) -> dict[str, Any]:
    return next(r for r in document["resources"] if r["type"] == typ and r["name"] == name)


def boot_part(document: dict[str, Any]) -> str:
    parts = resource(document, LT, "gpu-eks-t4-lt")["inputs"]["userData"]["parts"]
    return next(p["content"] for p in parts if p["contentType"] == "text/x-shellscript")


def as_0_2_0(document: dict[str, Any]) -> dict[str, Any]:
    """The render as 0.2.0 had it (19061e2 tests/snapshots/dev.yaml): no devicePlugin.env, and the
    GPU launch template's user data the nodeadm NodeConfig alone (no boot stage)."""
    old = copy.deepcopy(document)
    del resource(old, RELEASE, OPERATOR)["inputs"]["values"]["devicePlugin"]["env"]
    user_data = resource(old, LT, "gpu-eks-t4-lt")["inputs"]["userData"]
    user_data["parts"] = [p for p in user_data["parts"] if p["contentType"] == "application/node.eks.aws"]
    return old


def as_0_3_0(document: dict[str, Any]) -> dict[str, Any]:
    """0.3.0's render: the same user data, DEVICE_LIST_STRATEGY=envvar,volume-mounts."""
    old = copy.deepcopy(document)
    resource(old, RELEASE, OPERATOR)["inputs"]["values"]["devicePlugin"]["env"] = [
        {"name": "DEVICE_LIST_STRATEGY", "value": "envvar,volume-mounts"}
    ]
    return old


def test_migrating_sets_the_nodes_and_the_plugin_for_both_kinds_of_node(enforced, migrating):
    doc, _ = migrating
    assert (
        "nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=true "
        "--set accept-nvidia-visible-devices-as-volume-mounts=true" in boot_part(doc)
    )
    env = resource(doc, RELEASE, OPERATOR)["inputs"]["values"]["devicePlugin"]["env"]
    assert env == [{"name": "DEVICE_LIST_STRATEGY", "value": "envvar"}]
    # Nothing else of the boot stage differs from the enforced one's.
    enforced_part = boot_part(enforced[0]).replace("unprivileged=false", "unprivileged=true")
    assert boot_part(doc) == enforced_part


def test_migrating_skips_the_isolation_job_and_says_so_in_the_outputs(enforced, migrating):
    jobs = {r.name for r in migrating[1].by_type(JOB)}
    assert jobs == {r.name for r in enforced[1].by_type(JOB)} - {"gpu-eks-verify-t4-isolation"}
    assert "gpu-eks-verify-t4-isolation" in {r.name for r in enforced[1].by_type(JOB)}
    assert migrating[1].outputs["gpuNodeGroups"]["t4"]["isolation"] == NOT_ENFORCED
    assert "isolation" not in enforced[1].outputs["gpuNodeGroups"]["t4"]


BREAKS = (
    f"{LT} gpu-eks-t4-lt: GPU pods placed on its nodes not yet rolled get 'not created (the toolkit refuses the "
    "device name)' once the device plugin hands devices out as `volume-mounts` (was `envvar`): their container "
    "toolkit (accept-nvidia-visible-devices-envvar-when-unprivileged=true, "
    "accept-nvidia-visible-devices-as-volume-mounts=false) does not honour it, for the whole roll. From a stack "
    "whose nodes have no boot stage (0.2.0): deploy with `gpuOperator.isolation: migrating` first, let every GPU "
    "node roll, then remove it (UPGRADING.md)"
)
NOT_ISOLATED = f"{LT} gpu-eks-t4-lt: GPU isolation {NOT_ENFORCED}; remove it once every GPU node has rolled"


def isolation_notes(summary: impact.Impact) -> list[str]:
    return [n for n in summary.notes if "gpu-eks-t4-lt:" in n]


def test_the_summary_of_each_step_of_the_upgrade(enforced, migrating):
    step_1 = impact.summarize("dev", as_0_2_0(migrating[0]), migrating[0])
    assert isolation_notes(step_1) == [NOT_ISOLATED]
    assert [r.node_group for r in step_1.node_rolls] == ["gpu-eks-t4"]
    step_2 = impact.summarize("dev", migrating[0], enforced[0])
    assert isolation_notes(step_2) == []
    assert [r.node_group for r in step_2.node_rolls] == ["gpu-eks-t4"]
    assert [d.release for d in step_2.device_plugin_rolls] == [OPERATOR]


def test_the_summary_of_the_direct_jump_from_0_2_0_says_what_breaks(enforced):
    summary = impact.summarize("dev", as_0_2_0(enforced[0]), enforced[0])
    assert isolation_notes(summary) == [BREAKS]
    assert BREAKS in impact.text(summary, "dev")


def test_from_0_3_0_no_node_rolls_and_nothing_breaks(enforced):
    summary = impact.summarize("dev", as_0_3_0(enforced[0]), enforced[0])
    assert isolation_notes(summary) == []
    assert summary.node_rolls == []
    # The plugin's DaemonSet rolls for the env value; what it sends stays the same (test_device_lists.py).
    assert [d.release for d in summary.device_plugin_rolls] == [OPERATOR]
    assert [r.label for r in summary.of("update")] == [f"{RELEASE} {OPERATOR}"]
