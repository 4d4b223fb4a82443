"""What the verification Jobs of a GPU node group can prove on ``pulumi up`` (``verifyTimeSlicing``,
``verification.*``), and the rules of the NCCL check (issues 32, 41).

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

from typing import Any

from .errors import KeyedProblem
from .multinode import CAPACITY_BLOCK

SKIP = "skip"
VERIFY = "verify"


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
    if not settings.verify_time_slicing or skipped_reason(group, v) is not None:
        return 0
    if v.nccl_all_reduce and not v.nccl_advisory and is_nccl_group(group):
        return 2
    return 1


def verification_outputs(settings: Any) -> dict[str, Any]:
    """The stack outputs' ``verification`` (nothing when every group's Jobs run and hold the update):
    ``skipped`` (group: why no Job targets it) and ``ncclAdvisory`` (the groups whose NCCL Job
    ``pulumi up`` does not wait for)."""
    if not settings.verify_time_slicing:
        return {}
    v = settings.verification
    skipped = {g.name: reason for g in settings.gpu_node_groups if (reason := skipped_reason(g, v)) is not None}
    advisory = [
        g.name
        for g in settings.gpu_node_groups
        if v.nccl_all_reduce and v.nccl_advisory and is_nccl_group(g) and g.name not in skipped
    ]
    out: dict[str, Any] = {}
    if skipped:
        out["skipped"] = skipped
    if advisory:
        out["ncclAdvisory"] = advisory
    return {"verification": out} if out else {}


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
    if not settings.verify_time_slicing:
        problems.append((("verifyTimeSlicing",), False, "true with verification.ncclAllReduce (its Jobs run there)"))
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
