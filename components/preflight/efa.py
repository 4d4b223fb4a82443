"""Preflight of EFA groups on a cluster that exists already (a ``GpuCapacity`` stack, or a
``GpuCluster`` stack deployed before), read-only (issue 41).

* ``vpc-cni``: nodes with ``efa-only`` interfaces need the Amazon VPC CNI 1.18.5 or later: "You must
  have VPC CNI version 1.18.5 or later for EFA-only interfaces" (EKS User Guide, node-efa,
  awsdocs/amazon-eks-user-guide 4d52b4d); aws/amazon-vpc-cni-k8s v1.18.5 CHANGELOG: "Filter out
  interfaces with no ip info" (#3047), an efa-only interface having no address. A managed EFA group
  of a multi-card type (p4d, p5, ...) and every Karpenter EFA group have them
  (``catalog.efa``). ``eks:DescribeAddon`` of ``vpc-cni`` gives the version; a cluster the program
  has yet to create is not checked (EKS installs its current default add-on), a cluster without
  the add-on (a self-managed VPC CNI) is a WARN saying what to check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from ..catalog import efa
from ..config.groups import GpuNodeGroupSettings
from .results import FAIL, PASS, WARN, CheckResult, could_not_check, error_code

ADDON = "vpc-cni"
#: The first VPC CNI that takes efa-only interfaces (module docstring).
MINIMUM = (1, 18, 5)
_MINIMUM = ".".join(map(str, MINIMUM))
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def efa_only_groups(groups: Sequence[GpuNodeGroupSettings]) -> list[str]:
    """The groups whose nodes carry ``efa-only`` interfaces."""
    found = []
    for g in groups:
        if not g.efa:
            continue
        if any(i.interface_type == efa.EFA_ONLY for i in g.provider.efa_interfaces(g.instance_types[0])):
            found.append(g.name)
    return found


def check_vpc_cni(eks: Any, cluster_name: str, groups: Sequence[GpuNodeGroupSettings]) -> CheckResult | None:
    """The cluster's VPC CNI add-on against ``MINIMUM`` when a group has efa-only interfaces; None
    when no group has them or the cluster does not exist yet."""
    names = efa_only_groups(groups)
    if not names:
        return None
    check = "vpc-cni"
    details: dict[str, Any] = {"cluster": cluster_name, "groups": names, "minimum": _MINIMUM}
    try:
        eks.describe_cluster(name=cluster_name)
    except ClientError as err:
        if error_code(err) == "ResourceNotFoundException":
            return None
        return could_not_check(check, err, **details)
    try:
        version = eks.describe_addon(clusterName=cluster_name, addonName=ADDON)["addon"]["addonVersion"]
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            return could_not_check(check, err, **details)
        return CheckResult(
            check,
            WARN,
            f"{cluster_name} has no {ADDON} add-on (a self-managed VPC CNI?): the aws-node image must be "
            f"v{_MINIMUM} or later for the efa-only interfaces of {', '.join(names)}",
            details,
        )
    details["version"] = version
    match = _VERSION.match(version)
    if match is None:
        return CheckResult(check, WARN, f"{ADDON} {version}: not a version to compare with v{_MINIMUM}", details)
    if tuple(int(n) for n in match.groups()) < MINIMUM:
        return CheckResult(
            check,
            FAIL,
            f"{ADDON} {version} on {cluster_name}: the efa-only interfaces of {', '.join(names)} need v{_MINIMUM} or "
            "later (EKS User Guide, node-efa); update the add-on first",
            details,
        )
    return CheckResult(check, PASS, f"{ADDON} {version} takes efa-only interfaces ({', '.join(names)})", details)
