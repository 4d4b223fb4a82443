"""What the new render's verification proves, in the change-impact summary (issue 41): the groups no
verification Job targets (``verification.capacityBlocks: skip``: a Capacity Block's nodes launch only
inside its window) and those whose NCCL check ``pulumi up`` does not wait for
(``verification.ncclAdvisory``), read from the stack outputs' ``verification``
(verification/component.py ``GpuVerification.stack_outputs``). Said on every summary where they hold, not only
when they change: a reviewer approving a change to such a group should know ``pulumi up`` will not
prove it on a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def notes(outputs: Mapping[str, Any] | None) -> list[str]:
    """A note per skipped group and one for the advisory NCCL checks of the render's ``outputs``."""
    verification = (outputs or {}).get("verification") or {}
    if not isinstance(verification, Mapping):
        return []
    out = [
        f"GPU node group {group}: pulumi up runs no verification Job on it ({reason})"
        for group, reason in (verification.get("skipped") or {}).items()
    ]
    advisory = verification.get("ncclAdvisory") or []
    if advisory:
        out.append(
            f"NCCL check of {', '.join(advisory)}: declared without Pulumi's await (verification.ncclAdvisory): "
            "pulumi up does not wait for its verdict; read the Job's status and log"
        )
    return out
