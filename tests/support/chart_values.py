"""The gpu-operator chart's values as a tree of paths: what a path of ours is checked against in the
chart's values.yaml (the chart's options; free-form maps such as Kubernetes objects are one leaf)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: Keys whose values are free-form maps/lists in the chart (Kubernetes objects, ConfigMap data):
#: paths below them are not chart options and need not exist in values.yaml.
FREE_FORM = {"data", "env", "affinity", "tolerations", "labels", "annotations", "nodeSelector", "resources", "args"}
#: The key of the node-feature-discovery subchart's values.
NFD = "node-feature-discovery"


def leaf_paths(values: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every path of ``values`` down to a value that is not a map of options: a scalar, a list, an
    empty map, or a free-form map (``FREE_FORM``)."""
    for key, value in values.items():
        path = (*prefix, key)
        if key in FREE_FORM or not isinstance(value, Mapping) or not value:
            yield path
        else:
            yield from leaf_paths(value, path)
