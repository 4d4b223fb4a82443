"""The Kubernetes scheduler's view of a required node affinity, for tests.

The library renders node affinities (``components.plan.placement.gpu_node_affinity``, the
autoscaler's values); tests use ``node_matches_affinity`` to check which nodes those affinities
admit. Nothing here imports Pulumi.
"""

from __future__ import annotations

from collections.abc import Mapping


def node_matches_affinity(labels: Mapping[str, str], affinity: Mapping) -> bool:
    """Evaluate a required node affinity against a node's labels (In/NotIn/Exists/
    DoesNotExist/Gt/Lt), as the scheduler does."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return any(all(_matches(labels, e) for e in term.get("matchExpressions", [])) for term in terms)


def _matches(labels: Mapping[str, str], expr: Mapping) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    present = key in labels
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op in ("Gt", "Lt"):
        if not present:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    raise ValueError(f"unknown node selector operator {op!r}")
