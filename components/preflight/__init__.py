"""Preflight: catch AWS account problems before `pulumi up`, with read-only boto3 calls.

Library use (no Pulumi import anywhere in this package)::

    from gpu_eks.preflight import enforce, PreflightError

    results = enforce(settings, "us-west-2")  # raises PreflightFailed if any check FAILed

Command line: ``python -m gpu_eks preflight --stack dev [--json]`` (see docs/preflight.md).

Modules: ``results`` (CheckResult, the statuses, the errors), ``checks`` (AMI, Kubernetes version,
zones, existing VPC), ``capacity`` (instance types, vCPU quota), ``reservations`` (a zoned group's offering, its
Capacity Reservation or Block: state, type, zone, count, window), ``run`` (run_checks, enforce),
``cli`` (the command).
"""

from __future__ import annotations

from .capacity import check_instance_type, check_vcpu_quota
from .checks import check_ami, check_existing_vpc, check_kubernetes_version, check_zones
from .reservations import check_reservation, check_zone_offering
from .results import FAIL, PASS, WARN, AwsAccessError, CheckResult, PreflightError, PreflightFailed, Status
from .run import enforce, run_checks

__all__ = [
    "FAIL",
    "PASS",
    "WARN",
    "AwsAccessError",
    "CheckResult",
    "PreflightError",
    "PreflightFailed",
    "Status",
    "check_ami",
    "check_existing_vpc",
    "check_instance_type",
    "check_kubernetes_version",
    "check_reservation",
    "check_vcpu_quota",
    "check_zone_offering",
    "check_zones",
    "enforce",
    "run_checks",
]
