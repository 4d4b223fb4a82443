"""Where pods land: taints, tolerations and the NFD worker's node affinity. Pure functions, no Pulumi."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..catalog.labels import GPU_COUNT_LABELS
from ..config.groups import Taint

# Taints and tolerations
# ---------------------------------------------------------------------------------------------


def toleration_for(taint: Taint) -> dict[str, str]:
    """The toleration that tolerates exactly ``taint`` (key, value and effect)."""
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def tolerates(toleration: Mapping[str, str], taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint (k8s.io/api/core/v1 toleration.go)."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    if toleration.get("key") and toleration["key"] != taint.key:
        return False
    operator = toleration.get("operator", "Equal")
    if operator == "Exists":
        return True
    return operator == "Equal" and toleration.get("value", "") == taint.value


def extend_tolerations(base: Iterable[Mapping[str, str]], taints: Iterable[Taint]) -> list[dict[str, str]]:
    """``base`` (kept as is, in order) plus a toleration for each taint nothing in it tolerates.

    Helm replaces lists, so callers pass the chart's own defaults as ``base``.
    """
    out = [dict(t) for t in base]
    for taint in taints:
        if not any(tolerates(t, taint) for t in out):
            out.append(toleration_for(taint))
    return out


def tolerations_for(taints: Iterable[Taint]) -> list[dict[str, str]]:
    """One toleration per taint (none twice), in first-seen order."""
    return extend_tolerations([], taints)


# ---------------------------------------------------------------------------------------------
# Node affinity
# ---------------------------------------------------------------------------------------------


def gpu_node_affinity(label_keys: Sequence[str] = GPU_COUNT_LABELS) -> dict:
    """A required node affinity matching nodes where any GPU-count label is > 0.

    nodeSelectorTerms are ORed, matchExpressions inside one term are ANDed: so one term per
    label key, each with a single ``Gt 0`` expression.
    """
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "Gt", "values": ["0"]}]} for key in label_keys
                ]
            }
        }
    }
