"""``gpu-eks-review``, the review command for a consumer's own Pulumi project (components/review):
run on tests/consumer_project/ (its own Pulumi.yaml and stack file) in a subprocess, as the
consumer runs it; its boundary in the wheel; the workflow example for a consumer repository.
(tests/test_consumer.py installs the package from a commit and runs ``diff`` there.)"""

from __future__ import annotations

import datetime as dt
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from components import catalog
from tests.support.imports import import_graph
from tests.support.paths import ROOT
from tests.support.preflight import CONSUMER_KEYS, write_stack
from tests.support.review import GIT, PROJECT, review, review_subprocess
from tests.support.workflows import load_workflow, zizmor


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
    done = review_subprocess("render", cwd=consumer)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "# Desired state of stack 'dev': `gpu-eks-review render --stack dev`."
    assert lines[1] == (
        "# Rendered offline (simulated first `pulumi preview`, fake cloud answers: see gpu-eks-components' "
        "docs/review.md)."
    )
    assert "project: vision-gpu" in lines and "stack: dev" in lines
    # Its own resources, the components' children and its own node group, named as it named them.
    for name in ("own-vpc", "research-cluster-eks", "vision-t4x4", "platform-gpu-gpu-operator-release"):
        assert f"  name: {name}" in lines, name
    assert "  urn: urn:pulumi:dev::vision-gpu::aws:ec2/vpc:Vpc::own-vpc" in lines
    # The StackReference's outputs are unknown to a first preview.
    assert done.stdout.count("    clusterName: (known after apply)") >= 2


#: A consumer's program reading its stack's gpu-eks keys and its own (README, "Using the components
#: from another stack").
OWN_CONFIG_PROGRAM = """import pulumi
from components import GpuCluster, GpuClusterArgs, settings_from_pulumi_config

cluster = GpuCluster("ml", GpuClusterArgs(settings=settings_from_pulumi_config()))
pulumi.export("costCenter", pulumi.Config().require("costCenter"))
"""


def test_a_consumers_program_with_its_own_config_renders_with_the_librarys_warnings(tmp_path: Path, monkeypatch):
    """Issue 42: the project's own namespace and another provider's beside the gpu-eks keys render;
    GpuCluster's configuration warnings (a team quota of 100 over 8 slots, an endpoint open to
    0.0.0.0/0, a Kubernetes version past extended support the day after it ended) are in the render's
    header, each on its component, and the render exits 0."""
    monkeypatch.setattr(catalog, "today", lambda: dt.date(2026, 11, 27))  # 1.31 left extended support the day before
    config = {
        "aws:region": "us-west-2",
        **CONSUMER_KEYS,
        "gpu-eks:kubernetesVersion": "1.31",
        "gpu-eks:autoscaler": {"enabled": False},  # (no Cluster Autoscaler release for 1.31)
        "gpu-eks:endpointPublicAccessCidrs": ["0.0.0.0/0"],
        "gpu-eks:gpuNodeGroups": [
            {"name": "t4", "scaling": {"minSize": 2, "desiredSize": 2, "maxSize": 2}, "timeSlicing": {"replicas": 4}}
        ],
        "gpu-eks:teams": [{"name": "ml", "quota": {"nvidia.com/gpu": 100}, "nodeGroups": ["t4"]}],
    }
    write_stack(tmp_path, "dev", config, project="ml-platform")
    (tmp_path / "__main__.py").write_text(OWN_CONFIG_PROGRAM)
    done = review("render", "--output", "dev.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "dev.yaml").read_text()
    warned = [line.removeprefix("# ") for line in text.splitlines() if line.startswith("# warning: ")]
    assert [w.split(": received")[0] for w in warned] == [
        "warning: GpuCluster ml: gpu-eks config: gpu-eks:endpointPublicAccessCidrs[0]",
        "warning: GpuCluster ml: gpu-eks config: gpu-eks:kubernetesVersion",
        "warning: GpuCluster ml: gpu-eks config: gpu-eks:teams[0].quota.nvidia.com/gpu",
        "warning: GpuCluster ml: gpu-eks config: gpu-eks:gpuNodeGroups[0].repair.enabled",
    ]
    assert warned[1].endswith(
        "1.31 left EKS extended support on 2026-11-26; EKS creates no cluster at it and upgrades an existing one "
        "itself to 1.32, the oldest version in extended support, still billed $0.60 per cluster-hour instead of $0.10 "
        "(about $365 a month more). Upgrade one minor version at a time (each an EKS cluster update, then the "
        "nodes): 1.32 -> 1.33 -> 1.34 (standard support until 2026-12-02)"
    )
    assert warned[2].endswith(
        "received 100; expected at most 8, the nvidia.com/gpu slots of the team's node groups at maxSize, or an "
        "oversubscription you chose: pods within the quota beyond those slots stay Pending"
    )
    assert "\n  costCenter: cc-42\n" in text  # the program read its own key
    # Written to a file, the render says its warnings on stderr too.
    assert [line for line in done.stderr.splitlines() if line.startswith("warning: ")] == warned


def test_invalid_settings_given_as_a_dict_are_said_with_its_keys_and_no_traceback(tmp_path: Path):
    """A consumer's program passes its settings as a Python dict (README): an invalid one stops the program
    with the dict's own keys, "invalid settings", and no traceback (a ConfigError that is also a
    pulumi.RunError, which Pulumi and the render report as its message alone) (issue 42)."""
    write_stack(tmp_path, "dev", {"aws:region": "us-west-2"}, project="vision")
    settings = {"kubernetesVersion": "1.35", "gpuNodeGroups": [{"name": "t4", "diskSizeGiB": 10}]}
    (tmp_path / "__main__.py").write_text(
        "from components import GpuCapacity, GpuCapacityArgs\n"
        "GpuCapacity('gpu', GpuCapacityArgs(cluster_name='c', subnet_ids=['subnet-0123456789abcdef0'], "
        f"kubeconfig='{{}}', settings={settings!r}))\n"
    )
    done = review("render", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "error: the program failed for stack 'dev': invalid settings (1 problem):\n"
        "  gpuNodeGroups[0].diskSizeGiB: received 10; expected a number of at least 20\n"
    )


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
    chart = old / "components" / "catalog" / "gpu_operator.py"
    chart.write_text(
        chart.read_text().replace('DEFAULT_CHART_VERSION = "v26.7.0"', 'DEFAULT_CHART_VERSION = "v25.10.1"')
    )
    python = tmp_path / "old-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{old}" exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    done = review("diff", "--base", "main", "--base-python", str(python), "--comment", "pr.md", cwd=consumer)
    assert done.returncode == 1, done.stderr
    # What rendered the base is said (issue 42), in the comment too, without the local path.
    note = (
        "note: the base (main) was rendered with --base-python's gpu-eks-components 0.4.0.dev0, the work tree with "
        "this Python's 0.4.0.dev0"
    )
    assert done.stdout.startswith(f"{note}\n\n== stack dev")
    assert done.stderr.endswith(f"note: --base-python: {python}\n")
    assert (consumer / "pr.md").read_text().startswith(f"> {note.removeprefix('note: ')}\n\n### Stack `dev`")
    assert str(python) not in (consumer / "pr.md").read_text()
    assert "-    version: v25.10.1\n+    version: v26.7.0\n" in done.stdout
    assert "  device-plugin DaemonSets rolled  release research-gpu-operator-release: `version`" in done.stdout


def test_the_library_never_imports_the_review_tools():
    graph = import_graph(ROOT, "components")
    users = sorted(
        m
        for m, deps in graph.items()
        if not m.startswith("components.review") and any(d.startswith("components.review") for d in deps)
    )
    assert users == []
    # The review tools read the library's stack-file helpers only, the chart pins, the node health facts (the
    # agent's reasons by fault class, for a group's repair policy in words; a module of constants),
    # and how devices reach containers (the plugin's strategy from a release's values, a node's
    # toolkit settings from its user data, what a GPU pod gets: pure functions, issue 40).
    review_deps = {d for m, deps in graph.items() if m.startswith("components.review") for d in deps}
    assert sorted(d for d in review_deps if not d.startswith("components.review")) == [
        "components.catalog.charts",
        "components.catalog.device_lists",
        "components.catalog.gpu_operator",
        "components.catalog.labels",
        "components.catalog.node_health",
        "components.config.errors",
        "components.config.isolation",
        "components.config.stackfile",
        "components.plan.userdata",
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


# --- A pull request that bumps the library: the base rendered with the base's own library ---------


@pytest.fixture(scope="module")
def old_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of an older commit of the library: this work tree's package committed in a scratch
    repository with one change a release could make (the launch template's IMDS hop limit 2, which
    the next commit, the work tree, sets to 1), built offline from ``git archive`` of that commit."""
    scratch = tmp_path_factory.mktemp("library")
    upstream = scratch / "upstream"
    upstream.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, upstream / name)
    shutil.copytree(ROOT / "components", upstream / "components", ignore=shutil.ignore_patterns("__pycache__"))
    managed = upstream / "components" / "catalog" / "__init__.py"
    assert "\nIMDS_HOP_LIMIT = 1\n" in managed.read_text()
    managed.write_text(managed.read_text().replace("\nIMDS_HOP_LIMIT = 1\n", "\nIMDS_HOP_LIMIT = 2\n"))
    subprocess.run([*GIT, "init", "--quiet", str(upstream)], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(upstream), "add", "-A"], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(upstream), "commit", "--quiet", "-m", "old"], check=True, capture_output=True)
    tree = scratch / "old"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(upstream), "archive", "HEAD"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    wheels = scratch / "wheels"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip_wheel, "-w", str(wheels), str(tree)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = wheels.glob("gpu_eks_components-*.whl")
    return wheel


def bump_repository(root: Path, wheel: Path) -> None:
    """The consumer's repository: main pins the old library; the work tree (the pull request) pins the
    new one, this checkout, which this test's Python imports. The library is pinned in a file that
    requirements.txt includes (``-r reqs/lib.txt``): requirements.txt itself does not change."""
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "requirements.txt").write_text("pulumi==3.272.0\n-r reqs/lib.txt\n")
    (root / "reqs").mkdir()
    (root / "reqs" / "lib.txt").write_text(f"gpu-eks-components @ file://localhost{wheel}\n")
    subprocess.run([*GIT, "init", "--quiet", str(root)], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "--quiet", "-m", "base"], check=True, capture_output=True)
    (root / "reqs" / "lib.txt").write_text(f"gpu-eks-components @ file://localhost{ROOT}\n")


def test_a_library_bump_in_an_included_file_is_reviewed_with_the_bases_library(
    old_library: Path, tmp_path: Path, monkeypatch
):
    """The pull request changes reqs/lib.txt only, which requirements.txt includes (issue 42: only
    root-level files were compared): the base is rendered with the old library in an environment the
    command builds (offline here: the wheel, the rest from this environment), so the review names the
    node roll the upgrade causes instead of "no change"."""
    consumer = tmp_path / "consumer"
    bump_repository(consumer, old_library)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPU_EKS_REVIEW_CACHE", str(cache))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # offline: the base's environment installs the wheel, nothing else
    done = review("diff", "--base", "main", "--comment", "pr.md", cwd=consumer)
    assert done.returncode == 1, done.stderr
    (env,) = (cache / "base-envs").iterdir()
    note = (
        "reqs/lib.txt differ between main and the work tree: the base was rendered with its own "
        "gpu-eks-components 0.4.0.dev0 (its requirements.txt), the work tree with 0.4.0.dev0"
    )
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"note: {note}",
        "",
        "== stack dev (main/render/dev.yaml -> work-tree/render/dev.yaml): what deploying it does ==",
    ]
    assert lines[3] == (
        "  nodes rolled          node group research-cluster-system: up to 3 nodes (its max size), 1 at a time; "
        "aws:ec2/launchTemplate:LaunchTemplate research-cluster-system-lt changes: EKS replaces every node "
        "(UpdateNodegroupVersion); EKS first launches up to 2 extra nodes per zone (maxUnavailable, if more) for "
        "their pods"
    )
    assert (
        "  updated in place      aws:ec2/launchTemplate:LaunchTemplate research-t4-lt: "
        "`metadataOptions.httpPutResponseHopLimit` -> new launch template version\n"
    ) in done.stdout
    assert done.stdout.count("-      httpPutResponseHopLimit: 2\n+      httpPutResponseHopLimit: 1\n") == 4
    # Where the environment is stays on this machine: stderr, never the pull request comment.
    assert f"note: the base's environment: {env} (cached; delete it to build it again)\n" in done.stderr
    comment = (consumer / "pr.md").read_text()
    assert comment.startswith(f"> {note}\n\n### Stack `dev`: what deploying this change does\n\n")
    assert str(cache) not in comment and str(tmp_path) not in comment
    assert (
        "- **nodes rolled**: node group vision-t4x4: up to 2 nodes (its max size), 1 at a time; "
        "aws:ec2/launchTemplate:LaunchTemplate vision-t4x4-lt changes: EKS replaces every node "
        "(UpdateNodegroupVersion); EKS first launches up to 2 extra nodes per zone (maxUnavailable, if more) for "
        "their pods\n"
    ) in comment
    # vision-t4x4 time-slices its T4s (replicas 2): the isolation line is said for it.
    assert (
        "- **GPU pods rescheduled**: node group vision-t4x4: its GPU pods are evicted as each node drains and start "
        "again on new nodes (time-slicing gives no isolation: every pod sharing a GPU goes at once)\n"
    ) in comment

    # A second review of the same base reuses the environment; --same-library renders both sides
    # with this Python's library and says what that leaves out (no "no change" claim without it).
    (env / "planted").write_text("")
    same = review("diff", "--base", "main", "--same-library", cwd=consumer)
    assert same.returncode == 0, same.stderr
    assert same.stdout == (
        "note: reqs/lib.txt differ between main and the work tree, and --same-library rendered both with this "
        "Python's gpu-eks-components 0.4.0.dev0: a library change is not in this review, only the program's and the "
        "stack files' changes\n\n"
        "no change: the rendered desired state is the same for dev "
        "(main/render/dev.yaml -> work-tree/render/dev.yaml)\n"
    )
    again = review("diff", "--base", "main", "--format", "json", cwd=consumer)
    assert again.returncode == 1, again.stderr
    assert (env / "planted").is_file() and [p.name for p in (cache / "base-envs").iterdir()] == [env.name]
    assert f"note: {note}\n" in again.stderr
