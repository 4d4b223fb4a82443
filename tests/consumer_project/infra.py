"""A consuming team's Pulumi program (its __main__.py would call ``declare()``).

It composes the installed library's components (``gpu_eks``) with resources of its own: a GPU cluster in the
team's own VPC, and GPU capacity (with a node group of the team's own) on an existing cluster
whose facts come from the platform team's stack.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
from gpu_eks import (
    GpuCapacity,
    GpuCapacityArgs,
    GpuCluster,
    GpuClusterArgs,
    GpuNodeGroup,
    GpuNodeGroupArgs,
    load_capacity_settings,
    load_settings,
)


@dataclass
class Stack:
    vpc: aws.ec2.Vpc
    subnets: list[aws.ec2.Subnet]
    research: GpuCluster
    team_group: GpuNodeGroup
    capacity: GpuCapacity


def declare() -> Stack:
    # 1. A GPU cluster in our own VPC: the ids are Outputs of our own resources.
    vpc = aws.ec2.Vpc("own-vpc", cidr_block="10.30.0.0/16")
    subnets = [
        aws.ec2.Subnet(f"own-private-{zone}", vpc_id=vpc.id, cidr_block=cidr, availability_zone=f"us-west-2{zone}")
        for zone, cidr in (("a", "10.30.0.0/19"), ("b", "10.30.32.0/19"))
    ]
    research = GpuCluster(
        "research",
        GpuClusterArgs(
            settings=load_settings(
                {
                    "clusterName": "research",
                    "kubernetesVersion": "1.35",
                    "network": {"vpcId": vpc.id, "privateSubnetIds": [s.id for s in subnets]},
                    "gpuNodeGroups": [{"name": "t4", "timeSlicing": {"replicas": 2}}],
                }
            )
        ),
    )

    # 2. GPU capacity on the platform team's existing cluster, facts from its stack.
    platform = pulumi.StackReference("acme/platform/prod")
    cluster_name = platform.get_output("clusterName")
    subnet_ids = platform.get_output("privateSubnetIds")
    node_role_arn = platform.get_output("nodeRoleArn")
    # A node group of our own (say, other taints), declared first and handed to GpuCapacity, whose
    # operator must cover it.
    team_group = GpuNodeGroup(
        "vision-t4x4",
        GpuNodeGroupArgs(
            settings=load_capacity_settings(
                {
                    "kubernetesVersion": "1.34",
                    "gpuNodeGroups": [
                        {
                            "name": "vision",
                            "instanceTypes": ["g4dn.12xlarge"],
                            "taints": [{"key": "acme.com/team", "value": "vision", "effect": "NoSchedule"}],
                            "timeSlicing": {"replicas": 2},
                        }
                    ],
                }
            ).gpu_node_groups[0],
            cluster_name=cluster_name,
            node_role_arn=node_role_arn,
            subnet_ids=subnet_ids,
            tags={"team": "vision"},
        ),
    )
    capacity = GpuCapacity(
        "platform-gpu",
        GpuCapacityArgs(
            cluster_name=cluster_name,
            subnet_ids=subnet_ids,
            kubeconfig=platform.get_output("kubeconfig"),
            node_role_arn=node_role_arn,
            node_groups=[team_group],
            settings=load_capacity_settings(
                {"kubernetesVersion": "1.34", "gpuNodeGroups": [{"name": "shared", "timeSlicing": {"replicas": 4}}]}
            ),
        ),
    )
    return Stack(vpc, subnets, research, team_group, capacity)
