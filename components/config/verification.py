"""What the verification Jobs of a GPU node group can prove on ``pulumi up`` (``verification.*``),
the rules of the NCCL check (issues 32, 41), and ``verifyTimeSlicing``, the old name of
``verification.enabled`` (issue 43, item 7: ``OldEnabledKey``).

Each Job brings its own nodes: the warm-up one node of the group, the NCCL check two. ``pulumi up``
waits for each Job (pulumi-kubernetes awaits a Job until ``Complete``, verification/jobs.py), so a
Job whose nodes cannot launch by design holds the update until its deadline and then fails it:

* A Capacity Block launches nothing outside its window: "if the create request is made before the
  capacity reservation is active, then the ASG won't be able to launch Amazon EC2 instances until it
  becomes active" (EKS User Guide, capacity-blocks-mng at awsdocs/amazon-eks-user-guide 4d52b4d),
  and at its end EC2 terminates the instances. With ``verification.capacityBlocks: skip`` (the
  default) no Job targets a ``CAPACITY_BLOCK`` group: the stack outputs and the change-impact
  summary say so (``skipped_reason``). ``verify`` runs them as for any group: for an update made
  inside the window, which preflight checks (a block that is not ``active`` then FAILs:
  preflight/reservations.py).
* An On-Demand Capacity Reservation targeted by id never falls back to On-Demand (EC2 User Guide,
  capacity-reservations-launch), so a managed group's Jobs wait for free instances of the
  reservation: the warm-up for one, the NCCL check for two (``instances_needed``), which preflight
  compares with the reservation's ``AvailableInstanceCount``. ``verification.ncclAdvisory: true``
  declares the NCCL Job without Pulumi's await (``pulumi.com/skipAwait``, pulumi-kubernetes PR #417:
  "Skip await logic for any resource with the skipAwait annotation set to true"): it runs when its
  nodes come, its verdict in its log and status, and ``pulumi up`` goes on.
"""

from __future__ import annotations

import warnings
from typing import Any

from pydantic import Field, TypeAdapter, ValidationError, ValidationInfo, model_validator

from .errors import KeyedProblem
from .fields import KEYS_ONLY, _Model, doc
from .multinode import CAPACITY_BLOCK

SKIP = "skip"

#: ``verification.enabled``'s name up to 0.3.0, when the Jobs checked time-slicing alone; read until
#: 1.0 with a warning naming the new key (check/warnings.py), and its Python name (keyword, attribute)
#: with a DeprecationWarning.
OLD_ENABLED_KEY = "verifyTimeSlicing"
OLD_ENABLED_NAME = "verify_time_slicing"
NEW_ENABLED_KEY = "verification.enabled"
#: The warning's line from the validator: pydantic's ``BaseModel.__init__``, then its caller.
_CALLER = 3


class OldEnabledKey(_Model):
    """The settings' ``verifyTimeSlicing`` (``GpuCapacitySettings`` extends this): its value is
    ``verification.enabled``'s where that is not given; given both, they must agree
    (``old_enabled_key_problems``). The code reads ``verification.enabled`` only."""

    old_verify_time_slicing: bool | None = Field(
        None,
        alias=OLD_ENABLED_KEY,
        **doc(
            f"The old name of `{NEW_ENABLED_KEY}` (up to 0.3.0), read until 1.0 with a warning; not with a different "
            f"`{NEW_ENABLED_KEY}`.",
            type="bool",
            default="none",
            listed_after="verification",
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _old_enabled_key(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        # The Python keyword (``Settings(verify_time_slicing=True)``); a mapping of config keys
        # (``load_settings``, KEYS_ONLY) has the camelCase key only. (Not in an ``__init__``: pydantic
        # then validates through it, without ``by_name=False``.)
        if OLD_ENABLED_NAME in data and not (info.context or {}).get(KEYS_ONLY):
            warnings.warn(_old_python_name(f"{OLD_ENABLED_NAME}="), DeprecationWarning, stacklevel=_CALLER)
            data = {OLD_ENABLED_KEY: data[OLD_ENABLED_NAME], **{k: v for k, v in data.items() if k != OLD_ENABLED_NAME}}
        if data.get(OLD_ENABLED_KEY) is None:
            return data
        try:
            enabled = TypeAdapter(bool).validate_python(data[OLD_ENABLED_KEY])
        except ValidationError:
            return data  # the field's own error, once
        given = data.get("verification", {})
        if isinstance(given, _Model):  # a VerificationSettings built in Python
            given = given.model_dump(by_alias=True, exclude_unset=True)
        if not isinstance(given, dict) or "enabled" in given:
            return data
        return {**data, "verification": {**given, "enabled": enabled}}

    @property
    def verify_time_slicing(self) -> bool:
        """``verification.enabled`` under its old name, until 1.0."""
        warnings.warn(_old_python_name(OLD_ENABLED_NAME), DeprecationWarning, stacklevel=2)
        return self.verification.enabled  # type: ignore[attr-defined]

    def old_enabled_key_problems(self) -> list[KeyedProblem]:
        old, new = self.old_verify_time_slicing, self.verification.enabled  # type: ignore[attr-defined]
        if old is None or old == new:
            return []
        return [((OLD_ENABLED_KEY,), old, f"no key beside {NEW_ENABLED_KEY} ({str(new).lower()}): it is its old name")]


def _old_python_name(name: str) -> str:
    return (
        f"{name} is the old name of verification.enabled (VerificationSettings(enabled=...)); it goes in 1.0 "
        "(UPGRADING.md)"
    )


def is_nccl_group(group: Any) -> bool:
    """The NCCL check's groups: EFA with every GPU whole (NCCL needs its node's GPUs unshared; a MIG
    slice or a shared slot is no NCCL device of its own)."""
    return bool(group.efa and group.mig is None and group.mps is None and not group.time_slicing.shared)


def skipped_reason(group: Any, verification: Any) -> str | None:
    """Why no verification Job targets ``group`` (a GpuNodeGroupSettings) under ``verification`` (its
    VerificationSettings), or None when its Jobs run."""
    if group.capacity_type == CAPACITY_BLOCK and verification.capacity_blocks == SKIP:
        return (
            "capacityType CAPACITY_BLOCK: its nodes launch only inside the block's window, so no verification Job "
            "targets it (verification.capacityBlocks: skip); set verify for an update made inside the window"
        )
    return None


def instances_needed(group: Any, settings: Any) -> int:
    """Instances of ``group`` the verification Jobs that ``pulumi up`` waits for launch at once
    (``settings``: a GpuCapacitySettings): 2 for the NCCL check, 1 for the warm-up, 0 without them."""
    v = settings.verification
    if not v.enabled or skipped_reason(group, v) is not None:
        return 0
    if v.nccl_all_reduce and not v.nccl_advisory and is_nccl_group(group):
        return 2
    return 1


def nccl_check_problems(settings: Any) -> list[KeyedProblem]:
    """``verification.ncclAllReduce``: its image, the verification on, an exclusive EFA group to run
    on, each such group able to hold two nodes (``settings``: a GpuCapacitySettings)."""
    v = settings.verification
    if not v.nccl_all_reduce:
        if v.nccl_advisory:
            return [(("verification", "ncclAdvisory"), True, "false without verification.ncclAllReduce (no check)")]
        return []
    problems: list[KeyedProblem] = []
    if v.nccl_image is None:
        problems.append(
            (("verification", "ncclImage"), None, "an image with PyTorch, NCCL, libfabric and aws-ofi-nccl")
        )
    if not v.enabled:
        problems.append(
            (("verification", "enabled"), False, "true with verification.ncclAllReduce (its Jobs run there)")
        )
    groups = [(i, g) for i, g in enumerate(settings.gpu_node_groups) if is_nccl_group(g)]
    if not groups:
        problems.append(
            (
                ("verification", "ncclAllReduce"),
                True,
                "false, or a group with efa and exclusive GPUs (timeSlicing replicas 1): NCCL needs every GPU of "
                "its node whole (a shared slot or a MIG slice is no NCCL device of its own)",
            )
        )
    for i, g in groups:
        if g.scaling.max_size < 2:
            problems.append(
                (
                    ("gpuNodeGroups", i, "scaling", "maxSize"),
                    g.scaling.max_size,
                    "at least 2 with verification.ncclAllReduce: its all-reduce runs across two nodes",
                )
            )
    return problems
