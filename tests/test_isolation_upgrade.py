"""``gpuOperator.isolation: migrating`` in the program and in the change-impact summary (issue 40):
the dev stack rendered with it (the nodes' boot stage, the plugin's strategy, the isolation Job left
out, the outputs saying isolation is not enforced), and the summary of each step of the upgrade from
0.2.0, of the direct jump and of the upgrade from 0.3.0, from the renders: the released ones as base
(tests/releases/)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config.isolation import NOT_ENFORCED
from components.review import impact
from components.review import render as review_render
from components.review import values as render_values
from tests.support.paths import ROOT
from tests.support.tokens import LAUNCH_TEMPLATE as LT
from tests.support.tokens import NODE_GROUP as NG
from tests.support.tokens import RELEASE
from tooling import render

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


#: The dev stack as the releases rendered it: this repository's own snapshots (tests/snapshots/dev.yaml),
#: kept as they were. 0.2.0: 19061e2 ("0.2.0 is cut"). 0.3.0: 70c91a5, whose dev snapshot is the
#: release's (d502619, the 0.3.0 merge, and 70c91a5 render the same bytes; the commits between change
#: tests and render-neutral code only).
RELEASES = ROOT / "tests" / "releases"


def released(version: str) -> dict[str, Any]:
    """The dev render of release ``version``, loaded as the review tools read a base render."""
    return render_values.load((RELEASES / f"dev-{version}.yaml").read_text())


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


def test_the_releases_renders_are_what_they_were():
    """The base renders carry what each release sent: 0.2.0 no boot stage and no devicePlugin.env,
    0.3.0 its stage (0.3.0's toolkit settings) and envvar,volume-mounts."""
    old, v030 = released("0.2.0"), released("0.3.0")
    parts = resource(old, LT, "gpu-eks-t4-lt")["inputs"]["userData"]["parts"]
    assert [p["contentType"] for p in parts] == ["application/node.eks.aws"]
    assert "env" not in resource(old, RELEASE, OPERATOR)["inputs"]["values"]["devicePlugin"]
    assert "--set accept-nvidia-visible-devices-envvar-when-unprivileged=false" in boot_part(v030)
    # 0.3.0's drop-in was written on a failure only; the user data registered no pending taint (issue 40).
    assert "/etc/eks/nodeadm.d/90-gpu-eks-boot-failed.yaml" in boot_part(v030)
    assert "gpu-eks.io/boot-stage=pending" not in json.dumps(resource(v030, LT, "gpu-eks-t4-lt"))
    assert resource(v030, RELEASE, OPERATOR)["inputs"]["values"]["devicePlugin"]["env"] == [
        {"name": "DEVICE_LIST_STRATEGY", "value": "envvar,volume-mounts"}
    ]


def test_the_summary_of_each_step_of_the_upgrade(enforced, migrating):
    step_1 = impact.summarize("dev", released("0.2.0"), migrating[0])
    assert isolation_notes(step_1) == [NOT_ISOLATED]
    assert [r.node_group for r in step_1.node_rolls] == ["gpu-eks-t4"]
    step_2 = impact.summarize("dev", migrating[0], enforced[0])
    assert isolation_notes(step_2) == []
    assert [r.node_group for r in step_2.node_rolls] == ["gpu-eks-t4"]
    assert [d.release for d in step_2.device_plugin_rolls] == [OPERATOR]


def test_the_summary_of_the_direct_jump_from_0_2_0_says_what_breaks(enforced):
    summary = impact.summarize("dev", released("0.2.0"), enforced[0])
    assert isolation_notes(summary) == [BREAKS]
    assert BREAKS in impact.text(summary, "dev")
    assert [r.node_group for r in summary.node_rolls] == ["gpu-eks-t4"]


def test_from_0_3_0_every_gpu_node_rolls_and_nothing_breaks(enforced):
    """UPGRADING ("Every GPU node rolls once"): the boot stage's fixes change the user data, so the
    group rolls; the plugin's strategy changes from envvar,volume-mounts to volume-mounts, which sends
    the same (test_device_lists.py): no note that GPU pods stop starting."""
    summary = impact.summarize("dev", released("0.3.0"), enforced[0])
    assert isolation_notes(summary) == []
    assert [r.node_group for r in summary.node_rolls] == ["gpu-eks-t4"]
    assert [d.release for d in summary.device_plugin_rolls] == [OPERATOR]
    updated = [r.label for r in summary.of("update")]
    assert f"{LT} gpu-eks-t4-lt" in updated and f"{NG} gpu-eks-t4" in updated
    assert f"{RELEASE} {OPERATOR}" in updated
