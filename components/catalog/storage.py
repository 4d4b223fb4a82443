"""The disks of each GPU instance type: its NVMe instance store and its EBS bandwidth.

Source: ``ec2:DescribeInstanceTypes`` as botocore 1.44.5 / moto 5.2.5 record it
(``moto/ec2/resources/instance_types.json.gz``): ``InstanceStorageInfo.Disks`` (count and size of
the NVMe instance-store disks; every GPU type here that has one has ``NvmeSupport: required``) and
``EbsInfo.EbsOptimizedInfo`` (the instance's own EBS bandwidth: baseline and maximum throughput in
MB/s, baseline and maximum IOPS). tests/test_storage.py checks every row against that file.

Why it matters for a cold start: every EBS volume of an instance shares the instance's EBS
bandwidth, so a root volume faster than ``ebs_max_mbps`` gives nothing more. Types whose baseline is
below the maximum burst to the maximum "for 30 minutes at least once every 24 hours" (EC2 User
Guide, "Amazon EBS-optimized instance types", ebs-optimized.html): a new node pulling its images is
inside that window, so the cold-start model reads the maximum. The instance store is NVMe on the
host, not behind the EBS link, and nodeadm can put containerd and the pod logs on it
(``instance.localStorage``: config/coldstart.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstanceIo:
    """The instance store and EBS bandwidth of one instance type (``ec2:DescribeInstanceTypes``)."""

    name: str
    #: ``InstanceStorageInfo.Disks[0].Count``: NVMe instance-store disks (0: none).
    nvme_disks: int
    #: ``InstanceStorageInfo.Disks[0].SizeInGB``: the size of each (GB, as EC2 counts them).
    nvme_disk_gb: int
    #: ``EbsOptimizedInfo.BaselineThroughputInMBps``.
    ebs_baseline_mbps: float
    #: ``EbsOptimizedInfo.MaximumThroughputInMBps`` (the burst, or the baseline where they are equal).
    ebs_max_mbps: float
    #: ``EbsOptimizedInfo.BaselineIops``.
    ebs_baseline_iops: int
    #: ``EbsOptimizedInfo.MaximumIops``.
    ebs_max_iops: int

    @property
    def has_instance_store(self) -> bool:
        return self.nvme_disks > 0

    @property
    def instance_store_gb(self) -> int:
        """``InstanceStorageInfo.TotalSizeInGB``: what a RAID0 of the disks holds."""
        return self.nvme_disks * self.nvme_disk_gb


def _io(name: str, disks: int, disk_gb: int, base: float, top: float, base_iops: int, top_iops: int) -> InstanceIo:
    return InstanceIo(name, disks, disk_gb, float(base), float(top), base_iops, top_iops)


#: Per GPU instance type of the catalog (tests/test_storage.py: the same keys as GPU_INSTANCE_TYPES).
INSTANCE_IO: dict[str, InstanceIo] = {
    r.name: r
    for r in (
        #   type            NVMe disks, GB each  EBS MB/s base, max   IOPS base, max
        _io("g4dn.xlarge", 1, 125, 118.75, 437.5, 3000, 20000),
        _io("g4dn.2xlarge", 1, 225, 143.75, 437.5, 6000, 20000),
        _io("g4dn.4xlarge", 1, 225, 593.75, 593.75, 20000, 20000),
        _io("g4dn.8xlarge", 1, 900, 1187.5, 1187.5, 40000, 40000),
        _io("g4dn.16xlarge", 1, 900, 1187.5, 1187.5, 40000, 40000),
        _io("g4dn.12xlarge", 1, 900, 1187.5, 1187.5, 40000, 40000),
        _io("g4dn.metal", 2, 900, 2375, 2375, 80000, 80000),
        _io("g5.xlarge", 1, 250, 87.5, 437.5, 3000, 15000),
        _io("g5.2xlarge", 1, 450, 106.25, 437.5, 3500, 15000),
        _io("g5.4xlarge", 1, 600, 593.75, 593.75, 20000, 20000),
        _io("g5.8xlarge", 1, 900, 2000, 2000, 65000, 65000),
        _io("g5.16xlarge", 1, 1900, 2000, 2000, 65000, 65000),
        _io("g5.12xlarge", 1, 3800, 2000, 2000, 65000, 65000),
        _io("g5.24xlarge", 1, 3800, 2375, 2375, 80000, 80000),
        _io("g5.48xlarge", 2, 3800, 2375, 2375, 80000, 80000),
        _io("g5g.xlarge", 0, 0, 148.5, 593.75, 6000, 20000),
        _io("g5g.2xlarge", 0, 0, 296.875, 593.75, 12000, 20000),
        _io("g5g.4xlarge", 0, 0, 593.75, 593.75, 20000, 20000),
        _io("g5g.8xlarge", 0, 0, 1187.5, 1187.5, 40000, 40000),
        _io("g5g.16xlarge", 0, 0, 2375, 2375, 80000, 80000),
        _io("g5g.metal", 0, 0, 2375, 2375, 80000, 80000),
        _io("g6.xlarge", 1, 250, 125, 625, 4000, 20000),
        _io("g6.2xlarge", 1, 450, 250, 625, 8000, 20000),
        _io("g6.4xlarge", 1, 600, 1000, 1000, 32000, 32000),
        _io("g6.8xlarge", 2, 450, 2000, 2000, 64000, 64000),
        _io("g6.16xlarge", 2, 940, 2500, 2500, 80000, 80000),
        _io("g6.12xlarge", 4, 940, 2500, 2500, 80000, 80000),
        _io("g6.24xlarge", 4, 940, 3750, 3750, 120000, 120000),
        _io("g6.48xlarge", 8, 940, 7500, 7500, 240000, 240000),
        _io("gr6.4xlarge", 1, 600, 1000, 1000, 32000, 32000),
        _io("gr6.8xlarge", 2, 450, 2000, 2000, 64000, 64000),
        _io("g6e.xlarge", 1, 250, 125, 625, 4000, 20000),
        _io("g6e.2xlarge", 1, 450, 250, 625, 8000, 20000),
        _io("g6e.4xlarge", 1, 600, 1000, 1000, 32000, 32000),
        _io("g6e.8xlarge", 2, 450, 2000, 2000, 64000, 64000),
        _io("g6e.16xlarge", 2, 950, 2500, 2500, 80000, 80000),
        _io("g6e.12xlarge", 2, 1900, 2500, 2500, 80000, 80000),
        _io("g6e.24xlarge", 2, 1900, 3750, 3750, 120000, 120000),
        _io("g6e.48xlarge", 4, 1900, 7500, 7500, 240000, 240000),
        _io("p4d.24xlarge", 8, 1000, 2375, 2375, 80000, 80000),
        _io("p4de.24xlarge", 8, 1000, 2375, 2375, 80000, 80000),
        _io("p5.4xlarge", 1, 3800, 1250, 1250, 32500, 32500),
        _io("p5.48xlarge", 8, 3800, 10000, 10000, 260000, 260000),
        _io("p5e.48xlarge", 8, 3800, 10000, 10000, 260000, 260000),
        _io("p5en.48xlarge", 8, 3800, 12500, 12500, 400000, 400000),
        _io("g6f.large", 1, 100, 117, 625, 3750, 20000),
        _io("g6f.xlarge", 1, 100, 125, 625, 4000, 20000),
        _io("g6f.2xlarge", 1, 200, 250, 625, 8000, 20000),
        _io("g6f.4xlarge", 1, 450, 750, 750, 24000, 24000),
        _io("gr6f.4xlarge", 1, 450, 1000, 1000, 32000, 32000),
    )
}
