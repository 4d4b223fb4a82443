"""The Cluster Autoscaler's own numbers for our GPU instance types, as literals: kubernetes/autoscaler
``cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go`` at tag cluster-autoscaler-1.35.2
(``VCPU``, ``MemoryMb``, ``GPU``), so the template-node simulation does not read the catalog it
checks. The static list lacks p5e.48xlarge; CA builds its list from DescribeInstanceTypes at start
(aws_cloud_provider.go BuildAWS), so that row holds EC2's numbers (botocore 1.44.5 / moto 5.2.5).
The vGPU slices (g6f, gr6f) have ``GPU: 0`` there.
"""

from __future__ import annotations

#: instance type -> (vCPUs, memory MiB, GPUs) as CA's template node gets them before any tag.
CA_INSTANCE_TYPES: dict[str, tuple[int, int, int]] = {
    "g4dn.xlarge": (4, 16384, 1),
    "g4dn.2xlarge": (8, 32768, 1),
    "g4dn.4xlarge": (16, 65536, 1),
    "g4dn.8xlarge": (32, 131072, 1),
    "g4dn.16xlarge": (64, 262144, 1),
    "g4dn.12xlarge": (48, 196608, 4),
    "g4dn.metal": (96, 393216, 8),
    "g5.xlarge": (4, 16384, 1),
    "g5.2xlarge": (8, 32768, 1),
    "g5.4xlarge": (16, 65536, 1),
    "g5.8xlarge": (32, 131072, 1),
    "g5.16xlarge": (64, 262144, 1),
    "g5.12xlarge": (48, 196608, 4),
    "g5.24xlarge": (96, 393216, 4),
    "g5.48xlarge": (192, 786432, 8),
    "g5g.xlarge": (4, 8192, 1),
    "g5g.2xlarge": (8, 16384, 1),
    "g5g.4xlarge": (16, 32768, 1),
    "g5g.8xlarge": (32, 65536, 1),
    "g5g.16xlarge": (64, 131072, 2),
    "g5g.metal": (64, 131072, 2),
    "g6.xlarge": (4, 16384, 1),
    "g6.2xlarge": (8, 32768, 1),
    "g6.4xlarge": (16, 65536, 1),
    "g6.8xlarge": (32, 131072, 1),
    "g6.16xlarge": (64, 262144, 1),
    "g6.12xlarge": (48, 196608, 4),
    "g6.24xlarge": (96, 393216, 4),
    "g6.48xlarge": (192, 786432, 8),
    "gr6.4xlarge": (16, 131072, 1),
    "gr6.8xlarge": (32, 262144, 1),
    "g6e.xlarge": (4, 32768, 1),
    "g6e.2xlarge": (8, 65536, 1),
    "g6e.4xlarge": (16, 131072, 1),
    "g6e.8xlarge": (32, 262144, 1),
    "g6e.16xlarge": (64, 524288, 1),
    "g6e.12xlarge": (48, 393216, 4),
    "g6e.24xlarge": (96, 786432, 4),
    "g6e.48xlarge": (192, 1572864, 8),
    "p4d.24xlarge": (96, 1179648, 8),
    "p4de.24xlarge": (96, 1179648, 8),
    "p5.4xlarge": (16, 262144, 1),
    "p5.48xlarge": (192, 2097152, 8),
    "p5e.48xlarge": (192, 2097152, 8),  # not in the static list: EC2 DescribeInstanceTypes
    "p5en.48xlarge": (192, 2097152, 8),
    "g6f.large": (2, 8192, 0),
    "g6f.xlarge": (4, 16384, 0),
    "g6f.2xlarge": (8, 32768, 0),
    "g6f.4xlarge": (16, 65536, 0),
    "gr6f.4xlarge": (16, 131072, 0),
}
