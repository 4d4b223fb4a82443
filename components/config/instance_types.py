"""The GPU instance-type rules of a node group: known types (with the nearest ones when not),
types a group may mix, and the sharing each family allows (facts in ``catalog.instances``)."""

from __future__ import annotations

import difflib

from .. import catalog

#: How many known types an unknown one's error names.
NEAREST = 3


def _nearest_gpu_types(name: str) -> list[str]:
    """The ``NEAREST`` known GPU types closest to ``name``, compared in lower case (EC2's names
    are): the sizes of its own family first, then the others, each by difflib similarity."""
    lowered = name.lower()
    family = catalog.instance_family(lowered)

    def rank(known: str) -> tuple[bool, float]:
        return catalog.instance_family(known) != family, -difflib.SequenceMatcher(None, lowered, known).ratio()

    return sorted(catalog.GPU_INSTANCE_TYPES, key=rank)[:NEAREST]


def _cpu_families() -> set[str]:
    """The families the catalog knows to have no GPU: those of the system node group's types."""
    return {catalog.instance_family(t) for t in catalog.SYSTEM_ENIS if not catalog.is_accelerated(t)}


def _unknown_detail(name: str) -> str:
    """Why ``name`` is refused: not a GPU type at all, or not one the library knows (with the nearest)."""
    family = catalog.instance_family(name.lower())
    why = ["instance type names are lower-case"] if name != name.lower() else []
    if family in _cpu_families():
        # No nearest GPU type: an m5.large is not a misspelt g5.xlarge.
        return (
            f"{name}: {'; '.join([*why, f'not a GPU type (the {family} family has no GPU: a systemNodeGroup type)'])}"
        )
    if family in catalog.EXCLUDED_GPU_FAMILIES:
        why.append(f"the library leaves {family} out, since {catalog.EXCLUDED_GPU_FAMILIES[family]}")
    return f"{name}: {'; '.join([*why, 'nearest known ' + ', '.join(_nearest_gpu_types(name))])}"


def known_gpu_types(types: list[str]) -> list[str]:
    unknown = [t for t in types if t not in catalog.GPU_INSTANCE_TYPES]
    if unknown:
        detail = "; ".join(_unknown_detail(t) for t in unknown)
        families = ", ".join(catalog.FAMILIES)
        raise ValueError(
            f"NVIDIA GPU instance types the library knows (families {families}; docs/configuration.md, "
            f'"GPU families"), got {detail}'
        )
    rows = [catalog.GPU_INSTANCE_TYPES[t] for t in types]
    # One group, one kind of slot: the plan derives the GPU-count and accelerator labels, the slots
    # per node and the autoscaler's template node from one row, so every type must match it: the
    # same GPU model with the same memory per advertised GPU (a time-sliced slot on an A10G is not
    # a slot on a T4, nor is a 1/8 L4 slice a whole L4), the same GPU count (the label and the
    # advertised capacity are per group) and one CPU architecture (EKS CreateNodegroup: one
    # amiType per group).
    if any(not catalog.interchangeable(rows[0], r) for r in rows[1:]):
        detail = ", ".join(
            f"{r.name}={r.gpus}x {r.gpu_model} {r.gpu_memory_mib_per_gpu} MiB {r.architecture}" for r in rows
        )
        raise ValueError(
            "instance types with the same GPU model, memory per GPU, GPU count and CPU architecture, since "
            f"the labels, slots and AMI are per node group (got {detail}); split them into separate node groups"
        )
    return types


def sharing_problem(types: list[str], mode: str, shared: bool) -> str | None:
    """What is expected instead when a group of ``types`` is shared (more than one pod per GPU)
    with ``mode`` (``catalog.TIME_SLICING``, ``catalog.MPS``) and a family does not allow it
    (``catalog.FAMILIES[...].sharing``), or None."""
    if not shared:
        return None
    refused = [catalog.GPU_INSTANCE_TYPES[t] for t in types if mode not in catalog.GPU_INSTANCE_TYPES[t].sharing]
    if not refused:
        return None
    reason = refused[0].family.no_sharing_reason
    expected = "1 (not shared)" if mode == catalog.TIME_SLICING else "no mps (timeSlicing: {replicas: 1} instead)"
    return f"{expected} for {', '.join(r.name for r in refused)}: no {mode} there, since {reason}"


def ami_release_problem(types: list[str], release: str | None) -> str | None:
    """What is expected instead when a group of ``types`` pins the AMI ``release``
    (``<x.y.z>-<yyyymmdd>``) older than a family's first usable one (``GpuFamily.min_ami_release``), or None."""
    m = catalog.AMI_RELEASE_VERSION_PATTERN.fullmatch(release or "")
    if not m:
        return None
    rows = [catalog.GPU_INSTANCE_TYPES[t] for t in types]
    too_old = [r for r in rows if r.family.min_ami_release and m.group(3) < r.family.min_ami_release]
    if not too_old:
        return None
    first = max(r.family.min_ami_release for r in too_old)
    modules = ", ".join(dict.fromkeys(r.family.kernel_module for r in too_old))
    return (
        f"an AMI release of {first} or later (<x.y.z>-{first}), or none (the latest), for "
        f"{', '.join(r.name for r in too_old)}: the AL2023 NVIDIA AMI loads the driver they need ({modules}) "
        f"from release v{first} (catalog.instances), so an older one boots them without a usable GPU"
    )
