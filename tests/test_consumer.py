"""A consuming team's project, run the way that team runs it: a separate directory, this package
installed into it (not imported from the checkout), its own program and tests under Pulumi mocks
written as the README's testing guide says (its ``gpu_mocks.py`` block, verbatim). It must not
need this repository's tooling/, which is not shipped.

The project is tests/consumer_project/ (own VPC Outputs, a StackReference, a node group of its
own, GpuCapacity on an existing cluster) with tests/consumer_own_components/ laid over it: a
package of the team's own named ``components``, which the library's import name, ``gpu_eks``, must
not collide with (issue 43). One subprocess runs its tests against the wheel installed once per
module; the old import name ``components`` (kept until 1.0) is run where no such folder is.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.copies import copy_repository_files
from tests.support.paths import ROOT, TESTS

PROJECT = TESTS / "consumer_project"
#: The team's own ``components`` package, its program and a test using it beside ``gpu_eks``.
OWN_COMPONENTS = TESTS / "consumer_own_components"
#: The old import name's warning, as a consumer reads it (components/moved.py).
OLD_NAME_WARNING = (
    "DeprecationWarning: 'components' is the old import name of gpu-eks-components and goes in 1.0: use "
    "'gpu_eks' (import gpu_eks, python -m gpu_eks; UPGRADING.md, 'The import name gpu_eks')"
)


def readme_gpu_mocks() -> str:
    blocks = re.findall(r"```python\n(# gpu_mocks\.py.*?)```", (ROOT / "docs" / "testing.md").read_text(), flags=re.S)
    assert len(blocks) == 1, "the testing guide (docs/testing.md) has one gpu_mocks.py block"
    return blocks[0]


def consumer_project(dest: Path) -> Path:
    """tests/consumer_project with the team's own ``components`` package laid over it, at ``dest``."""
    shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(OWN_COMPONENTS, dest, ignore=shutil.ignore_patterns("__pycache__", "README.md"), dirs_exist_ok=True)
    return dest


def consumer_env(site: Path) -> dict[str, str]:
    """The consumer's environment: the installed package (``site``) and nothing of this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(site)
    return env


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


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed as into a consumer's environment (``pip --target``), once per module."""
    site = tmp_path_factory.mktemp("consumer-env") / "site"  # the consumer's tests look for a folder "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-compile"]
    done = subprocess.run([*pip, "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def test_a_consumer_project_composes_the_installed_package(site: Path, tmp_path: Path):
    """The team's tests: its program under the guide's mocks, and its own ``components`` package
    beside ``gpu_eks`` (each name its own package; the old name's warning nowhere)."""
    consumer = consumer_project(tmp_path / "consumer")
    (consumer / "gpu_mocks.py").write_text(readme_gpu_mocks())
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=consumer,
        env=consumer_env(site),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r"\b6 passed\b", output), output
    assert "old import name" not in output
    # Installed as gpu_eks, the old name a package of one file, and without the repository's tooling.
    assert (site / "gpu_eks" / "composites" / "gpu_capacity.py").is_file()
    assert [p.name for p in (site / "components").iterdir() if p.name != "__pycache__"] == ["__init__.py"]
    assert not (site / "tooling").exists()


def test_the_wheel_ships_only_the_library(wheel: Path, tmp_path: Path):
    """The built wheel holds the library as ``gpu_eks`` (the folder components/ but its compat/), the
    old name ``components`` as that one file, and nothing of the repository's tooling (tooling/,
    plugin/, tests/, stacks/, the stack program): those need a checkout and are not importable API."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
        names = archive.namelist()
    assert tops == {"gpu_eks", "components", wheel.name.split("-py3")[0] + ".dist-info"}
    assert [n for n in names if n.startswith("components/")] == ["components/__init__.py"]
    assert not [n for n in names if n.startswith("gpu_eks/compat/")]
    assert "gpu_eks/preflight/cli.py" in names and "gpu_eks/__main__.py" in names
    assert "gpu_eks/multilang/inputs.py" in names and "gpu_eks/multilang/package.py" in names
    assert not [n for n in names if n.startswith(("tooling/", "plugin/", "tests/", "stacks/"))]
    # Every module of the folder is in the wheel under the new name.
    folder = {str(p.relative_to(ROOT / "components")) for p in (ROOT / "components").rglob("*.py")}
    assert {n.removeprefix("gpu_eks/") for n in names if n.startswith("gpu_eks/")} == {
        n for n in folder if not n.startswith("compat/")
    }
    # The review command for consumers: its own entry point.
    assert "gpu_eks/review/cli.py" in names and "gpu_eks/review/impact/rules.py" in names
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"{wheel.name.split('-py3')[0]}.dist-info/entry_points.txt").decode()
    assert entry_points == "[console_scripts]\ngpu-eks-review = gpu_eks.review.cli:main\n"

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
    assert (site / "gpu_eks" / "review" / "cli.py").is_file() and (site / "bin" / "gpu-eks-review").is_file()


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
    for name in ("pyproject.toml", "setup.py", "README.md"):
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

    consumer = consumer_project(tmp_path / "consumer")  # with its own components/ package
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


# --- The old import name, the commands and the component package under the new one ----------------

#: A program written for 0.3.0: the old name, a moved module's old path under it, where no folder of
#: that name is. Run as a Pulumi program is (``__main__``, so Python shows its DeprecationWarning).
OLD_NAME_PROGRAM = """\
import components
from components import GpuCluster, load_settings
import components.config.errors
import components.config.settings
import components.sharing.plan
import gpu_eks
import gpu_eks.config.settings

assert components is gpu_eks and GpuCluster is gpu_eks.GpuCluster
assert components.config.settings.Settings is gpu_eks.config.settings.Settings
assert components.config.errors is gpu_eks.config.errors and components.config.errors.ConfigError is gpu_eks.ConfigError
assert components.sharing.plan is gpu_eks.plan.group
settings = load_settings({"clusterName": "research", "kubernetesVersion": "1.35"})
assert type(settings) is gpu_eks.config.settings.Settings
print(components.__name__, components.config.errors.__spec__.name)
"""


def run_consumer(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python <args>`` in the consumer's environment (the installed package only), in ``cwd``."""
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=consumer_env(site), capture_output=True, text=True, timeout=120
    )


def test_the_old_import_name_is_the_library_itself_and_warns_once(site: Path, tmp_path: Path):
    program = tmp_path / "program.py"
    program.write_text(OLD_NAME_PROGRAM)
    done = run_consumer(site, tmp_path, str(program))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "gpu_eks gpu_eks.config.errors\n"
    # Once, on the program's own import line.
    assert done.stderr == f"{program}:1: {OLD_NAME_WARNING}\n  import components\n"


def test_a_namespace_components_folder_of_the_project_wins_over_the_old_name(site: Path, tmp_path: Path):
    """A project's own ``components/`` without ``__init__.py`` (PEP 420): the old name's package in
    site-packages would shadow it, as 0.3.0's did; it steps aside instead, silently."""
    (tmp_path / "components").mkdir()
    (tmp_path / "components" / "naming.py").write_text("PREFIX = 'vision'\n")
    program = "import components.naming, gpu_eks; print(components.naming.PREFIX, gpu_eks.__name__)"
    done = run_consumer(site, tmp_path, "-c", program)
    assert (done.returncode, done.stdout, done.stderr) == (0, "vision gpu_eks\n", "")


def test_the_commands_run_under_the_new_name_and_the_old_one(site: Path, tmp_path: Path):
    """``python -m gpu_eks preflight`` and the ``gpu-eks-review`` entry point; ``python -m components
    preflight`` still runs, saying once (Python shows a ``__main__`` warning by default) what to use."""
    done = run_consumer(site, tmp_path, "-m", "gpu_eks", "preflight", "--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: python -m gpu_eks preflight [-h] [--stack STACK]")
    done = run_consumer(site, tmp_path, "-m", "components", "preflight", "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m components preflight [-h]")
    assert done.stderr == f"python -m components:0: {OLD_NAME_WARNING}\n"
    done = subprocess.run(
        [str(site / "bin" / "gpu-eks-review"), "--version"],
        cwd=tmp_path,
        env=consumer_env(site),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "gpu-eks-review 0.4.0.dev0\n", "")


def test_the_installed_component_package_serves_the_golden_schema(site: Path, tmp_path: Path):
    """The multi-language package (multilang/) under the new name: the schema Pulumi infers from the
    installed ``gpu_eks`` is the golden one the plugin serves from a checkout (tests/test_package_schema.py)."""
    script = "import json; from gpu_eks import multilang; print(json.dumps(json.loads(multilang.provider().schema)))"
    done = run_consumer(site, tmp_path, "-c", script)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads((ROOT / "tests" / "golden" / "schema.json").read_text())
