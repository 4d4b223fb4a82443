"""The cold-start levers of a GPU node group (``gpuNodeGroups[].coldStart``): where the node keeps its
images, how fast its root volume is, and how containerd pulls. All opt-in: each changes the launch
template (user data or block device), which rolls the group's nodes. Which lever is worth a roll,
and what the cold-start model says each saves: docs/cold-start.md. The consumer of each value, whose
rule is the one here:

* ``localStorage``: nodeadm ``spec.instance.localStorage.strategy`` (NodeConfig CRD,
  ../shared/reference/nodeadm) runs ``setup-local-disks raid0`` (awslabs/amazon-eks-ami v20260724,
  nodeadm/internal/system/local_disk.go; templates/al2023/runtime/bin/setup-local-disks), which
  without ``NVMe_Instance_Storage`` disks prints "no NVMe instance storage disks found!" and exits 0:
  a type without them (g5g: catalog/storage.py) is refused.
* ``rootVolumeThroughput``, ``rootVolumeIops``: the gp3 root volume of the launch template
  (blocks/managed.py); ranges from botocore 1.44.5 ``ec2`` LaunchTemplateEbsBlockDeviceRequest, the
  ratios from the EBS User Guide, "General Purpose SSD volumes"; EC2's defaults (125 MiB/s, 3,000
  IOPS) when not given.
* ``fastImagePull``: nodeadm ``spec.featureGates.FastImagePull`` (experimental; nodeadm/api/v1alpha1/
  nodeconfig_types.go), used only from 7 GiB and 4,000 millicores (nodeadm/internal/containerd/
  config.go ``UseSOCISnapshotter``), with a root volume of at least 600 MiB/s (nodeadm/doc/
  examples.md, "Enabling fast image pull"); known by that name from v20250821 (before:
  ``AggressiveImagePull``; unknown gates are ignored); the SOCI store moves to the instance store from
  v20251217 (commit 89cf1baf, PR #2548).
* Not offered, ``maxParallelImagePulls``: nodeadm writes ``serializeImagePulls: false`` with no limit
  (nodeadm/internal/kubelet/config.go); and the NodeConfig CRD's generated schema types every
  ``spec.kubelet.config`` value as an object (``additionalProperties: {type: object}``), which the
  library's check of each NodeConfig against it (tests/test_nodeconfig.py) would refuse for a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import ConfigDict, Field

from ..catalog import AMI_RELEASE_VERSION_PATTERN
from ..catalog.storage import INSTANCE_IO
from .errors import KeyedProblem
from .fields import _Model, doc

GP3_MIN_THROUGHPUT_MIBPS = 125
GP3_MAX_THROUGHPUT_MIBPS = 2000
GP3_MIN_IOPS = 3000
GP3_MAX_IOPS = 80000
#: EBS User Guide, "General Purpose SSD volumes" (gp3): throughput per IOPS, IOPS per GiB.
GP3_MAX_MIBPS_PER_IOPS = 0.25
GP3_MAX_IOPS_PER_GIB = 500
#: nodeadm/doc/examples.md (v20260724): the root throughput FastImagePull wants.
FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS = 600
#: nodeadm/internal/containerd/config.go UseSOCISnapshotter (v20260724): memory and CPU it needs.
FAST_IMAGE_PULL_MIN_MEMORY_GIB = 7
FAST_IMAGE_PULL_MIN_VCPUS = 4
#: The first amazon-eks-ami release whose nodeadm reads ``FastImagePull`` (v20250821: commit 28454ab9
#: "rename feature flag"; v20250819's nodeadm/internal/api/types.go has ``AggressiveImagePull`` only).
FAST_IMAGE_PULL_MIN_AMI_RELEASE = "20250821"
#: The first amazon-eks-ami release whose setup-local-disks bind-mounts the SOCI snapshotter's store
#: onto the instance store (v20251217: commit 89cf1baf, PR #2548; module docstring).
SOCI_ON_LOCAL_STORAGE_MIN_AMI_RELEASE = "20251217"


def soci_store_on_root_volume(cold: ColdStart, ami_release_version: str | None) -> bool:
    """With ``localStorage`` and ``fastImagePull``, the AMI release pinned keeps the SOCI snapshotter's
    store on the root volume (before v20251217; None: the latest release, which moves it)."""
    if cold.local_storage is None or not cold.fast_image_pull:
        return False
    release = AMI_RELEASE_VERSION_PATTERN.fullmatch(ami_release_version or "")
    return bool(release) and release.group(3) < SOCI_ON_LOCAL_STORAGE_MIN_AMI_RELEASE


class ColdStart(_Model):
    """The cold-start levers of one GPU node group (module docstring: each one's consumer)."""

    model_config = ConfigDict(title="ColdStart")

    local_storage: Literal["RAID0"] | None = Field(
        None,
        **doc(
            "Put containerd's images, kubelet's directory and the pod logs on the instance's NVMe instance store "
            "(nodeadm `instance.localStorage.strategy: RAID0`: one RAID0 of all its disks) instead of the EBS root "
            "volume. Only on types that have one (every GPU family here but g5g). The store is emptied when the "
            "instance stops; nodes are replaced, never stopped. Rolls the group's nodes.",
            type="`RAID0`",
            default="none (the root volume)",
        ),
    )
    root_volume_throughput: int | None = Field(
        None,
        ge=GP3_MIN_THROUGHPUT_MIBPS,
        le=GP3_MAX_THROUGHPUT_MIBPS,
        alias="rootVolumeThroughput",
        **doc(
            "Throughput of the gp3 root volume in MiB/s. At most 0.25 × `rootVolumeIops` (so above 750 raise the "
            "IOPS too). The instance's own EBS bandwidth caps what any volume gives (g5.xlarge: 437.5 MB/s at "
            "burst, 87.5 baseline): a warning above it. Rolls the group's nodes.",
            type="int 125–2000",
            default="EC2's (`125`)",
        ),
    )
    root_volume_iops: int | None = Field(
        None,
        ge=GP3_MIN_IOPS,
        le=GP3_MAX_IOPS,
        alias="rootVolumeIops",
        **doc(
            "IOPS of the gp3 root volume. At most 500 × `diskSizeGiB`. Rolls the group's nodes.",
            type="int 3000–80000",
            default="EC2's (`3000`)",
        ),
    )
    fast_image_pull: bool = Field(
        False,
        **doc(
            "nodeadm's experimental `FastImagePull` feature gate: containerd pulls and unpacks layers in parallel "
            "(SOCI). nodeadm ignores it below 4 vCPUs or 7 GiB (g6f.large: a warning) and asks for a root volume "
            "of 600 MiB/s or more, or the instance store. Needs an `amiReleaseVersion` of 20250821 or later, or "
            "none. Rolls the group's nodes.",
            type="bool",
            default="`false`",
        ),
    )

    @property
    def root_throughput_mibps(self) -> int:
        """The root volume's throughput, EC2's default where not given."""
        return self.root_volume_throughput or GP3_MIN_THROUGHPUT_MIBPS

    @property
    def root_iops(self) -> int:
        """The root volume's IOPS, EC2's default where not given."""
        return self.root_volume_iops or GP3_MIN_IOPS


def cold_start_problems(
    cold: ColdStart, instance_types: Sequence[str], disk_size_gib: int, ami_release_version: str | None = None
) -> list[KeyedProblem]:
    """The rules of ``coldStart`` across keys (keys relative to the group)."""
    problems: list[KeyedProblem] = []
    release = AMI_RELEASE_VERSION_PATTERN.fullmatch(ami_release_version or "")
    if cold.fast_image_pull and release and release.group(3) < FAST_IMAGE_PULL_MIN_AMI_RELEASE:
        problems.append(
            (
                ("coldStart", "fastImagePull"),
                True,
                f"false, or an amiReleaseVersion of <x.y.z>-{FAST_IMAGE_PULL_MIN_AMI_RELEASE} or later (or none, the "
                f"latest): nodeadm reads the FastImagePull gate from amazon-eks-ami v{FAST_IMAGE_PULL_MIN_AMI_RELEASE} "
                f"and ignores a gate it does not know, so {ami_release_version} would not use it",
            )
        )
    if cold.local_storage is not None:
        without = [t for t in instance_types if not INSTANCE_IO[t].has_instance_store]
        if without:
            problems.append(
                (
                    ("coldStart", "localStorage"),
                    cold.local_storage,
                    f"no key: {', '.join(without)} {'has' if len(without) == 1 else 'have'} no NVMe instance store "
                    "(ec2:DescribeInstanceTypes InstanceStorageSupported false), and nodeadm's setup-local-disks "
                    "then does nothing ('no NVMe instance storage disks found!', awslabs/amazon-eks-ami v20260724); "
                    "raise coldStart.rootVolumeThroughput instead",
                )
            )
    if cold.root_throughput_mibps > GP3_MAX_MIBPS_PER_IOPS * cold.root_iops:
        problems.append(
            (
                ("coldStart", "rootVolumeThroughput"),
                cold.root_throughput_mibps,
                f"at most {int(GP3_MAX_MIBPS_PER_IOPS * cold.root_iops)} MiB/s with {cold.root_iops} IOPS (gp3 allows "
                f"{GP3_MAX_MIBPS_PER_IOPS} MiB/s per IOPS: EBS User Guide, General Purpose SSD volumes); raise "
                f"coldStart.rootVolumeIops to at least {cold.root_throughput_mibps * 4}",
            )
        )
    if cold.root_iops > GP3_MAX_IOPS_PER_GIB * disk_size_gib:
        problems.append(
            (
                ("coldStart", "rootVolumeIops"),
                cold.root_iops,
                f"at most {GP3_MAX_IOPS_PER_GIB * disk_size_gib} with diskSizeGiB {disk_size_gib} (gp3 allows "
                f"{GP3_MAX_IOPS_PER_GIB} IOPS per GiB: EBS User Guide, General Purpose SSD volumes)",
            )
        )
    return problems
