"""A MIG layout change, end to end through the change-impact summary (issue 31 item 2): the example
``mig-h100`` rendered as a stack, its layout changed, and the summary compared. The layout is user
data now (the boot stage, components/plan/boot.py): a new launch template version, which the
managed node group rolls onto its nodes; no mig-manager re-partition in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.review import impact
from components.review import values as render_values
from tests.support.copies import copy_project
from tests.support.paths import ROOT
from tooling import render

EXAMPLE = ROOT / "examples" / "Pulumi.mig-h100.yaml"
LAYOUT = "migDevices: {1g.10gb: 4, 3g.40gb: 1}"
#: Two 1g.10gb beside the 3g.40gb instead of four (the time-sliced profile stays).
NEW_LAYOUT = "migDevices: {1g.10gb: 2, 3g.40gb: 1}"


def render_as_dev(project: Path, text: str) -> dict[str, Any]:
    (project / "stacks" / "Pulumi.dev.yaml").write_text(text)
    return render_values.load(render.render_stack("dev", project))


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    project = copy_project(tmp_path_factory.mktemp("mig-layout"))
    text = EXAMPLE.read_text()
    assert LAYOUT in text, "the example's layout changed: update the test"
    return render_as_dev(project, text), render_as_dev(project, text.replace(LAYOUT, NEW_LAYOUT))


def test_a_layout_change_rolls_the_groups_nodes_and_nothing_re_partitions_in_place(renders):
    old, new = renders
    summary = impact.summarize("dev", old, new)
    rolled = {r.node_group: r for r in summary.node_rolls}
    assert list(rolled) == ["gpu-eks-h100-mixed"]
    assert summary.gpu_pods_rescheduled == ["gpu-eks-h100-mixed"]
    lt = next(r for r in summary.resources if r.label.endswith("gpu-eks-h100-mixed-lt"))
    assert lt.effects == ["new-launch-template-version"]
    assert any(p.startswith("userData") for p in lt.changed)
    # No mig-manager in either render: the operator's release does not change at all (the sharing of
    # the 1g.10gb slices is the same), so no device plugin rolls.
    assert not [r for r in summary.resources if r.label.endswith("gpu-eks-gpu-operator-release")]
    assert summary.device_plugin_rolls == []
    words = impact.text(summary, "mig")
    assert "  nodes rolled          node group gpu-eks-h100-mixed: up to 2 nodes (its max size), 1 at a time" in words
