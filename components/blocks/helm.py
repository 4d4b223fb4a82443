"""How this library installs a Helm chart: one ``k8s.helm.v3.Release`` helper for every chart it
pins (``catalog/charts.py``: gpu-operator, Cluster Autoscaler, Karpenter, the EFA device plugin), so
the install and upgrade settings are one decision.

* ``atomic``: a failed install or upgrade is rolled back (helm ``--atomic``, which also waits), so a
  failed ``pulumi up`` leaves the last working release, not a half-upgraded one;
* ``cleanup_on_fail``: the resources a failed upgrade created are deleted (``--cleanup-on-fail``);
* ``create_namespace=False``: the namespace is the caller's (kube-system, or one it declares);
* ``timeout``: how long Helm waits for the chart's workloads, per chart (its caller says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.charts import ChartPin


def helm_release(
    resource_name: str,
    chart: ChartPin,
    *,
    values: Mapping[str, Any],
    timeout_seconds: int,
    opts: pulumi.ResourceOptions,
    version: str | None = None,
    namespace: pulumi.Input[str] | None = None,
) -> k8s.helm.v3.Release:
    """``chart``'s release at ``version`` (its default) in ``namespace`` (its own), from its
    repository, or its ``oci://`` reference without one."""
    return k8s.helm.v3.Release(
        resource_name,
        name=chart.release,
        chart=chart.chart,
        version=version if version is not None else chart.default,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository) if chart.repository else None,
        namespace=namespace if namespace is not None else chart.namespace,
        create_namespace=False,
        values=values,
        atomic=True,
        cleanup_on_fail=True,
        timeout=timeout_seconds,
        opts=opts,
    )
