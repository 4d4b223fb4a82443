"""How devices reach containers, in the change-impact summary: whether GPU pods keep starting on the
nodes a deployment leaves as they are until they roll, and whether pods are kept from GPUs they did
not request.

From the renders alone: the device plugin's strategy is the gpu-operator release's
(``devicePlugin.env``, ``cdi.enabled``, chart version: catalog/gpu_operator.py
``device_list_strategy``), each GPU node's toolkit settings are its user data's boot stage (the
``nvidia-ctk config --set`` pairs, or the toolkit's defaults where there is none: a 0.2.0 node), and
what a GPU pod gets from a pair of them is catalog/device_lists.py ``gpu_pod_outcome`` (checked
against the toolkit's compiled decision in tests/test_device_lists.py). The library updates the
operator's release before what launches GPU nodes (GpuNodeGroupArgs.wait_for), so during the roll
the new strategy meets the old nodes and the new ones. The operator writes the release's strategy
into the plugin's DaemonSet shortly after the release, on its own: a new node that registers in
between meets the old strategy until its plugin pod is replaced (docs/node-boot-stage.md); that
window is not judged here. CDI strategies are not judged (not encoded).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...catalog import device_lists, gpu_operator
from ...catalog.charts import GPU_OPERATOR
from ...catalog.labels import GPU_COUNT_LABEL
from ...config.isolation import NOT_ENFORCED
from .rules import HELM_RELEASE_TYPE, LAUNCH_TEMPLATE_TYPE, NODECLASS_TYPE, NODEPOOL_TYPE, dig


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _user_data(item: Mapping[str, Any]) -> str:
    path = ("inputs", "userData") if item["type"] == LAUNCH_TEMPLATE_TYPE else ("inputs", "spec", "userData")
    return "\n".join(_strings(dig(item, *path)))


def _strategy(items: Sequence[Mapping[str, Any]]) -> str | None:
    """The device plugin's strategy of the render's gpu-operator release; None without one."""
    for item in items:
        inputs = item.get("inputs") or {}
        if item["type"] == HELM_RELEASE_TYPE and inputs.get("chart") == GPU_OPERATOR.chart:
            env = dig(inputs, "values", "devicePlugin", "env")
            cdi = bool(dig(inputs, "values", "cdi", "enabled"))
            return gpu_operator.device_list_strategy(env, cdi, str(inputs.get("version")))
    return None


def _gpu_node_sources(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The launch templates of GPU nodes (their NodeConfig labels the GPU count) and the
    EC2NodeClasses a GPU NodePool uses (its nodes carry the label)."""
    gpu_classes = {
        dig(p, "inputs", "spec", "template", "spec", "nodeClassRef", "name")
        for p in items
        if p["type"] == NODEPOOL_TYPE
        and GPU_COUNT_LABEL in (dig(p, "inputs", "spec", "template", "metadata", "labels") or {})
    }
    return [
        i
        for i in items
        if (i["type"] == LAUNCH_TEMPLATE_TYPE and GPU_COUNT_LABEL in _user_data(i))
        or (i["type"] == NODECLASS_TYPE and dig(i, "inputs", "metadata", "name") in gpu_classes)
    ]


def _settings(item: Mapping[str, Any]) -> dict[str, bool]:
    return device_lists.toolkit_settings(device_lists.toolkit_sets_in(_user_data(item)))


def _words(settings: Mapping[str, bool]) -> str:
    return ", ".join(f"{key}={'true' if value else 'false'}" for key, value in settings.items())


def _outcome(strategy: str | None, settings: Mapping[str, bool]) -> str | None:
    if strategy is None:
        return None
    try:
        return device_lists.gpu_pod_outcome(strategy, settings)
    except ValueError:  # a CDI strategy: not judged
        return None


def notes(
    new_items: Sequence[Mapping[str, Any]],
    old_items: Mapping[str, Mapping[str, Any]],
    ref: Callable[[Mapping[str, Any]], str],
) -> list[str]:
    """A note per GPU node source whose nodes stop starting GPU pods when the device plugin changes
    under them (or whose new nodes would not start them), and one per source whose nodes do not
    isolate GPUs (``old_items``: the old item of each new one, by ``ref`` of the new one)."""
    old_all = list(old_items.values())
    was, now = _strategy(old_all), _strategy(new_items)
    out: list[str] = []
    for item in _gpu_node_sources(new_items):
        label = f"{item['type']} {item['name']}"
        settings = _settings(item)
        before = old_items.get(ref(item))
        if before is not None:
            old_settings = _settings(before)
            broken = _outcome(now, old_settings)
            if (
                broken not in (None, device_lists.ITS_DEVICES)
                and _outcome(was, old_settings) == device_lists.ITS_DEVICES
            ):
                out.append(
                    f"{label}: GPU pods placed on its nodes not yet rolled get '{broken}' once the device plugin "
                    f"hands devices out as `{now}` (was `{was}`): their container toolkit ({_words(old_settings)}) "
                    "does not honour it, for the whole roll. From a stack whose nodes have no boot stage (0.2.0): "
                    "deploy with `gpuOperator.isolation: migrating` first, let every GPU node roll, then remove it "
                    "(UPGRADING.md)"
                )
        fresh = _outcome(now, settings)
        if fresh not in (None, device_lists.ITS_DEVICES):
            out.append(
                f"{label}: GPU pods on its new nodes get '{fresh}': their container toolkit ({_words(settings)}) "
                f"does not honour the device plugin's `{now}`"
            )
        if now is not None and not device_lists.isolated(settings):
            out.append(f"{label}: GPU isolation {NOT_ENFORCED}; remove it once every GPU node has rolled")
    return out
