"""The one home of the tests' shared plumbing: paths, the fake-AWS environment, the cache of
simulated stack runs, and the copy/subprocess helpers.

Imported by tests/conftest.py and by test modules (``from tests.support import ...``). Nothing
here asserts anything about the library.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import NoReturn

import botocore.loaders
import botocore.session
import kubernetes_validate.utils
import pytest
import yaml

from components.check.loading import load_stack
from components.check.settings import Settings
from components.config import stackfile
from tests import reference
from tooling.simulation import Simulation, program_from_file, run_program, run_stack

# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------

#: The checkout under test (Pulumi.yaml, __main__.py, stacks/, components/, tooling/, tests/).
ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
SNAPSHOTS = TESTS / "snapshots"
#: Upstream contracts (byte-for-byte copies), kept beside the project: ../shared/reference
#: (tests/reference.py finds them there, or downloads the pinned copies).
REFERENCE = reference.LOCAL
CHART_VERSIONS = ("v25.3.1", "v25.10.1", "v26.7.0")
STACKS = tuple(stackfile.available_stacks(ROOT))


def reference_path(*parts: str) -> Path:
    """A file of the upstream reference data.

    ../shared/reference when it sits beside the project (here, .ci/run); otherwise the pinned
    upstream copy, downloaded once and verified by sha256 (tests/reference.py, GitHub Actions).
    When neither is available the test fails if GPU_EKS_REQUIRE_REFERENCE is set (.ci/run and
    the workflows set it) and is skipped otherwise, saying why.
    """
    try:
        return reference.locate("/".join(parts))
    except reference.ReferenceUnavailable as err:
        unavailable(str(err))


def observed_path(name: str) -> Path:
    """A file of what the real ``nvidia-smi`` printed on an H200 (../shared/observed/nvidia-smi/
    580.159.04-h200, read by tests/standins). It has no upstream to download it from: where
    ../shared is absent (a GitHub Actions clone) the test is skipped; where ../shared is there but
    the file is not, it is a contract input missing (``unavailable``)."""
    from tests.standins.nvidia_smi_grammar import OBSERVED

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


# ---------------------------------------------------------------------------------------------
# Stack settings
# ---------------------------------------------------------------------------------------------


def settings_for_stack(stack: str, root: Path | None = None) -> Settings:
    """Parse and validate a stack's settings exactly as the program would (raises ConfigError)."""
    return load_stack(stack, root)[1]


# ---------------------------------------------------------------------------------------------
# Fake AWS environment
# ---------------------------------------------------------------------------------------------

#: Fake credentials and region for moto (in-process mocks and moto's server).
FAKE_AWS_ENV: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-west-2",
    # No instance-metadata probe for credentials: nothing to find there, and it costs seconds.
    "AWS_EC2_METADATA_DISABLED": "true",
}


#: The AMIs moto's EC2 backend holds (``MOTO_AMIS_PATH``, read when moto.ec2 is imported): only
#: the one the tests launch instances from (tests/preflight_fixtures.py MOTO_AMI_ID, a record of
#: moto 5.2.5's default list, moto/ec2/resources/amis.json.gz). By default moto also builds its
#: ~1,300 "latest" AMIs of the region at every reset, that is at the end of every mocked test:
#: 0.1-0.8 s each, 6 s of the preflight tests.
MOTO_AMIS = TESTS / "moto_amis.json"


def fake_aws_environ(environ: MutableMapping[str, str], home: Path | None = None) -> None:
    """Make ``environ`` (os.environ, or a subprocess's env) one in which boto3 can only reach moto.

    Every inherited ``AWS_*`` variable goes (a user's AWS_PROFILE names a profile that moto's
    tests must not read, and boto3 refuses to create a session for an unknown one), the shared
    config and credentials files point nowhere, fake credentials are set, and moto holds one AMI
    (``MOTO_AMIS``). With ``home``,
    the files are placed under it (a subprocess gets its own HOME).
    """
    for key in [k for k in environ if k.startswith("AWS_")]:
        del environ[key]
    nowhere = home or Path("/nonexistent-gpu-eks-tests")
    environ["AWS_CONFIG_FILE"] = str(nowhere / "no-such-aws-config")
    environ["AWS_SHARED_CREDENTIALS_FILE"] = str(nowhere / "no-such-aws-credentials")
    environ.update(FAKE_AWS_ENV)
    environ["MOTO_AMIS_PATH"] = str(MOTO_AMIS)


def share_botocore_models() -> None:
    """Every botocore session in this process reads the service models through one loader.

    A new ``boto3.Session`` gets a loader of its own, and its first client of a service parses that
    service's model JSON again (EC2's alone is megabytes): the preflight command makes a session per
    run, and the tests run it and its checks dozens of times (~7 s of the suite). The models are
    botocore's own data files and are only read, so one parse serves every session; what a session
    resolves from the environment (credentials, region, endpoint) stays per session."""
    botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)


def share_kubernetes_schemas() -> None:
    """kubernetes-validate reads its packaged JSON schemas once per process, not on every call.

    Its ``validate`` parses the kind's schema and the version's ``_definitions.json`` (megabytes)
    from its package data each time (kubernetes_validate/utils.py ``schema_contents``); the tests
    validate hundreds of objects (~3 s of the suite). The files are the package's and only read."""
    kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def subprocess_env(home: Path, *, credentials: bool = True, **extra: str) -> dict[str, str]:
    """A clean environment for a subprocess: PATH, its own HOME, no inherited AWS_* or
    PYTHONPATH, no region, fake credentials unless ``credentials=False``, then ``extra``."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    fake_aws_environ(env, home)
    # The region comes from the stack file (or ``extra``), as for a user.
    del env["AWS_DEFAULT_REGION"]
    if not credentials:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            del env[key]
    env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------
# Simulated stack runs (the real __main__.py under Pulumi mocks), cached per session
# ---------------------------------------------------------------------------------------------

_SIMULATIONS: dict[str, Simulation] = {}


def simulate(stack: str) -> Simulation:
    """One simulated run per stack per test session (runs are deterministic)."""
    if stack not in _SIMULATIONS:
        _SIMULATIONS[stack] = run_stack(stack, ROOT)
    return _SIMULATIONS[stack]


# ---------------------------------------------------------------------------------------------
# Copies of the project and subprocesses
# ---------------------------------------------------------------------------------------------


def copy_project(dest: Path) -> Path:
    """The program, its components, tooling and stacks, copied (tests add stacks to the copy, never here)."""
    root = dest / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(ROOT / name, root / name)
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("components", "tooling", "stacks"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    return root


def copy_repository_files(dest: Path, *, untracked: bool) -> Path:
    """The repository's files copied under ``dest``, as git lists them: the tracked ones (what a
    checkout of a commit holds), and with ``untracked`` the new ones git does not ignore too, each
    with the work tree's content (uncommitted changes included). Never the tool venvs and caches a
    checkout grows (.tools alone is about 300 MB)."""
    listing = ["git", "-C", str(ROOT), "ls-files", "-z", "--cached"]
    if untracked:
        listing += ["--others", "--exclude-standard"]
    listed = subprocess.run(listing, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():  # a file deleted in the work tree is still listed as tracked
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def main_in_process(
    main: Callable[[list[str]], int], argv: list[str], *, cwd: Path, command: list[str]
) -> subprocess.CompletedProcess[str]:
    """A command's ``main(argv)`` run in this process from ``cwd``, its stdout, stderr and exit
    status captured as a subprocess's would be (argparse's usage errors exit through SystemExit);
    ``command`` names it in the result. An exception ``main`` does not handle propagates and fails
    the test, where a new Python would have printed a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess([*command, *argv], status, out.getvalue(), err.getvalue())


def run_python(
    *args: str,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python <args>`` with this interpreter; the environment is ours minus PYTHONPATH, plus ``env``."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def tooling_cli(
    *args: str, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m tooling <args>``."""
    return run_python("-m", "tooling", *args, cwd=cwd, env=env, timeout=timeout)


@contextlib.contextmanager
def loopback_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (a free port) serving ``handler`` in a thread; yields its base URL.

    It polls for shutdown every 50 ms: the standard 0.5 s poll made each test using one wait half
    a second at teardown (8 tests: 4 s of the suite)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def git(repo: Path, *args: str) -> str:
    """``git <args>`` in ``repo`` with a fixed identity; its stdout (raises on failure)."""
    done = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


# ---------------------------------------------------------------------------------------------
# A third configuration: what dev and prod leave at defaults (existing VPC, pinned AMI releases,
# two GPU groups with a group at desired 0, extra labels and taints, an older chart, renamed
# resource, custom namespaces). Run as stack "dev" with these overrides.
# ---------------------------------------------------------------------------------------------

VARIANT_OVERRIDES: dict[str, object] = {
    "gpu-eks:clusterName": "ml-variant",
    "gpu-eks:kubernetesVersion": "1.34",
    "gpu-eks:network": {
        "vpcId": "vpc-0b10c000000000001",
        "privateSubnetIds": ["subnet-0aa00000000000001", "subnet-0aa00000000000002"],
        "publicSubnetIds": ["subnet-0bb00000000000001"],
    },
    "gpu-eks:endpointPublicAccessCidrs": [],
    "gpu-eks:adminPrincipalArns": ["arn:aws:iam::123456789012:role/Bob", "arn:aws:iam::123456789012:user/alice"],
    "gpu-eks:controlPlaneLogTypes": ["api", "audit"],
    "gpu-eks:deletionProtection": True,
    "gpu-eks:systemNodeGroup": {
        "instanceTypes": ["m6i.xlarge"],
        "scaling": {"minSize": 2, "desiredSize": 3, "maxSize": 5},
        "diskSizeGiB": 60,
        "amiReleaseVersion": "1.34.0-20260101",
    },
    "gpu-eks:gpuNodeGroups": [
        {
            "name": "big",
            "instanceTypes": ["g4dn.12xlarge"],
            "capacityType": "ON_DEMAND",
            "scaling": {"minSize": 1, "desiredSize": 2, "maxSize": 3},
            "diskSizeGiB": 200,
            "amiReleaseVersion": "1.34.0-20260115",
            "labels": {"team.example.com/owner": "ml"},
            "taints": [
                {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoExecute"},
            ],
            "timeSlicing": {"replicas": 2, "profile": "shared-2", "renameByDefault": True},
        },
        {
            "name": "idle",
            "instanceTypes": ["g4dn.2xlarge"],
            "capacityType": "SPOT",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "timeSlicing": {"replicas": 8, "failRequestsGreaterThanOne": False},
        },
    ],
    # cdiEnabled stays false: with v25.3.1 the settings refuse it (config/addons.py: its operator would
    # put the device list back into NVIDIA_VISIBLE_DEVICES, which the boot stage's toolkit refuses).
    "gpu-eks:gpuOperator": {"chartVersion": "v25.3.1", "namespace": "nvidia-gpu", "cdiEnabled": False},
    "gpu-eks:verification": {
        "enabled": True,
        "image": "registry.example.com/cuda-sample:vectoradd",
        "namespace": "gpu-check",
    },
    "gpu-eks:tags": {"team": "ml"},
    # No Cluster Autoscaler (it would be on by default: the groups have minSize < maxSize): the
    # path without ASG tags, where "big" may rename its resource and "idle" is not verified.
    "gpu-eks:autoscaler": {"enabled": False},
}
#: A fifth configuration for the Cluster Autoscaler: two GPU groups with extra labels, a taint
#: without value, a group of 4-GPU nodes and an unshared group (replicas 1) scaling from zero, an
#: older Kubernetes minor, a non-default scale-down time. Run as stack "dev" with these overrides.
AUTOSCALED_OVERRIDES: dict[str, object] = {
    "gpu-eks:clusterName": "ml-scaled",
    "gpu-eks:kubernetesVersion": "1.34",
    "gpu-eks:gpuNodeGroups": [
        {
            "name": "multi",
            "instanceTypes": ["g4dn.12xlarge"],
            "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 3},
            "labels": {"team.example.com/owner": "ml"},
            "taints": [
                {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoExecute"},
            ],
            "timeSlicing": {"replicas": 2},
        },
        {
            "name": "zero",
            "instanceTypes": ["g4dn.xlarge"],
            "capacityType": "SPOT",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "timeSlicing": {"replicas": 1},
        },
    ],
    "gpu-eks:autoscaler": {"enabled": True, "chartVersion": "9.59.0", "scaleDownUnneededTime": "30m"},
    "gpu-eks:verification": {"enabled": True},
    "gpu-eks:tags": {"team": "ml"},
}
#: The name the promise tests give the variant run (it is stack "dev" with VARIANT_OVERRIDES).
VARIANT = "variant"
#: The name of the autoscaler run (stack "dev" with AUTOSCALED_OVERRIDES).
AUTOSCALED = "autoscaled"
#: A stack named "defaults" whose config sets only the region: every gpu-eks key at its default.
DEFAULTS = "defaults"


def simulate_run(name: str) -> Simulation:
    """``simulate(stack)`` for the stacks, the variant configurations for ``VARIANT`` and
    ``AUTOSCALED``, and a stack
    with every ``gpu-eks:*`` key at its default for ``DEFAULTS``."""
    if name not in (VARIANT, AUTOSCALED, DEFAULTS):
        return simulate(name)
    if name not in _SIMULATIONS:
        if name == VARIANT:
            _SIMULATIONS[name] = run_stack("dev", ROOT, config_overrides=VARIANT_OVERRIDES)
        elif name == AUTOSCALED:
            _SIMULATIONS[name] = run_stack("dev", ROOT, config_overrides=AUTOSCALED_OVERRIDES)
        else:
            _SIMULATIONS[name] = run_program(
                program_from_file(ROOT / "__main__.py"),
                stackfile.cli_config({"aws:region": "us-west-2"}),
                project=stackfile.project_name(ROOT),
                stack=DEFAULTS,
            )
    return _SIMULATIONS[name]
