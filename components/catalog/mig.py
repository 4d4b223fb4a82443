"""Multi-Instance GPU: the MIG profiles of each MIG-capable GPU of the catalog, their placements,
and the named layouts of the gpu-operator's default mig-parted config.

Sources:

* Profiles (compute slices, memory slices, how many fit) and placements: NVIDIA's MIG user guide,
  "Supported MIG Profiles" (A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM5-80GB, H200-SXM5-141GB) and
  ``nvidia-smi mig -lgipp`` as the guide prints it: a GPU has 7 compute slices and 8 memory
  slices; a GPU instance of ``m`` memory slices starts only at the listed memory slices.
* Profile names per GPU, and the named layouts: the operator's default mig-parted config at each
  pinned chart (NVIDIA/gpu-operator ``assets/state-mig-manager/0400_configmap.yaml`` at v25.3.1,
  v25.10.1, v26.7.0), whose ``device-filter`` entries name the GPUs by PCI device id.
  tests/test_mig.py reads those files and compares every layout below, per GPU, at every version.

Media-extension profiles (``+me``, one per GPU) are left out: gpu-operator v26.7.0's device
plugin (v0.20.0) advertises them as resources of their own, the older ones do not, and no
workload of this library needs the media engines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: Slices of a MIG-capable GPU (MIG user guide, "Terminology": 7 compute, 8 memory slices).
COMPUTE_SLICES = 7
MEMORY_SLICES = 8

#: The layout mig-manager applies to a MIG-capable node without a ``nvidia.com/mig.config`` label
#: (the chart's ``migManager.config.default``, values.yaml at v25.3.1, v25.10.1, v26.7.0): every
#: custom mig-parted config must define it.
MIG_DISABLED = "all-disabled"

#: Where a GPU instance of this many memory slices may start (MIG user guide, placements: a
#: 1-slice instance at 0-6, a 2-slice at 0, 2, 4 (1g profiles of 2 memory slices also at 6),
#: a 4-slice at 0 and 4 (3g) or 0 only (4g), the whole GPU at 0).
_PLACEMENTS: dict[tuple[int, int], tuple[int, ...]] = {
    (1, 1): (0, 1, 2, 3, 4, 5, 6),
    (1, 2): (0, 2, 4, 6),
    (2, 2): (0, 2, 4),
    (3, 4): (0, 4),
    (4, 4): (0,),
    (7, 8): (0,),
}


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile (``<compute>g.<memory>gb``) of one GPU model."""

    name: str
    compute_slices: int
    memory_slices: int
    #: Most instances of the profile on one GPU (MIG user guide, "Supported MIG Profiles").
    max_count: int

    @property
    def placements(self) -> tuple[int, ...]:
        """The memory slices an instance of this profile may start at."""
        return _PLACEMENTS[(self.compute_slices, self.memory_slices)]

    @property
    def memory_gb(self) -> int:
        """The memory the profile's name gives (``1g.10gb``: 10): nominal, the driver reports a
        little less."""
        return int(self.name.split(".")[1].removesuffix("gb"))


@dataclass(frozen=True)
class MigGpu:
    """A MIG-capable GPU model: its name as ``nvidia-smi`` prints it, its PCI device id (how the
    chart's mig-parted config filters devices) and its profiles."""

    name: str
    device_id: str
    profiles: Mapping[str, MigProfile]


def _gpu(name: str, device_id: str, small: int, mid: int, large: int, whole: int) -> MigGpu:
    """The seven profiles every MIG GPU of the catalog has, by their memory in GB: 1g of one
    memory slice (``small``), 1g and 2g of two (``mid``), 3g and 4g of four (``large``), 7g."""
    rows = (
        MigProfile(f"1g.{small}gb", 1, 1, 7),
        MigProfile(f"1g.{mid}gb", 1, 2, 4),
        MigProfile(f"2g.{mid}gb", 2, 2, 3),
        MigProfile(f"3g.{large}gb", 3, 4, 2),
        MigProfile(f"4g.{large}gb", 4, 4, 1),
        MigProfile(f"7g.{whole}gb", 7, 8, 1),
    )
    return MigGpu(name, device_id, MappingProxyType({p.name: p for p in rows}))


#: The MIG GPUs of the catalog, by name.
MIG_GPUS: Mapping[str, MigGpu] = MappingProxyType(
    {
        g.name: g
        for g in (
            _gpu("A100-SXM4-40GB", "0x20B010DE", 5, 10, 20, 40),
            _gpu("A100-SXM4-80GB", "0x20B210DE", 10, 20, 40, 80),
            _gpu("H100-80GB-HBM3", "0x233010DE", 10, 20, 40, 80),
            _gpu("H200-141GB", "0x233510DE", 18, 35, 71, 141),
        )
    }
)

#: The MIG GPU of each EC2 family that has one (p4d: A100 40 GB, p4de: A100 80 GB, p5: H100,
#: p5e and p5en: H200; AWS "Amazon EC2 P4/P5 instances").
FAMILY_MIG_GPU: Mapping[str, str] = MappingProxyType(
    {
        "p4d": "A100-SXM4-40GB",
        "p4de": "A100-SXM4-80GB",
        "p5": "H100-80GB-HBM3",
        "p5e": "H200-141GB",
        "p5en": "H200-141GB",
    }
)


def _all(profile_of: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """An ``all-<profile>`` layout: per GPU, its profile as many times as fit."""
    return {gpu: {p: MIG_GPUS[gpu].profiles[p].max_count} for gpu, p in profile_of.items()}


_A40, _A80, _H100, _H200 = MIG_GPUS
#: The named layouts of the chart's default mig-parted config, per GPU: the profile counts one GPU
#: gets (``mig-devices``; the chart applies a layout to ``devices: all``). A name missing for a GPU
#: has no entry for it in the chart (or only ``+me`` profiles, left out above).
NAMED_LAYOUTS: Mapping[str, Mapping[str, Mapping[str, int]]] = MappingProxyType(
    {
        "all-1g.5gb": _all({_A40: "1g.5gb"}),
        "all-2g.10gb": _all({_A40: "2g.10gb"}),
        "all-3g.20gb": _all({_A40: "3g.20gb"}),
        "all-4g.20gb": _all({_A40: "4g.20gb"}),
        "all-7g.40gb": _all({_A40: "7g.40gb"}),
        "all-1g.10gb": {**_all({_A40: "1g.10gb"}), **_all({g: "1g.10gb" for g in (_A80, _H100)})},
        "all-1g.20gb": _all({g: "1g.20gb" for g in (_A80, _H100)}),
        "all-2g.20gb": _all({g: "2g.20gb" for g in (_A80, _H100)}),
        "all-3g.40gb": _all({g: "3g.40gb" for g in (_A80, _H100)}),
        "all-4g.40gb": _all({g: "4g.40gb" for g in (_A80, _H100)}),
        "all-7g.80gb": _all({g: "7g.80gb" for g in (_A80, _H100)}),
        "all-1g.18gb": _all({_H200: "1g.18gb"}),
        "all-1g.35gb": _all({_H200: "1g.35gb"}),
        "all-2g.35gb": _all({_H200: "2g.35gb"}),
        "all-3g.71gb": _all({_H200: "3g.71gb"}),
        "all-4g.71gb": _all({_H200: "4g.71gb"}),
        "all-7g.141gb": _all({_H200: "7g.141gb"}),
        "all-balanced": {
            _A40: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
            _A80: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
            _H100: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
            _H200: {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
        },
    }
)


def named_layouts(gpu: str) -> dict[str, Mapping[str, int]]:
    """The named layouts that apply to ``gpu``, by name."""
    return {name: per_gpu[gpu] for name, per_gpu in NAMED_LAYOUTS.items() if gpu in per_gpu}


def placements(profiles: list[MigProfile]) -> tuple[tuple[MigProfile, int], ...] | None:
    """Where GPU instances of ``profiles`` (one entry per instance) can all be placed on one GPU at
    once: each with the memory slice it starts at, no two sharing a memory slice, largest first;
    None if they cannot. A depth-first search over the instances, largest first (at most 7
    instances on 8 slices). The boot stage creates the instances at these starts
    (plan/boot.py), so every layout the settings accept is placed as found here."""
    ordered = sorted(profiles, key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))

    def place(i: int, used: frozenset[int]) -> tuple[tuple[MigProfile, int], ...] | None:
        if i == len(ordered):
            return ()
        p = ordered[i]
        for start in p.placements:
            span = frozenset(range(start, start + p.memory_slices))
            if span & used:
                continue
            rest = place(i + 1, used | span)
            if rest is not None:
                return ((p, start), *rest)
        return None

    return place(0, frozenset())


def placement_fits(profiles: list[MigProfile]) -> bool:
    """Whether GPU instances of ``profiles`` can all be placed on one GPU at once (``placements``)."""
    return placements(profiles) is not None


def layout_problem(gpu: MigGpu, layout: Mapping[str, int]) -> str:
    """Why ``layout`` (profile → count on one GPU) does not fit ``gpu``, or ""."""
    unknown = sorted(set(layout) - set(gpu.profiles))
    if unknown:
        return f"profiles of the {gpu.name} ({', '.join(gpu.profiles)}); {', '.join(unknown)} is not one"
    most = {p: gpu.profiles[p].max_count for p in layout}
    over = [f"{p} x{n} (at most {most[p]})" for p, n in layout.items() if n > most[p]]
    if over:
        return f"at most the profile's count per {gpu.name}: {', '.join(over)}"
    compute = sum(gpu.profiles[p].compute_slices * n for p, n in layout.items())
    memory = sum(gpu.profiles[p].memory_slices * n for p, n in layout.items())
    if compute > COMPUTE_SLICES or memory > MEMORY_SLICES:
        return (
            f"a layout that fits one GPU: {compute} compute slices (at most {COMPUTE_SLICES}) and {memory} memory "
            f"slices (at most {MEMORY_SLICES})"
        )
    instances = [gpu.profiles[p] for p, n in layout.items() for _ in range(n)]
    if not placement_fits(instances):
        return (
            "a layout whose GPU instances can be placed at once (MIG user guide placements: 3g and 4g start at "
            "memory slice 0 or 4 (4g at 0 only), 2g at 0, 2 or 4, 1g at 0-6): this one cannot"
        )
    return ""
