"""The body of this repository's Pulumi program (__main__.py stays a few lines)."""

from __future__ import annotations

import pulumi

from .check.loading import settings_from_pulumi_config
from .check.settings import Settings
from .composites.gpu_cluster import GpuCluster, GpuClusterArgs

#: Name of the top-level component. Resource names are public API: changing this would
#: replace every resource of every stack, so it needs an alias (see docs/upgrading.md).
COMPONENT_NAME = "gpu-eks"


def run_preflight(settings: Settings) -> None:
    """Run the account checks when ``preflight: true``; any FAIL stops the program."""
    if not settings.preflight:
        return
    from .preflight import PreflightError, enforce

    region = pulumi.Config("aws").get("region")
    try:
        enforce(settings, region)
    except PreflightError as err:  # a FAIL, or no access to the account at all
        raise pulumi.RunError(f"preflight failed:\n{err}") from None


def main() -> GpuCluster:
    settings = settings_from_pulumi_config()  # raises pulumi.RunError listing every problem
    run_preflight(settings)
    cluster = GpuCluster(COMPONENT_NAME, GpuClusterArgs(settings=settings))
    for key, value in cluster.stack_outputs().items():
        pulumi.export(key, value)
    return cluster
