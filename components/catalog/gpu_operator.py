"""The NVIDIA gpu-operator Helm chart versions this library has been validated against.

For each version we keep the chart's *own* default entries of the two toleration lists we
extend. Helm replaces lists instead of merging them, so to add a toleration without losing the
chart's we must send the chart's entries too. tests/test_helm_values.py compares every row
here with the chart's values.yaml in ../shared/reference/gpu-operator/<version>/, so a wrong
row cannot go unnoticed. Each row also says which dcgm-exporter the chart ships and what it can do
(tests/test_observability.py checks the image and env against values.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The chart is pinned in ``charts.GPU_OPERATOR``: always installed from NVIDIA's repository with a
#: pinned version, never from a git checkout.

Toleration = dict[str, str]
EnvVar = dict[str, str]

_GPU_EXISTS: Toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
_MASTER: Toleration = {
    "key": "node-role.kubernetes.io/master",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
_CONTROL_PLANE: Toleration = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}


@dataclass(frozen=True)
class ChartVersion:
    version: str
    nfd_chart_version: str
    #: ``daemonsets.tolerations`` in the chart's values.yaml.
    daemonset_tolerations: tuple[Toleration, ...]
    #: ``node-feature-discovery.worker.tolerations`` in the chart's values.yaml.
    nfd_worker_tolerations: tuple[Toleration, ...]
    #: ``devicePlugin.version`` in the chart's values.yaml: the k8s-device-plugin behind it.
    device_plugin_version: str
    #: The plugin reads ``flags.plugin.sharedDevicesAllocationPolicy`` from its config file
    #: (NVIDIA/k8s-device-plugin api/config/v1/flags.go PluginCommandLineFlags: from v0.20.0;
    #: v0.17.2 and v0.18.1 have no such field and would silently ignore the key).
    shared_devices_allocation_policy: bool
    #: ``devicePlugin.env`` in the chart's values.yaml (Helm replaces lists: sent back with ours).
    device_plugin_env: tuple[EnvVar, ...]
    #: ``dcgmExporter.version`` in the chart's values.yaml: the dcgm-exporter image it ships.
    dcgm_exporter_version: str
    #: ``dcgmExporter.env`` in the chart's values.yaml (Helm replaces lists: sent back with ours).
    dcgm_exporter_env: tuple[EnvVar, ...]
    #: The shipped exporter attributes ``DCGM_FI_DEV_GPU_UTIL`` and ``DCGM_FI_DEV_FB_USED`` to the
    #: pods sharing a GPU, per process (dcgm-exporter PR #594, commit fb5e3dc, first tagged
    #: 4.5.3-4.8.2: ``internal/pkg/transformation/process_metrics.go``, ``pidmapper.go``). It needs
    #: ``KUBERNETES_VIRTUAL_GPUS=true``, ``hostPID`` (it reads ``/proc/<pid>/cgroup`` of the
    #: workloads' processes) and the pods' UIDs from the API (``enablePodUID``: the operator grants
    #: the exporter pods get/list/watch only then, ``controllers/object_controls.go`` rbacGates).
    #: Older exporters (4.4.2-4.7.0) know ``KUBERNETES_VIRTUAL_GPUS`` but copy the GPU's value onto
    #: every pod: per GPU only, so it stays off there.
    per_pod_gpu_metrics: bool


SUPPORTED_CHART_VERSIONS: dict[str, ChartVersion] = {
    c.version: c
    for c in (
        ChartVersion(
            version="v25.3.1",
            nfd_chart_version="0.17.3",
            daemonset_tolerations=(_GPU_EXISTS,),
            nfd_worker_tolerations=(_MASTER, _CONTROL_PLANE, _GPU_EXISTS),
            device_plugin_version="v0.17.2",
            shared_devices_allocation_policy=False,
            device_plugin_env=(
                {"name": "PASS_DEVICE_SPECS", "value": "true"},
                {"name": "FAIL_ON_INIT_ERROR", "value": "true"},
                {"name": "DEVICE_LIST_STRATEGY", "value": "envvar"},
                {"name": "DEVICE_ID_STRATEGY", "value": "uuid"},
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"},
            ),
            dcgm_exporter_version="4.2.3-4.1.3-ubuntu22.04",
            dcgm_exporter_env=(
                {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
                {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
            ),
            per_pod_gpu_metrics=False,
        ),
        ChartVersion(
            version="v25.10.1",
            nfd_chart_version="0.18.2",
            daemonset_tolerations=(_GPU_EXISTS,),
            nfd_worker_tolerations=(_MASTER, _CONTROL_PLANE, _GPU_EXISTS),
            device_plugin_version="v0.18.1",
            shared_devices_allocation_policy=False,
            device_plugin_env=(),
            dcgm_exporter_version="4.4.2-4.7.0-distroless",
            dcgm_exporter_env=(),
            per_pod_gpu_metrics=False,
        ),
        ChartVersion(
            version="v26.7.0",
            nfd_chart_version="0.19.0",
            daemonset_tolerations=(_GPU_EXISTS,),
            nfd_worker_tolerations=(_CONTROL_PLANE, _GPU_EXISTS),
            device_plugin_version="v0.20.0",
            shared_devices_allocation_policy=True,
            device_plugin_env=(),
            # 4.6.0-4.8.3 is newer than 4.5.3-4.8.2, the first tag with PR #594 (its tag is not in
            # the stored mirror; process_metrics.go and pidmapper.go are identical at 4.5.3-4.8.2
            # and at main d5e5f51 of 2026-05-12).
            dcgm_exporter_version="4.6.0-4.8.3-distroless",
            dcgm_exporter_env=(),
            per_pod_gpu_metrics=True,
        ),
    )
}

#: Default chart version: the newest validated one.
DEFAULT_CHART_VERSION = "v26.7.0"

#: Chart defaults assumed for a version outside the table (explicit opt-in only): those of the
#: newest validated version, the closest guess to a newer chart.
FALLBACK_CHART_VERSION = DEFAULT_CHART_VERSION


def chart_defaults(version: str) -> ChartVersion:
    """The chart facts for ``version``; for an unvalidated version, the newest validated ones."""
    return SUPPORTED_CHART_VERSIONS.get(version, SUPPORTED_CHART_VERSIONS[FALLBACK_CHART_VERSION])


#: Where NVIDIA says which gpu-operator major versions it still supports (GPU Operator
#: documentation, "Platform Support", section "NVIDIA GPU Operator Life Cycle").
PLATFORM_SUPPORT_URL = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/platform-support.html"

#: That page's life-cycle table since v26.7 (the newest major version "Supported", the one before
#: it "Deprecated": critical bug and CVE fixes only, every older one "End of Support": no patch
#: releases): 26.7.x Supported, 26.3.x Deprecated, 25.10.x and lower End of Support. Keyed by the
#: major version (YY, MM), newest first; a major version at or after the first row is supported.
CHART_LIFE_CYCLE: tuple[tuple[tuple[int, int], str], ...] = (
    ((26, 7), "Supported"),
    ((26, 3), "Deprecated"),
    ((25, 10), "End of Support"),
)


def support_status(version: str) -> str | None:
    """NVIDIA's support status of the major version of chart ``version`` (``vYY.MM.PP``); None for
    a major version newer than the table (or a version not shaped like one)."""
    parts = version.removeprefix("v").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    major = (int(parts[0]), int(parts[1]))
    if major > CHART_LIFE_CYCLE[0][0]:
        return None
    # "25.10.x and lower": the last row covers every older major version.
    return next((status for first, status in CHART_LIFE_CYCLE if major >= first), CHART_LIFE_CYCLE[-1][1])


#: The device plugin's ``DEVICE_LIST_STRATEGY`` in the operator's asset
#: (``assets/state-device-plugin/0500_daemonset.yaml``, v25.3.1, v25.10.1, v26.7.0).
ASSET_DEVICE_LIST_STRATEGY = "envvar"
#: What the operator sets with ``cdi.enabled`` (controllers/object_controls.go: in
#: ``TransformDevicePlugin`` at v25.3.1, ``transformDevicePluginCtrForCDI`` at v25.10.1 and v26.7.0).
CDI_DEVICE_LIST_STRATEGY = {"v25.3.1": "envvar,cdi-annotations"}
CDI_DEVICE_LIST_STRATEGY_LATER = "cdi-annotations,cdi-cri"


def device_list_strategy(env: list[EnvVar] | None, cdi_enabled: bool, version: str) -> str:
    """The ``DEVICE_LIST_STRATEGY`` the operator gives the device plugin for the ClusterPolicy's
    ``devicePlugin.env`` and ``cdi.enabled``: the asset's ``envvar``, the env's value over it. With
    CDI on, v25.3.1 sets its CDI value after the env (object_controls.go at a1da4772: the env at line
    1420, the CDI value at 1444); v25.10.1 and v26.7.0 set theirs first and apply the env last
    (846018752b: lines 1530, 1549; 10ee5b36: lines 1603, 1622)."""
    values = {e["name"]: e.get("value") for e in env or []}
    own = values.get("DEVICE_LIST_STRATEGY")
    if cdi_enabled and (version in CDI_DEVICE_LIST_STRATEGY or own is None):
        return CDI_DEVICE_LIST_STRATEGY.get(version, CDI_DEVICE_LIST_STRATEGY_LATER)
    return own or ASSET_DEVICE_LIST_STRATEGY
