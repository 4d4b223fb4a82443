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

from tests.support import ROOT, TESTS

PROJECT = TESTS / "consumer_project"


def readme_gpu_mocks() -> str:
    blocks = re.findall(r"```python\n(# gpu_mocks\.py.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 1, "the README's testing guide has one gpu_mocks.py block"
    return blocks[0]


def test_a_consumer_project_composes_the_installed_package(tmp_path: Path):
    # What a clone holds for the package (the work tree, so uncommitted changes are tested too).
    source = tmp_path / "clone"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "components", source / "components", ignore=shutil.ignore_patterns("__pycache__"))
    consumer = tmp_path / "consumer"
    shutil.copytree(PROJECT, consumer, ignore=shutil.ignore_patterns("__pycache__"))
    (consumer / "gpu_mocks.py").write_text(readme_gpu_mocks())

    site = tmp_path / "site"
    script = (
        f'"{sys.executable}" -m pip install --quiet --no-deps --no-build-isolation --no-compile --target "{site}" '
        f'"{source}" && "{sys.executable}" -m pytest -q -p no:cacheprovider'
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


def test_the_wheel_ships_only_the_library(tmp_path: Path):
    """The built wheel holds components/ and nothing of the repository's tooling (tooling/, plugin/,
    tests/, stacks/, the stack program): those need a checkout and are not importable API."""
    source = tmp_path / "src"
    skip = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "build", "*.egg-info", ".reference-cache")
    shutil.copytree(ROOT, source, ignore=skip, symlinks=True)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip_wheel, "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("gpu_eks_components-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
        names = archive.namelist()
    assert tops == {"components", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "components/preflight/cli.py" in names
    assert "components/multilang/inputs.py" in names and "components/multilang/package.py" in names
    assert not [n for n in names if n.startswith(("tooling/", "plugin/", "tests/", "stacks/"))]
