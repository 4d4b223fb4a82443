"""Network settings: an existing VPC (its ids may be Outputs, checked when they resolve) or a new one."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from .errors import (
    CONFIG_NAMESPACE,
    ConfigError,
    KeyedProblem,
    KeyedProblems,
    is_unresolved,
    nested_problem,
    problems_from,
)
from .fields import Cidr, Count, InputSubnetIdList, InputVpcId, _Model, doc

#: VPC IPv4 CIDR blocks are /16 to /28 (Amazon VPC User Guide, "VPC CIDR blocks": "The allowed block
#: size is between a /16 netmask (65,536 IP addresses) and /28 netmask (16 IP addresses)"); subnets
#: likewise no smaller than /28.
VPC_NETMASK_RANGE = (16, 28)
SMALLEST_SUBNET_NETMASK = 28


def created_subnet_netmask(vpc_netmask: int, availability_zone_count: int) -> int:
    """The netmask of each subnet awsx carves from the VPC (SubnetAllocationStrategy AUTO, our two
    subnet specs without cidrMask): one block per zone, ceil(log2(zones)) bits, then one bit more
    for the private + public pair (pulumi-awsx 3.x awsx/ec2/subnetDistributorNew.ts,
    ``getSubnetSpecs``: ``azBitmask = vpc + newBits(azCount)``, ``subnet = azBitmask + newBits(2)``)."""
    return vpc_netmask + (availability_zone_count - 1).bit_length() + 1


class NetworkSettings(_Model):
    """Use an existing VPC (``vpcId`` + subnets) or create one (the other keys).

    ``vpcId`` and the subnet ids (each id, or a whole list) may be ``pulumi.Output`` values, e.g.
    from the importer's own VPC or a StackReference: rules run on the plain values now, and on the
    rest when they resolve (``resolve_network``). Rules on these ids must skip non-plain values
    (``is_plain``).
    """

    model_config = ConfigDict(title="NetworkSettings")

    # The ids of an existing VPC may come from other resources (Outputs), in every language
    # (pulumi_input); every other key is plain, since it decides which resources exist.
    vpc_id: InputVpcId | None = Field(
        None,
        **doc(
            "Use this existing VPC. Then `cidrBlock`, `availabilityZoneCount` and `natGateways` are errors (they "
            "only shape a created VPC). From a program, also an Output (validated when it resolves).",
            type="`vpc-…` id",
            default="none: a VPC is created",
            pulumi_input=True,
        ),
    )
    private_subnet_ids: InputSubnetIdList = Field(
        [],
        **doc(
            "With `vpcId`: at least 2 private subnets (2 zones); nodes and the control plane ENIs go here. A subnet "
            "is listed once across both lists. From a program, ids or the whole list may be Outputs.",
            type="list of `subnet-…` ids",
            default="`[]`",
            pulumi_input=True,
        ),
    )
    public_subnet_ids: InputSubnetIdList = Field(
        [],
        **doc(
            "With `vpcId`: public subnets for internet-facing load balancers. From a program, ids or the whole "
            "list may be Outputs.",
            type="list of `subnet-…` ids",
            default="`[]`",
            pulumi_input=True,
        ),
    )
    cidr_block: Cidr = Field(
        "10.0.0.0/16",
        **doc(
            "Created VPC: its CIDR. It must hold the subnets awsx carves (one private + one public per zone, each "
            "`netmask + ceil(log2(zones)) + 1`, at most /28): at most /26 for 2 zones, /25 for 3–4, /24 for 5–6. "
            "Each private subnet must also hold, besides 6 addresses for EKS, the addresses the VPC CNI holds for "
            "`ceil(nodes / zones)` nodes of every group (a node's ENIs use its own subnet) at `maxSize` (with the "
            "autoscaler) or `desiredSize`: whole ENIs of addresses, those a full GPU node's max pods need "
            "(g4dn.xlarge 3 x 10 = 30, g5.4xlarge 4 x 30 = 120) and those a system node's share of the cluster "
            "services uses plus a warm one (m6i.large 2 x 10 = 20); an error otherwise (the default group and "
            "system group need a /23 with 2 zones).",
            type="IPv4 CIDR, /16 to /28",
            default="`10.0.0.0/16`",
        ),
    )
    availability_zone_count: Count = Field(
        default=2,
        ge=2,
        le=6,
        **doc(
            "Created VPC: zones (one private and one public subnet each; tagged `kubernetes.io/role/internal-elb` / "
            "`kubernetes.io/role/elb`).",
            type="int 2–6",
            default="`2`",
        ),
    )
    nat_gateways: Literal["Single", "OnePerAz"] = Field(
        "Single",
        **doc("Created VPC: NAT gateways (prod: `OnePerAz`).", type="`Single` | `OnePerAz`", default="`Single`"),
    )

    @model_validator(mode="after")
    def _consistent(self) -> NetworkSettings:
        findings: list[KeyedProblem] = []
        if self.existing_vpc:
            # Lists that are not plain (a Pulumi Output from another stack) are counted by EKS itself.
            if isinstance(self.private_subnet_ids, list) and len(self.private_subnet_ids) < 2:
                findings.append(
                    (
                        ("privateSubnetIds",),
                        list(self.private_subnet_ids),
                        "with vpcId, at least 2 subnets (EKS needs two zones)",
                    )
                )
            # These only shape a VPC the library creates; with vpcId they would be silently ignored.
            for field, key in (
                ("cidr_block", "cidrBlock"),
                ("availability_zone_count", "availabilityZoneCount"),
                ("nat_gateways", "natGateways"),
            ):
                if field in self.model_fields_set:
                    findings.append(
                        (
                            (key,),
                            getattr(self, field),
                            "no value with vpcId: it applies only to a VPC the library creates",
                        )
                    )
        else:
            for key, ids in (
                ("privateSubnetIds", self.private_subnet_ids),
                ("publicSubnetIds", self.public_subnet_ids),
            ):
                if is_unresolved(ids) or len(ids) > 0:
                    shown = ids if is_unresolved(ids) else list(ids)
                    findings.append(((key,), shown, "subnet ids only together with vpcId"))
            findings += self._vpc_cidr_findings()
        # A subnet is private or public, and listed once (EKS CreateCluster: subnetIds are a set).
        lists = (("privateSubnetIds", self.private_subnet_ids), ("publicSubnetIds", self.public_subnet_ids))
        seen: dict[str, str] = {}
        for key, i, subnet in [(k, i, x) for k, ids in lists if isinstance(ids, list) for i, x in enumerate(ids)]:
            if not isinstance(subnet, str):
                continue  # known only at deploy time
            if subnet in seen:
                findings.append(((key, i), subnet, f"each subnet once (already listed as {seen[subnet]})"))
            else:
                seen[subnet] = f"{key}[{i}]"
        if findings:
            raise KeyedProblems(findings)
        return self

    def _vpc_cidr_findings(self) -> list[KeyedProblem]:
        netmask = ipaddress.ip_network(self.cidr_block).prefixlen
        low, high = VPC_NETMASK_RANGE
        if not low <= netmask <= high:
            return [(("cidrBlock",), self.cidr_block, f"a netmask from /{low} to /{high} (the VPC limits)")]
        subnet = created_subnet_netmask(netmask, self.availability_zone_count)
        if subnet > SMALLEST_SUBNET_NETMASK:
            largest = SMALLEST_SUBNET_NETMASK - (subnet - netmask)
            return [
                (
                    ("cidrBlock",),
                    self.cidr_block,
                    f"a netmask of /{largest} or larger: {self.availability_zone_count} zones x (private + "
                    f"public) subnets would be /{subnet}, smaller than the /{SMALLEST_SUBNET_NETMASK} AWS allows",
                )
            ]
        return []

    @property
    def existing_vpc(self) -> bool:
        """True when the cluster goes into an existing VPC (``vpcId`` given, plain or Output)."""
        return self.vpc_id is not None and self.vpc_id != ""


def check_resolved_network(resolved: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> NetworkSettings:
    """Validate ``network`` once its Outputs resolved (``resolved`` in config-key form).

    The same model, so the same rules, as at load time; raises ConfigError naming
    ``<namespace>:network.<key>``. Called inside ``Output.apply`` (by ``resolve_network``).
    """
    try:
        return NetworkSettings.model_validate(dict(resolved))
    except ValidationError as err:
        raise ConfigError([nested_problem(p, namespace, "network") for p in problems_from(err, namespace)]) from None


#: AWS reserves five addresses of every subnet: the first four and the last (Amazon VPC User
#: Guide, "Subnet CIDR blocks").
SUBNET_RESERVED_ADDRESSES = 5
#: EKS User Guide, "View Amazon EKS networking requirements for VPC and subnets": "The subnets must
#: each have at least six IP addresses for use by Amazon EKS. However, we recommend at least 16 IP
#: addresses" (the control plane's network interfaces, and new ones during a cluster upgrade).
EKS_ADDRESSES_PER_SUBNET = 6
EKS_RECOMMENDED_ADDRESSES_PER_SUBNET = 16


def created_private_subnets(net: NetworkSettings) -> tuple[int, int]:
    """(count, usable addresses each) of the private subnets awsx creates for ``net`` (no vpcId):
    one per zone, ``created_subnet_netmask`` each, less the five AWS reserves."""
    netmask = created_subnet_netmask(ipaddress.ip_network(net.cidr_block).prefixlen, net.availability_zone_count)
    return net.availability_zone_count, 2 ** (32 - netmask) - SUBNET_RESERVED_ADDRESSES
