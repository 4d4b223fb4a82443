"""`python -m tooling diff`: stack against stack, and the work tree against a git ref rendered
by its own code in a temporary worktree."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from components.review import diff as review_diff
from tests.support.commands import git, tooling_cli
from tests.support.copies import copy_project
from tooling import diff, render
from tooling.__main__ import main as cli_main

# ---------------------------------------------------------------------------------------------
# Pure pieces
# ---------------------------------------------------------------------------------------------

OLD = """project: p
resources:
- type: aws:s3/bucket:Bucket
  name: logs
  inputs:
    acl: private
    tags:
      a: '1'
- type: aws:eks/nodeGroup:NodeGroup
  name: gpu
  inputs:
    capacityType: SPOT
    instanceTypes:
    - g4dn.xlarge
    scalingConfig:
      maxSize: 1
outputs:
  clusterName: c
"""


def test_unified_diff_of_equal_renders_is_empty():
    assert diff.unified(diff.Side("a", OLD), diff.Side("b", OLD)) == ""


def test_unified_diff_names_the_resource_of_each_hunk():
    new = OLD.replace("maxSize: 1", "maxSize: 3").replace("clusterName: c", "clusterName: d")
    text = diff.unified(diff.Side("a/dev.yaml", OLD), diff.Side("b/dev.yaml", new), context=1)
    assert text == (
        "--- a/dev.yaml\n"
        "+++ b/dev.yaml\n"
        "@@ -15,4 +15,4 @@ aws:eks/nodeGroup:NodeGroup gpu\n"
        "     scalingConfig:\n"
        "-      maxSize: 1\n"
        "+      maxSize: 3\n"
        " outputs:\n"
        "-  clusterName: c\n"
        "+  clusterName: d\n"
    )


def test_unified_diff_of_an_added_stack_adds_every_line():
    text = diff.unified(diff.Side("base/new.yaml", ""), diff.Side("work/new.yaml", "a: 1\nb: 2\n"))
    assert text == "--- base/new.yaml\n+++ work/new.yaml\n@@ -0,0 +1,2 @@ a\n+a: 1\n+b: 2\n"


def test_section_of_finds_the_enclosing_resource_or_key():
    lines = OLD.splitlines(keepends=True)
    assert diff.section_of(lines, lines.index("    acl: private\n")) == "aws:s3/bucket:Bucket logs"
    assert diff.section_of(lines, lines.index("  clusterName: c\n")) == "outputs"
    assert diff.section_of(lines, 0) == "project"


def test_stack_names_in_urns_are_neutralised_for_stack_comparisons():
    text = "urn: urn:pulumi:dev::p::a:b:C::dev-thing\nstack: dev\n"
    assert diff.without_stack_in_urns(text, "dev") == "urn: urn:pulumi:<stack>::p::a:b:C::dev-thing\nstack: dev\n"


def test_replaced_report_names_urns_missing_from_the_new_render():
    old = "resources:\n- urn: urn:pulumi:dev::p::a:b:C::x\n- urn: urn:pulumi:dev::p::a:b:C::y\n"
    new = "resources:\n- urn: urn:pulumi:dev::p::a:b:C::x2\n  aliases:\n  - urn:pulumi:dev::p::a:b:C::x\n"
    report = diff.replaced_report("dev", old, new)
    assert "urn:pulumi:dev::p::a:b:C::y" in report
    assert "a:b:C::x\n" not in report
    assert diff.replaced_report("dev", old, old) == ""
    assert diff.replaced_report("dev", "", new) == "", "a stack added as a whole replaces nothing"


def test_a_consumers_guard_says_whose_alias_it_is():
    """In a consuming team's review (issue 42): what the library's components declare inside themselves
    was renamed by the library, whose alias it is (no pulumi.Alias in the team's program reaches it,
    and the team has no snapshots); what the team's program declares, it aliases itself."""
    chain = "gpu-eks:index:GpuCapacity$gpu-eks:nodegroup:GpuNodeGroup$aws:ec2/launchTemplate:LaunchTemplate"
    lt = f"urn:pulumi:dev::vision::{chain}::gpu-t4-lt"
    own = "urn:pulumi:dev::vision::aws:ec2/vpc:Vpc::own-vpc"
    component = "urn:pulumi:dev::vision::gpu-eks:index:GpuCapacity::gpu"
    old = f"resources:\n- urn: {lt}\n"
    report = review_diff.replaced_report("dev", old, "resources: []\n", "gpu-eks-review render --stack dev", True)
    assert report.splitlines()[3:] == [
        "1 of them gpu-eks-components' components declare inside themselves, not your program: when your program "
        "did not rename their component, the library did (an upgrade), and the alias is the library's to declare, "
        "not yours. Read its UPGRADING.md for this version before deploying, or stay on the version you have.",
        "If the deletion is intended, deploy it knowingly: `gpu-eks-review render --stack dev` renders what "
        "replaces them.",
    ]
    assert "refresh the snapshots" not in report and "pulumi.Alias" not in report
    both = review_diff.replaced_report(
        "dev", f"resources:\n- urn: {own}\n- urn: {component}\n- urn: {lt}\n", "resources: []\n", "r", True
    )
    assert "keep each by declaring its old identity in your program:" in both
    assert (
        "1 of them gpu-eks-components' components declare inside themselves, not your program (those of a "
        "component you renamed follow its alias)" in both
    )
    # This repository's own guard keeps its advice: aliases, then the snapshots.
    assert "refresh the snapshots and let the review see it: python -m tooling render --update-snapshots" in (
        diff.replaced_report("dev", old, "resources: []\n")
    )


# ---------------------------------------------------------------------------------------------
# Stack against stack (in-process through the CLI dispatcher)
# ---------------------------------------------------------------------------------------------


def test_diff_dev_against_prod(capsys: pytest.CaptureFixture[str]):
    assert cli_main(["diff", "--stack", "dev", "--against", "prod"]) == 1
    out = capsys.readouterr().out
    # The impact summary comes first, in plain words, then the diff.
    summary, _, rest = out.partition("\n\n")
    assert summary.startswith("== stack dev -> prod (render/dev.yaml -> render/prod.yaml): what deploying it does ==\n")
    lines = [" ".join(line.split()) for line in summary.splitlines()]
    assert any(
        line.startswith("replaced eks:index:Cluster gpu-eks-cluster-eks: `name`: an EKS cluster's name cannot change")
        for line in lines
    )
    assert any(
        line.startswith(
            "replaced aws:eks/nodeGroup:NodeGroup gpu-eks-t4: `capacityType`, `clusterName`, `instanceTypes`"
        )
        for line in lines
    )
    assert any(line.startswith("GPU pods rescheduled node group gpu-eks-t4:") for line in lines)
    assert "deleted kubernetes:batch/v1:Job gpu-eks-verify-t4-warmup" in lines
    assert "deleted kubernetes:batch/v1:Job gpu-eks-verify-t4-concurrent" in lines
    assert rest.startswith("\n--- render/dev.yaml\n+++ render/prod.yaml\n")
    lines = out.splitlines()
    assert "-    capacityType: SPOT" in lines and "+    capacityType: ON_DEMAND" in lines
    assert "+  protect: true\n" in out
    assert "+    - g4dn.2xlarge\n" in out
    # URNs embed the stack name: neutralised, they differ only where the resources do.
    assert "urn:pulumi:dev::" not in out and "urn:pulumi:prod::" not in out


def test_diff_json_and_comment(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    comment = tmp_path / "comment.md"
    assert cli_main(["diff", "--against", "prod", "--format", "json", "--comment", str(comment)]) == 1
    data = json.loads(capsys.readouterr().out)
    (stack,) = data["stacks"]
    assert (stack["stack"], stack["old"], stack["new"], stack["changed"]) == (
        "dev -> prod",
        "render/dev.yaml",
        "render/prod.yaml",
        True,
    )
    assert stack["diff"].startswith("--- render/dev.yaml\n+++ render/prod.yaml\n")
    summary = stack["summary"]
    assert [r["name"] for r in summary["replaced"]] == [
        "gpu-eks-cluster-eks",
        "gpu-eks-cluster-system",
        "gpu-eks-cluster-coredns",
        "gpu-eks-cluster-node-monitoring-agent",
        "gpu-eks-t4",
        # A new node group has a new Auto Scaling group: its autoscaler tags go with it.
        "gpu-eks-t4-asg-tag-enabled",
        "gpu-eks-t4-asg-tag-gpu-eks-prod",
        "gpu-eks-t4-asg-tag-node-template/label/k8s.amazonaws.com/accelerator",
        "gpu-eks-t4-asg-tag-node-template/label/gpu-eks.io/gpu-count",
        "gpu-eks-t4-asg-tag-node-template/label/nvidia.com/device-plugin.config",
        "gpu-eks-t4-asg-tag-node-template/label/gpu-eks.io/node-group",
        "gpu-eks-t4-asg-tag-node-template/taint/nvidia.com/gpu",
        "gpu-eks-t4-asg-tag-node-template/resources/nvidia.com/gpu",
    ]
    assert summary["gpuPodsRescheduled"] == ["gpu-eks-t4"]
    text = comment.read_text()
    assert text.startswith("### Stack `dev -> prod`: what deploying this change does\n\n- **replaced**: ")
    assert text.index("**GPU pods rescheduled**") < text.index("<details><summary>Render diff</summary>")
    assert "```diff\n--- render/dev.yaml\n" in text and text.endswith("```\n\n</details>\n")


def test_comment_cuts_a_long_diff_but_keeps_every_summary():
    old = diff.Side("a", OLD)
    new = diff.Side("b", OLD.replace("maxSize: 1", "maxSize: 3"))
    result = diff.compare("dev", old, new)
    text = diff.comment_markdown([result, result], limit=800)
    assert text.count("### Stack `dev`: what deploying this change does") == 2
    assert "(cut to fit a comment" in text
    assert len(text) < 800 + 200
    assert "```diff\n" in text and "\n```\n" in text, "the fence is closed even when the diff is cut"


def test_diff_of_a_stack_against_itself_is_empty(capsys: pytest.CaptureFixture[str]):
    assert cli_main(["diff", "--against", "dev"]) == 0  # --stack defaults to dev
    assert capsys.readouterr().out == (
        "no change: the rendered desired state is the same for dev -> dev (render/dev.yaml -> render/dev.yaml)\n"
    )


def test_diff_against_an_unknown_stack_exits_2(capsys: pytest.CaptureFixture[str]):
    assert cli_main(["diff", "--stack", "dev", "--against", "staging"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown stack 'staging'" in captured.err


def test_diff_against_an_unknown_ref_exits_2(capsys: pytest.CaptureFixture[str]):
    assert cli_main(["diff", "--base", "no-such-branch-x9"]) == 2
    err = capsys.readouterr().err
    assert "unknown git ref 'no-such-branch-x9'" in err and "fetch-depth: 0" in err


# ---------------------------------------------------------------------------------------------
# Work tree against a git ref: a throwaway repository holding a copy of the project
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0:
        pytest.skip("git is not installed")
    root = copy_project(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def run_diff(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return tooling_cli("diff", *args, cwd=repo, timeout=300)


def test_diff_base_shows_config_and_code_changes_and_warns_of_replacements(repo: Path):
    dev = repo / "stacks" / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("- name: t4\n", "- name: t4b\n"))
    prod = repo / "stacks" / "Pulumi.prod.yaml"
    prod.write_text(prod.read_text().replace("desiredSize: 3, maxSize: 6", "desiredSize: 3, maxSize: 8"))
    # A change to the library itself: only visible if the base is rendered by the base's code.
    operator = repo / "components" / "gpu_operator" / "component.py"
    operator.write_text(operator.read_text().replace("RELEASE_TIMEOUT_SECONDS = 900", "RELEASE_TIMEOUT_SECONDS = 1200"))
    # A new stack: nothing to compare it with in the base, so all of it is new.
    (repo / "stacks" / "Pulumi.staging.yaml").write_text(dev.read_text())

    done = run_diff(repo, "--base", "main")
    assert done.returncode == 1, done.stderr
    out = done.stdout
    # First the impact of each stack, in plain words; then the diffs.
    first_diff = out.index("--- main/render/dev.yaml")
    assert out.startswith(
        "== stack dev (main/render/dev.yaml -> work-tree/render/dev.yaml): what deploying it does ==\n"
    )
    summaries = [" ".join(line.split()) for line in out[:first_diff].splitlines()]
    assert "deleted aws:eks/nodeGroup:NodeGroup gpu-eks-t4" in summaries
    assert "created aws:eks/nodeGroup:NodeGroup gpu-eks-t4b" in summaries
    assert "nodes rolled node group gpu-eks-t4: deleted with its nodes (up to 1 node (its max size))" in summaries
    assert "== stack prod (main/render/prod.yaml -> work-tree/render/prod.yaml): what deploying it does ==" in summaries
    # maxSize changes in place, and rolls nothing.
    assert "updated in place aws:eks/nodeGroup:NodeGroup gpu-eks-t4: `scalingConfig.maxSize`" in summaries
    assert not any(line.startswith("nodes rolled node group gpu-eks-t4: up to") for line in summaries)
    assert (
        "== stack staging (main/render/staging.yaml -> work-tree/render/staging.yaml): what deploying it does =="
        in summaries
    )
    assert "--- main/render/dev.yaml\n+++ work-tree/render/dev.yaml\n" in out
    assert "-  name: gpu-eks-t4-lt\n+  name: gpu-eks-t4b-lt\n" in out
    assert "-      maxSize: 6\n+      maxSize: 8\n" in out
    assert out.count("-    timeout: 900\n+    timeout: 1200\n") == 2  # dev and prod
    assert "--- main/render/staging.yaml\n+++ work-tree/render/staging.yaml\n@@ -0,0 +1," in out
    # The renamed node group would be replaced: reported on stderr, for dev only.
    assert "stack dev: these resources would be deleted" in done.stderr
    assert "GpuNodeGroup$aws:eks/nodeGroup:NodeGroup::gpu-eks-t4\n" in done.stderr
    assert "stack prod" not in done.stderr
    # The temporary worktree is gone.
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_diff_base_without_changes_exits_0(repo: Path):
    done = run_diff(repo, "--base", "main", "--stack", "dev")
    assert done.returncode == 0, done.stderr
    # Said, not silence (an empty output looks like a failure).
    assert done.stdout == (
        "no change: the rendered desired state is the same for dev "
        "(main/render/dev.yaml -> work-tree/render/dev.yaml)\n"
    )
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_diff_base_without_a_render_command_exits_2(repo: Path):
    (repo / "tooling" / "render.py").rename(repo / "tooling" / "render_moved.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a base from before render existed")
    (repo / "tooling" / "render_moved.py").rename(repo / "tooling" / "render.py")
    done = run_diff(repo, "--base", "HEAD", "--stack", "dev")
    assert done.returncode == 2
    assert "HEAD has no render command" in done.stderr
    assert "Traceback" not in done.stderr


def test_refresh_command_is_the_render_flag():
    assert render.REFRESH_COMMAND == "python -m tooling render --update-snapshots"
