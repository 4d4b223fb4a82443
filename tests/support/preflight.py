"""What the preflight tests share: moto seeded with what AWS has and moto lacks (EKS AMI parameters,
quotas, cluster versions), stubbed clients where moto has no answer, and the preflight command run
in this process on a stack file (in-process moto and moto's server). tests/conftest.py's ``aws``
fixture starts moto."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.stub import Stubber
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ssm.models import Parameter, ssm_backends

from components import catalog
from components.__main__ import main as components_main
from tests.support.commands import main_in_process
from tests.support.environment import subprocess_env
from tests.support.paths import ROOT

REGION = "us-west-2"
VERSION = "1.35"
GPU_AMI_ID = "ami-0gpu0000000000001"
SYSTEM_AMI_ID = "ami-0std0000000000001"
ARM64_GPU_AMI_ID = "ami-0a64a64a64a64a64a"
ON_DEMAND_QUOTA_NAME = "Running On-Demand G and VT instances"
SPOT_QUOTA_NAME = "All G and VT Spot Instance Requests"

#: One session for every test client. moto replaces boto3's default session whenever a mock
#: starts, and a fresh session reloads the service models: about 0.3 s per client.
SESSION = boto3.Session(region_name=REGION)


def client(service: str, endpoint_url: str | None = None) -> Any:
    """A client of the shared test session (``endpoint_url``: a moto server)."""
    return SESSION.client(service, region_name=REGION, endpoint_url=endpoint_url)


def seed_public_parameter(name: str, value: str, region: str = REGION) -> None:
    """Put an AWS-owned public parameter (``/aws/service/...``) into moto's SSM.

    moto answers PutParameter under ``/aws/`` with AccessDenied (as AWS does) and ships no EKS
    AMI parameters, so the parameter goes straight into moto's in-process backend. This also
    seeds moto's ThreadedMotoServer, which serves the same in-process backends.
    """
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][region]
    backend._parameters[name].append(
        Parameter(
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=dt.datetime.now(dt.UTC),
            version=1,
            data_type="text",
        )
    )


def seed_eks_amis(
    version: str = VERSION,
    region: str = REGION,
    ami_types: Sequence[str] = (catalog.GPU_AMI_TYPE, catalog.SYSTEM_AMI_TYPE),
) -> None:
    ids = {
        catalog.GPU_AMI_TYPE: GPU_AMI_ID,
        catalog.SYSTEM_AMI_TYPE: SYSTEM_AMI_ID,
        catalog.GPU_AMI_TYPE_ARM64: ARM64_GPU_AMI_ID,
    }
    for ami_type in ami_types:
        seed_public_parameter(catalog.AMI_SSM_PARAMETER[ami_type].format(version=version), ids[ami_type], region)


def create_vpc(
    ec2: Any,
    private_zones: Sequence[str],
    public_zones: Sequence[str] = (),
    tag_private: bool = True,
    tag_public: bool = True,
    cidr: str = "10.40.0.0/16",
) -> tuple[str, list[str], list[str]]:
    """A VPC with one private subnet per entry of ``private_zones`` (and public ones likewise);
    the subnets carry the EKS load-balancer role tags unless told not to."""
    vpc_id = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    prefix = ".".join(cidr.split(".")[:2])
    private: list[str] = []
    public: list[str] = []
    for i, (zone, kind) in enumerate(
        [*((z, "private") for z in private_zones), *((z, "public") for z in public_zones)]
    ):
        tagged = tag_private if kind == "private" else tag_public
        key = "kubernetes.io/role/internal-elb" if kind == "private" else "kubernetes.io/role/elb"
        tags = [{"Key": key, "Value": "1"}] if tagged else [{"Key": "Name", "Value": kind}]
        subnet_id = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=f"{prefix}.{i}.0/24",
            AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}],
        )["Subnet"]["SubnetId"]
        (private if kind == "private" else public).append(subnet_id)
    return vpc_id, private, public


#: An AMI in moto's default image list (moto/ec2/resources/amis.json.gz), and the only one moto
#: holds in the tests (tests/data/moto_amis.json, see tests/support/environment.py MOTO_AMIS).
MOTO_AMI_ID = "ami-12c6146b"


def run_instance(ec2: Any, instance_type: str, count: int = 1, spot: bool = False) -> list[str]:
    extra: dict[str, Any] = {"InstanceMarketOptions": {"MarketType": "spot"}} if spot else {}
    out = ec2.run_instances(ImageId=MOTO_AMI_ID, InstanceType=instance_type, MinCount=count, MaxCount=count, **extra)
    return [i["InstanceId"] for i in out["Instances"]]


def quota_response(code: str, value: float) -> dict[str, Any]:
    name = ON_DEMAND_QUOTA_NAME if code == catalog.VCPU_QUOTA_ON_DEMAND_G else SPOT_QUOTA_NAME
    return {
        "Quota": {
            "ServiceCode": "ec2",
            "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaCode": code,
            "QuotaName": name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
    }


def cluster_version(
    version: str,
    status: str = "STANDARD_SUPPORT",
    end_of_standard: dt.date | None = None,
    end_of_extended: dt.date | None = None,
) -> dict[str, Any]:
    """One ``clusterVersions`` entry of DescribeClusterVersions, dated from the catalog by default."""
    calendar = catalog.KUBERNETES_VERSIONS[version]
    standard = end_of_standard or calendar.end_of_standard_support
    extended = end_of_extended or calendar.end_of_extended_support
    return {
        "clusterVersion": version,
        "clusterType": "eks",
        "defaultPlatformVersion": "eks.1",
        "defaultVersion": False,
        "releaseDate": dt.datetime.combine(calendar.released, dt.time(), dt.UTC),
        "endOfStandardSupportDate": dt.datetime.combine(standard, dt.time(), dt.UTC),
        "endOfExtendedSupportDate": dt.datetime.combine(extended, dt.time(), dt.UTC),
        "status": status.lower().replace("_", "-"),
        "versionStatus": status,
    }


def write_stack(root: Path, stack: str, config: Mapping[str, Any], project: str = "gpu-eks") -> Path:
    """A minimal project (Pulumi.yaml, stacks/Pulumi.<stack>.yaml) under ``root``: this repository's
    (``gpu-eks``) unless ``project`` names a consumer's."""
    (root / "stacks").mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text(f"name: {project}\nruntime: python\nstackConfigDir: stacks\n")
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": dict(config)}, sort_keys=False))
    return path


# ---------------------------------------------------------------------------------------------
# `python -m components preflight` (tests/test_preflight_cli.py, _replies.py, test_newcomer.py)
# ---------------------------------------------------------------------------------------------


def run_preflight(
    root: Path, stack: str, env: Mapping[str, str], *args: str, new_python: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -m components preflight --stack <stack> --root <root>`` with exactly ``env``.

    By default the command's ``main`` runs in this process (what ``python -m components`` calls)
    with ``os.environ`` replaced by ``env`` for the call, and its stdout, stderr and exit status
    captured: a new Python per call cost about 0.55 s of imports, 21 calls in the suite. Each call
    builds its own boto3 session from that environment, as a new Python would. ``new_python=True``
    runs the real entry point in a subprocess (tests/test_preflight_cli.py keeps one such run).
    An exception the command does not handle propagates here and fails the test, where a new
    Python would have printed a traceback.
    """
    argv = ["preflight", "--stack", stack, "--root", str(root), *args]
    if new_python:
        command = [sys.executable, "-m", "components", *argv]
        return subprocess.run(command, cwd=ROOT, env=dict(env), capture_output=True, text=True, timeout=60)
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        return main_in_process(components_main, argv, cwd=ROOT, command=["python", "-m", "components"])
    finally:
        os.environ.clear()
        os.environ.update(saved)


#: A consuming team's own keys beside the library's: its project's namespace and another provider's.
CONSUMER_KEYS = {"ml-platform:costCenter": "cc-42", "datadog:apiKey": "not-a-real-key"}


def preflight_config(**extra: Any) -> dict[str, Any]:
    """A small valid stack config for the preflight CLI (one t4 group), plus ``extra`` keys."""
    return {
        "aws:region": REGION,
        "gpu-eks:kubernetesVersion": VERSION,
        "gpu-eks:systemNodeGroup": {
            "instanceTypes": ["t3.large"],
            "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 2},
        },
        "gpu-eks:gpuNodeGroups": [
            {
                "name": "t4",
                "instanceTypes": ["g4dn.xlarge"],
                "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 2},
            }
        ],
        **extra,
    }


def preflight_env(tmp_path: Path, endpoint: str | None, credentials: bool = True, **extra: str) -> dict[str, str]:
    """A clean environment: no inherited AWS_* variables, no ~/.aws files; ``endpoint`` as
    AWS_ENDPOINT_URL (a moto server, or a server that does not answer like AWS)."""
    if endpoint:
        extra = {"AWS_ENDPOINT_URL": endpoint, **extra}
    return subprocess_env(tmp_path, credentials=credentials, **extra)


def eks_with_versions(*versions: dict[str, Any]) -> Any:
    """An EKS client answering DescribeClusterVersions with ``versions``: stubbed, moto answers it
    with 404 "Not yet implemented"."""
    eks = client("eks")
    stub = Stubber(eks)
    stub.add_response(
        "describe_cluster_versions",
        {"clusterVersions": list(versions)},
        {"clusterType": "eks", "includeAll": True},
    )
    stub.activate()
    return eks


class StubbedSession:
    """A boto3 session whose clients for some services are pre-stubbed."""

    def __init__(self, **clients: Any):
        self._clients = {name.replace("_", "-"): c for name, c in clients.items()}

    def client(self, service: str, region_name: str | None = None) -> Any:
        return self._clients.get(service) or SESSION.client(service, region_name=region_name)
