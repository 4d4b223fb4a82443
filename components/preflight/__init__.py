"""Preflight: catch AWS account problems before `pulumi up`, with read-only boto3 calls.

Library use (no Pulumi import anywhere in this package)::

    from components.preflight import enforce, PreflightError

    results = enforce(settings, "us-west-2")  # raises PreflightFailed if any check FAILed

Command line: ``python -m components preflight --stack dev [--json]`` (see docs/preflight.md).
"""

from __future__ import annotations

from .checks import (
    FAIL,
    PASS,
    WARN,
    AwsAccessError,
    CheckResult,
    PreflightError,
    PreflightFailed,
    Status,
    check_ami,
    check_existing_vpc,
    check_instance_type,
    check_kubernetes_version,
    check_vcpu_quota,
    check_zones,
    enforce,
    run_checks,
)

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
    "check_vcpu_quota",
    "check_zones",
    "enforce",
    "run_checks",
]
