"""How many private-subnet addresses the node groups hold (``Settings.nodes_need_addresses``, the
subnet rule of a created VPC and the preflight's check of an existing one).

The VPC CNI (defaults: no prefix delegation, ``WARM_ENI_TARGET=1``) holds whole ENIs of subnet
addresses (aws/amazon-vpc-cni-k8s docs/eni-and-ip-target.md, v1.23.0; ``catalog.enis``): a GPU
node full of pods the ENIs its max pods need (``catalog.gpu_node_addresses``: g4dn.xlarge
3 x 10 = 30, g5.4xlarge 4 x 30 = 120 of its 8 ENIs); a system node the ENIs its share of the
cluster-service pods uses plus the warm one (``catalog.system_node_addresses``: m6i.large
2 x 10 = 20; one t3.medium with 6 service pods 3 x 6 = 18), an idle one one ENI. The service pods
(``system_group.system_service_pods``) are counted spread evenly over the ``desiredSize`` nodes
they are scheduled on at creation (the kube-scheduler's default spreading); nodes past
``desiredSize`` are idle. Host-network DaemonSet pods (aws-node, kube-proxy, cloudwatch-agent,
fluent-bit) take no pod address. A system type the catalog does not know counts at
``unknown`` per busy node and half that per idle one (``catalog.MIN_NODE_ADDRESSES``, the fewest
of any type, so a large enough network is never refused; warnings.py warns).

Each ENI takes its addresses from its node's subnet (aws/amazon-vpc-cni-k8s README,
``ENABLE_SUBNET_DISCOVERY``: other subnets only when tagged ``kubernetes.io/role/cni``, which ours
are not), and EC2 Auto Scaling spreads each group's nodes evenly over its zones, one subnet each
(Amazon EC2 Auto Scaling User Guide, "Rebalancing activities"), each group on its own. So with
``subnets`` subnets one of them may hold ceil(nodes / subnets) nodes of every group (the busiest
system nodes first): the largest node of every group must fit in one subnet.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import catalog


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def gpu_group_addresses(instance_types: Sequence[str], nodes: int, subnets: int = 1, enis_taken: int = 0) -> int:
    """Addresses ``nodes`` full GPU nodes of the group hold, in one of ``subnets`` subnets;
    ``enis_taken``: ENIs the node's EFA layout takes from the VPC CNI (config/multinode.py
    ``efa_enis_taken``): they hold no address, and the node's max pods are lower."""
    return _ceil_div(nodes, subnets) * max(catalog.gpu_node_addresses(t, enis_taken) for t in instance_types)


def system_group_addresses(
    instance_types: Sequence[str], desired: int, nodes: int, service_pods: int, unknown: int, subnets: int = 1
) -> int:
    """Addresses ``nodes`` system nodes hold (``service_pods`` spread over ``desired`` of them), in
    one of ``subnets`` subnets (the busiest ``ceil(nodes / subnets)``)."""
    share, extra = divmod(service_pods, desired)
    pods = [share + 1] * extra + [share] * (desired - extra) + [0] * max(nodes - desired, 0)
    busiest = sorted(pods, reverse=True)[: _ceil_div(nodes, subnets)]

    def per_node(n: int) -> int:
        known = (catalog.system_node_addresses(t, n) for t in instance_types)
        return max(k if k is not None else (unknown if n else unknown // 2) for k in known)

    return sum(per_node(n) for n in busiest)
