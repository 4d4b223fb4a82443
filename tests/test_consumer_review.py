"""``gpu-eks-review``, the review command for a consumer's own Pulumi project (components/review):
run on tests/consumer_project/ (its own Pulumi.yaml and stack file) in a subprocess, as the
consumer runs it; its boundary in the wheel; the workflow example for a consumer repository.
(tests/test_consumer.py installs the package from a commit and runs ``diff`` there.)"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, TESTS
from tests.test_architecture import import_graph
from tests.test_workflows import load_workflow, zizmor

PROJECT = TESTS / "consumer_project"
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]


def review(*args: str, cwd: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)  # the library of this work tree, as if installed
    return subprocess.run(
        [python, "-m", "components.review", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The consumer project in a git repository of its own (branch main, one commit)."""
    root = tmp_path_factory.mktemp("consumer") / "project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([*GIT, "init", "--quiet", str(root)], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "--quiet", "-m", "base"], check=True, capture_output=True)
    return root


def test_render_runs_the_consumers_own_program(consumer: Path):
    done = review("render", cwd=consumer)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "# Desired state of stack 'dev': `gpu-eks-review render --stack dev`."
    assert lines[1] == (
        "# Rendered offline (simulated first `pulumi preview`, fake cloud answers: see the gpu-eks-components "
        'README, "Reviewing your own stacks").'
    )
    assert "project: vision-gpu" in lines and "stack: dev" in lines
    # Its own resources, the components' children and its own node group, named as it named them.
    for name in ("own-vpc", "research-cluster-eks", "vision-t4x4", "platform-gpu-gpu-operator-release"):
        assert f"  name: {name}" in lines, name
    assert "  urn: urn:pulumi:dev::vision-gpu::aws:ec2/vpc:Vpc::own-vpc" in lines
    # The StackReference's outputs are unknown to a first preview.
    assert done.stdout.count("    clusterName: (known after apply)") >= 2


def test_render_from_another_folder_and_as_json(consumer: Path, tmp_path: Path):
    out = tmp_path / "dev.json"
    done = review("render", "--project", str(consumer), "--format", "json", "--output", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith('{\n  "project": "vision-gpu",\n  "stack": "dev",\n')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("render", "--stack", "prod"),
            "error: unknown stack 'prod': there is no {root}/Pulumi.prod.yaml (stacks: dev)",
        ),
        (("diff", "--base", "no-such-ref"), "error: unknown git ref 'no-such-ref': expected a branch, tag or commit"),
        (("diff", "--base", "main", "--base-python", "/no/python"), "error: cannot run /no/python: No such file"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(consumer: Path, args: tuple[str, ...], message: str):
    done = review(*args, cwd=consumer)
    assert done.returncode == 2
    assert done.stderr.startswith(message.format(root=consumer)), done.stderr


def test_outside_a_project_it_says_where_to_run(tmp_path: Path):
    done = review("render", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"error: no Pulumi.yaml in {tmp_path} or above: run in your project or pass --project\n"


def test_no_change_is_said_and_exits_0(consumer: Path):
    done = review("diff", "--base", "main", cwd=consumer)
    assert done.returncode == 0, done.stderr
    compared = "dev (main/render/dev.yaml -> work-tree/render/dev.yaml)"
    assert done.stdout == f"no change: the rendered desired state is the same for {compared}\n"


def test_a_library_upgrade_is_reviewed_with_the_base_python(consumer: Path, tmp_path: Path):
    """``--base-python``: the base rendered by another Python with another library version. The
    "old" library here is this one with gpu-operator chart v25.10.1 as its default (a copy), so the
    consumer's GpuCluster (which does not pin the chart) changes only through the library."""
    old = tmp_path / "old"
    shutil.copytree(ROOT / "components", old / "components", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", old / "pyproject.toml")
    chart = old / "components" / "gpu_operator" / "chart.py"
    chart.write_text(
        chart.read_text().replace('DEFAULT_CHART_VERSION = "v26.7.0"', 'DEFAULT_CHART_VERSION = "v25.10.1"')
    )
    python = tmp_path / "old-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{old}" exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    done = review("diff", "--base", "main", "--base-python", str(python), cwd=consumer)
    assert done.returncode == 1, done.stderr
    assert "-    version: v25.10.1\n+    version: v26.7.0\n" in done.stdout
    assert "  device-plugin DaemonSets rolled  release research-gpu-operator-release: `version`" in done.stdout

    # A version from before the review tools (0.2.0 had none) cannot render the base: said so.
    shutil.rmtree(old / "components" / "review")
    before = review("diff", "--base", "main", "--base-python", str(python), cwd=consumer)
    assert before.returncode == 2
    assert before.stderr == (
        f"error: {python} has no gpu-eks-review (gpu-eks-components 0.2.0 and earlier do not ship it): "
        "--base-python needs a library version that does\n"
    )


def test_the_library_never_imports_the_review_tools():
    graph = import_graph(ROOT, "components")
    users = sorted(
        m
        for m, deps in graph.items()
        if not m.startswith("components.review") and any(d.startswith("components.review") for d in deps)
    )
    assert users == []
    # The review tools read the library's stack-file helpers only, and the node health facts (the
    # agent's reasons by fault class, for a group's repair policy in words; a module of constants).
    review_deps = {d for m, deps in graph.items() if m.startswith("components.review") for d in deps}
    assert sorted(d for d in review_deps if not d.startswith("components.review")) == [
        "components.catalog.node_health",
        "components.config.errors",
        "components.config.stackfile",
        "components.nodegroups.userdata",
        "components.version",
    ]


def test_the_consumer_workflow_example_is_clean_under_zizmor():
    path = ROOT / "docs" / "consumer-review.yml"
    _, findings = zizmor(path)
    assert findings == []
    workflow = load_workflow(path)
    (job,) = workflow["jobs"].values()
    assert workflow["permissions"] == {} and job["permissions"] == {"contents": "read", "pull-requests": "write"}
    run = next(s["run"] for s in job["steps"] if s.get("id") == "review")
    assert 'gpu-eks-review diff --project "$PROJECT_DIR" --base "origin/${BASE_REF}" --comment review.md' in run


def test_the_stack_config_reaches_the_program_as_the_cli_passes_it(tmp_path: Path):
    from components.review.render import project_config

    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  replicas: 4\n  gpu-eks:preflight: true\n  team:tags: {a: b}\n"
    )
    config, project, notes = project_config("dev", tmp_path)
    assert project == "team"
    # Unqualified keys are the project's; values as strings (JSON beyond); the preflight (AWS) is off.
    assert config == {
        "aws:region": "us-east-1",
        "team:replicas": "4",
        "gpu-eks:preflight": "false",
        "team:tags": '{"a": "b"}',
    }
    assert notes == ["preflight: true in the stack is skipped by render."]


def test_another_pulumi_version_is_noted():
    from components.review.cli import TESTED_PULUMI, pulumi_note

    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line)
    assert TESTED_PULUMI == pins["pulumi"] == "3.272.0"
    assert pulumi_note("3.272.0") is None
    assert pulumi_note("3.300.1") == (
        "note: gpu-eks-review is tested with pulumi 3.272.0; this Python has 3.300.1 (the render drives the SDK's "
        "mocks, not a stable API): if a render fails or differs, review with pulumi==3.272.0"
    )
