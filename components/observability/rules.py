"""The shared-GPU alerts: a PrometheusRule's ``spec`` (also a promtool rule file), built from the
group plans and the thresholds. Pure: no Pulumi.

What the series look like (dcgm-exporter, ``internal/pkg/transformation/kubernetes.go`` and
``process_metrics.go``, 4.5.3-4.8.2, the code the exporter of chart v26.7.0 builds on):

* Every series names its GPU by ``node``, ``gpu`` (index) and ``UUID``. ``node`` is not the
  exporter's: the ServiceMonitor's relabeling sets it from the scraped pod's node
  (``gpu_operator.values.NODE_RELABELING``), because the exporter's own label is ``Hostname`` up to
  4.5.3-4.8.2 and ``hostname`` after dcgm-exporter commit d5e5f51 (#655). The rules need the
  operator's ServiceMonitor (pipeline ``prometheus``) or a scrape config relabeling the same way.
* With per-pod metrics (``KUBERNETES_VIRTUAL_GPUS`` + ``enablePodUID``), ``DCGM_FI_DEV_GPU_UTIL``
  and ``DCGM_FI_DEV_FB_USED`` come once per GPU without ``pod_uid`` (the device's value) and once
  per pod holding a slot of that GPU with ``pod``, ``namespace``, ``container`` and ``pod_uid``
  (the pod's own processes; 0 for a pod that runs nothing on it). Other fields are copied onto
  every pod of the GPU: the rules take ``max by`` GPU for them.
* Without per-pod metrics (older charts), there is no ``pod_uid``: the per-pod rules
  (contention, idle slots) have nothing to fire on; the per-GPU ones work.

The node-level rules read kube-state-metrics (``internal/store/node.go``, ``utils.go``
``SanitizeLabelName``, v2.20.0): ``kube_node_status_capacity`` (resource names with ``.`` and ``/``
as ``_``) and ``kube_node_labels`` (only the labels its
``--metric-labels-allowlist=nodes=[gpu-eks.io/node-group]`` lets through, as
``label_gpu_eks_io_node_group``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..catalog import labels
from ..config.addons import AlertThresholds
from ..plan.group import GroupPlan

#: Name of the rule group (and of the PrometheusRule object).
GROUP_NAME = "gpu-eks-shared-gpus"

#: The XIDs the device plugin treats as application errors: the GPU stays healthy and
#: allocatable (k8s-device-plugin ``internal/rm/health.go`` ``ignoredXids``: identical in v0.17.2,
#: v0.18.1 and v0.20.0, the plugins of gpu-operator v25.3.1, v25.10.1 and v26.7.0). Every other
#: XID marks the GPU unhealthy: the plugin stops advertising it.
APPLICATION_XIDS: tuple[int, ...] = (13, 31, 43, 45, 68, 109)

#: Where each alert's runbook is: this library's page on observability.
RUNBOOK = "docs/observability.md"

#: One GPU, whatever the pod a series was copied onto.
_GPU = "node, UUID, gpu"
#: One MIG slice: dcgm-exporter labels the series of a MIG instance with its profile and GPU
#: instance id (its Prometheus text template, package rendermetrics ``gpuMetricsFormat``:
#: ``{{if $metric.MigProfile}},GPU_I_PROFILE=...,GPU_I_ID=...{{end}}``); a whole GPU's series have
#: neither (empty labels). The idle and contention alerts read DCGM_FI_DEV_GPU_UTIL per GPU: they
#: are not made per slice here.
_SLICE = f"{_GPU}, GPU_I_ID, GPU_I_PROFILE"


def kube_state_metrics_name(name: str) -> str:
    """A resource or label name as kube-state-metrics writes it: every character outside
    ``[a-zA-Z0-9_]`` becomes ``_`` (kube-state-metrics ``SanitizeLabelName``)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _regex(names: Sequence[str]) -> str:
    """An RE2 alternation of ``names`` as the body of a PromQL string: escaped for the regex, its
    backslashes doubled for the string literal."""
    return "|".join(re.escape(n) for n in names).replace("\\", "\\\\")


def _alert(
    name: str,
    expr: str,
    for_: str,
    severity: str,
    summary: str,
    description: str,
    action: str,
    extra_labels: Mapping[str, str] | None = None,
    runbook: str = RUNBOOK,
) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity, **(extra_labels or {})},
        "annotations": {
            "summary": summary,
            "description": description,
            "runbook": f"{action} (runbook: {runbook}, alert {name})",
        },
    }


#: How long ``GpuXidApplicationError`` fires after a GPU's XID changes. ``DCGM_FI_DEV_XID_ERRORS``
#: holds the LAST XID until the driver is reset or the node reboots (dcgm-exporter#500, #190, #95;
#: DCGM#277): an alert on its value alone would fire forever after one XID. The alert fires while
#: the GPU's XID differs from its value this long ago (or had none then), then resolves.
XID_WINDOW = "15m"
#: How far back before XID_WINDOW the rule looks for the GPU's previous XID value: longer than any
#: exporter restart or scrape gap it must bridge.
XID_LOOKBACK = "2h"


def _xid(offset: str = "") -> str:
    """The GPU's last XID. The exporter writes the code as the value and as the labels
    ``err_code``/``err_msg`` (``internal/pkg/collector/gpu_collector.go``, 4.2.3-4.1.3 to
    4.5.3-4.8.2), so each code is its own series: the rules take ``max by`` GPU."""
    return f"max by ({_GPU}) (DCGM_FI_DEV_XID_ERRORS{offset})"


def application_xid_expr() -> str:
    """The GPUs whose last XID is an application error."""
    return " or ".join(f"{_xid()} == {x}" for x in APPLICATION_XIDS)


def new_application_xid_expr() -> str:
    """The GPUs whose last XID is an application error and changed in the last XID_WINDOW.

    Not the exporter's windowed ``DCGM_EXP_XID_ERRORS_COUNT`` (``xid_collector.go``, present at
    4.2.3-4.1.3, 4.4.2-4.7.0, 4.5.3-4.8.2): it is collected only when named in the metrics file, and
    neither the operator's default (``etc/dcp-metrics-included.csv``) nor ``default-counters.csv``
    (commented out) names it at any of those versions. Enabling it would mean shipping the metrics
    file for every cluster, a copy of the default list per exporter version (the file is
    cluster-wide: one for T4 and other GPUs alike). A repeat of the same code within a node's life
    is not seen (a limit of the last-value field, dcgm-exporter#190).

    "Changed" compares with the last value the GPU had up to XID_WINDOW ago (a subquery over
    ``XID_LOOKBACK``), not with its value exactly then: an exporter restart or a Prometheus gap
    leaves no sample at that instant, and the old code would fire again. A GPU first seen with an
    old application XID (observability just turned on) fires once, for XID_WINDOW."""
    before = f"last_over_time(({_xid()})[{XID_LOOKBACK}:1m] offset {XID_WINDOW})"
    return f"({application_xid_expr()}) unless on ({_GPU}) ({_xid()} == on ({_GPU}) {before})"


def _group_nodes(group_names: Sequence[str]) -> str:
    """The nodes of these GPU node groups: kube-state-metrics' ``kube_node_labels`` with the
    library's node-group label (allowlisted: see the module docstring)."""
    label = "label_" + kube_state_metrics_name(labels.NODE_GROUP_LABEL)
    return f'max by (node) (kube_node_labels{{{label}=~"{_regex(group_names)}"}})'


def advertised_rule(plan: GroupPlan, t: AlertThresholds) -> dict[str, Any]:
    """Nodes of ``plan``'s group that do not advertise exactly its GPUs x replicas of its resource
    (a MIG group: each resource of ``advertised_resources``, one per profile under mixed).
    One rule per node group, not per profile: groups sharing a profile may have instance types with
    different GPU counts (g4dn.xlarge x4 = 4, g4dn.12xlarge x4 = 16), so each node is compared with
    its own group's count."""
    expected = " and on (node) ".join(
        f'(max by (node) (kube_node_status_capacity{{resource="{kube_state_metrics_name(r)}"}}) == {n})'
        for r, n in plan.advertised_resources.items()
    )
    if len(plan.advertised_resources) > 1:
        # and/unless share a precedence and bind left to right: the conditions go in one group.
        expected = f"({expected})"
    counts = ", ".join(f"{n} {r}" for r, n in plan.advertised_resources.items())
    if plan.mig_layout is not None:
        layout = ", ".join(f"{p} x{n}" for p, n in plan.mig_layout.items())
        what = f"MIG layout of {plan.name}: {plan.gpus_per_node} GPU(s) x {layout}"
        cause = "the MIG layout or sharing config was not applied (the boot stage failed: journalctl -u gpu-eks-boot,"
        cause += " node label gpu-eks.io/boot-stage=failed; device plugin or its config-manager not running)"
    else:
        what = f"sharing profile {plan.profile_name}: {plan.gpus_per_node} GPU(s) x {plan.sharing.replicas} replicas"
        cause = "the sharing config was not applied (device plugin or its config-manager not running, the node "
        cause += "label nvidia.com/device-plugin.config not matching a ConfigMap key)"
    return _alert(
        "GpuSlotsNotAdvertised",
        f"{_group_nodes([plan.name])} unless on (node) {expected}",
        t.advertised_for,
        "warning",
        f"Node {{{{ $labels.node }}}} does not advertise {counts}",
        f"Nodes of GPU node group {plan.name} ({what}) should advertise {counts}; this one does not: {cause} or the "
        "GPU count is wrong.",
        "kubectl describe node <node> (Capacity, label nvidia.com/device-plugin.config); kubectl -n <operator "
        "namespace> logs the nvidia-device-plugin pod on the node (container config-manager); fix, then restart it",
        {"node_group": plan.name, "profile": plan.profile_name},
    )


def alert_rules(plans: Sequence[GroupPlan], t: AlertThresholds) -> list[dict[str, Any]]:
    """Every alert rule, in a fixed order."""
    app = application_xid_expr()
    # With a MIG group the memory of each slice is its own: compared per slice (per GPU otherwise,
    # the same expression as before MIG for clusters without it).
    mig = any(p.mig_layout is not None for p in plans)
    unit = _SLICE if mig else _GPU
    fb_used = f'max by ({unit}) (DCGM_FI_DEV_FB_USED{{pod_uid=""}})'
    fb_free = f"max by ({unit}) (DCGM_FI_DEV_FB_FREE)"
    fb_reserved = f"(max by ({unit}) (DCGM_FI_DEV_FB_RESERVED) or {fb_free} * 0)"
    where = "GPU {{ $labels.gpu }}"
    if mig:
        where += "{{ if $labels.GPU_I_PROFILE }} slice {{ $labels.GPU_I_PROFILE }} ({{ $labels.GPU_I_ID }}){{ end }}"
    util = f'max by ({_GPU}) (DCGM_FI_DEV_GPU_UTIL{{pod_uid=""}})'
    # One series per container holding a slot, each with its pod's value (kubernetes.go
    # createPerProcessMetrics, 4.5.3-4.8.2): one per pod first, then count the pods at work.
    busy_pods = f'count by ({_GPU}) (max by ({_GPU}, pod_uid) (DCGM_FI_DEV_GPU_UTIL{{pod_uid!=""}}) > 0)'
    resources = _regex(sorted({kube_state_metrics_name(r) for p in plans for r in p.advertised_resources}))
    gpu_nodes = (
        f"({_group_nodes([p.name for p in plans])} or "
        f'max by (node) (kube_node_status_capacity{{resource=~"{resources}"}} > 0))'
    )
    # FB_FREE: a field every GPU reports, a vGPU guest's too (no temperature in a guest), in our
    # metrics file and the operator's default (etc/dcp-metrics-included.csv, 4.2.3-4.1.3 to 4.5.3-4.8.2).
    exporter_nodes = "max by (node) (DCGM_FI_DEV_FB_FREE)"
    return [
        _alert(
            "GpuXidApplicationError",
            new_application_xid_expr(),
            "0m",
            "warning",
            "XID {{ $value }} (application error) on GPU {{ $labels.gpu }} of {{ $labels.node }}",
            "A process on this GPU hit an application-level XID (13, 31, 43, 45, 68 or 109: the device plugin "
            f"keeps the GPU allocatable) in the last {XID_WINDOW}. On a shared GPU every tenant of it may have been "
            "affected. The node monitoring agent counts 109 as a GPU fault (AcceleratedHardwareReady False, "
            "NvidiaXID109Error): the group's node repair acts on it (resetGpu).",
            "Find the pods on the GPU (dashboard, per pod) and their logs around the time; an application bug or "
            "out-of-bounds access, not the hardware: no node action",
        ),
        _alert(
            "GpuXidHardwareError",
            f"{_xid()} > 0 unless ({app})",
            "0m",
            "critical",
            "XID {{ $value }} on GPU {{ $labels.gpu }} of {{ $labels.node }}",
            "An XID the device plugin does not ignore: it marks one device of this GPU unhealthy (with time-slicing, "
            "one of its slots: the GPU's other slots stay advertised) and the GPU's pods likely failed. For the XIDs "
            "it knows, the node monitoring agent sets the node's AcceleratedHardwareReady False (NvidiaXID<n>Error) "
            "and the group's node repair reboots or replaces the node. Fires until then (the GPU's last XID stays "
            "until a driver reset).",
            "kubectl describe node <node> (Conditions: AcceleratedHardwareReady); where repair does not act "
            "(GpuNodeNotRepaired), cordon and drain the node and terminate the instance; open an AWS case if it "
            "repeats on new instances",
        ),
        _alert(
            "GpuMemoryNearFull",
            f"{fb_used} / ({fb_used} + {fb_free} + {fb_reserved}) * 100 >= {t.memory_used_percent}",
            t.memory_for,
            "warning",
            where + " of {{ $labels.node }} memory {{ $value | humanize }}% used",
            "Time-slicing does not isolate GPU memory: when it is full, the next allocation of any pod sharing this "
            "GPU fails (CUDA out of memory), not only the pod that used it up.",
            "See which pod uses the memory (dashboard: memory per pod against the slot's share); lower its batch or "
            "move it to a group with fewer replicas or more GPU memory",
        ),
        _alert(
            "SharedGpuContended",
            f"{util} >= {t.contention_utilization_percent} and on ({_GPU}) {busy_pods} > 1",
            t.contention_for,
            "warning",
            "Shared GPU {{ $labels.gpu }} of {{ $labels.node }} contended",
            f"Two or more pods are running work on this GPU and it has been at least "
            f"{t.contention_utilization_percent}% busy: time-slicing gives each a slice of time, so each runs slower "
            "than alone.",
            "Lower the group's replicas, add nodes (maxSize), or give the latency-sensitive pod a GPU of its own",
        ),
        _alert(
            "GpuSlotIdle",
            f'max by (namespace, pod, {_GPU}) (DCGM_FI_DEV_GPU_UTIL{{pod_uid!=""}}) <= {t.idle_utilization_percent}',
            t.idle_for,
            "info",
            "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds a GPU slot it does not use",
            f"The pod's own processes used at most {t.idle_utilization_percent}% of the GPU: the slot is paid for "
            "and unavailable to others.",
            "Ask the owner to release it (scale the workload down, or give up the GPU request when idle)",
        ),
        *(advertised_rule(p, t) for p in plans),
        _alert(
            "GpuExporterMissing",
            f"{gpu_nodes} unless on (node) {exporter_nodes}",
            t.exporter_missing_for,
            "warning",
            "No GPU metrics from node {{ $labels.node }}",
            "A GPU node has no dcgm-exporter series: its GPUs are unmonitored and none of the other GPU alerts can "
            "fire for it.",
            "kubectl -n <operator namespace> get pods -o wide | grep dcgm-exporter; check the pod on the node "
            "(tolerations, image pull, crash logs) and that Prometheus scrapes the ServiceMonitor nvidia-dcgm-exporter",
        ),
    ]


def rule_spec(plans: Sequence[GroupPlan], t: AlertThresholds, team_groups: Sequence[Any] = ()) -> dict[str, Any]:
    """The PrometheusRule ``spec``; the same mapping is a promtool rule file. ``team_groups``: the
    teams' rule group, when there are teams (``observability.teams.rule_group``)."""
    return {"groups": [{"name": GROUP_NAME, "rules": alert_rules(plans, t)}, *team_groups]}
