"""The cold-start model of a GPU node group: from a pending pod and zero nodes to the pod running.

Pure and offline (no Pulumi, no I/O): it reads the group's plan (instance type, sharing mode, the
``coldStart`` levers) and the catalog (EBS bandwidth and instance store: catalog/storage.py), and
adds up figures. Every figure names its source; a figure no AWS, Kubernetes or NVIDIA text gives is
marked ``ASSUMPTION`` and says what it assumes. The totals are a model to compare settings with, not
a measurement: docs/cold-start.md says how far to trust them.

The path, in order (one step waits for the one before; what runs beside it is listed as parallel):
the Cluster Autoscaler's decision, EC2's launch and boot, the instance store's RAID0 (with
``localStorage``), nodeadm and kubelet's join, then the gpu-operator's operands on the new node (NFD
labels it, the operator schedules its operands, the validator's driver and toolkit checks gate the
device plugin, the MPS control daemon on MPS groups, kubelet reports the slots), then the image pull.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import catalog
from ..catalog.storage import INSTANCE_IO
from ..config.coldstart import (
    FAST_IMAGE_PULL_MIN_MEMORY_GIB,
    FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS,
    FAST_IMAGE_PULL_MIN_VCPUS,
    ColdStart,
    cold_start_problems,
    soci_store_on_root_volume,
)
from ..config.multinode import ONLY_RESERVATIONS
from ..plan.group import GroupPlan

ASSUMPTION = "ASSUMPTION"
#: EBS bandwidth is in MB/s, gp3 throughput in MiB/s.
MB_PER_MIB = 1.048576


@dataclass(frozen=True)
class Figure:
    """A number and where it comes from (``ASSUMPTION: ...`` when no document gives it)."""

    value: float
    source: str


#: Cluster Autoscaler's loop: ``--scan-interval`` defaults to 10s (kubernetes/autoscaler
#: cluster-autoscaler/FAQ.md "How does scale-up work?": "every 10 seconds", cluster-autoscaler-1.35.2); the
#: library's chart values leave it (autoscaler/values.py). A pod waits up to one interval.
CA_SCAN = Figure(
    10, 'Cluster Autoscaler --scan-interval default 10s (cluster-autoscaler FAQ.md "How does scale-up work?", 1.35.2)'
)
#: Karpenter's provisioner batches pending pods: a window closes after ``batchIdleDuration`` (1s)
#: without a new pod, at most ``batchMaxDuration`` (10s) after it opened (karpenter chart 1.14.1
#: values.yaml ``settings``; the library leaves both). A lone pod waits one idle window, a burst up to 10s.
KARPENTER_BATCH = Figure(
    10,
    "Karpenter batchMaxDuration default 10s, batchIdleDuration 1s (karpenter chart 1.14.1 values.yaml settings): "
    "a burst of pending pods is decided at most 10 s after the first",
)
EC2_BOOT = Figure(
    60,
    f"{ASSUMPTION}: ASG launch to the AL2023 NVIDIA AMI's user space (no AWS document gives a figure per type)",
)
RAID0_SETUP = Figure(
    5,
    f"{ASSUMPTION}: mdadm --create of the NVMe disks and mkfs.xfs (setup-local-disks, amazon-eks-ami v20260724); "
    "RAID0 has no initial resync (same script)",
)
NODE_JOIN = Figure(
    30,
    f"{ASSUMPTION}: nodeadm init, kubelet registration, aws-node (VPC CNI) ready; the node is Ready",
)
NFD_LABELS = Figure(
    10,
    f"{ASSUMPTION}: the NFD worker starts and labels the node feature.node.kubernetes.io/pci-10de.present, which "
    "the gpu-operator waits for (gpu-operator v26.7.0 controllers/state_manager.go)",
)
VALIDATOR_GATE = Figure(
    20,
    f"{ASSUMPTION}: the operator labels the node nvidia.com/gpu.deploy.*, the validator image is pulled, and its "
    "driver-validation and toolkit-validation init containers pass; the device plugin's toolkit-validation init "
    "container waits for them (gpu-operator v26.7.0 assets/state-operator-validation, assets/state-device-plugin)",
)
MPS_DAEMON = Figure(
    10,
    f"{ASSUMPTION}: the MPS control daemon (assets/state-mps-control-daemon, gpu-operator v26.7.0) starts before "
    "the device plugin serves MPS slots",
)
DEVICE_PLUGIN = Figure(
    15,
    f"{ASSUMPTION}: the device plugin image is pulled, the plugin starts and registers with kubelet",
)
NODE_STATUS = Figure(
    10,
    "kubelet nodeStatusUpdateFrequency default 10s (KubeletConfiguration v1beta1): the new allocatable reaches the "
    "API server within one update; until then CA holds the node 'GPU not ready' (its accelerator label) and the "
    "scheduler cannot bind (NVIDIA/gpu-operator#708: duplicate scale-ups while it is not yet advertised)",
)
PARALLEL_OPERANDS = (
    "GFD, dcgm-exporter and the validator's cuda and plugin checks run beside the device plugin and gate no "
    "workload pod (the plugin validation's workload pod is off from chart v25.10.1: WITH_WORKLOAD false in "
    "assets/state-operator-validation; on: v25.3.1)"
)
OTHER_SLOTS = Figure(
    5,
    f"{ASSUMPTION}: the other slots' pods use the image already on the node; their sandboxes and IPs (VPC CNI "
    "warm pool) start in parallel",
)
#: Pull and unpack rates.
UNPACKED_RATIO = Figure(2, f"{ASSUMPTION}: a CUDA image's layers unpack to twice their compressed size")
STREAM_MIBPS = Figure(60, f"{ASSUMPTION}: one layer download stream from ECR, MiB/s")
DEFAULT_STREAMS = Figure(
    3, "containerd CRI max_concurrent_downloads default 3 (containerd docs/cri/config.md); nodeadm leaves it"
)
FAST_STREAMS = Figure(
    20,
    "nodeadm FastImagePull: max_concurrent_downloads_per_image = 20 (amazon-eks-ami v20260724 "
    "nodeadm/internal/containerd/snapshotter/soci-snapshotter.config.toml)",
)
UNPACK_MIBPS = Figure(
    100, f"{ASSUMPTION}: one gzip decompression stream writes 100 MiB/s of unpacked layer (one CPU core)"
)
FAST_UNPACKS = Figure(
    12,
    "nodeadm FastImagePull: max_concurrent_unpacks_per_image = 12, unpigz (soci-snapshotter.config.toml, "
    "v20260724); at most one per vCPU here",
)
INSTANCE_STORE_MIBPS = Figure(
    1000,
    f"{ASSUMPTION}: sequential writes to one NVMe instance-store disk, MiB/s (EC2 documents their IOPS only); a RAID0 "
    "of n disks writes n times faster",
)


@dataclass(frozen=True)
class Step:
    """One step of the path: its name, seconds, and the source of the figure."""

    name: str
    seconds: float
    source: str
    #: What runs beside this step without gating it ("" for nothing).
    parallel: str = ""


@dataclass(frozen=True)
class ColdStartModel:
    """The path of one group's cold start for an image of ``image_gib`` (compressed) GiB."""

    group: str
    instance_type: str
    image_gib: float
    steps: tuple[Step, ...]
    #: Where containerd writes and at what rate, and what limits the pull (for the print).
    disk: str
    pull_bound: str
    slots: int
    #: When the path can start at all (a reserved group's window, ``capacity_note``); "" always.
    capacity: str = ""

    @property
    def first_pod_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def all_slots_seconds(self) -> float:
        return self.first_pod_seconds + (OTHER_SLOTS.value if self.slots > 1 else 0)


def fast_image_pull_applies(instance_type: str) -> bool:
    """nodeadm uses FastImagePull on this type (at least 4 vCPUs and 7 GiB: config/coldstart.py)."""
    t = catalog.GPU_INSTANCE_TYPES[instance_type]
    return t.vcpus >= FAST_IMAGE_PULL_MIN_VCPUS and t.memory_mib >= FAST_IMAGE_PULL_MIN_MEMORY_GIB * 1024


def disk_mibps(instance_type: str, cold: ColdStart, ami_release_version: str | None = None) -> tuple[float, str]:
    """The rate containerd's writes land at, and where: the instance store's RAID0, or the gp3 root
    volume capped by the instance's EBS bandwidth at burst (catalog/storage.py). FastImagePull writes
    to the SOCI snapshotter's store, which an AMI release before v20251217 leaves on the root volume
    (config/coldstart.py ``soci_store_on_root_volume``)."""
    io = INSTANCE_IO[instance_type]
    soci_on_root = fast_image_pull_applies(instance_type) and soci_store_on_root_volume(cold, ami_release_version)
    if cold.local_storage is not None and not soci_on_root:
        rate = INSTANCE_STORE_MIBPS.value * io.nvme_disks
        return rate, f"instance store RAID0 of {io.nvme_disks} NVMe disk(s): {rate:g} MiB/s ({ASSUMPTION})"
    ebs = io.ebs_max_mbps / MB_PER_MIB
    rate = min(cold.root_throughput_mibps, ebs)
    where = f"SOCI store on the root volume (AMI {ami_release_version}, before v20251217): " if soci_on_root else ""
    return rate, (
        f"{where}gp3 root volume {cold.root_throughput_mibps} MiB/s, instance EBS {io.ebs_max_mbps:g} MB/s at burst "
        f"(DescribeInstanceTypes): {rate:.0f} MiB/s"
    )


def pull_seconds(
    instance_type: str, cold: ColdStart, image_gib: float, ami_release_version: str | None = None
) -> tuple[float, str, str]:
    """Seconds to pull and unpack ``image_gib`` compressed GiB: the slowest of the download, the
    unpack and the disk writes (a pipeline over layers: the slowest stage sets the pace)."""
    fast = cold.fast_image_pull and fast_image_pull_applies(instance_type)
    compressed = image_gib * 1024
    unpacked = compressed * UNPACKED_RATIO.value
    streams = FAST_STREAMS.value if fast else DEFAULT_STREAMS.value
    unpacks = min(FAST_UNPACKS.value, catalog.GPU_INSTANCE_TYPES[instance_type].vcpus) if fast else 1
    rate, disk = disk_mibps(instance_type, cold, ami_release_version)
    stages = {
        f"download ({streams:g} streams)": compressed / (streams * STREAM_MIBPS.value),
        f"unpack ({unpacks:g} at a time)": unpacked / (unpacks * UNPACK_MIBPS.value),
        # containerd writes the compressed blob, then the unpacked snapshot (discard_unpacked_layers
        # = true deletes the blob afterwards: nodeadm config.template.toml, v20260724).
        "disk writes": (compressed + unpacked) / rate,
    }
    bound = max(stages, key=lambda k: stages[k])
    return stages[bound], bound, disk


def capacity_note(plan: GroupPlan) -> str:
    """When a reserved group's cold start can happen (issues 32, 41): a Capacity Block's nodes exist
    only inside its window (EC2 Auto Scaling User Guide, launch-template-capacity-blocks: launches into
    it before its start fail, and EC2 terminates what still runs at its end). A reservation targeted
    by id never falls back to On-Demand (EC2 User Guide, capacity-reservations-launch: an instance
    launches into a reservation only with its attributes, free capacity and the reservation active),
    so a managed group's launch beyond it fails; a Karpenter group falls back itself (its NodePool
    allows ``on-demand`` beside ``reserved``: plan/karpenter.py). A reservation group falls back
    unless the preference is ``capacity-reservations-only`` (EC2 User Guide, create-cr-group). The
    figures above assume capacity is there."""
    settings = plan.settings
    if settings.capacity_type == "CAPACITY_BLOCK":
        return (
            "only inside the Capacity Block's window (preflight prints its start and end): before it the launch "
            "fails and the pod stays pending (the Cluster Autoscaler backs the group off and retries; Karpenter finds "
            "no reserved offering); at its end EC2 terminates the nodes"
        )
    reservation = settings.capacity_reservation
    if reservation is None:
        return ""
    only = reservation.preference == ONLY_RESERVATIONS
    if reservation.id is not None:
        if settings.provider.picks_reserved_offerings:
            return (
                "into the Capacity Reservation while it has a free instance, else On-Demand (Karpenter's own "
                "fallback: EC2 never falls back from a reservation targeted by id)"
            )
        return (
            "only into the Capacity Reservation while it has a free instance: else the launch fails (EC2 does not "
            "fall back to On-Demand from a reservation targeted by id) and the pod stays pending"
        )
    if reservation.resource_group_arn is not None:
        if only:
            return "only into a reservation of the group while one has a free instance: else the launch fails"
        return "into a reservation of the group while one has a free instance, else On-Demand (EC2's fallback)"
    if only:
        return "only while an open Capacity Reservation has a free instance: else the launch fails"
    return ""


def cold_start_model(plan: GroupPlan, image_gib: float, cold: ColdStart | None = None) -> ColdStartModel:
    """The model of ``plan``'s group (its own levers, or ``cold`` to compare) for an image of
    ``image_gib`` compressed GiB, on the group's first instance type."""
    cold = plan.cold_start if cold is None else cold
    instance_type = plan.instance_types[0]
    pull, bound, disk = pull_seconds(instance_type, cold, image_gib, plan.settings.ami_release_version)
    streams = FAST_STREAMS if cold.fast_image_pull and fast_image_pull_applies(instance_type) else DEFAULT_STREAMS
    steps = [
        Step("Cluster Autoscaler sees the pending pod, raises the ASG", CA_SCAN.value, CA_SCAN.source)
        if plan.provider.auto_scaling_group
        else Step(
            "Karpenter batches the pending pods, creates a NodeClaim", KARPENTER_BATCH.value, KARPENTER_BATCH.source
        ),
        Step("EC2 launches and boots the instance", EC2_BOOT.value, EC2_BOOT.source),
    ]
    if cold.local_storage is not None:
        steps.append(Step("nodeadm builds the instance store's RAID0", RAID0_SETUP.value, RAID0_SETUP.source))
    steps += [
        Step("nodeadm and kubelet join, node Ready", NODE_JOIN.value, NODE_JOIN.source),
        Step("NFD labels the node as an NVIDIA node", NFD_LABELS.value, NFD_LABELS.source),
        Step(
            "operator operands scheduled; validator checks driver, toolkit", VALIDATOR_GATE.value, VALIDATOR_GATE.source
        ),
    ]
    if plan.sharing_mode == "mps":
        steps.append(Step("MPS control daemon starts", MPS_DAEMON.value, MPS_DAEMON.source))
    steps += [
        Step("device plugin registers the slots", DEVICE_PLUGIN.value, DEVICE_PLUGIN.source, PARALLEL_OPERANDS),
        Step("kubelet reports the slots; the pod is bound", NODE_STATUS.value, NODE_STATUS.source),
        Step(
            f"image pull of {image_gib:g} GiB, bound by {bound}",
            round(pull, 1),
            f"the slowest of: download {STREAM_MIBPS.value:g} MiB/s per stream ({STREAM_MIBPS.source.split(':')[0]}), "
            f"{streams.source}; "
            f"unpack {UNPACKED_RATIO.value:g}x at {UNPACK_MIBPS.value:g} MiB/s each ({ASSUMPTION}); disk: {disk}",
        ),
    ]
    return ColdStartModel(
        group=plan.name,
        instance_type=instance_type,
        image_gib=image_gib,
        steps=tuple(steps),
        disk=disk,
        pull_bound=bound,
        slots=plan.slots_per_node,
        capacity=capacity_note(plan),
    )


def lever_options(plan: GroupPlan) -> dict[str, ColdStart]:
    """The levers worth comparing for ``plan``'s group, by label: none, then the instance store (types
    that have one) or the fastest root volume the instance's EBS bandwidth uses (types without), then
    that with FastImagePull where nodeadm uses it and the disk gives its 600 MiB/s. Every option
    passes the settings' rules and raises no warning."""
    instance_type = plan.instance_types[0]
    disk = plan.settings.disk_size_gib
    if all(INSTANCE_IO[t].has_instance_store for t in plan.instance_types):
        base = {"localStorage": "RAID0"}
        label = "localStorage: RAID0"
    else:
        throughput = min(2000, int(min(INSTANCE_IO[t].ebs_max_mbps for t in plan.instance_types) / MB_PER_MIB))
        iops = min(max(3000, throughput * 4), 500 * disk)
        throughput = min(throughput, iops // 4)
        base = {"rootVolumeThroughput": throughput, "rootVolumeIops": iops}
        label = f"rootVolumeThroughput: {throughput}, rootVolumeIops: {iops}"
    options = {"no levers": ColdStart(), label: ColdStart.model_validate(base)}
    # FastImagePull only where nodeadm uses it and its doc's 600 MiB/s is there (the warning's rule),
    # and where the group's AMI release knows the gate (the settings' rule).
    fast_enough = "localStorage" in base or base["rootVolumeThroughput"] >= FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS
    fast = ColdStart.model_validate({**base, "fastImagePull": True})
    release = plan.settings.ami_release_version
    valid = not cold_start_problems(fast, plan.instance_types, disk, release)
    # Not where the pinned release leaves FastImagePull's store on the root volume (the warning's rule).
    if (
        fast_enough
        and valid
        and fast_image_pull_applies(instance_type)
        and not soci_store_on_root_volume(fast, release)
    ):
        options[f"{label}, fastImagePull"] = fast
    return options


def render_text(plans: tuple[GroupPlan, ...], image_gib: float, title: str) -> str:
    """The model of every group as text (``python -m tooling coldstart``)."""
    lines = [f"# Cold start from zero nodes: {title}, image {image_gib:g} GiB (compressed)", ""]
    for plan in plans:
        model = cold_start_model(plan, image_gib)
        lines.append(
            f"## group {plan.name}: {model.instance_type}, {model.slots} slot(s) per node, {plan.sharing_mode}"
        )
        if model.capacity:
            lines.append(f"  capacity: {model.capacity}")
        elapsed = 0.0
        for step in model.steps:
            elapsed += step.seconds
            lines.append(f"  {step.seconds:6.1f}s  (t={elapsed:6.1f}s)  {step.name}")
            lines.append(f"           source: {step.source}")
            if step.parallel:
                lines.append(f"           in parallel: {step.parallel}")
        lines.append(f"  first pod running: {model.first_pod_seconds:.0f}s")
        lines.append(f"  all {model.slots} slot(s) running: {model.all_slots_seconds:.0f}s ({OTHER_SLOTS.source})")
        lines.append("  levers (first pod running, image pull):")
        for label, cold in lever_options(plan).items():
            other = cold_start_model(plan, image_gib, cold)
            lines.append(
                f"    {other.first_pod_seconds:6.0f}s  {other.steps[-1].seconds:6.1f}s  {label}  ({other.pull_bound})"
            )
        lines.append("")
    return "\n".join(lines)
