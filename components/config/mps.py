"""The MPS sharing profile of a GPU node group and its constants. The rules that need more than one
key of a group, or the chart version, live beside the group (config/groups.py ``sharing_problems``,
``allocation_policy_problems``).

Every rule cites its source: NVIDIA/k8s-device-plugin at v0.17.2, v0.18.1 and v0.20.0, the plugins
behind gpu-operator v25.3.1, v25.10.1 and v26.7.0 (the code behind each rule is the same at the
three tags; tests/test_sharing_modes.py names the lines).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from .errors import KeyedProblem, KeyedProblems
from .fields import Count, LabelValue, _Model, doc

#: Where each MPS rule comes from (NVIDIA/k8s-device-plugin at v0.17.2, v0.18.1 and v0.20.0: the
#: plugins behind gpu-operator v25.3.1, v25.10.1, v26.7.0; the same code at the three tags).
MPS_REPLICAS_SOURCE = "NVIDIA/k8s-device-plugin api/config/v1/replicas.go (v0.17.2, v0.18.1, v0.20.0)"
MPS_MAX_CLIENTS_SOURCE = "NVIDIA/k8s-device-plugin cmd/mps-control-daemon/mps/device.go maxClients (v0.17.2-v0.20.0)"
MPS_MIG_SOURCE = "NVIDIA/k8s-device-plugin cmd/nvidia-device-plugin/main.go validateFlags (v0.17.2-v0.20.0)"
#: The MPS control daemon refuses more clients per GPU than this on compute capability >= 7.5
#: (16 below). Every GPU of the catalog (T4 7.5 and newer) is at least 7.5.
MPS_MAX_REPLICAS = 48
#: The least GPU memory an MPS client may get (GPU memory / replicas). A CUDA context and the
#: libraries a real workload loads (cuBLAS, cuDNN, a framework's allocator) take several hundred
#: MiB of device memory before the first tensor; below 1 GiB a client's share is mostly overhead
#: and the MPS limit turns ordinary start-up into CUDA out-of-memory. A T4 (16 GiB) allows 16.
MPS_MIN_MEMORY_PER_CLIENT_MIB = 1024


class Mps(_Model):
    """An MPS sharing profile (k8s-device-plugin ``sharing.mps``): the plugin's MPS control daemon
    gives each of ``replicas`` clients of a GPU 1/replicas of its memory and compute, enforced.

    The profile file always says ``failRequestsGreaterThanOne: true`` (the plugin forces it under
    MPS at v0.17.2 and v0.18.1, and defaults it at v0.20.0: api/config/v1/config.go): a pod
    requests exactly one slot. No ``renameByDefault``: MPS groups advertise ``nvidia.com/gpu``.
    """

    model_config = ConfigDict(title="Mps")

    replicas: Count = Field(
        **doc(
            "MPS clients per physical GPU, each limited to GPU memory / replicas and 100/replicas % of its SMs "
            f"by the MPS control daemon. 2 to {MPS_MAX_REPLICAS}, and at least "
            f"{MPS_MIN_MEMORY_PER_CLIENT_MIB // 1024} GiB per client of the memory the driver reports (T4: 15,360 "
            "MiB, so at most 15). A pod requests exactly one.",
            type=f"int 2–{MPS_MAX_REPLICAS}",
            default="required",
        )
    )
    profile: LabelValue | None = Field(
        None,
        **doc(
            "Sharing profile name, as `timeSlicing.profile` (keep the same name when switching a group between "
            "time-slicing and MPS, or its nodes are replaced).",
            type="label value",
            default="the group's `name`",
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _no_time_slicing_options(cls, data: Any) -> Any:
        # Clearer than "extra inputs are not permitted" for the two keys timeSlicing has.
        if not isinstance(data, dict):
            return data
        problems: list[KeyedProblem] = []
        if "renameByDefault" in data or "rename_by_default" in data:
            problems.append(
                (
                    ("renameByDefault",),
                    data.get("renameByDefault", data.get("rename_by_default")),
                    "no key: MPS groups advertise nvidia.com/gpu, never renamed, so a switch between time-slicing "
                    "and MPS keeps the resource pods request (the plugin itself accepts sharing.mps.renameByDefault, "
                    "api/config/v1/replicas.go, and ignores a per-resource rename under mps, api/config/v1/config.go "
                    "DisableResourceNamingInConfig; v0.17.2-v0.20.0)",
                )
            )
        if "failRequestsGreaterThanOne" in data or "fail_requests_greater_than_one" in data:
            problems.append(
                (
                    ("failRequestsGreaterThanOne",),
                    data.get("failRequestsGreaterThanOne", data.get("fail_requests_greater_than_one")),
                    "no key: under MPS a pod requests exactly one slot, always (the plugin forces "
                    "failRequestsGreaterThanOne: true at v0.17.2 and v0.18.1 and defaults it at v0.20.0, "
                    "api/config/v1/config.go; the library always writes true)",
                )
            )
        if problems:
            raise KeyedProblems(problems)
        return data

    @field_validator("replicas")
    @classmethod
    def _replicas(cls, value: int) -> int:
        if value < 2:
            raise ValueError(
                "at least 2 (the device plugin refuses fewer: 'number of replicas must be >= 2', "
                f"{MPS_REPLICAS_SOURCE}); for whole, unshared GPUs write timeSlicing: {{replicas: 1}}"
            )
        if value > MPS_MAX_REPLICAS:
            raise ValueError(
                f"at most {MPS_MAX_REPLICAS} (the MPS control daemon refuses more clients per GPU: "
                f"'maximum allowed replicas exceeded', {MPS_MAX_CLIENTS_SOURCE})"
            )
        return value

    @property
    def shared(self) -> bool:
        return True
