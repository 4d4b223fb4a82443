"""Node health on EKS: the node monitoring agent (its add-on, its DCGM host engine, the reasons it
gives the ``AcceleratedHardwareReady`` node condition) and node auto repair (EKS managed node groups,
Karpenter). Facts only; the settings (``config.repair``) and the plan (``plan.group``) read them.

Sources (each fact below names its file):

* AGENT: aws/eks-node-monitoring-agent at tag v1.7.0 (commit c399089dec78cb245306ca2a5f9806b7c32ca093).
* EKS: the EKS user guide, "Automatically repair nodes in EKS clusters" (node-repair.html) and
  "Detect node health issues and enable automatic node repair" (node-health.html).
* EKS_API: botocore 1.44.5 ``eks`` 2017-11-01 service model, shapes ``NodeRepairConfig``,
  ``NodeRepairConfigOverrides``, ``RepairAction``, ``NonZeroInteger``, ``PercentCapacity``.
* KARPENTER: aws/karpenter-provider-aws v1.14.1 ``pkg/cloudprovider/cloudprovider.go``
  ``RepairPolicies``; kubernetes-sigs/karpenter v1.14.1 ``pkg/controllers/node/health/controller.go``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The EKS add-on that runs the agent (a DaemonSet on every node, and ``dcgm-server`` on NVIDIA nodes).
NODE_MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
AGENT_SOURCE = "aws/eks-node-monitoring-agent v1.7.0 (c399089dec78cb245306ca2a5f9806b7c32ca093)"
#: The add-on version per Kubernetes minor: the agent's v1.7.0 build, the image tag its own chart
#: pins at that tag (charts/eks-node-monitoring-agent/values.yaml ``nodeAgent.image.tag``). The agent
#: has no Kubernetes-minor-specific build (one image for every minor, Chart.yaml has no kubeVersion);
#: a table per minor, like ``catalog.cluster_autoscaler.AUTOSCALER_IMAGE_TAGS``, so a minor can move on its own.
#: Check one with ``aws eks describe-addon-versions --addon-name eks-node-monitoring-agent
#: --kubernetes-version <minor>`` before changing it (EKS user guide, "Verify Amazon EKS add-on version
#: compatibility with a cluster").
NODE_MONITORING_AGENT_ADDON_VERSIONS: dict[str, str] = {
    "1.32": "v1.7.0-eksbuild.1",
    "1.33": "v1.7.0-eksbuild.1",
    "1.34": "v1.7.0-eksbuild.1",
    "1.35": "v1.7.0-eksbuild.1",
    "1.36": "v1.7.0-eksbuild.1",
}
#: The port of the agent's own nv-hostengine (``dcgm-server`` DaemonSet: ``containerPort`` and
#: ``hostPort`` 5555, templates/dcgm-daemonset.yaml); the agent connects to ``localhost:5555``
#: (monitors/nvidia/dcgm/dcgm_client.go ``NewDCGM``, from the host network).
AGENT_DCGM_PORT = 5555
#: The agent skips NVIDIA monitoring on arm64 outside EKS Auto Mode ("NVIDIA-based monitoring is
#: disabled for the arm64 architecture in this version of the agent": monitors/nvidia/monitor.go
#: ``Register``), and its ``dcgm-server`` affinity is amd64 only (values.yaml ``dcgmAgent.affinity``).
AGENT_NVIDIA_ARCHITECTURES = ("x86_64",)

#: The node condition the agent sets for GPU faults, that repair and the library's alerts read.
ACCELERATED_HARDWARE_READY = "AcceleratedHardwareReady"

# ---------------------------------------------------------------------------------------------
# Fault classes: how the library groups the agent's AcceleratedHardwareReady reasons for repair
# ---------------------------------------------------------------------------------------------

#: NVIDIA's action is a GPU reset (RESET_GPU, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR). EKS cannot
#: reset one GPU in place; a reboot resets every GPU of the node.
RESET_GPU = "resetGpu"
#: NVIDIA's action is a restart of the VM (RESTART_VM), or a host service is down: a reboot.
RESTART_INSTANCE = "restartInstance"
#: The GPU or its host is broken: a reboot keeps the instance on the same host, only a new
#: instance helps (RESTART_BM "a full power cycle", CHECK_MECHANICALS, CONTACT_SUPPORT, EC2's
#: advice on XID 63, a fabric failure "persists across reboots", a GPU missing).
HARDWARE = "hardware"
#: The agent lost its DCGM host engine: nothing is known about the GPUs, nothing says they failed.
MONITORING = "monitoring"
FAULT_CLASSES = (RESET_GPU, RESTART_INSTANCE, HARDWARE, MONITORING)

#: NVIDIA's resolution bucket -> fault class (the buckets the agent lists per well-known XID).
_BUCKET_CLASS = {
    "RESET_GPU": RESET_GPU,
    "WORKFLOW_XID_48": RESET_GPU,
    "WORKFLOW_NVLINK_ERR": RESET_GPU,
    "RESTART_VM": RESTART_INSTANCE,
    "RESTART_BM": HARDWARE,
    "CHECK_MECHANICALS": HARDWARE,
    "CONTACT_SUPPORT": HARDWARE,
    # NVIDIA: IGNORE; EC2 recommends replacing the instance (the agent's own comment on XID 63).
    "EC2_REPLACE": HARDWARE,
}

#: The agent's well-known XIDs and NVIDIA's resolution bucket of each (AGENT
#: monitors/nvidia/dcgm/dcgm_policies.go ``WellKnownXidCodes`` and its comment). Each sets
#: AcceleratedHardwareReady=False with reason ``NvidiaXID<n>Error`` (severity Fatal,
#: pkg/reasons/reasons.yaml); every other XID is ``NvidiaXID<n>Warning``: a Kubernetes event, no
#: condition ("emit a warning (i.e Kubernetes event) rather than set a node condition").
WELL_KNOWN_XIDS: dict[int, str] = {
    46: "RESET_GPU",
    48: "WORKFLOW_XID_48",
    54: "CHECK_MECHANICALS",
    62: "RESET_GPU",
    63: "EC2_REPLACE",
    64: "RESET_GPU",
    74: "WORKFLOW_NVLINK_ERR",
    79: "RESTART_BM",
    95: "RESET_GPU",
    109: "RESET_GPU",
    110: "RESET_GPU",
    119: "RESET_GPU",
    120: "RESET_GPU",
    136: "RESET_GPU",
    140: "RESET_GPU",
    142: "CONTACT_SUPPORT",
    143: "RESET_GPU",
    151: "RESTART_VM",
    155: "RESET_GPU",
    156: "RESET_GPU",
    158: "RESET_GPU",
}


#: Where the library's class differs from NVIDIA's bucket in the agent's table (issue 41). XID 64
#: "indicates a failure in recording a row-remapping entry to the InfoROM" (NVIDIA GPU Memory Error
#: Management, "User Visible Statistics"); a row remap takes effect only at a GPU reset and lasts
#: only through that InfoROM entry ("The process of row-remapping requires a GPU reset to take effect
#: and will remain persistent throughout the life of the GPU", "Row Remapping"): a reboot brings the
#: faulty row back, so the GPU's memory is broken hardware, replaced (another host) as XID 63 is.
_XID_CLASS = {64: HARDWARE}


@dataclass(frozen=True)
class Fault:
    """One reason the agent gives AcceleratedHardwareReady=False (a Fatal reason of AGENT
    pkg/reasons/reasons.yaml), the fault class the library repairs it as, and what it means."""

    reason: str
    fault_class: str
    meaning: str


def xid_reason(xid: int) -> str:
    """The condition's reason for a well-known XID (reasons.yaml ``NvidiaXIDError``: ``NvidiaXID%dError``)."""
    return f"NvidiaXID{xid}Error"


#: Every Fatal NVIDIA reason of AcceleratedHardwareReady with a fixed name (AGENT reasons.yaml; the
#: Neuron ones are not NVIDIA's), then one per well-known XID.
FAULTS: tuple[Fault, ...] = (
    Fault("NvidiaDoubleBitError", RESET_GPU, "a double bit ECC error (dcgm_policies.go DbePolicy)"),
    Fault("NvidiaNVLinkError", RESET_GPU, "NVLink errors (dcgm_policies.go NvlinkPolicy)"),
    Fault("FabricManagerNotRunning", RESTART_INSTANCE, "the Fabric Manager service is not running (NVSwitch)"),
    Fault("NvidiaFabricError", HARDWARE, "NVSwitch fabric training failed: 'persists across reboots'"),
    Fault("NvidiaDeviceCountMismatch", HARDWARE, "fewer GPUs than the instance type has (dcgm_devices.go)"),
    Fault("DCGMDiagnosticFailure", HARDWARE, "a DCGM active diagnostic failed (off unless DCGM_DIAG_LEVEL > 0)"),
    Fault("DCGMError", MONITORING, "the agent cannot reach its DCGM host engine (dcgm_reconcile.go)"),
    *(Fault(xid_reason(x), _XID_CLASS.get(x, _BUCKET_CLASS[b]), f"XID {x} ({b})") for x, b in WELL_KNOWN_XIDS.items()),
)
FAULTS_BY_REASON = {f.reason: f for f in FAULTS}

#: Fatal reasons whose name carries a number the agent takes from DCGM (``DCGMHealthCode%d``, the
#: health watch's error code): no fixed list to override, so EKS's own action for
#: AcceleratedHardwareReady applies to them.
UNLISTED_FATAL_REASONS = ("DCGMHealthCode<n>",)
#: Warning reasons: a Kubernetes event on the node, never a condition: nothing to repair, the
#: library's alerts are what a person sees (AGENT reasons.yaml, DefaultSeverity Warning).
EVENT_ONLY_REASONS = (
    "NvidiaXID<n>Warning",
    "NvidiaPCIeError",
    "NvidiaPageRetirement",
    "NvidiaPowerError",
    "NvidiaThermalError",
    "NvidiaNCCLError",
    "DCGMFieldError<n>",
    "DCGMHealthCode<n>",
)

# ---------------------------------------------------------------------------------------------
# Node auto repair
# ---------------------------------------------------------------------------------------------

#: EKS's own action where a managed node group sends no overrides (``repair.overrides: false``): EKS
#: reboots or replaces the node per reason ("AcceleratedHardwareReady ... Repair after 10m ... Replace
#: or Reboot", EKS User Guide, node-repair), except where its table of the agent's reasons says
#: "None" (EKS User Guide, node-health-nma, AcceleratedHardware: DCGMDiagnosticFailure, DCGMError).
EKS_DEFAULT_ACTION = "eksDefault"
EKS_NO_ACTION_REASONS = ("DCGMDiagnosticFailure", "DCGMError")

#: EKS_API ``RepairAction`` enum.
REPAIR_ACTIONS = ("Replace", "Reboot", "NoAction")
#: EKS: "Repair after" 10m for AcceleratedHardwareReady; Karpenter's toleration is the same
#: (RepairPolicies ``TolerationDuration: 10 * time.Minute``).
DEFAULT_WAIT_MINUTES = 10
#: EKS: repair of a managed node group is off while it has more than five nodes and more than 20% of
#: them are unhealthy (the default when no threshold is set).
EKS_DEFAULT_UNHEALTHY_PERCENT = 20
EKS_DEFAULT_UNHEALTHY_FLOOR_NODES = 5
#: Karpenter's fixed bound: "Up to 20% of Nodes may be unhealthy before the NodePool becomes
#: unhealthy (or the nearest whole number, rounding up)" (controller.go ``allowedUnhealthyPercent``,
#: ``isNodePoolHealthy``); no setting changes it at 1.14.1. Its repair is the controller's
#: ``nodeRepair`` feature gate, one for every NodePool (chart values ``settings.featureGates.nodeRepair``,
#: off by default), always a replacement (EKS: "When using EKS Auto Mode or Karpenter all
#: AcceleratedHardwareReady repair actions are Replace"), and forced: it sets the NodeClaim's
#: termination timestamp to now (controller.go ``annotateTerminationGracePeriod``), so the drain
#: does not wait for PodDisruptionBudgets or do-not-disrupt.
KARPENTER_UNHEALTHY_PERCENT = 20
#: Karpenter's repair counter (controller's ``NodeClaimsUnhealthyDisruptedTotal``, health/metrics.go).
KARPENTER_REPAIR_METRIC = "karpenter_nodeclaims_unhealthy_disrupted_total"
#: The chart value of Karpenter's repair gate.
KARPENTER_REPAIR_GATE = "nodeRepair"
