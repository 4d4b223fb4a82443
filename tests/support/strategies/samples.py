"""The values tests/support/strategies/settings.py draws where a type alone does not say which are valid:
the validated string types of config/fields.py (``VALID``, ``NEAR_MISS``), the keys whose values are
facts of the catalog (``CATALOG``) and the rules across the keys of one model (``FIXES``).

Tables by validator and by (model title, field): a new key of an existing type needs no entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from components import catalog
from components.catalog import gpu_operator as operator_chart
from components.catalog import mig as mig_catalog
from components.catalog.charts import CLUSTER_AUTOSCALER
from components.config import capacity_provider, fields, mps, names
from components.config.fields import supported_kubernetes_versions
from components.plan import device_plugin

Strategy = st.SearchStrategy


class UnsupportedField(TypeError):
    """A settings field whose type the strategies cannot draw: extend the walker (or ``VALID``)."""


# ---------------------------------------------------------------------------------------------
# Values of the validated string types (fields.py), at their documented bounds and just past them
# ---------------------------------------------------------------------------------------------


def _name(max_len: int) -> Strategy[str]:
    """Names of 1-``max_len`` characters ``[a-z0-9-]``, alphanumeric at both ends, short ones mostly."""
    return st.one_of(
        st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True),
        st.just("a" * max_len),
        st.from_regex(rf"[a-z0-9][-a-z0-9]{{0,{max_len - 2}}}[a-z0-9]", fullmatch=True),
    )


def _name_miss(max_len: int) -> Strategy[str]:
    return st.sampled_from(["", "a" * (max_len + 1), "-a", "a-", "A", "a_b", "a.b", "é"])


#: The group names: a small pool, so that groups repeat names (a near miss) and teams name them.
GROUP_NAMES = ("a", "t4", "ml-b")
_RESERVED_GROUP_NAMES = [
    *names.SYSTEM_SIDE_CHILDREN,
    names.KARPENTER_CHILD,
    f"{names.KARPENTER_CHILD}-a",
    f"{names.CLUSTER_CHILD}-a",
    f"a-{names.LAUNCH_TEMPLATE_SUFFIX}",
]

_LABEL_VALUES = st.one_of(
    st.sampled_from(["", "ml", "true", "a.b-c_d", "a" * 63]),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?", fullmatch=True),
)
_QUALIFIED_NAMES = st.sampled_from(
    ["nvidia.com/gpu", "dedicated", "example.com/team", "a", "x" * 63, "example.com/" + "x" * 63, "spot"]
)


def _ami_releases() -> Strategy[str]:
    minors = [v.split(".")[1] for v in catalog.KUBERNETES_VERSIONS]
    return st.builds(
        lambda minor, patch, date: f"1.{minor}.{patch}-{date}",
        st.sampled_from(minors),
        st.sampled_from(["0", "2"]),
        # The first g6f/gr6f AMI and dates either side of it (catalog.instances _GRID_AMI_RELEASE).
        st.sampled_from(["20250609", "20250610", "20260115"]),
    )


#: Validator name → good values (each validator's documented examples and bounds).
VALID: dict[str, Callable[[], Strategy[Any]]] = {
    "_dns_label": lambda: st.one_of(st.sampled_from(GROUP_NAMES), _name(40)),
    "_namespace_name": lambda: st.one_of(st.sampled_from(["ml", "team-a", "a" * 63]), _name(63)),
    "_own_namespace": lambda: st.sampled_from(["gpu-operator", "ml", "gpu-check", "a" * 63]),
    "_kubelet_label_key": lambda: st.sampled_from(
        ["team", "example.com/team", "node.kubernetes.io/pool", "x" * 63, "example.com/" + "x" * 63]
    ),
    "_label_value": lambda: _LABEL_VALUES,
    "_qualified_name": lambda: _QUALIFIED_NAMES,
    "_cidr": lambda: st.sampled_from(["10.0.0.0/16", "10.1.0.0/20", "192.168.0.0/22", "203.0.113.0/24"]),
    "_public_cidr": lambda: st.sampled_from(["203.0.113.0/24", "198.51.100.7/32", "0.0.0.0/0", "52.0.0.0/8"]),
    "_principal_arn": lambda: st.sampled_from(
        [
            "arn:aws:iam::123456789012:role/Admin",
            "arn:aws:iam::123456789012:user/alice",
            "arn:aws:iam::123456789012:role/path/to/Ops",
            "arn:aws:iam::123456789012:role/" + "r" * 64,
        ]
    ),
    "_tag_key": lambda: st.sampled_from(["environment", "team:ml", "cost center", "k" * fields.TAG_KEY_MAX_LENGTH]),
    "_tag_value": lambda: st.sampled_from(["dev", "", "a b", "v" * fields.TAG_VALUE_MAX_LENGTH]),
    "_ami_release_version": _ami_releases,
    "_system_instance_type": lambda: st.sampled_from(["m6i.large", "t3.large", "m6i.2xlarge", "m7g.large"]),
    "_image_reference": lambda: st.sampled_from(
        [
            "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
            "public.ecr.aws/docker/library/python:3.12-slim",
            "registry.example.com:5000/a/b:1",
            "busybox@sha256:" + "0" * 64,
        ]
    ),
    "_scale_down_time": lambda: st.sampled_from(["10m", "1m", "60s", "1h30m", "1.5h"]),
    "_alert_duration": lambda: st.sampled_from(["5m", "1m", "60s", "2h", "1h30m", "2d"]),
    "_ec2_id(vpc)": lambda: st.sampled_from(["vpc-0123456789abcdef0", "vpc-01234567"]),
    "_ec2_id(subnet)": lambda: st.sampled_from(
        ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1", "subnet-01234567", "subnet-89abcdef"]
    ),
    "_cluster_name": lambda: st.one_of(st.sampled_from(["ml", "ml-platform", "A_1"]), st.just("c" * 100)),
}

#: Validator name → values just past its rule (a bound + 1, a reserved value, a near spelling).
NEAR_MISS: dict[str, Callable[[], Strategy[Any]]] = {
    "_dns_label": lambda: st.one_of(_name_miss(40), st.sampled_from(_RESERVED_GROUP_NAMES)),
    "_namespace_name": lambda: _name_miss(63),
    "_own_namespace": lambda: st.sampled_from(["default", "kube-system", "kube-public", "kube-node-lease"]),
    "_kubelet_label_key": lambda: st.sampled_from(
        [
            "",
            "x" * 64,
            "kubernetes.io/hostname",
            "k8s.io/x",
            "gpu-eks.io/x",
            "nvidia.com/device-plugin.config",
            "k8s.amazonaws.com/accelerator",
            "karpenter.sh/x",
            "a b",
        ]
    ),
    "_label_value": lambda: st.sampled_from(["a" * 64, "-a", "a,b", "a=b", " "]),
    "_qualified_name": lambda: st.sampled_from(["", "a/b/c", "x" * 64, "/x", "Example.com/x", "-x"]),
    "_cidr": lambda: st.sampled_from(["10.0.0.1/16", "10.0.0.0", "2001:db8::/32", "10.0.0.0/33", "x"]),
    "_public_cidr": lambda: st.sampled_from(["10.0.0.0/8", "192.168.1.0/24", "127.0.0.1/32", "100.64.0.0/10"]),
    "_principal_arn": lambda: st.sampled_from(
        [
            "arn:aws:sts::123456789012:assumed-role/Admin/session",
            "arn:aws:iam::123456789012:role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForAmazonEKS",
            "arn:aws:iam::12345:role/x",
            "arn:aws:iam::123456789012:role/" + "r" * 65,
            "arn:aws:iam::123456789012:group/g",
        ]
    ),
    "_tag_key": lambda: st.sampled_from(["", "aws:x", "AWS:x", "k" * (fields.TAG_KEY_MAX_LENGTH + 1), "a*b"]),
    "_tag_value": lambda: st.sampled_from(["v" * (fields.TAG_VALUE_MAX_LENGTH + 1), "a*b", "a\nb"]),
    "_ami_release_version": lambda: st.sampled_from(["1.35", "1.35.0", "v1.35.0-20260115", "1.35.0-2026011"]),
    "_system_instance_type": lambda: st.sampled_from(["g4dn.xlarge", "p5.48xlarge", "M6i.large", "m6i", ""]),
    "_image_reference": lambda: st.sampled_from(["", "UPPER/case", "a:" + "t" * 129, "a@sha256:00"]),
    "_scale_down_time": lambda: st.sampled_from(["59s", "10", "-1m", "", "1d", "0"]),
    "_alert_duration": lambda: st.sampled_from(["59s", "5", "5M", "", "1m1h", "0"]),
    "_ec2_id(vpc)": lambda: st.sampled_from(["vpc-123", "subnet-0123456789abcdef0", "vpc-0123456789ABCDEF0"]),
    "_ec2_id(subnet)": lambda: st.sampled_from(["subnet-123", "vpc-0123456789abcdef0", ""]),
    "_cluster_name": lambda: st.sampled_from(["", "-a", "c" * 101, "a.b"]),
}

#: Validators of a whole collection or model (bounds, uniqueness, cross-field rules): nothing to
#: draw for them beyond the collection near misses every collection gets. Name → (min, max) size.
COLLECTION_RULES: dict[str, tuple[int | None, int | None]] = {
    "_unique": (None, None),
    "_unique_taints": (None, None),
    "_non_empty": (1, None),
    "_non_empty_groups": (1, None),
    "_tag_count": (None, fields.MAX_USER_TAGS),
    "known_gpu_types": (None, None),
    "_system_nodes_at_creation": (None, None),
    "_plain_only": (None, None),
}


# ---------------------------------------------------------------------------------------------
# Keys whose valid values are facts of the catalog
# ---------------------------------------------------------------------------------------------


def _instance_types() -> Strategy[list[str]]:
    """One family's types (a group's types must be interchangeable), every family drawn."""
    by_family: dict[str, list[str]] = {}
    for name, row in catalog.GPU_INSTANCE_TYPES.items():
        by_family.setdefault(row.family.name, []).append(name)
    return st.sampled_from(sorted(by_family)).flatmap(
        lambda f: st.one_of(
            st.sampled_from(by_family[f]).map(lambda t: [t]),
            st.lists(st.sampled_from(by_family[f]), min_size=1, max_size=3, unique=True),
        )
    )


def _instance_types_miss() -> Strategy[Any]:
    every = sorted(catalog.GPU_INSTANCE_TYPES)
    return st.one_of(
        st.just([]),
        st.lists(st.sampled_from(every), min_size=2, max_size=3),  # families mixed, duplicates
        st.just(every[:21]),  # MaxLen + 1
        st.sampled_from([["g4dn.huge"], ["m6i.large"], ["G4dn.xlarge"], "g4dn.xlarge"]),
    )


def _mig_profiles() -> list[str]:
    return sorted({p for gpu in mig_catalog.MIG_GPUS.values() for p in gpu.profiles})


def _mig_layouts() -> list[str]:
    return sorted({layout for gpu in mig_catalog.MIG_GPUS for layout in mig_catalog.named_layouts(gpu)})


def _mig_devices() -> Strategy[dict[str, int]]:
    return st.dictionaries(st.sampled_from(_mig_profiles()), st.integers(1, 7), min_size=1, max_size=3)


def _resources() -> list[str]:
    return [
        device_plugin.GPU_RESOURCE,
        f"{device_plugin.GPU_RESOURCE}.shared",
        *(f"nvidia.com/mig-{p}" for p in _mig_profiles()),
    ]


def _group_refs() -> Strategy[list[str]]:
    return st.lists(st.sampled_from(GROUP_NAMES), min_size=1, max_size=2, unique=True)


#: (model title, field name) → (good, near miss) drawn from the catalog (None: the generic near miss).
CATALOG: dict[tuple[str, str], tuple[Callable[[], Strategy[Any]], Callable[[], Strategy[Any]] | None]] = {
    ("GpuNodeGroupSettings", "instance_types"): (_instance_types, _instance_types_miss),
    ("GpuNodeGroupSettings", "name"): (
        lambda: st.sampled_from(GROUP_NAMES),
        lambda: st.one_of(_name_miss(40), st.sampled_from(_RESERVED_GROUP_NAMES), st.just("a" * 40)),
    ),
    ("Settings", "kubernetes_version"): (
        # The versions EKS runs on the day the test runs (tests/conftest.py pins it): read at draw time.
        lambda: st.deferred(lambda: st.sampled_from(supported_kubernetes_versions(catalog.today()))),
        lambda: st.sampled_from(["1.99", "1.35.0", "v1.35", 1.35, "1.2"]),
    ),
    ("GpuCapacitySettings", "kubernetes_version"): (
        lambda: st.deferred(lambda: st.sampled_from(supported_kubernetes_versions(catalog.today()))),
        lambda: st.sampled_from(["1.99", "1.35.0", 1.35]),
    ),
    ("GpuOperatorSettings", "chart_version"): (
        lambda: st.sampled_from(list(operator_chart.SUPPORTED_CHART_VERSIONS)),
        lambda: st.sampled_from(["v99.0.0", "26.7.0", "", "latest"]),
    ),
    ("AutoscalerSettings", "chart_version"): (
        lambda: st.sampled_from(list(CLUSTER_AUTOSCALER.versions)),
        lambda: st.sampled_from(["99.0.0", "v9.59.0", ""]),
    ),
    ("Mps", "replicas"): (
        lambda: st.integers(2, mps.MPS_MAX_REPLICAS),
        lambda: st.sampled_from([1, mps.MPS_MAX_REPLICAS + 1, 0, "2"]),
    ),
    ("Mig", "layout"): (lambda: st.sampled_from(_mig_layouts()), lambda: st.sampled_from(["all-9g.99gb", ""])),
    ("Mig", "mig_devices"): (
        _mig_devices,
        lambda: st.one_of(
            st.just({}),
            st.dictionaries(st.sampled_from([*_mig_profiles(), "9g.99gb"]), st.integers(0, 8), max_size=4),
        ),
    ),
    ("Mig", "replicas"): (
        lambda: st.dictionaries(st.sampled_from(_mig_profiles()), st.integers(2, 8), max_size=2),
        lambda: st.dictionaries(st.sampled_from([*_mig_profiles(), "x"]), st.integers(0, 2), min_size=1, max_size=2),
    ),
    ("TeamSettings", "node_groups"): (
        _group_refs,
        lambda: st.sampled_from([[], ["nope"], ["a", "a"]]),
    ),
    **{
        ("TeamSettings", key): (
            lambda: st.dictionaries(
                st.one_of(st.sampled_from(_resources()[:2]), st.sampled_from(_resources())),
                st.integers(0, 16),
                max_size=2,
            ),
            lambda: st.dictionaries(
                st.sampled_from([*_resources(), "cpu", "nvidia.com/mig-9g.99gb"]), st.integers(-1, 2), max_size=2
            ),
        )
        for key in ("quota", "default_per_container", "max_per_container")
    },
}


# ---------------------------------------------------------------------------------------------
# Rules across the keys of one model: a drawn mapping made to keep them, most of the time, so that
# well-formed configurations also reach the renders (the near misses still break them)
# ---------------------------------------------------------------------------------------------


def _fix_scaling(draw: st.DrawFn, d: dict[str, Any]) -> None:
    keys = ("minSize", "desiredSize", "maxSize")
    if all(isinstance(d.get(k), int) and not isinstance(d.get(k), bool) for k in keys):
        for k, v in zip(keys, sorted(d[k] for k in keys), strict=True):
            d[k] = v


def _fix_mig(draw: st.DrawFn, d: dict[str, Any]) -> None:
    if ("layout" in d) == ("migDevices" in d) or (d.get("layout") is None and d.get("migDevices") is None):
        keep = draw(st.sampled_from(["layout", "migDevices"]))
        d.pop("layout" if keep == "migDevices" else "migDevices", None)
        if d.get(keep) is None:
            d[keep] = draw(CATALOG[("Mig", "mig_devices" if keep == "migDevices" else "layout")][0]())


def _fix_time_slicing(draw: st.DrawFn, d: dict[str, Any]) -> None:
    if d.get("replicas") == 1:
        d.pop("renameByDefault", None)
        d.pop("failRequestsGreaterThanOne", None)


def _family(d: dict[str, Any]) -> catalog.GpuFamily | None:
    types = d.get("instanceTypes")
    if isinstance(types, list) and types and types[0] in catalog.GPU_INSTANCE_TYPES:
        return catalog.GPU_INSTANCE_TYPES[types[0]].family
    return None


def _fix_group(draw: st.DrawFn, d: dict[str, Any]) -> None:
    if d.get("mig") is not None:
        d.pop("mps", None)
        d.pop("timeSlicing", None)
        family = _family(d)
        if family is None or family.name not in mig_catalog.FAMILY_MIG_GPU:
            types = [
                t for t, row in catalog.GPU_INSTANCE_TYPES.items() if row.family.name in mig_catalog.FAMILY_MIG_GPU
            ]
            d["instanceTypes"] = [draw(st.sampled_from(sorted(types)))]
        if d.get("migStrategy") in (None, "none"):
            d["migStrategy"] = draw(st.sampled_from(["single", "mixed"]))
        mig = d["mig"]
        if isinstance(mig, dict) and isinstance(mig.get("layout"), str):
            gpu = mig_catalog.FAMILY_MIG_GPU[catalog.GPU_INSTANCE_TYPES[d["instanceTypes"][0]].family.name]
            mig["layout"] = draw(st.sampled_from(list(mig_catalog.named_layouts(gpu))))
        if isinstance(mig, dict) and not mig.get("replicas"):
            d.pop("sharedDevicesAllocationPolicy", None)
    family = _family(d)
    if d.get("mps") is not None:
        d.pop("timeSlicing", None)
        if d.get("migStrategy") == "mixed":
            d["migStrategy"] = "single"
        if family is not None and catalog.MPS not in family.sharing:
            d.pop("mps")
        elif isinstance(d["mps"], dict) and isinstance(d["mps"].get("replicas"), int):
            d["mps"]["replicas"] = min(d["mps"]["replicas"], 8)
    if family is not None and catalog.TIME_SLICING not in family.sharing and d.get("mps") is None:
        d["timeSlicing"] = {"replicas": 1}
        d.pop("sharedDevicesAllocationPolicy", None)
    if d.get("capacityProvider") == "karpenter":
        scaling = d.get("scaling")
        most = scaling.get("maxSize", 1) if isinstance(scaling, dict) else 1
        d["scaling"] = {"minSize": 0, "desiredSize": 0, "maxSize": most}
        if isinstance(d.get("diskSizeGiB"), int):
            d["diskSizeGiB"] = min(d["diskSizeGiB"], capacity_provider.KARPENTER_MAX_VOLUME_GIB)


def _fix_cluster(draw: st.DrawFn, d: dict[str, Any]) -> None:
    """The rules across groups and keys: one migStrategy, unique group names, teams naming groups,
    AMI releases of the cluster's minor, a system group of one architecture with a node."""
    groups = (
        [g for g in d.get("gpuNodeGroups") or [] if isinstance(g, dict)]
        if isinstance(d.get("gpuNodeGroups"), list)
        else []
    )
    strategies = [g.get("migStrategy") for g in groups if g.get("mig") is not None] or ["none"]
    names_seen: set[str] = set()
    for g in groups:
        if g.get("mig") is None:
            g["migStrategy"] = strategies[0] if g.get("mps") is None or strategies[0] != "mixed" else "none"
            if g.get("mps") is not None and strategies[0] == "mixed":
                g.pop("mps")
        if g.get("name") in names_seen:
            g["name"] = next(n for n in (*GROUP_NAMES, "d", "e", "f") if n not in names_seen)
        names_seen.add(g.get("name"))
    version = d.get("kubernetesVersion")
    minor = version.split(".")[1] if isinstance(version, str) and "." in version else "35"
    for holder in [*groups, d.get("systemNodeGroup")]:
        release = holder.get("amiReleaseVersion") if isinstance(holder, dict) else None
        m = re.fullmatch(r"1\.\d+\.(.+)", release) if isinstance(release, str) else None
        if m:
            holder["amiReleaseVersion"] = f"1.{minor}.{m.group(1)}"
    system = d.get("systemNodeGroup")
    if isinstance(system, dict):
        if isinstance(system.get("instanceTypes"), list):
            system["instanceTypes"] = [t for t in system["instanceTypes"] if t != "m7g.large"] or ["m7g.large"]
        if isinstance(system.get("scaling"), dict) and all(isinstance(v, int) for v in system["scaling"].values()):
            system["scaling"] = {k: max(v, 1) for k, v in system["scaling"].items()}
    names = sorted(n for n in names_seen if isinstance(n, str)) or ["gpu"]
    for team in d.get("teams") or [] if isinstance(d.get("teams"), list) else []:
        if isinstance(team, dict) and isinstance(team.get("nodeGroups"), list):
            team["nodeGroups"] = sorted({n if n in names else draw(st.sampled_from(names)) for n in team["nodeGroups"]})


def _fix_network(draw: st.DrawFn, d: dict[str, Any]) -> None:
    if d.get("vpcId") is None:
        for key in ("privateSubnetIds", "publicSubnetIds"):
            d.pop(key, None)
    else:
        d.pop("cidrBlock", None)
        d.pop("availabilityZoneCount", None)
        d.pop("natGateways", None)
        d["privateSubnetIds"] = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
        d.pop("publicSubnetIds", None)


#: Model title → a fix of a drawn mapping (applied unless the draw is a near miss of the model).
FIXES: dict[str, Callable[[st.DrawFn, dict[str, Any]], None]] = {
    "Settings": _fix_cluster,
    "GpuCapacitySettings": _fix_cluster,
    "TimeSlicing": _fix_time_slicing,
    "Scaling": _fix_scaling,
    "Mig": _fix_mig,
    "GpuNodeGroupSettings": _fix_group,
    "NetworkSettings": _fix_network,
}
