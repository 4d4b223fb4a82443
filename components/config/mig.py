"""The MIG layout of a GPU node group (``mig``) and the rules that need the group's other keys.

The strategy stays the group's existing ``migStrategy`` key (``none`` | ``single`` | ``mixed``): it is
the chart's ``mig.strategy`` and the device plugin's ``flags.migStrategy``, one value for the whole
cluster (check/groups.py ``gpu_groups_problems``), so it is not repeated inside the block. The
layout is per group. Sources of every rule:

* Profiles, counts, slices and placements: catalog/mig.py (NVIDIA MIG user guide; the chart's
  default mig-parted config).
* ``single`` needs one profile per node: NVIDIA/k8s-device-plugin internal/rm/device_map.go
  ``buildDeviceMapFromConfigResources`` (``requireUniformMIGDevices`` under single: "invalid MIG
  configuration"), v0.17.2, v0.18.1 and v0.20.0.
* Time-slicing on slices: "the only supported resource available for time-slicing are
  nvidia.com/gpu as well as any of the resource types that emerge from configuring a node with
  the mixed MIG strategy" (k8s-device-plugin README, v0.17.2-v0.20.0).
* No MPS on slices: "Sharing with MPS is currently not supported on devices with MIG enabled"
  (k8s-device-plugin README, v0.17.2-v0.20.0).
* At least one slice: an empty ``migDevices`` is mig-parted's ``all-enabled`` (``mig-enabled: true``,
  ``mig-devices: {}``; the gpu-operator's default mig-parted config, assets/state-mig-manager/
  0400_configmap.yaml at v25.3.1, v25.10.1 and v26.7.0): MIG mode on and no GPU instance, so the
  device plugin finds no device to advertise and no pod can use the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from .. import catalog
from ..catalog.mig import FAMILY_MIG_GPU, MIG_GPUS, MigGpu, layout_problem, named_layouts
from .errors import KeyedProblem, KeyedProblems
from .fields import _Model, doc

MIG_STRATEGIES = ("none", "single", "mixed")
SINGLE_SOURCE = "NVIDIA/k8s-device-plugin internal/rm/device_map.go requireUniformMIGDevices (v0.17.2-v0.20.0)"
MPS_ON_MIG_SOURCE = (
    "'Sharing with MPS is currently not supported on devices with MIG enabled', NVIDIA/k8s-device-plugin README "
    "(v0.17.2-v0.20.0)"
)

#: Why an empty ``migDevices`` is refused (the module docstring's source).
EMPTY_LAYOUT = (
    'at least one MIG profile and count, such as {"1g.10gb": 7}: an empty migDevices is mig-parted\'s all-enabled '
    "(MIG mode on, no slice: the gpu-operator's default mig-parted config), so the node would advertise no "
    "GPU at all"
)

PositiveCount = Annotated[int, Field(ge=1)]
Replicas = Annotated[int, Field(ge=2)]


class Mig(_Model):
    """The MIG layout of every GPU of a group's nodes (mig-parted ``mig-devices``), applied by the
    node's boot stage (plan/boot.py), optionally with time-slicing on the slices."""

    model_config = ConfigDict(title="Mig")

    layout: str | None = Field(
        None,
        **doc(
            "A named layout of the gpu-operator's default mig-parted config (`all-1g.10gb`, `all-3g.40gb`, "
            '`all-balanced`, ...: the ones of the group\'s GPU, see "MIG"). Either `layout` or `migDevices`.',
            type="layout name",
            default="none",
        ),
    )
    mig_devices: dict[str, PositiveCount] | None = Field(
        None,
        **doc(
            'A custom layout, MIG profile to count on each GPU (mig-parted `mig-devices`: `{"1g.10gb": 5, '
            '"2g.20gb": 1}`), which must fit the GPU\'s 7 compute and 8 memory slices and their placements. Either '
            "`layout` or `migDevices`; with `migStrategy: single`, one profile.",
            type="map of profile to int ≥ 1",
            default="none",
        ),
    )
    replicas: dict[str, Replicas] = Field(
        {},
        **doc(
            'Time-slicing on slices: pods sharing each slice of a profile (`{"1g.10gb": 2}`), at least 2. Profiles '
            "of the layout only; the others stay whole.",
            type="map of profile to int ≥ 2",
            default="`{}` (no sharing)",
        ),
    )

    @model_validator(mode="after")
    def _one_layout(self) -> Mig:
        if (self.layout is None) == (self.mig_devices is None):
            raise KeyedProblems(
                [
                    (
                        ("layout",),
                        self.layout,
                        "either layout (a named layout) or migDevices (a custom one), exactly one",
                    )
                ]
            )
        return self

    @property
    def requested(self) -> str | dict[str, int]:
        """The layout as written: its name, or the custom profile counts."""
        return self.layout if self.layout is not None else dict(self.mig_devices or {})


def mig_gpu(instance_type: str) -> MigGpu | None:
    """The MIG GPU of an instance type, or None for a family without MIG."""
    family = catalog.GPU_INSTANCE_TYPES[instance_type].family.name
    name = FAMILY_MIG_GPU.get(family)
    return MIG_GPUS[name] if name else None


def gpu_layout(mig: Mig, instance_type: str) -> Mapping[str, int]:
    """Profile → count on each GPU of a validated MIG group (a named layout resolved)."""
    layout = mig.requested
    if isinstance(layout, str):
        gpu = mig_gpu(instance_type)
        assert gpu is not None
        return named_layouts(gpu.name)[layout]
    return layout


def mig_problems(
    mig: Mig | None,
    mig_strategy: str,
    instance_type: str,
    mps: dict[str, Any] | None,
    time_slicing: dict[str, Any] | None,
    allocation_policy: str | None,
) -> list[KeyedProblem]:
    """The rules of a group's ``mig`` block and ``migStrategy`` (each with its source), from the
    group's keys: its first instance type, and ``mps`` and ``timeSlicing`` as written (None where
    absent)."""
    if mig is None:
        return []
    problems: list[KeyedProblem] = []
    dump = mig.model_dump(by_alias=True)
    gpu = mig_gpu(instance_type)
    if gpu is None:
        instance = catalog.GPU_INSTANCE_TYPES[instance_type]
        families = ", ".join(FAMILY_MIG_GPU)
        return [
            (
                ("mig",),
                dump,
                f"no key on {instance.family.name}: the {instance.gpu_model} has no MIG (NVIDIA MIG user guide, "
                f"'Supported GPUs': A100, H100, H200; families {families})",
            )
        ]
    if mig_strategy == "none":
        problems.append(
            (
                ("migStrategy",),
                mig_strategy,
                "single or mixed with a mig layout: with none the device plugin advertises the GPUs whole and "
                "ignores the slices (the chart's mig.strategy, one value for every group of the cluster)",
            )
        )
    layout: Mapping[str, int] | None = None
    key = ("mig", "layout") if mig.layout is not None else ("mig", "migDevices")
    if mig.layout is not None:
        named = named_layouts(gpu.name)
        if mig.layout in named:
            layout = named[mig.layout]
        else:
            problems.append(
                (
                    key,
                    mig.layout,
                    f"a layout of the {gpu.name} in the gpu-operator's mig-parted config ({', '.join(named)}) or a "
                    "map of profile to count",
                )
            )
    else:
        devices = dict(mig.mig_devices or {})
        problem = layout_problem(gpu, devices) if devices else EMPTY_LAYOUT
        if problem:
            problems.append((key, devices, problem))
        else:
            layout = devices
    if layout is not None and mig_strategy == "single" and len(layout) > 1:
        problems.append(
            (
                key,
                mig.requested,
                f"one profile with migStrategy single (this layout has {', '.join(layout)}): under single the device "
                f"plugin refuses a node whose MIG devices differ ({SINGLE_SOURCE}); use mixed",
            )
        )
    if layout is not None:
        problems += [
            (("mig", "replicas", profile), n, f"a profile of the layout ({', '.join(layout)})")
            for profile, n in mig.replicas.items()
            if profile not in layout
        ]
    if mps is not None:
        problems.append((("mps",), mps, f"no key with mig: {MPS_ON_MIG_SOURCE}"))
    if time_slicing is not None:
        problems.append(
            (
                ("timeSlicing",),
                time_slicing,
                "no key with mig: time-slice the slices with mig.replicas",
            )
        )
    if allocation_policy is not None and not mig.replicas:
        problems.append(
            (
                ("sharedDevicesAllocationPolicy",),
                allocation_policy,
                "no key: with mig and no mig.replicas no slice is shared, so there is no shared slot to place",
            )
        )
    return problems
