"""A consuming team's project, run the way that team runs it: a separate directory, this package
installed into it (not imported from the checkout), its own program and tests under Pulumi mocks
written as the README's testing guide says (its ``gpu_mocks.py`` block, verbatim). It must not
need this repository's tooling/, which is not shipped.

The project is tests/consumer_project/ (own VPC Outputs, a StackReference, a node group of its
own, GpuCapacity on an existing cluster); one subprocess installs the package and runs its tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support import ROOT, TESTS, copy_repository_files

PROJECT = TESTS / "consumer_project"


def readme_gpu_mocks() -> str:
    blocks = re.findall(r"```python\n(# gpu_mocks\.py.*?)```", (ROOT / "docs" / "testing.md").read_text(), flags=re.S)
    assert len(blocks) == 1, "the testing guide (docs/testing.md) has one gpu_mocks.py block"
    return blocks[0]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's wheel, built from the repository's files as the work tree has them, new ones
    included (uncommitted changes are tested too)."""
    source = copy_repository_files(tmp_path_factory.mktemp("clone"), untracked=True)
    wheels = tmp_path_factory.mktemp("wheels")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    done = subprocess.run([*pip_wheel, "-w", str(wheels), str(source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = wheels.glob("gpu_eks_components-*.whl")
    return built


def test_a_consumer_project_composes_the_installed_package(wheel: Path, tmp_path: Path):
    consumer = tmp_path / "consumer"
    shutil.copytree(PROJECT, consumer, ignore=shutil.ignore_patterns("__pycache__"))
    (consumer / "gpu_mocks.py").write_text(readme_gpu_mocks())

    site = tmp_path / "site"
    script = (
        f'"{sys.executable}" -m pip install --quiet --no-deps --no-index --no-compile --target "{site}" '
        f'"{wheel}" && "{sys.executable}" -m pytest -q -p no:cacheprovider'
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(site)
    result = subprocess.run(
        ["sh", "-c", script], cwd=consumer, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r"\b4 passed\b", output), output
    # Installed, and without the repository's tooling (not shipped).
    assert (site / "components" / "composites" / "gpu_capacity.py").is_file()
    assert not (site / "tooling").exists()


def test_the_wheel_ships_only_the_library(wheel: Path, tmp_path: Path):
    """The built wheel holds components/ and nothing of the repository's tooling (tooling/, plugin/,
    tests/, stacks/, the stack program): those need a checkout and are not importable API."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
        names = archive.namelist()
    assert tops == {"components", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "components/preflight/cli.py" in names
    assert "components/multilang/inputs.py" in names and "components/multilang/package.py" in names
    assert not [n for n in names if n.startswith(("tooling/", "plugin/", "tests/", "stacks/"))]
    # The review command for consumers: its own entry point.
    assert "components/review/cli.py" in names and "components/review/impact/rules.py" in names
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"{wheel.name.split('-py3')[0]}.dist-info/entry_points.txt").decode()
    assert entry_points == "[console_scripts]\ngpu-eks-review = components.review.cli:main\n"

    # The README's PyPI line, as pip resolves it from an index (here: a folder holding the wheel). The
    # README names the last release; this wheel is the work tree's, the next one's development release.
    (line,) = [x for x in readme_install_lines() if "==" in x]
    version = wheel.name.split("-")[1]
    assert line == "gpu-eks-components==0.3.0" and version == "0.4.0.dev0"
    line = line.replace("0.3.0", version)
    site = tmp_path / "site"
    index = wheel.parent
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--find-links", str(index)]
    done = subprocess.run([*pip, "--target", str(site), line], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "components" / "review" / "cli.py").is_file() and (site / "bin" / "gpu-eks-review").is_file()


# --- Install lines as a consumer types them, and the review command on the consumer's project ------

#: The README's requirement lines for consumers ("Using the components from another stack").
README_LINES = re.compile(r"^(gpu-eks-components(?:==| @ git\+https://github\.com/<org>/<this-repo>\.git@)\S+)$", re.M)
REPO_URL = "https://github.com/<org>/<this-repo>.git"
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]


def readme_install_lines() -> list[str]:
    return README_LINES.findall((ROOT / "README.md").read_text())


def test_the_readme_offers_pypi_a_tag_and_a_commit():
    assert readme_install_lines() == [
        "gpu-eks-components==0.3.0",
        f"gpu-eks-components @ git+{REPO_URL}@v0.3.0",
        f"gpu-eks-components @ git+{REPO_URL}@<commit-sha>",
    ]


def package_repository(tmp_path: Path) -> tuple[Path, str]:
    """A git repository holding the work tree's package (uncommitted changes too), and its commit:
    what the consumer's git URL points at, before any tag exists."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, upstream / name)
    shutil.copytree(ROOT / "components", upstream / "components", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([*GIT, "init", "--quiet", str(upstream)], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(upstream), "add", "-A"], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(upstream), "commit", "--quiet", "-m", "package"], check=True, capture_output=True)
    sha = subprocess.run(
        ["git", "-C", str(upstream), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return upstream, sha


def test_a_consumer_installs_a_commit_and_reviews_its_own_change(tmp_path: Path):
    """The README's commit line (no tag exists), then ``gpu-eks-review diff --base main`` in the
    consumer's own repository: a change to its program gets the impact summary and the comment."""
    upstream, sha = package_repository(tmp_path)
    (line,) = [x for x in readme_install_lines() if x.endswith("@<commit-sha>")]
    requirement = line.replace(REPO_URL, f"file://localhost{upstream}").replace("<commit-sha>", sha)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip, "--target", str(site), requirement], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    command = site / "bin" / "gpu-eks-review"  # the console script the wheel declares
    assert command.is_file()

    consumer = tmp_path / "consumer"
    shutil.copytree(PROJECT, consumer, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([*GIT, "init", "--quiet", str(consumer)], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(consumer), "add", "-A"], check=True, capture_output=True)
    subprocess.run([*GIT, "-C", str(consumer), "commit", "--quiet", "-m", "base"], check=True, capture_output=True)
    # The team raises its shared group's time-slicing replicas.
    program = consumer / "infra.py"
    program.write_text(program.read_text().replace('"timeSlicing": {"replicas": 4}', '"timeSlicing": {"replicas": 8}'))

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(site)
    review = subprocess.run(
        [str(command), "diff", "--base", "main", "--comment", "pr.md"],
        cwd=consumer,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert review.returncode == 1, review.stderr  # 1: the desired state changed
    lines = review.stdout.splitlines()
    assert lines[0] == "== stack dev (main/render/dev.yaml -> work-tree/render/dev.yaml): what deploying it does =="
    assert lines[1].startswith(
        "  device-plugin DaemonSets rolled  release platform-gpu-gpu-operator-release: "
        "`values.devicePlugin.config.name`: the gpu-operator mounts the device-plugin ConfigMap by name"
    )
    assert lines[2] == (
        "  updated in place                 kubernetes:helm.sh/v3:Release platform-gpu-gpu-operator-release: "
        "`values.devicePlugin.config` -> device-plugin DaemonSets rolled"
    )
    assert lines[3] == "  unchanged                        44 resources"
    assert "-                    replicas: 4\n+                    replicas: 8\n" in review.stdout
    comment = (consumer / "pr.md").read_text()
    assert comment.startswith(
        "### Stack `dev`: what deploying this change does\n\n- **device-plugin DaemonSets rolled**"
    )
    assert "```diff\n--- main/render/dev.yaml\n+++ work-tree/render/dev.yaml\n" in comment
