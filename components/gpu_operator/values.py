"""Values for the NVIDIA gpu-operator Helm chart, computed from the GPU node groups.

Nothing here is typed by hand per cluster: tolerations come from the node groups' taints,
the device-plugin config from their sharing profiles, and the chart's own list defaults from
``gpu_operator.SUPPORTED_CHART_VERSIONS`` (checked against the chart's values.yaml in tests). The
``dcgmExporter`` values are what observability asks for (``ExporterOptions``), limited to what each
chart version's exporter can do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..catalog import gpu_operator
from ..catalog.gpu_operator import EnvVar
from ..config.groups import Taint, allocation_policy_problems
from ..config.isolation import ISOLATIONS
from ..plan import device_plugin, placement
from ..plan.group import GroupPlan


def gpu_taints(plans: Sequence[GroupPlan]) -> list[Taint]:
    """Every distinct taint of every GPU node group, in group order."""
    out: list[Taint] = []
    for p in plans:
        out += [t for t in p.taints if t not in out]
    return out


def profile_configs(plans: Sequence[GroupPlan]) -> dict[str, Mapping[str, Any]]:
    """The device-plugin config file of every sharing profile a GPU node group uses, by profile
    name (first use wins; the settings rules guarantee one set of settings per name)."""
    out: dict[str, Mapping[str, Any]] = {}
    for p in plans:
        out.setdefault(p.profile_name, p.device_plugin_config)
    return out


def mig_strategy(plans: Sequence[GroupPlan]) -> str:
    """The one MIG strategy of the cluster (the chart's ``mig.strategy`` is cluster-wide;
    settings validation guarantees every group agrees)."""
    strategies = {p.mig_strategy for p in plans}
    if len(strategies) != 1:
        raise ValueError(f"GPU node groups disagree on migStrategy: {sorted(strategies)}")
    return strategies.pop()


#: GPU models whose DCGM profiling fields (``DCGM_FI_PROF_*``) need exclusive access to the GPU:
#: Turing: the T4 (g4dn) and the T4g (g5g, the same Turing TU104 for Graviton: AWS "Amazon EC2 G5g
#: instances" page). With two exporters or tenants asking, DCGM refuses them (dcgm-exporter#307),
#: so the exporter collects the fields below instead of the operator's default file
#: (``/etc/dcgm-exporter/dcp-metrics-included.csv``: ``DCGM_EXPORTER_COLLECTORS`` in the exporter
#: DaemonSet asset, ``assets/state-dcgm-exporter/0900_daemonset.yaml`` at v25.3.1,
#: ``0800_daemonset.yaml`` at v25.10.1 and v26.7.0).
PROFILING_NEEDS_EXCLUSIVE_ACCESS = frozenset({"T4", "T4g"})

#: The exporter's metrics ConfigMap (``DCGM_EXPORTER_CONFIGMAP_DATA=<namespace>:<name>``, key
#: ``metrics``: dcgm-exporter ``internal/pkg/counters/counter_config.go``), in the operator's
#: namespace: the operator's Role lets the exporter get ConfigMaps there
#: (``assets/state-dcgm-exporter/0200_role.yaml``, v25.3.1 to v26.7.0). The exporter exits if it
#: cannot read it, so the ConfigMap is created before the release.
METRICS_CONFIG_MAP = "gpu-eks-dcgm-metrics"

#: The operator's default metrics file, dcgm-exporter's ``etc/dcp-metrics-included.csv``
#: (4.4.2-4.7.0 and 4.5.3-4.8.2; 4.2.3-4.1.3 lacks FB_RESERVED; at 4.5.3-4.8.2
#: ``default-counters.csv`` names the same fields), less the five ``DCGM_FI_PROF_*`` fields and two
#: more: ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` (no NVLink on a T4, T4g or L4 slice) and
#: ``DCGM_FI_DEV_VGPU_LICENSE_STATUS``; neither feeds an alert or the dashboard. Rows: "field,
#: Prometheus type, help". The alerts and the dashboard read GPU_UTIL, FB_*, XID.
METRICS_WITHOUT_PROFILING: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
)


#: The node of every exporter series as the label ``node``, from the scraped pod's node
#: (Prometheus' Kubernetes discovery, ``__meta_kubernetes_pod_node_name``). The exporter's own node
#: label changed name (``Hostname`` up to 4.5.3-4.8.2; ``hostname`` from dcgm-exporter commit d5e5f51
#: "Rename Hostname label to hostname (#655)"), so the alerts and the dashboard read ``node``, the
#: name kube-state-metrics uses too. Path ``dcgmExporter.serviceMonitor.relabelings`` (values.yaml
#: of v25.3.1, v25.10.1, v26.7.0); the chart copies ``dcgmExporter.serviceMonitor`` into the
#: ClusterPolicy (templates/clusterpolicy.yaml) and the operator sets it as the ServiceMonitor
#: endpoint's ``relabelings`` (controllers/object_controls.go: in ``ServiceMonitor`` at v25.3.1 and
#: v25.10.1, ``applyServiceMonitorCustomEdits`` at v26.7.0); field names as in the ClusterPolicy
#: CRD (prometheus-operator ``RelabelConfig``: sourceLabels, targetLabel, action).
NODE_RELABELING: Mapping[str, Any] = {
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "node",
    "action": "replace",
}


@dataclass(frozen=True)
class ExporterOptions:
    """What the observability settings ask of the operator's dcgm-exporter."""

    #: Attribute GPU utilisation and memory to pods on shared GPUs (where the chart's exporter can).
    per_pod_metrics: bool = True
    #: Turn on the exporter's ServiceMonitor with these labels; None: leave the chart's setting.
    service_monitor_labels: Mapping[str, str] | None = None


def exporter_options(observability: Any) -> ExporterOptions | None:
    """What the observability settings (``ObservabilitySettings``) ask of the operator's
    dcgm-exporter; None (the chart's defaults) when observability is off. Per-pod attribution only
    where something reads the operator's exporter: the prometheus pipeline scrapes it; the
    CloudWatch add-on runs and scrapes its own dcgm-exporter (observability/values.py). hostPID and
    the pods read access are not granted for nothing."""
    if not observability.enabled:
        return None
    return ExporterOptions(
        per_pod_metrics=observability.per_pod_metrics and observability.prometheus,
        service_monitor_labels=dict(observability.prometheus_labels) if observability.prometheus else None,
    )


def metrics_csv() -> str:
    """The exporter's metrics file without profiling fields (the ConfigMap's ``metrics`` key)."""
    return "".join(f"{name}, {kind}, {help_text}\n" for name, kind, help_text in METRICS_WITHOUT_PROFILING)


def profiling_fields_unusable(plan: GroupPlan) -> bool:
    """Whether the exporter must not collect ``DCGM_FI_PROF_*`` on this group's GPUs: Turing
    (exclusive access, above) or a fractional vGPU guest (g6f, gr6f: the catalog's ``fractional``
    family). DCGM does not virtualize the hardware counters for a vGPU guest (an NVIDIA maintainer
    in dcgm-exporter#69), and on fractional guests profiling collection errors in a loop
    (dcgm-exporter#661, PR #701, "skip GPM/DCP metrics on fractional vGPU guests")."""
    return plan.instance.gpu_model in PROFILING_NEEDS_EXCLUSIVE_ACCESS or plan.instance.family.fractional


def needs_metrics_config_map(plans: Sequence[GroupPlan]) -> bool:
    """Whether a group whose GPUs cannot give profiling fields is in the cluster (the metrics file
    is cluster-wide: then every exporter collects without them)."""
    return any(profiling_fields_unusable(p) for p in plans)


def isolation(plans: Sequence[GroupPlan]) -> str:
    """The one ``gpuOperator.isolation`` of the cluster's groups (their boot stages' toolkit settings
    and the plugin's strategy come from one value: config/isolation.py)."""
    values = {p.isolation for p in plans}
    if len(values) != 1:
        raise ValueError(f"GPU node groups disagree on gpuOperator.isolation: {sorted(values)}")
    return values.pop()


def device_plugin_env(chart_version: str, strategy: str) -> list[EnvVar]:
    """The chart's ``devicePlugin.env`` with ``DEVICE_LIST_STRATEGY=<strategy>``, ours set last.

    How the plugin hands a container its devices (k8s-device-plugin ``--device-list-strategy``, env
    ``DEVICE_LIST_STRATEGY``; what it sends per strategy and what the node's toolkit makes of it:
    catalog/device_lists.py): ``volume-mounts`` under ``enforced`` isolation, ``envvar`` under
    ``migrating`` (config/isolation.py). It is set explicitly in both: the operator's asset gives the
    plugin ``envvar`` only while no value is sent and CDI is off, and the operator sets the chart's
    ``devicePlugin.env`` over the asset's, and at v25.10.1 and v26.7.0 after its CDI settings, so the
    value holds with ``cdi.enabled`` too (catalog/gpu_operator.py ``device_list_strategy``; at
    v25.3.1 the CDI value comes last: the settings refuse cdiEnabled there, config/addons.py). A
    variable set on the container wins over ``flags.plugin.deviceListStrategy`` in the plugin's
    config file (api/config/v1/flags.go ``updateFromCLIFlag``), so one strategy holds cluster-wide.
    Helm replaces lists: the chart's own entries (v25.3.1 has six) come back with ours."""
    defaults = [dict(e) for e in gpu_operator.chart_defaults(chart_version).device_plugin_env]
    kept = [e for e in defaults if e["name"] != "DEVICE_LIST_STRATEGY"]
    return [*kept, {"name": "DEVICE_LIST_STRATEGY", "value": strategy}]


#: How each container of the operator's operands reaches its GPUs, by container name, for every
#: container of every operand DaemonSet (NVIDIA/gpu-operator ``assets/state-*/*daemonset*.yaml`` and
#: ``assets/gpu-feature-discovery/0500_daemonset.yaml`` at v25.3.1, v25.10.1 and v26.7.0;
#: tests/test_device_lists.py reads each one): ``privileged`` containers get the devices their
#: ``NVIDIA_VISIBLE_DEVICES`` names under any isolation (the toolkit honours the variable from a
#: container with ``CAP_SYS_ADMIN``, privileged.go); ``no GPU``: unprivileged, no variable, no GPU
#: resource, and it opens none. The validator's workload pods (``validator/manifests/`` at v25.10.1
#: and v26.7.0, ``validator/`` at v25.3.1; part of the validator image, not of the assets):
#: ``cuda-validation`` is privileged with ``NVIDIA_VISIBLE_DEVICES=all``; ``plugin-validation`` is
#: unprivileged and requests a GPU resource: it gets its device from the device plugin like any GPU pod.
PRIVILEGED = "privileged"
NO_GPU = "no GPU"
DEVICE_PLUGIN = "device plugin"
OPERAND_GPU_ACCESS: Mapping[str, str] = {
    # state-device-plugin, state-mps-control-daemon, gpu-feature-discovery
    "nvidia-device-plugin": PRIVILEGED,
    "mps-control-daemon-mounts": PRIVILEGED,
    "mps-control-daemon-ctr": PRIVILEGED,
    "config-manager": PRIVILEGED,
    "config-manager-init": NO_GPU,
    "gpu-feature-discovery": PRIVILEGED,
    # state-dcgm-exporter, state-mig-manager, state-node-status-exporter
    "nvidia-dcgm-exporter": PRIVILEGED,
    "nvidia-mig-manager": PRIVILEGED,
    "nvidia-node-status-exporter": PRIVILEGED,
    # state-operator-validation (and every operand's toolkit-validation init container)
    "toolkit-validation": PRIVILEGED,
    "driver-validation": PRIVILEGED,
    "nvidia-fs-validation": PRIVILEGED,
    "gdrcopy-validation": PRIVILEGED,
    "cuda-validation": PRIVILEGED,
    "plugin-validation": PRIVILEGED,
    "nvidia-operator-validator": PRIVILEGED,
    # state-kata-device-plugin (v26.7.0; sandbox workloads, off here)
    "vfio-pci-validation": PRIVILEGED,
    "nvidia-kata-sandbox-device-plugin-ctr": PRIVILEGED,
}
#: The validator's workload pods' containers (not in the assets; cited above).
VALIDATOR_WORKLOAD_GPU_ACCESS: Mapping[str, str] = {
    "cuda-validation": PRIVILEGED,
    "plugin-validation": DEVICE_PLUGIN,
}


def mig_manager_values(plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """``migManager`` values: off in a cluster with a MIG group, whose layout the boot stage applies
    before kubelet (plan/boot.py). mig-manager changes MIG mode by stopping the operator's GPU
    clients and, with the AMI's preinstalled driver, kubelet (``WITH_SHUTDOWN_HOST_GPU_CLIENTS``), which
    has left AL2023 nodes NotReady (NVIDIA/gpu-operator#2415, NVIDIA/mig-parted#368), and never retries
    a failed apply (mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go waits for the label to change).
    The device plugin still runs with the chart's ``mig.strategy``, which the operator passes as its
    ``MIG_STRATEGY``, and advertises the slices it finds. With mig-manager off the operator sets no
    ``nvidia.com/mig.config`` label either (it does so only when ``MIGManager.IsEnabled()``:
    controllers/state_manager.go at v25.3.1 and v25.10.1, nodelabeling_controller.go at v26.7.0), so
    nothing on the node names a mig-parted config. Without a MIG group: {} (the
    chart's own, which applies ``all-disabled`` to MIG-capable nodes: no mode change where MIG is off)."""
    return {"enabled": False} if any(p.mig_layout is not None for p in plans) else {}


def per_pod_gpu_metrics(plans: Sequence[GroupPlan], chart_version: str, options: ExporterOptions | None) -> bool:
    """Whether the exporter attributes utilisation and memory to pods: asked for, a group shares
    its GPUs (more slots than GPUs), and the chart's exporter has per-process metrics."""
    if options is None or not options.per_pod_metrics:
        return False
    shared = any(p.slots_per_node > p.gpus_per_node for p in plans)
    return shared and gpu_operator.chart_defaults(chart_version).per_pod_gpu_metrics


def dcgm_exporter_values(
    plans: Sequence[GroupPlan], chart_version: str, options: ExporterOptions | None, namespace: str
) -> dict[str, Any]:
    """The ``dcgmExporter`` values; {} (the chart's defaults) without observability. ``namespace``:
    the release's (where METRICS_CONFIG_MAP is)."""
    if options is None:
        return {}
    defaults = gpu_operator.chart_defaults(chart_version)
    env = [dict(e) for e in defaults.dcgm_exporter_env]
    out: dict[str, Any] = {}
    if per_pod_gpu_metrics(plans, chart_version, options):
        env.append({"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"})
        out["hostPID"] = True
        # The pod's UID is how the exporter matches a process's cgroup to a pod; the operator
        # grants the exporter pods get/list/watch only with enablePodUID or enablePodLabels.
        # Pod labels stay off: one series per pod label would multiply cardinality.
        out["enablePodUID"] = True
        out["enablePodLabels"] = False
    if needs_metrics_config_map(plans):
        env.append({"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": f"{namespace}:{METRICS_CONFIG_MAP}"})
    if len(env) > len(defaults.dcgm_exporter_env):
        out["env"] = env
    if options.service_monitor_labels is not None:
        # honorLabels: the exporter's pod/namespace/container labels name the workload; without
        # it Prometheus renames them exported_pod/exported_namespace/exported_container.
        out["serviceMonitor"] = {
            "enabled": True,
            "honorLabels": True,
            "additionalLabels": dict(options.service_monitor_labels),
            "relabelings": [dict(NODE_RELABELING)],
        }
    return out


def gpu_operator_values(
    plans: Sequence[GroupPlan],
    chart_version: str,
    cdi_enabled: bool = False,
    exporter: ExporterOptions | None = None,
    namespace: str = "gpu-operator",
) -> dict[str, Any]:
    """The gpu-operator values for a cluster whose GPU nodes are the groups of ``plans``."""
    if not plans:
        raise ValueError("gpu_operator_values needs at least one GPU node group, received none")
    # Groups declared outside the settings (GpuOperator covers any group) meet the settings' rule here.
    refused = allocation_policy_problems([p.settings.shared_devices_allocation_policy for p in plans], chart_version)
    if refused:
        raise ValueError(
            "; ".join(
                f"GPU node group {plans[int(key[1])].name!r}: sharedDevicesAllocationPolicy received {value!r}; "
                f"expected {expected}"
                for key, value, expected in refused
            )
        )
    defaults = gpu_operator.chart_defaults(chart_version)
    taints = gpu_taints(plans)
    mig = mig_strategy(plans)
    data = device_plugin.device_plugin_config_data(profile_configs(plans))
    dcgm = dcgm_exporter_values(plans, chart_version, exporter, namespace)
    mig_manager = mig_manager_values(plans)
    values: dict[str, Any] = {
        # The EKS AL2023 NVIDIA AMI ships the driver and the container toolkit, and nodeadm makes
        # `nvidia` containerd's default runtime: the operator must not install either (AWS docs).
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        # Pinned explicitly: the chart default flipped from false (v25.3) to true (v25.10+).
        "cdi": {"enabled": cdi_enabled},
        # The operator passes mig.strategy (chart default: single) to the device plugin and GFD
        # as the MIG_STRATEGY env (controllers/object_controls.go applyMIGConfiguration), which
        # overrides flags.migStrategy in the config file (the plugin's mig-strategy flag reads
        # MIG_STRATEGY; gpu-operator v25.3.1, v25.10.1, v26.7.0): both come from one setting.
        "mig": {"strategy": mig},
        "devicePlugin": {
            # How devices reach containers: gpuOperator.isolation's strategy (device_plugin_env).
            "env": device_plugin_env(chart_version, ISOLATIONS[isolation(plans)].device_list_strategy),
            "config": {
                "create": True,
                # Content-addressed name: see device_plugin.config_map_name for why.
                "name": device_plugin.config_map_name(data),
                # Nodes without the profile label (e.g. launched by Karpenter) get the first
                # node group's profile; `default` must name a key of `data`.
                "default": plans[0].profile_name,
                "data": data,
            },
        },
        # Helm replaces lists: keep the chart's own entries and add ours.
        "daemonsets": {
            "tolerations": placement.extend_tolerations(defaults.daemonset_tolerations, taints),
        },
        "node-feature-discovery": {
            "worker": {
                # NFD workers only on GPU nodes: labelling CPU nodes is wasted work and would let
                # the operator's DaemonSets consider them.
                "affinity": placement.gpu_node_affinity(),
                "tolerations": placement.extend_tolerations(defaults.nfd_worker_tolerations, taints),
            }
        },
        **({"dcgmExporter": dcgm} if dcgm else {}),
        # Off with a MIG group: the boot stage applies the layouts (mig_manager_values).
        **({"migManager": mig_manager} if mig_manager else {}),
    }
    # MPS needs no value here: the chart never copies devicePlugin.mps into the ClusterPolicy
    # (templates/clusterpolicy.yaml, v25.3.1, v25.10.1, v26.7.0; tests/test_operator_chart.py), and the
    # operator always deploys state-mps-control-daemon with the root device_plugin.MPS_ROOT.
    return values
