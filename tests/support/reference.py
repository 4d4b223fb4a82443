"""Where the contract tests find their inputs: the upstream reference files and the recordings of
the real ``nvidia-smi``, and what a test does when one is missing (``unavailable``).

Here and in this repository's CI, ``../shared/reference`` sits beside the project. Elsewhere (a
GitHub Actions run of a clone), each file is downloaded once from the pinned upstream URL recorded
in ``tests/data/reference_sources.json`` (raw file at the commit its SOURCE.md names), verified against
the recorded sha256, and kept in ``.reference-cache/`` (git-ignored). A download that fails or
does not match raises ``ReferenceUnavailable``; ``reference_path`` turns that into a
skip, or a failure when ``GPU_EKS_REQUIRE_REFERENCE`` is set (.ci/run and the workflows set it).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
import yaml

from tests.support.paths import DATA, ROOT

#: Upstream contracts (byte-for-byte copies), kept beside the project: ../shared/reference.
LOCAL = ROOT.parent / "shared" / "reference"
SOURCES = DATA / "reference_sources.json"
CACHE = ROOT / ".reference-cache"
DOWNLOAD_TIMEOUT_SECONDS = 30.0


class ReferenceUnavailable(Exception):
    """A reference file that is neither beside the project nor obtainable as pinned."""


@dataclass(frozen=True)
class Source:
    file: str
    url: str
    sha256: str


def load_sources(path: Path = SOURCES) -> dict[str, Source]:
    data = json.loads(path.read_text())
    return {entry["file"]: Source(entry["file"], entry["url"], entry["sha256"]) for entry in data["files"]}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: Hosts that could not be reached in this process: not tried again (an offline run stays fast).
_UNREACHABLE: set[str] = set()


def download(source: Source, dest: Path, timeout: float = DOWNLOAD_TIMEOUT_SECONDS) -> Path:
    """``source`` saved at ``dest`` if its bytes have the pinned sha256; nothing written otherwise."""
    host = urllib.parse.urlsplit(source.url).netloc
    if host in _UNREACHABLE:
        raise ReferenceUnavailable(f"cannot download {source.file}: {host} was unreachable earlier in this run")
    try:
        with urllib.request.urlopen(source.url, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as err:
        raise ReferenceUnavailable(f"cannot download {source.file} from {source.url}: {err}") from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        _UNREACHABLE.add(host)
        raise ReferenceUnavailable(f"cannot download {source.file} from {source.url}: {err}") from None
    digest = hashlib.sha256(body).hexdigest()
    if digest != source.sha256:
        raise ReferenceUnavailable(
            f"{source.url}: received sha256 {digest}; expected {source.sha256} (tests/data/reference_sources.json)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Atomic: parallel test processes never read half a file.
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as tmp:
        tmp.write(body)
    os.replace(tmp.name, dest)
    return dest


def locate(
    relative: str,
    local: Path = LOCAL,
    cache: Path = CACHE,
    sources: dict[str, Source] | None = None,
    timeout: float = DOWNLOAD_TIMEOUT_SECONDS,
) -> Path:
    """The path of reference file ``relative`` (e.g. ``nodeadm/node.eks.aws_nodeconfigs.yaml``)."""
    path = local / relative
    if path.exists():
        return path
    known = load_sources() if sources is None else sources
    source = known.get(relative)
    if source is None:
        raise ReferenceUnavailable(
            f"reference file {path} is missing: ../shared/reference must sit beside the project "
            f"(and {relative} has no pinned source in tests/data/reference_sources.json)"
        )
    cached = cache / relative
    if cached.is_file() and sha256_of(cached) == source.sha256:
        return cached
    try:
        return download(source, cached, timeout)
    except ReferenceUnavailable as err:
        raise ReferenceUnavailable(f"reference file {path} is missing and {err}") from None


# ---------------------------------------------------------------------------------------------
# What the tests call: a reference file or a recording, or a skip (a failure in CI) saying why
# ---------------------------------------------------------------------------------------------

#: The gpu-operator chart versions the library validates, each in ../shared/reference/gpu-operator.
CHART_VERSIONS = ("v25.3.1", "v25.10.1", "v26.7.0")


def reference_path(*parts: str) -> Path:
    """A file of the upstream reference data.

    ../shared/reference when it sits beside the project (here, .ci/run); otherwise the pinned
    upstream copy, downloaded once and verified by sha256 (``locate``, GitHub Actions).
    When neither is available the test fails if GPU_EKS_REQUIRE_REFERENCE is set (.ci/run and
    the workflows set it) and is skipped otherwise, saying why.
    """
    try:
        return locate("/".join(parts))
    except ReferenceUnavailable as err:
        unavailable(str(err))


def observed_path(name: str) -> Path:
    """A file of what the real ``nvidia-smi`` printed on an H200 (../shared/observed/nvidia-smi/
    580.159.04-h200, read by tests/support/standins). It has no upstream to download it from: where
    ../shared is absent (a GitHub Actions clone) the test is skipped; where ../shared is there but
    the file is not, it is a contract input missing (``unavailable``)."""
    from tests.support.standins.nvidia_smi_grammar import OBSERVED

    path = OBSERVED / name
    if path.is_file():
        return path
    if not OBSERVED.parents[2].is_dir():
        pytest.skip(f"{OBSERVED.parents[2]} is absent: the recordings of the real nvidia-smi are only there")
    unavailable(f"{path} is missing: the recordings of the real nvidia-smi (../shared/observed)")


def unavailable(message: str) -> NoReturn:
    """A contract input (a reference file, helm, promtool, checkov) is missing: the test fails where
    GPU_EKS_REQUIRE_REFERENCE is set (.ci/run and the workflows) and is skipped otherwise, saying why."""
    if os.environ.get("GPU_EKS_REQUIRE_REFERENCE"):
        pytest.fail(message)
    pytest.skip(message)


#: libyaml's safe loader where PyYAML has it (the reference CRDs and chart values are thousands of
#: lines: the pure-Python loader spent ~10 s of the suite on them); the same documents either way.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_reference_yaml(*parts: str):
    return yaml.load(reference_path(*parts).read_text(), Loader=SAFE_LOADER)
