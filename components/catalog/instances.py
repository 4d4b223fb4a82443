"""The NVIDIA GPU instance types EKS runs on the AL2023 NVIDIA AMIs: one row per type, one
``GpuFamily`` per family for what all its sizes share.

Sources, and which one wins where they disagree:

* vCPUs, memory, GPU count and memory per GPU: ``ec2:DescribeInstanceTypes`` as botocore 1.44.5 /
  moto 5.2.5 record it (``moto/ec2/resources/instance_types.json.gz``, pinned in requirements.txt);
  tests/test_families.py checks every row against that file, and preflight against the live API.
  The Cluster Autoscaler's static list (cloudprovider/aws/ec2_instance_types.go,
  cluster-autoscaler-1.35.2) agrees on vCPUs, memory, GPU count and architecture for every row
  but p5e.48xlarge, which it lacks; CA builds its list from DescribeInstanceTypes at start
  (aws_cloud_provider.go BuildAWS, unless ``--aws-use-static-instance-list``; our CA IAM policy
  allows the call), so it knows p5e too, with EC2's numbers.
* Max pods: the ENI number (``eni_max_pods``) from awslabs/amazon-eks-ami ``eni-max-pods.txt``
  (v20260318) and nodeadm's ``instance-info.jsonl`` (v20260724), both in ../shared/reference/eks;
  the tests check each row against both. The kubelet's ``maxPods`` (``max_pods``) is that number
  capped by EKS managed node groups (``MANAGED_MAX_PODS_CAP``, below).
* Which AMI serves a family: EKS user guide, "Use EKS-optimized accelerated AMIs for GPU instances"
  (ml-eks-optimized-ami): AL2023 x86_64 NVIDIA serves p5, p5e, p5en, p4d, p4de, gr6, g6, g6e, g6f,
  gr6f, g5, g4dn; AL2023 ARM NVIDIA serves g5g (and the p6e-gb200/gb300 UltraServers).
* Which kernel module the AMI loads: amazon-eks-ami ``templates/al2023/runtime/gpu/
  nvidia-kmod-load.sh`` (v20260724): g4dn, g5, g5g get the proprietary ``nvidia`` module with the
  GSP disabled; the L4 vGPU slices (PCI subdevices L4-3Q, L4-6Q, L4-12Q: g6f, gr6f) the GRID guest
  module ``nvidia-open-grid``; every other GPU here is in ``nvidia-open-supported-devices-580.txt``
  and gets ``nvidia-open``. The driver branch is 580 (``variables-default.json``); from release
  v20260917 the AMI carries 580 and 595 and picks one per instance type at first boot
  (amazon-eks-ami#2768), and 595 does not run on G6f (``doc/usage/g7-ami.md``), so G6f keeps 580.

Not here: the NVIDIA families of ``EXCLUDED_GPU_FAMILIES`` (g7, g7e, p6-b200, p6-b300, p6e-gb200,
p6e-gb300, p3, p3dn), each with why; a group naming one is refused with that reason.

Fractional GPUs (g6f, gr6f). EC2 reports ``Count: 0`` for them with the slice's memory
(g6f.large: 2,861 MiB, 1/8 of the L4's 22,888), and so does CA's static list (``GPU: 0``). Inside
the instance the vGPU is one PCI device (an L4-3Q/6Q/12Q subdevice, above) that the GRID driver
presents as one CUDA device; the NVIDIA device plugin advertises one ``nvidia.com/gpu`` per NVML
device, so a node advertises exactly one. The catalog therefore records ``gpus = 1`` (what the
scheduler sees, the GPU-count label: never 0, or neither the NFD worker nor CA's scale-from-zero
would treat the node as a GPU node) and ``ec2_gpus = 0`` (what EC2 and CA report), and the slice's
memory (the vGPU profile's framebuffer, as EC2 reports it) as memory per GPU. We trust EC2 for the
memory and our reading of the AMI for the advertised count; preflight checks the EC2 half.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

#: NVIDIA GPU families EKS runs that the catalog leaves out, and why (the settings' error says it).
#: tests/test_families.py checks that every NVIDIA family in moto's DescribeInstanceTypes data is
#: either in ``FAMILIES`` or here.
EXCLUDED_GPU_FAMILIES: dict[str, str] = {
    "g7": "its RTX PRO 4500 (Blackwell) needs NVIDIA driver 595, which the AL2023 NVIDIA AMI ships only from "
    "release v20260917 (amazon-eks-ami#2768, fixed by #2819), newer than the EKS max-pods tables the catalog "
    "is checked against",
    **dict.fromkeys(
        ("g7e", "p6-b200", "p6-b300"),
        "it is Blackwell, and the gpu-operator chart versions here were not checked against Blackwell "
        "(dcgm-exporter, validator)",
    ),
    **dict.fromkeys(("p6e-gb200", "p6e-gb300"), "it is UltraServer-only arm64 capacity"),
    **dict.fromkeys(("p3", "p3dn"), "its V100 is a previous generation"),
}

#: Sharing modes a family allows (the device plugin's ``sharing`` block): time-slicing and MPS.
TIME_SLICING = "time-slicing"
MPS = "mps"
WHOLE_GPU_SHARING: frozenset[str] = frozenset({TIME_SLICING, MPS})


@dataclass(frozen=True)
class GpuFamily:
    """What every size of one EC2 GPU family shares."""

    name: str
    #: GPU model as EC2 names it (``GpuInfo.Gpus[].Name``).
    gpu_model: str
    #: Memory of one whole GPU (``GpuInfo.Gpus[].MemoryInfo.SizeInMiB``).
    gpu_memory_mib: int
    #: EC2 ``ProcessorInfo.SupportedArchitectures``.
    architecture: str
    #: The GPU has MIG (A100, H100, H200): gpu-operator then runs mig-manager on the node.
    supports_mig: bool
    #: The kernel module the AL2023 NVIDIA AMI loads (nvidia-kmod-load.sh, see the module docstring).
    kernel_module: str
    #: Sharing modes a group of this family may use (empty: none, replicas must stay 1).
    sharing: frozenset[str]
    #: Why a sharing mode is missing from ``sharing`` (the settings' error says it).
    no_sharing_reason: str = ""
    #: vGPU slices: the physical GPU is shared by the hypervisor and EC2 reports 0 GPUs.
    fractional: bool = False
    #: The first EKS AL2023 NVIDIA AMI release (``yyyymmdd`` of ``<x.y.z>-<yyyymmdd>``) whose driver
    #: runs this family, where a source says so; "": every release we know of.
    min_ami_release: str = ""
    #: Memory of one whole GPU as the NVIDIA driver reports it (sources above ``_whole_gpu_family``);
    #: None for vGPU slices, whose framebuffer is EC2's figure for the vGPU profile.
    driver_memory_mib: int | None = None


@dataclass(frozen=True)
class GpuInstanceType:
    """What the library assumes about one EC2 GPU instance type.

    The numbers are the ones ``ec2:DescribeInstanceTypes`` reports (``VCpuInfo``,
    ``MemoryInfo``, ``GpuInfo``); the preflight check compares them with the live API
    so a wrong row here is caught before it mislabels nodes.
    """

    name: str
    vcpus: int
    memory_mib: int
    #: GPUs the device plugin advertises per node: the physical GPUs, or 1 for a vGPU slice.
    gpus: int
    gpu_model: str
    #: Memory of one advertised GPU: a whole GPU's, or the vGPU profile's framebuffer.
    gpu_memory_mib_per_gpu: int
    supports_mig: bool
    #: Pods the VPC CNI defaults (no prefix delegation) give the type: ENIs x (IPv4 addresses per
    #: ENI - 1) + 2 on the default network card. nodeadm computes it from its embedded
    #: ``instance-info.jsonl`` (awslabs/amazon-eks-ami nodeadm/internal/kubelet/eni_max_pods.go);
    #: the same numbers as the older ``eni-max-pods.txt`` table. tests/test_device_plugin_rules.py
    #: checks both. Not the kubelet's ``maxPods`` on our nodes: see ``max_pods``.
    eni_max_pods: int
    family: GpuFamily
    #: The share of one physical GPU a vGPU slice holds (g6f.large: 1/8); None: whole GPUs.
    gpu_fraction: Fraction | None = None
    #: NVIDIA vGPU profile of the slice (the PCI subdevice nvidia-kmod-load.sh matches).
    vgpu_profile: str | None = None

    @property
    def architecture(self) -> str:
        return self.family.architecture

    @property
    def max_pods(self) -> int:
        """The kubelet's ``maxPods`` on a node of this type in our managed node groups: the ENI
        number capped by EKS (``managed_max_pods_cap``)."""
        return min(self.eni_max_pods, managed_max_pods_cap(self.vcpus))

    @property
    def driver_memory_mib_per_gpu(self) -> int:
        """Memory of one advertised GPU as the driver reports it (``GpuFamily.driver_memory_mib``; a
        vGPU slice's is its profile's framebuffer, EC2's figure)."""
        driver = self.family.driver_memory_mib
        return driver if driver is not None else self.gpu_memory_mib_per_gpu

    def memory_per_client_mib(self, replicas: int) -> int:
        """GPU memory each of ``replicas`` clients of one GPU gets: the MPS control daemon's limit
        (driver-reported memory / replicas), and the fair share under time-slicing."""
        return self.driver_memory_mib_per_gpu // replicas

    @property
    def ec2_gpus(self) -> int:
        """The GPU count EC2 (and CA's static list) report: 0 for a vGPU slice."""
        return 0 if self.gpu_fraction is not None else self.gpus

    @property
    def accelerator(self) -> str:
        return ACCELERATOR_LABEL_VALUES[self.gpu_model]

    @property
    def sharing(self) -> frozenset[str]:
        """Sharing modes a group of this type may use (``TIME_SLICING``, ``MPS``)."""
        return self.family.sharing


#: The cap EKS managed node groups put on the kubelet's ``maxPods`` when the node group uses an
#: EKS AMI (an ``amiType``, no AMI ID in the launch template: ours, blocks/managed.py): 110 for
#: instances with less than 30 vCPUs, 250 for all others, "whether prefix delegation is enabled or
#: not" (EKS User Guide, "Increase the available IP addresses for your Amazon EKS node",
#: cni-increase-ip-addresses-procedure in latest/ug/networking/eks-networking-add-ons.adoc, and
#: "Create a managed node group", latest/ug/nodes/create-managed-node-group.adoc, at
#: awsdocs/amazon-eks-user-guide 4d52b4d; the note came with awsdocs/amazon-eks-user-guide#663).
#: On AL2023 EKS writes it as ``maxPods`` in a NodeConfig of its own in the node's user data
#: (eksctl-io/eksctl#8037). The AMI's former max-pods-calculator.sh (amazon-eks-ami v20260304,
#: templates/al2/runtime) draws the line at ``-gt 30``; no type in this catalog has exactly 30
#: vCPUs, so both readings agree here (tests/test_device_plugin_rules.py).
MANAGED_MAX_PODS_CAP_BELOW_30_VCPUS = 110
MANAGED_MAX_PODS_CAP = 250


def managed_max_pods_cap(vcpus: int) -> int:
    """The ``maxPods`` cap of an EKS managed node group's node with ``vcpus`` vCPUs."""
    return MANAGED_MAX_PODS_CAP_BELOW_30_VCPUS if vcpus < 30 else MANAGED_MAX_PODS_CAP


#: Value of the ``k8s.amazonaws.com/accelerator`` node label per GPU model. Cluster Autoscaler's
#: AWS provider lists the GPU types it knows (cloudprovider/aws/aws_cloud_provider.go
#: ``availableGPUTypes``, tag cluster-autoscaler-1.35.2): nvidia-tesla-t4, nvidia-a10g, nvidia-l4,
#: nvidia-l40s, nvidia-tesla-a100 (and k80, p100, v100). CA reads the label's presence to hold a
#: node as "GPU not ready" (processors/customresources/gpu_processor.go); the value only names the
#: GPU in its metrics, where a type outside that list counts as "generic"
#: (utils/gpu/gpu.go GetGpuInfoForMetrics). The H100, H200 and T4G are not in the list: their
#: values follow the same ``nvidia-<model>`` pattern and work the same way. The L4 vGPU slices
#: carry the L4's value: it is an L4 (CA knows it), and groups never mix slices with whole GPUs.
ACCELERATOR_LABEL_VALUES: dict[str, str] = {
    "T4": "nvidia-tesla-t4",
    "T4g": "nvidia-t4g",
    "A10G": "nvidia-a10g",
    "L4": "nvidia-l4",
    "L40S": "nvidia-l40s",
    "A100": "nvidia-tesla-a100",
    "H100": "nvidia-h100",
    "H200": "nvidia-h200",
}

_VGPU_NO_SHARING = (
    "a g6f/gr6f vGPU slice is already a time-sliced share of an L4, scheduled by the hypervisor; "
    "neither NVIDIA (k8s-device-plugin, gpu-operator) nor AWS documents time-slicing or MPS on top "
    "of a vGPU slice, so the library does not offer it: one pod per slice, or whole L4s (g6, gr6) to share"
)

_PROPRIETARY_NO_GSP = "nvidia (proprietary, GSP disabled)"

#: The AL2023 NVIDIA AMI builds and loads the GRID guest module ``nvidia-open-grid`` for the L4
#: vGPU subdevices (L4-3Q/6Q/12Q) from awslabs/amazon-eks-ami commit d8f3b70a, "feat(al2023/nvidia):
#: add GRID driver support" (#2265, 2025-06-04; install-nvidia-driver.sh archive-grid-kmod,
#: nvidia-kmod-load.sh device-supports-grid), first in release v20250610 (``git tag --contains
#: d8f3b70a``). Older releases load ``nvidia-open``, which does not drive a vGPU slice.
_GRID_AMI_RELEASE = "20250610"


#: Memory of one whole GPU as the NVIDIA driver reports it (NVML ``memory.total``: what
#: ``nvidia-smi`` prints as "0MiB / <total>MiB"), per family (``GpuFamily.driver_memory_mib``).
#: This, not EC2's ``SizeInMiB``, is what a process can allocate and what the MPS control daemon
#: divides by the replicas (k8s-device-plugin cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits,
#: ``device.TotalMemory`` from NVML; v0.17.2, v0.18.1, v0.20.0). Read from nvidia-smi outputs
#: published on GitHub for each model: "Tesla T4 ... 15360MiB" (and "NVIDIA A10G, 23028 MiB",
#: "NVIDIA L4, 23034 MiB" in the same table, driver 595.91.07), "NVIDIA T4G ... 15360MiB",
#: "NVIDIA L40S ... 46068MiB" (driver 550.163.01), "NVIDIA A100-SXM4-40GB ... 40960MiB",
#: "NVIDIA A100-SXM4-80GB ... 81920MiB", "NVIDIA H100 80GB HBM3 ... 81559MiB", "NVIDIA H200 ...
#: 143771MiB". EC2 overstates the T4/T4g (16,384), H100 (81,920) and H200 (144,384) and
#: understates the A10G, L4 (22,888) and L40S (45,776). vGPU slices (g6f, gr6f) have none:
#: their framebuffer is EC2's figure for the vGPU profile.
def _whole_gpu_family(
    name: str,
    gpu_model: str,
    ec2_memory_mib: int,
    driver_memory_mib: int,
    kernel_module: str,
    architecture: str = "x86_64",
    mig: bool = False,
) -> GpuFamily:
    """A family of whole GPUs (time-slicing and MPS): EC2's memory per GPU, then the driver's."""
    return GpuFamily(
        name,
        gpu_model,
        ec2_memory_mib,
        architecture,
        mig,
        kernel_module,
        WHOLE_GPU_SHARING,
        driver_memory_mib=driver_memory_mib,
    )


def _l4_vgpu_family(name: str) -> GpuFamily:
    """g6f and gr6f: slices of an L4 through NVIDIA vGPU, the GRID guest module, no sharing."""
    return GpuFamily(
        name,
        "L4",
        22888,
        "x86_64",
        False,
        "nvidia-open-grid",
        frozenset(),
        _VGPU_NO_SHARING,
        fractional=True,
        min_ami_release=_GRID_AMI_RELEASE,
    )


FAMILIES: dict[str, GpuFamily] = {
    f.name: f
    for f in (
        _whole_gpu_family("g4dn", "T4", 16384, 15360, _PROPRIETARY_NO_GSP),
        _whole_gpu_family("g5", "A10G", 22888, 23028, _PROPRIETARY_NO_GSP),
        _whole_gpu_family("g5g", "T4g", 16384, 15360, _PROPRIETARY_NO_GSP, architecture="arm64"),
        _whole_gpu_family("g6", "L4", 22888, 23034, "nvidia-open"),
        _whole_gpu_family("gr6", "L4", 22888, 23034, "nvidia-open"),
        _whole_gpu_family("g6e", "L40S", 45776, 46068, "nvidia-open"),
        _whole_gpu_family("p4d", "A100", 40960, 40960, "nvidia-open", mig=True),
        _whole_gpu_family("p4de", "A100", 81920, 81920, "nvidia-open", mig=True),
        _whole_gpu_family("p5", "H100", 81920, 81559, "nvidia-open", mig=True),
        _whole_gpu_family("p5e", "H200", 144384, 143771, "nvidia-open", mig=True),
        _whole_gpu_family("p5en", "H200", 144384, 143771, "nvidia-open", mig=True),
        _l4_vgpu_family("g6f"),
        _l4_vgpu_family("gr6f"),
    )
}

#: Per family, the GPU memory the driver reports (whole GPUs only; the source is above FAMILIES).
DRIVER_MEMORY_MIB: dict[str, int] = {
    name: f.driver_memory_mib for name, f in FAMILIES.items() if f.driver_memory_mib is not None
}

#: vGPU profile per L4 share (nvidia-kmod-load.sh NVIDIA_GRID_SUBDEVICES: 27b8:1733 L4-3Q,
#: 27b8:1735 L4-6Q, 27b8:1737 L4-12Q; the Q profiles' framebuffer is 3, 6 and 12 GB, and EC2
#: reports the usable part: 2,861, 5,722 and 11,444 MiB).
_L4_VGPU_PROFILES: dict[Fraction, str] = {
    Fraction(1, 8): "L4-3Q",
    Fraction(1, 4): "L4-6Q",
    Fraction(1, 2): "L4-12Q",
}


def _row(
    family: str, size: str, vcpus: int, memory_gib: int, gpus: int | Fraction, eni_max_pods: int
) -> GpuInstanceType:
    fam = FAMILIES[family]
    fraction = gpus if isinstance(gpus, Fraction) else None
    return GpuInstanceType(
        name=f"{family}.{size}",
        vcpus=vcpus,
        memory_mib=memory_gib * 1024,
        gpus=1 if fraction is not None else int(gpus),
        gpu_model=fam.gpu_model,
        gpu_memory_mib_per_gpu=int(fam.gpu_memory_mib * fraction) if fraction is not None else fam.gpu_memory_mib,
        supports_mig=fam.supports_mig,
        eni_max_pods=eni_max_pods,
        family=fam,
        gpu_fraction=fraction,
        vgpu_profile=_L4_VGPU_PROFILES[fraction] if fraction is not None else None,
    )


_8TH, _4TH, _HALF = Fraction(1, 8), Fraction(1, 4), Fraction(1, 2)

#: Every GPU instance type a GPU node group accepts: the single source of truth for the GPU-count
#: label, the advertised ``nvidia.com/gpu`` capacity, the verification Jobs, the autoscaler tags
#: and preflight.
GPU_INSTANCE_TYPES: dict[str, GpuInstanceType] = {
    t.name: t
    for t in (
        #    family  size       vCPUs  GiB  GPUs  ENI max pods
        _row("g4dn", "xlarge", 4, 16, 1, 29),
        _row("g4dn", "2xlarge", 8, 32, 1, 29),
        _row("g4dn", "4xlarge", 16, 64, 1, 29),
        _row("g4dn", "8xlarge", 32, 128, 1, 58),
        _row("g4dn", "16xlarge", 64, 256, 1, 58),
        _row("g4dn", "12xlarge", 48, 192, 4, 234),
        _row("g4dn", "metal", 96, 384, 8, 737),
        _row("g5", "xlarge", 4, 16, 1, 58),
        _row("g5", "2xlarge", 8, 32, 1, 58),
        _row("g5", "4xlarge", 16, 64, 1, 234),
        _row("g5", "8xlarge", 32, 128, 1, 234),
        _row("g5", "16xlarge", 64, 256, 1, 234),
        _row("g5", "12xlarge", 48, 192, 4, 737),
        _row("g5", "24xlarge", 96, 384, 4, 737),
        _row("g5", "48xlarge", 192, 768, 8, 345),
        _row("g5g", "xlarge", 4, 8, 1, 58),
        _row("g5g", "2xlarge", 8, 16, 1, 58),
        _row("g5g", "4xlarge", 16, 32, 1, 234),
        _row("g5g", "8xlarge", 32, 64, 1, 234),
        _row("g5g", "16xlarge", 64, 128, 2, 737),
        _row("g5g", "metal", 64, 128, 2, 737),
        _row("g6", "xlarge", 4, 16, 1, 58),
        _row("g6", "2xlarge", 8, 32, 1, 58),
        _row("g6", "4xlarge", 16, 64, 1, 234),
        _row("g6", "8xlarge", 32, 128, 1, 234),
        _row("g6", "16xlarge", 64, 256, 1, 737),
        _row("g6", "12xlarge", 48, 192, 4, 234),
        _row("g6", "24xlarge", 96, 384, 4, 737),
        _row("g6", "48xlarge", 192, 768, 8, 737),
        _row("gr6", "4xlarge", 16, 128, 1, 234),
        _row("gr6", "8xlarge", 32, 256, 1, 234),
        _row("g6e", "xlarge", 4, 32, 1, 58),
        _row("g6e", "2xlarge", 8, 64, 1, 58),
        _row("g6e", "4xlarge", 16, 128, 1, 234),
        _row("g6e", "8xlarge", 32, 256, 1, 234),
        _row("g6e", "16xlarge", 64, 512, 1, 737),
        _row("g6e", "12xlarge", 48, 384, 4, 292),
        _row("g6e", "24xlarge", 96, 768, 4, 492),
        _row("g6e", "48xlarge", 192, 1536, 8, 492),
        _row("p4d", "24xlarge", 96, 1152, 8, 737),
        _row("p4de", "24xlarge", 96, 1152, 8, 737),
        _row("p5", "4xlarge", 16, 256, 1, 118),
        _row("p5", "48xlarge", 192, 2048, 8, 100),
        _row("p5e", "48xlarge", 192, 2048, 8, 100),
        _row("p5en", "48xlarge", 192, 2048, 8, 198),
        _row("g6f", "large", 2, 8, _8TH, 20),
        _row("g6f", "xlarge", 4, 16, _8TH, 58),
        _row("g6f", "2xlarge", 8, 32, _4TH, 58),
        _row("g6f", "4xlarge", 16, 64, _HALF, 234),
        _row("gr6f", "4xlarge", 16, 128, _HALF, 234),
    )
}

#: The host-network DaemonSet pods of every node (vpc-cni's aws-node, kube-proxy): counted in max pods.
NODE_DAEMONSET_PODS: tuple[str, ...] = ("aws-node", "kube-proxy")

#: The DaemonSet pods every GPU node runs, which count against its max pods. Derived from what
#: this library installs (README "What it builds") and the operands the operator deploys with
#: our values; tests/test_device_plugin_rules.py checks the operator half per chart version:
#: - EKS add-ons: pulumi-eks installs vpc-cni (aws-node) and kube-proxy; CoreDNS is a
#:   Deployment on the system nodes; no eks-pod-identity-agent add-on is installed.
#: - gpu-operator (v25.3.1, v25.10.1, v26.7.0; controllers/state_manager.go gpuStateLabels for
#:   the ``container`` workload config; assets/state-*/ DaemonSet nodeSelectors): device plugin,
#:   GFD, dcgm-exporter and operator-validator. Not on our nodes: driver and container-toolkit
#:   (disabled), standalone dcgm and node-status-exporter (disabled by the chart), mig-manager
#:   (only MIG-capable GPUs: see ``daemonset_pods``), MPS control daemon (only
#:   ``nvidia.com/mps.capable`` nodes), the sandbox/vGPU/kata/cc operands (only with
#:   sandboxWorkloads, disabled).
#: - the node-feature-discovery worker (the chart's subchart; runs on every GPU node).
#: The validators' run-to-completion pods (cuda, plugin) end Succeeded and do not count.
GPU_NODE_DAEMONSET_PODS: tuple[str, ...] = (
    *NODE_DAEMONSET_PODS,
    "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery",
    "nvidia-dcgm-exporter",
    "nvidia-operator-validator",
    "gpu-operator-node-feature-discovery-worker",
)
#: On MIG-capable GPUs (A100, H100, H200) the operator also labels the node
#: ``nvidia.com/gpu.deploy.mig-manager`` (GFD's ``nvidia.com/mig.capable=true``; the chart's
#: ``migManager.enabled`` defaults to true), so mig-manager runs there without a MIG group; with one it
#: is off (gpu_operator/values.py ``mig_manager_values``) and still counted: one pod on the safe side.
MIG_MANAGER_POD = "nvidia-mig-manager"


#: On a node whose sharing profile is MPS the operator adds the MPS control daemon
#: (assets/state-mps-control-daemon, nodeSelector ``nvidia.com/mps.capable: "true"``, a label GFD sets
#: only on MPS nodes: NVIDIA/k8s-device-plugin internal/lm/nvml.go newSharingLabeler).
MPS_CONTROL_DAEMON_POD = "nvidia-device-plugin-mps-control-daemon"


#: With the CloudWatch pipeline (``observability.pipeline`` cloudwatch or both), the
#: ``amazon-cloudwatch-observability`` EKS add-on (aws-observability/helm-charts
#: charts/amazon-cloudwatch-observability, chart 6.4.0) runs on every Linux node, the GPU nodes
#: included (its default ``tolerations: [{operator: Exists}]``): the CloudWatch agent
#: (templates/linux/cloudwatch-agent-custom-resource.yaml, ``agent.mode: daemonset``) and Fluent Bit
#: (templates/linux/fluent-bit-daemonset.yaml, ``containerLogs.enabled: true``). Both are
#: host-network: they take pod slots, not subnet addresses. (node-exporter and kube-state-metrics
#: only run with ``otelContainerInsights.enabled``, false by default.)
CLOUDWATCH_NODE_DAEMONSET_PODS: tuple[str, ...] = ("cloudwatch-agent", "fluent-bit")
#: ... and its own dcgm-exporter (templates/linux/dcgm-exporter-daemonset.yaml, a ``DcgmExporter``
#: the add-on's operator runs as a DaemonSet) on the GPU types of the chart's ``dcgmExporter``
#: node affinity (``node.kubernetes.io/instance-type`` In a list; values.yaml at 71a298f, chart
#: 6.4.0, ``dcgmExporter.affinity`` lines ~893-894 list gr6.4xlarge and gr6.8xlarge, there since
#: 29c25f7 "Release 2.1.2"): every type of ours but these.
CLOUDWATCH_DCGM_EXPORTER_POD = "dcgm-exporter"
CLOUDWATCH_DCGM_EXPORTER_ABSENT: frozenset[str] = frozenset(
    {
        "p5.4xlarge",
        "g6f.large",
        "g6f.xlarge",
        "g6f.2xlarge",
        "g6f.4xlarge",
        "gr6f.4xlarge",
    }
)


#: The EKS node monitoring agent add-on on GPU nodes (``cluster.node_monitoring``): the agent
#: (templates/daemonset.yaml; host network, but kubelet's max pods counts it) and, on amd64, its
#: ``dcgm-server`` nv-hostengine (templates/dcgm-daemonset.yaml; aws/eks-node-monitoring-agent v1.7.0).
NODE_MONITORING_AGENT_POD = "eks-node-monitoring-agent"
NODE_MONITORING_DCGM_POD = "dcgm-server"


def node_daemonset_pods(cloudwatch: bool = False) -> tuple[str, ...]:
    """The DaemonSet pods every node runs, system nodes included (``cloudwatch``: the CloudWatch
    pipeline's add-on is installed)."""
    return NODE_DAEMONSET_PODS + (CLOUDWATCH_NODE_DAEMONSET_PODS if cloudwatch else ())


def daemonset_pods(
    instance_type: str, mps: bool = False, cloudwatch: bool = False, node_monitoring: bool = False
) -> tuple[str, ...]:
    """The DaemonSet pods a GPU node of ``instance_type`` runs (``mps``: its profile is MPS;
    ``cloudwatch``: the CloudWatch pipeline's add-on is installed; ``node_monitoring``: the node
    monitoring agent's)."""
    extra = (MIG_MANAGER_POD,) if GPU_INSTANCE_TYPES[instance_type].supports_mig else ()
    extra += (MPS_CONTROL_DAEMON_POD,) if mps else ()
    if cloudwatch:
        extra += CLOUDWATCH_NODE_DAEMONSET_PODS
        extra += () if instance_type in CLOUDWATCH_DCGM_EXPORTER_ABSENT else (CLOUDWATCH_DCGM_EXPORTER_POD,)
    if node_monitoring:
        extra += (NODE_MONITORING_AGENT_POD,)
        amd64 = GPU_INSTANCE_TYPES[instance_type].architecture == "x86_64"
        extra += (NODE_MONITORING_DCGM_POD,) if amd64 else ()
    return GPU_NODE_DAEMONSET_PODS + extra


def interchangeable(a: GpuInstanceType, b: GpuInstanceType) -> bool:
    """Whether one node group may mix ``a`` and ``b``: the scheduler sees the same slots on both
    (same GPU model, same memory per advertised GPU, same GPU count) and one AMI boots both."""
    return (a.gpu_model, a.gpu_memory_mib_per_gpu, a.gpus, a.architecture) == (
        b.gpu_model,
        b.gpu_memory_mib_per_gpu,
        b.gpus,
        b.architecture,
    )
