"""Issue 27: each GPU type's instance store and EBS bandwidth (components/catalog/storage.py) against
EC2's DescribeInstanceTypes as botocore 1.44.5 / moto 5.2.5 record it."""

from __future__ import annotations

import gzip
import importlib.resources
import json
from typing import Any

from components import catalog
from components.catalog.storage import INSTANCE_IO


def _moto_instance_types() -> dict[str, Any]:
    data = importlib.resources.files("moto.ec2") / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(data.read_bytes()))


def test_one_row_per_gpu_instance_type():
    assert list(INSTANCE_IO) == list(catalog.GPU_INSTANCE_TYPES)


def test_every_row_matches_describe_instance_types():
    ec2 = _moto_instance_types()
    for name, row in INSTANCE_IO.items():
        info = ec2[name]
        storage = info.get("InstanceStorageInfo")
        assert info["InstanceStorageSupported"] is (storage is not None), name
        if storage is None:
            assert (row.nvme_disks, row.nvme_disk_gb) == (0, 0), name
        else:
            (disk,) = storage["Disks"]
            assert (disk["Count"], disk["SizeInGB"], disk["Type"]) == (row.nvme_disks, row.nvme_disk_gb, "ssd"), name
            assert storage["NvmeSupport"] == "required", name
            assert storage["TotalSizeInGB"] == row.instance_store_gb, name
        ebs = info["EbsInfo"]["EbsOptimizedInfo"]
        assert ebs["BaselineThroughputInMBps"] == row.ebs_baseline_mbps, name
        assert ebs["MaximumThroughputInMBps"] == row.ebs_max_mbps, name
        assert ebs["BaselineIops"] == row.ebs_baseline_iops, name
        assert ebs["MaximumIops"] == row.ebs_max_iops, name


def test_literal_rows():
    """The figures the README and the cold-start model quote, as EC2 reports them."""
    g5 = INSTANCE_IO["g5.xlarge"]
    assert (g5.nvme_disks, g5.nvme_disk_gb, g5.ebs_baseline_mbps, g5.ebs_max_mbps) == (1, 250, 87.5, 437.5)
    g4 = INSTANCE_IO["g4dn.xlarge"]
    assert (g4.instance_store_gb, g4.ebs_baseline_mbps, g4.ebs_max_mbps, g4.ebs_max_iops) == (125, 118.75, 437.5, 20000)
    assert INSTANCE_IO["g6.48xlarge"].instance_store_gb == 7520
    assert sorted(n for n, r in INSTANCE_IO.items() if not r.has_instance_store) == [
        "g5g.16xlarge",
        "g5g.2xlarge",
        "g5g.4xlarge",
        "g5g.8xlarge",
        "g5g.metal",
        "g5g.xlarge",
    ]
