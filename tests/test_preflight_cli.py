"""End to end: `python -m components preflight` against moto's server, with exactly the
environment a user's shell would give it (``run_preflight``: its ``main`` in this process; the
healthy run in a new Python, through the real entry point).

The server (moto.server.ThreadedMotoServer on a free 127.0.0.1 port) is seeded through boto3
with endpoint_url; the command reaches it through AWS_ENDPOINT_URL with fake credentials, so
nothing here talks to AWS. Where moto's server cannot answer, the healthy run shows WARN rows:
  - kubernetes-version: eks DescribeClusterVersions is not implemented (an HTML 404 page).
  - vcpu-quota:*: service-quotas has no EC2 quotas (NoSuchResourceException).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer

from components import catalog
from components.preflight.cli import resolve_region
from tests.support.paths import ROOT
from tests.support.preflight import (
    CONSUMER_KEYS,
    GPU_AMI_ID,
    REGION,
    VERSION,
    client,
    create_vpc,
    preflight_config,
    preflight_env,
    run_preflight,
    seed_eks_amis,
    write_stack,
)

GPU_PARAM = catalog.AMI_SSM_PARAMETER[catalog.GPU_AMI_TYPE].format(version=VERSION)
# moto's server answers an unimplemented route with an HTML 404 page; the reason keeps its title.
EKS_NOT_IMPLEMENTED = "could not check: DescribeClusterVersions answered 404 Not Found"
QUOTA_NOT_AVAILABLE = (
    "could not check: GetServiceQuota answered NoSuchResourceException: This service is not "
    "available in the current Region. Choose a different Region or a different service."
)


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def server(moto_url: str) -> str:
    """The moto server, emptied: every test seeds what it needs (with fake credentials)."""
    request = urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    return moto_url


def _rows(stdout: str) -> dict[str, tuple[str, str]]:
    return {r["check"]: (r["status"], r["reason"]) for r in json.loads(stdout)}


def test_healthy_account_exits_0_with_warn_rows_only_where_moto_cannot_answer(server: str, tmp_path: Path) -> None:
    seed_eks_amis()  # moto's in-process SSM backend, which the threaded server serves
    assert client("ssm", server).get_parameter(Name=GPU_PARAM)["Parameter"]["Value"] == GPU_AMI_ID
    write_stack(tmp_path, "ok", preflight_config())

    result = run_preflight(tmp_path, "ok", preflight_env(tmp_path, server), "--json", new_python=True)

    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert {check: status for check, (status, _) in rows.items()} == {
        "ami:AL2023_x86_64_NVIDIA": "PASS",
        "ami:AL2023_x86_64_STANDARD": "PASS",
        "kubernetes-version": "WARN",
        "vpc": "PASS",
        "zones": "PASS",
        "instance-type:g4dn.xlarge": "PASS",
        "instance-type:t3.large": "PASS",
        "vcpu-quota:ON_DEMAND": "WARN",
    }
    assert rows["kubernetes-version"][1] == EKS_NOT_IMPLEMENTED
    assert rows["vcpu-quota:ON_DEMAND"][1] == QUOTA_NOT_AVAILABLE
    assert rows["vpc"][1] == "the program creates the VPC"
    assert rows["ami:AL2023_x86_64_NVIDIA"][1] == f"{GPU_AMI_ID} (SSM {GPU_PARAM})"
    assert rows["instance-type:g4dn.xlarge"][1].endswith("offered in us-west-2a, us-west-2b")
    assert result.stderr == ""


def test_healthy_existing_vpc_with_spot_group(server: str, tmp_path: Path) -> None:
    seed_eks_amis()
    vpc_id, private, public = create_vpc(client("ec2", server), ["us-west-2a", "us-west-2b"], ["us-west-2a"])
    config = preflight_config(
        **{
            "gpu-eks:network": {"vpcId": vpc_id, "privateSubnetIds": private, "publicSubnetIds": public},
            "gpu-eks:gpuNodeGroups": [
                {
                    "name": "t4",
                    "instanceTypes": ["g4dn.xlarge"],
                    "capacityType": "SPOT",
                    "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 1},
                }
            ],
        }
    )
    write_stack(tmp_path, "byo", config)

    result = run_preflight(tmp_path, "byo", preflight_env(tmp_path, server), "--json")

    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert rows["vpc"] == (
        "PASS",
        f"3 subnet(s) in {vpc_id}, private ones in us-west-2a, us-west-2b, load-balancer tags set",
    )
    assert rows["zones"][0] == "PASS"
    assert rows["vcpu-quota:SPOT"][0] == "WARN"
    assert "vcpu-quota:ON_DEMAND" not in rows
    assert sorted(check for check, (status, _) in rows.items() if status != "PASS") == [
        "kubernetes-version",
        "vcpu-quota:SPOT",
    ]


def test_failing_account_exits_1_naming_the_failed_rows(server: str, tmp_path: Path) -> None:
    seed_eks_amis(ami_types=[catalog.SYSTEM_AMI_TYPE])  # no NVIDIA AMI parameter
    vpc_id, private, _ = create_vpc(client("ec2", server), ["us-west-2a", "us-west-2a"], tag_private=False)
    write_stack(
        tmp_path, "bad", preflight_config(**{"gpu-eks:network": {"vpcId": vpc_id, "privateSubnetIds": private}})
    )

    result = run_preflight(tmp_path, "bad", preflight_env(tmp_path, server))

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Preflight of stack bad (cluster gpu-eks-bad) in {REGION}, account 123456789012"
    failed = {line.split()[0]: line for line in lines if len(line.split()) > 1 and line.split()[1] == "FAIL"}
    assert sorted(failed) == ["ami:AL2023_x86_64_NVIDIA", "vpc"]
    assert f"SSM parameter {GPU_PARAM} does not exist" in failed["ami:AL2023_x86_64_NVIDIA"]
    assert "private subnets span 1 zone(s) (us-west-2a); EKS needs at least 2" in failed["vpc"]
    assert f"without tag kubernetes.io/role/internal-elb=1: {private[0]}, {private[1]}" in failed["vpc"]
    assert lines[-1] == "4 passed, 2 warned, 2 failed"


def test_a_consumers_project_with_its_own_namespaces_runs(server: str, tmp_path: Path) -> None:
    """In a consumer's project the library reads its gpu-eks: keys and leaves the project's own and other
    providers' namespaces alone (issue 42); this repository's project refuses them, naming each."""
    seed_eks_amis()
    write_stack(tmp_path, "dev", preflight_config(**CONSUMER_KEYS), project="ml-platform")

    result = run_preflight(tmp_path, "dev", preflight_env(tmp_path, server))

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"Preflight of stack dev (cluster ml-platform-dev) in {REGION}, account 123456789012"
    )
    write_stack(tmp_path, "dev", preflight_config(**CONSUMER_KEYS))  # the same keys in this repository's project
    refused = run_preflight(tmp_path, "dev", preflight_env(tmp_path, server))
    assert refused.returncode == 2
    assert "invalid stack configuration (2 problems):" in refused.stderr
    assert 'ml-platform:costCenter: received "cc-42"; expected a key in a namespace the program reads' in refused.stderr


def test_invalid_config_exits_2_without_traceback(tmp_path: Path) -> None:
    config = preflight_config(**{"gpu-eks:gpuNodeGroups": [{"name": "t4", "instanceTypes": ["p3.2xlarge"]}]})
    write_stack(tmp_path, "broken", config)

    result = run_preflight(tmp_path, "broken", preflight_env(tmp_path, None))

    assert result.returncode == 2
    assert result.stdout == ""
    assert "invalid stack configuration (1 problem):" in result.stderr
    assert 'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["p3.2xlarge"]' in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_stack_exits_2(tmp_path: Path) -> None:
    write_stack(tmp_path, "dev", preflight_config())

    result = run_preflight(tmp_path, "nope", preflight_env(tmp_path, None))

    assert result.returncode == 2
    assert "unknown stack 'nope'" in result.stderr
    assert "(stacks here: dev)" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_credentials_exits_2_without_traceback(server: str, tmp_path: Path) -> None:
    write_stack(tmp_path, "ok", preflight_config())

    # Endpoint still set: had credentials been found anyway, the calls would reach moto, not AWS.
    result = run_preflight(tmp_path, "ok", preflight_env(tmp_path, server, credentials=False))

    assert result.returncode == 2
    assert result.stdout == ""
    assert "no AWS credentials found (NoCredentialsError: Unable to locate credentials)" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_region_anywhere_exits_2(tmp_path: Path) -> None:
    config = preflight_config()
    del config["aws:region"]
    write_stack(tmp_path, "noregion", config)

    result = run_preflight(tmp_path, "noregion", preflight_env(tmp_path, None))

    assert result.returncode == 2
    assert "no AWS region for stack 'noregion'" in result.stderr


def test_region_comes_from_the_stack_then_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-such-config"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    env = {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-central-1"}
    assert resolve_region({"aws:region": "us-west-2"}, env) == "us-west-2"
    assert resolve_region({}, env) == "eu-west-1"
    assert resolve_region({}, {"AWS_DEFAULT_REGION": "eu-central-1"}) == "eu-central-1"
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert resolve_region({}, {}) is None


def test_preflight_imports_no_pulumi() -> None:
    # `python -m components preflight` should not load Pulumi (see components/__main__.py).
    code = "import sys, components.preflight.cli; print(sorted(m for m in sys.modules if m.startswith('pulumi')))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr
