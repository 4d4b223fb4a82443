"""Golden snapshots (tests/snapshots/<stack>.yaml) and the replacement guard.

* A render that differs from its committed snapshot fails, showing the diff and the refresh
  command: the snapshot diff is then part of the change under review.
* Every URN of a committed snapshot must still be declared, or aliased, by the current program:
  otherwise `pulumi up` would delete that resource (a rename or a new parent replaces it; for
  the cluster or a node group, that is downtime).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.composites import declare
from components.review import urns as render_urns
from components.review import values as render_values
from tests.support.paths import ROOT, STACKS
from tests.support.simulation import simulate
from tooling import diff, render

SNAPSHOTS = ROOT / render.SNAPSHOT_DIR
#: How much of a snapshot diff a failure shows (the rest: run the refresh command and git diff).
MAX_DIFF_LINES = 200


@pytest.fixture(scope="module")
def renders() -> dict[str, str]:
    return {stack: render.render_stack(stack, ROOT) for stack in STACKS}


# ---------------------------------------------------------------------------------------------
# Snapshots
# ---------------------------------------------------------------------------------------------


def test_every_stack_has_a_snapshot_and_every_snapshot_a_stack():
    snapshots = sorted(p.stem for p in SNAPSHOTS.glob("*.yaml"))
    assert snapshots == sorted(STACKS), (
        f"snapshots {snapshots} do not match the stacks {STACKS}; refresh with: {render.REFRESH_COMMAND}"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_render_matches_the_committed_snapshot(stack: str, renders: dict[str, str]):
    path = SNAPSHOTS / f"{stack}.yaml"
    committed = path.read_text() if path.is_file() else ""
    if committed == renders[stack]:
        return
    text = diff.unified(
        diff.Side(f"{render.SNAPSHOT_DIR}/{stack}.yaml (committed)", committed),
        diff.Side(f"render of stack {stack} (current code)", renders[stack]),
    )
    lines = text.splitlines()
    shown = "\n".join(lines[:MAX_DIFF_LINES]) + (
        f"\n... {len(lines) - MAX_DIFF_LINES} more lines" if len(lines) > MAX_DIFF_LINES else ""
    )
    pytest.fail(
        f"the render of stack {stack!r} changed. If the change is intended, refresh the snapshots with\n"
        f"    {render.REFRESH_COMMAND}\n"
        f"and commit them, so reviewers see the change:\n{shown}",
        pytrace=False,
    )


@pytest.mark.parametrize("stack", STACKS)
def test_no_committed_resource_would_be_replaced(stack: str, renders: dict[str, str]):
    path = SNAPSHOTS / f"{stack}.yaml"
    if not path.is_file():
        pytest.fail(f"no snapshot {path.name}; create it with: {render.REFRESH_COMMAND}")
    missing = render_urns.replaced_urns(render_values.load(path.read_text()), render_values.load(renders[stack]))
    if missing:
        pytest.fail(render_urns.guard_report(stack, missing, render.REFRESH_COMMAND), pytrace=False)


def test_the_snapshot_holds_the_exact_user_data_bytes():
    """The snapshots are the one golden home of the user data: the decoded parts for review and
    the sha256 of the raw MIME, so a change to any byte (headers, boundary, encoding) fails."""
    committed = render_values.load((SNAPSHOTS / "dev.yaml").read_text())
    (lt,) = [r for r in committed["resources"] if r["name"] == "gpu-eks-t4-lt"]
    raw = base64.b64decode(
        simulate("dev").one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-eks-t4-lt").inputs["userData"]
    )
    shown = lt["inputs"]["userData"]
    assert shown["sha256"] == hashlib.sha256(raw).hexdigest()[:16]
    assert [p["contentType"] for p in shown["parts"]] == ["application/node.eks.aws", "text/x-shellscript"]


def _update_branches_that_do_not_fail(path: Path) -> list[int]:
    """Lines of ``if ... UPDATE_*`` branches in ``path`` whose body does not call pytest.fail."""
    tree = ast.parse(path.read_text())
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "UPDATE_" in ast.unparse(node.test):
            fails = any(
                isinstance(call, ast.Call) and ast.unparse(call.func) == "pytest.fail"
                for stmt in node.body
                for call in ast.walk(stmt)
            )
            if not fails:
                bad.append(node.lineno)
    return bad


def test_no_update_mode_passes_inside_the_test_run():
    """A test that rewrites its own expectation when an environment variable is set must fail in
    that run (tests/test_package_schema.py's UPDATE_GOLDEN does), or the run passes trivially.
    Snapshots are refreshed only by the render CLI, outside pytest."""
    offenders = {
        p.name: lines
        for p in sorted((ROOT / "tests").glob("*.py"))
        if p.name != Path(__file__).name and (lines := _update_branches_that_do_not_fail(p))
    }
    assert offenders == {}
    # The user data bytes live in tests/snapshots/ only; tests/golden/ holds the package schema.
    assert sorted(p.name for p in (ROOT / "tests" / "golden").iterdir()) == ["schema.json"]


def test_update_snapshots_renders_every_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from tests.support.copies import copy_project

    root = copy_project(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # runpy adds the copy's folder
    assert render.update_snapshots(root) == 0
    written = sorted((root / render.SNAPSHOT_DIR).glob("*.yaml"))
    assert [p.stem for p in written] == sorted(STACKS)
    for path in written:
        assert path.read_text() == render.render_stack(path.stem, root)


# ---------------------------------------------------------------------------------------------
# The guard on synthetic registrations (pure)
# ---------------------------------------------------------------------------------------------


@dataclass
class Res:
    """The fields engine_identities reads (simulation.Registration has them all)."""

    name: str
    type: str
    parent_urn: str | None = None
    aliases: list[Any] = field(default_factory=list)

    @property
    def urn(self) -> str:  # the simulator's identity: unique per (parent, type, name) here
        return f"sim::{self.parent_urn}::{self.type}::{self.name}"


def as_render(resources: list[Res], stack: str = "dev") -> dict[str, Any]:
    ids = render_urns.engine_identities(resources, stack, "p")
    return {"resources": [{"urn": ids[r.urn].urn, "aliases": list(ids[r.urn].aliases)} for r in resources]}


STACK_URN = "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"


def program(group_name: str = "g", group_parent: str = "cluster", group_aliases: list[Any] | None = None) -> list[Res]:
    """A cluster component with a node-group component (whose children derive their names from it)."""
    cluster = Res("c", "x:index:Cluster", parent_urn=STACK_URN)
    other = Res("other", "x:index:Other", parent_urn=STACK_URN)
    parent = cluster if group_parent == "cluster" else other
    group = Res(group_name, "x:index:Group", parent_urn=parent.urn, aliases=group_aliases or [])
    lt = Res(f"{group_name}-lt", "aws:ec2/launchTemplate:LaunchTemplate", parent_urn=group.urn)
    ng = Res(group_name, "aws:eks/nodeGroup:NodeGroup", parent_urn=group.urn)
    return [cluster, other, group, lt, ng]


def test_engine_urns_chain_every_ancestor_type_but_the_stack():
    ids = render_urns.engine_identities(program(), "dev", "p")
    urns = [ids[r.urn].urn for r in program()]
    assert urns[0] == "urn:pulumi:dev::p::x:index:Cluster::c"
    assert urns[4] == "urn:pulumi:dev::p::x:index:Cluster$x:index:Group$aws:eks/nodeGroup:NodeGroup::g"


def test_unchanged_program_replaces_nothing():
    assert render_urns.replaced_urns(as_render(program()), as_render(program())) == []


def test_rename_is_caught_and_a_name_alias_covers_the_subtree():
    old = as_render(program())
    renamed = program(group_name="g2")
    assert render_urns.replaced_urns(old, as_render(renamed)) == [
        "urn:pulumi:dev::p::x:index:Cluster$x:index:Group::g",
        "urn:pulumi:dev::p::x:index:Cluster$x:index:Group$aws:ec2/launchTemplate:LaunchTemplate::g-lt",
        "urn:pulumi:dev::p::x:index:Cluster$x:index:Group$aws:eks/nodeGroup:NodeGroup::g",
    ]
    # One alias on the component: children named "{parent}-..." inherit it (the engine's rule).
    aliased = program(group_name="g2", group_aliases=[{"spec": {"name": "g"}}])
    assert render_urns.replaced_urns(old, as_render(aliased)) == []


def test_reparenting_is_caught_and_a_parent_alias_covers_it():
    old = as_render(program())
    moved = program(group_parent="other")
    assert len(render_urns.replaced_urns(old, as_render(moved))) == 3
    cluster_sim_urn = program()[0].urn
    aliased = program(group_parent="other", group_aliases=[{"spec": {"parentUrn": cluster_sim_urn}}])
    assert render_urns.replaced_urns(old, as_render(aliased)) == []


def test_alias_specs_resolve_like_the_engine():
    root_child = Res("b", "aws:s3/bucket:Bucket", parent_urn=STACK_URN, aliases=[{"spec": {"name": "a"}}])
    no_parent = Res("n", "aws:s3/bucket:Bucket", parent_urn=program()[0].urn, aliases=[{"spec": {"noParent": True}}])
    typed = Res("t", "k:apps/v1:Deployment", parent_urn=STACK_URN, aliases=[{"spec": {"type": "k:apps/v1beta1:D"}}])
    given = Res("u", "aws:s3/bucket:Bucket", parent_urn=STACK_URN, aliases=["urn:pulumi:dev::p::old:T::u"])
    ids = render_urns.engine_identities([program()[0], root_child, no_parent, typed, given], "dev", "p")
    assert ids[root_child.urn].aliases == ("urn:pulumi:dev::p::aws:s3/bucket:Bucket::a",)
    assert ids[no_parent.urn].aliases == ("urn:pulumi:dev::p::aws:s3/bucket:Bucket::n",)
    assert ids[typed.urn].aliases == ("urn:pulumi:dev::p::k:apps/v1beta1:D::t",)
    assert ids[given.urn].aliases == ("urn:pulumi:dev::p::old:T::u",)


def test_a_removed_resource_is_caught_and_the_report_names_both_ways_out():
    old = as_render(program())
    new = as_render(program()[:-1])
    missing = render_urns.replaced_urns(old, new)
    assert missing == ["urn:pulumi:dev::p::x:index:Cluster$x:index:Group$aws:eks/nodeGroup:NodeGroup::g"]
    report = render_urns.guard_report("dev", missing, render.REFRESH_COMMAND)
    assert "pulumi.Alias(name=" in report and "pulumi.Alias(parent=" in report
    assert render.REFRESH_COMMAND in report


# ---------------------------------------------------------------------------------------------
# The guard on the real program, with a node group renamed or moved by monkeypatching
# ---------------------------------------------------------------------------------------------

GROUP_URNS = [
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup::gpu-eks-t4",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:ec2/launchTemplate:LaunchTemplate::gpu-eks-t4-lt",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:eks/nodeGroup:NodeGroup::gpu-eks-t4",
    # The Cluster Autoscaler tags on the group's ASG (issue 9).
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-enabled",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-gpu-eks-dev",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-node-template/label/k8s.amazonaws.com/accelerator",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-node-template/label/gpu-eks.io/gpu-count",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-node-template/label/nvidia.com/device-plugin.config",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-node-template/label/gpu-eks.io/node-group",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-node-template/taint/nvidia.com/gpu",
    "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
    "$aws:autoscaling/tag:Tag::gpu-eks-t4-asg-tag-node-template/resources/nvidia.com/gpu",
]


def render_dev() -> dict[str, Any]:
    sim, _ = render.simulate("dev", ROOT)
    return render.render_document(sim.resources, sim.wire_outputs, "dev", "gpu-eks")


@pytest.fixture(scope="module")
def baseline() -> dict[str, Any]:
    # The current program, not the committed snapshot: these tests must not depend on its freshness.
    return render_dev()


GroupFactory = Callable[..., Any]


def patch_group(monkeypatch: pytest.MonkeyPatch, wrap: Callable[[GroupFactory], GroupFactory]) -> None:
    # GpuCluster declares its GPU node groups through declare.declare_gpu_capacity.
    monkeypatch.setattr(declare, "GpuNodeGroup", wrap(declare.GpuNodeGroup))


def test_baseline_declares_the_gpu_node_group(baseline: dict[str, Any]):
    assert set(GROUP_URNS) <= set(render_urns.render_urns(baseline))


def test_renaming_a_node_group_is_caught(monkeypatch: pytest.MonkeyPatch, baseline: dict[str, Any]):
    patch_group(monkeypatch, lambda real: lambda name, args, opts=None: real(f"{name}-v2", args, opts))
    assert render_urns.replaced_urns(baseline, render_dev()) == GROUP_URNS


def test_renaming_a_node_group_with_an_alias_passes(monkeypatch: pytest.MonkeyPatch, baseline: dict[str, Any]):
    def wrap(real: GroupFactory) -> GroupFactory:
        def make(name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> Any:
            alias = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=name)])
            return real(f"{name}-v2", args, pulumi.ResourceOptions.merge(opts, alias))

        return make

    patch_group(monkeypatch, wrap)
    renamed = render_dev()
    assert render_urns.replaced_urns(baseline, renamed) == []
    node_group = next(
        r for r in renamed["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup" and "v2" in r["name"]
    )
    assert node_group["name"] == "gpu-eks-t4-v2"
    assert node_group["aliases"] == [GROUP_URNS[2]]


def test_reparenting_a_node_group_is_caught_unless_aliased(monkeypatch: pytest.MonkeyPatch, baseline: dict[str, Any]):
    def wrap(with_alias: bool) -> Callable[[GroupFactory], GroupFactory]:
        def outer(real: GroupFactory) -> GroupFactory:
            def make(name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> Any:
                old_parent = opts.parent if opts else None
                moved = pulumi.ResourceOptions.merge(opts, None)
                moved.parent = None  # to the stack's top level
                if with_alias:
                    moved.aliases = [pulumi.Alias(parent=old_parent)]
                return real(name, args, moved)

            return make

        return outer

    patch_group(monkeypatch, wrap(with_alias=False))
    assert render_urns.replaced_urns(baseline, render_dev()) == GROUP_URNS
    patch_group(monkeypatch, wrap(with_alias=True))
    assert render_urns.replaced_urns(baseline, render_dev()) == []
