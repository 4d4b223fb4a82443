"""The simulated cloud of ``simulation``: the answers a mocked Pulumi program gets for its resources
(``FakeCloud``: inputs echoed as outputs, plus the computed outputs a program reads) and its data
sources, and the first preview's answers (``FirstPreviewCloud``: nothing exists yet). Split from
``simulation.py``, the engine that drives the program, so each holds one idea.
"""

from __future__ import annotations

import json
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks

#: Fake account, region and zones used for every data source answer.
FAKE_ACCOUNT_ID = "123456789012"
FAKE_REGION = "us-west-2"
FAKE_ZONES = ("us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d")


def _fake_kubeconfig(cluster_name: str) -> dict[str, Any]:
    server = f"https://{cluster_name.upper()}.gr7.{FAKE_REGION}.eks.amazonaws.com"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": server, "certificate-authority-data": "RkFLRQ=="}}],
        "contexts": [{"name": "aws", "context": {"cluster": cluster_name, "user": "aws"}}],
        "current-context": "aws",
        "users": [
            {
                "name": "aws",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster_name],
                    }
                },
            }
        ],
    }


class FakeCloud(pulumi_mocks.Mocks):
    """Plausible answers for resources and data sources.

    * Every custom resource echoes its inputs as outputs, with id ``<name>-id``; components
      return only the outputs listed here.
    * ``eks:index:Cluster`` (remote component, children never built under mocks): ``kubeconfig``,
      ``kubeconfigJson``, an OIDC provider ARN/URL and security group ids, from the ``name`` input.
    * ``awsx:ec2:Vpc`` (remote): ``vpcId`` and one private and one public subnet per zone (EC2-style ids).
    * ``aws:iam/role:Role``: an ARN in account 123456789012. ``aws:ec2/launchTemplate``:
      ``latestVersion`` 1. ``aws:sqs/queue``: ARN and URL from its name. ``aws:eks/nodeGroup``:
      ``nodeGroupName`` = resource name, one ASG ``eks-<name>-00000000-…``.
    * Calls: caller identity (account 123456789012), region us-west-2, partition aws,
      availability zones us-west-2a..d, and an existing cluster (eks getCluster) in the
      authentication mode FAKE_AUTHENTICATION_MODE.
    """

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict]:
        typ, name = args.typ, args.name
        # Custom resources echo their inputs. Components (pulumi-eks, awsx) do not: their output
        # properties have other types than their same-named inputs (awsx Vpc `natGateways`).
        outputs: dict[str, Any] = dict(args.inputs) if args.custom else {}
        if typ == "eks:index:Cluster":
            cluster_name = args.inputs.get("name") or name
            issuer = f"oidc.eks.{FAKE_REGION}.amazonaws.com/id/{'0' * 32}"
            kubeconfig = _fake_kubeconfig(cluster_name)
            outputs.update(
                kubeconfig=kubeconfig,
                kubeconfigJson=json.dumps(kubeconfig),
                oidcProviderArn=f"arn:aws:iam::{FAKE_ACCOUNT_ID}:oidc-provider/{issuer}",
                oidcProviderUrl=issuer,
                oidcIssuer=issuer,
                clusterSecurityGroupId="sg-0c1a55e5c0ffee000",
                nodeSecurityGroupId="sg-0a0de5ec0ffee0000",
            )
        elif typ == "awsx:ec2:Vpc":
            zones = FAKE_ZONES[: int(args.inputs.get("numberOfAvailabilityZones", 2))]
            outputs.update(
                # EC2-style ids (vpc-/subnet- + 17 hex digits), the zone's letter last: private
                # subnets subnet-0a…, public subnet-0b….
                vpcId="vpc-0fa4e000000000000",
                privateSubnetIds=[f"subnet-0a{'0' * 14}{z[-1]}" for z in zones],
                publicSubnetIds=[f"subnet-0b{'0' * 14}{z[-1]}" for z in zones],
            )
        elif typ == "aws:iam/role:Role":
            outputs.update(arn=f"arn:aws:iam::{FAKE_ACCOUNT_ID}:role/{name}", name=name)
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs.update(
                latestVersion=1, arn=f"arn:aws:ec2:{FAKE_REGION}:{FAKE_ACCOUNT_ID}:launch-template/lt-{name}"
            )
        elif typ == "aws:ec2/placementGroup:PlacementGroup":
            # Auto-named as the provider does: the resource name and a random suffix.
            outputs.setdefault("name", f"{name}-0000000")
        elif typ == "aws:sqs/queue:Queue":
            queue = args.inputs.get("name") or name
            outputs.update(
                arn=f"arn:aws:sqs:{FAKE_REGION}:{FAKE_ACCOUNT_ID}:{queue}",
                url=f"https://sqs.{FAKE_REGION}.amazonaws.com/{FAKE_ACCOUNT_ID}/{queue}",
                name=queue,
            )
        elif typ == "aws:eks/nodeGroup:NodeGroup":
            outputs.setdefault("nodeGroupName", name)
            # EKS names the node group's Auto Scaling group eks-<node group>-<uuid>.
            outputs.setdefault(
                "resources",
                [{"autoscalingGroups": [{"name": f"eks-{name}-00000000-0000-0000-0000-000000000000"}]}],
            )
        return f"{name}-id", outputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        # The SDK's mock monitor iterates the failures: a list, never None (pulumi 3.272 pulumi/runtime/mocks.py).
        if args.token == "aws:ec2/getSubnets:getSubnets":
            return _subnets_in_zone(args.args), []
        return self._answer(args.token), []

    def _answer(self, token: str) -> dict:
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": FAKE_ACCOUNT_ID,
                "arn": f"arn:aws:iam::{FAKE_ACCOUNT_ID}:user/simulated",
                "userId": "AIDASIMULATED",
                "id": FAKE_ACCOUNT_ID,
            }
        if token == "aws:index/getRegion:getRegion":
            return {"name": FAKE_REGION, "region": FAKE_REGION, "id": FAKE_REGION}
        if token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}
        if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            return {
                "names": list(FAKE_ZONES),
                "zoneIds": [f"usw2-az{i + 1}" for i in range(len(FAKE_ZONES))],
            }
        if token == "aws:eks/getCluster:getCluster":
            # An existing cluster (GpuCapacity reads its authentication mode for the teams' access
            # entries); its cluster security group (on every managed node) gets Karpenter's discovery tag.
            return {
                "accessConfigs": [{"authenticationMode": FAKE_AUTHENTICATION_MODE}],
                "vpcConfig": {"clusterSecurityGroupId": "sg-0e5c1a55e5c0ffee0", "vpcId": "vpc-0e5c1a55e5c0ffee0"},
            }
        return {}


def _subnets_in_zone(args: dict) -> dict:
    """ec2:DescribeSubnets filtered by ``subnet-id`` and ``availability-zone`` (a multi-node group's
    subnets in its zone): the simulated subnets end in their zone's letter (awsx:ec2:Vpc above)."""
    filters = {f.get("name"): list(f.get("values", [])) for f in args.get("filters", [])}
    zones = filters.get("availability-zone", [])
    ids = [i for i in filters.get("subnet-id", []) if any(i[-1] == z[-1] for z in zones)]
    return {"ids": ids, "id": FAKE_REGION}


#: The authentication mode of an existing cluster the simulation describes (EKS's default for new
#: clusters since access entries: API_AND_CONFIG_MAP).
FAKE_AUTHENTICATION_MODE = "API_AND_CONFIG_MAP"


class FirstPreviewCloud(FakeCloud):
    """The engine's answers during the first ``pulumi preview`` of a stack (nothing exists yet).

    Use with ``preview=True``. For a resource to be created, the engine returns its inputs as
    outputs (after the provider's checks) and no id, so ids and every computed output (ARNs,
    launch template versions, the outputs of remote components such as the cluster's kubeconfig
    or the VPC's subnet ids) are unknown, exactly the values ``pulumi preview`` shows as
    "output<string>". Data sources (``call``) answer as in ``FakeCloud``: a preview reads them.
    """

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict]:
        # "" is how providers report an id they do not know yet; the SDK resolves it as unknown.
        return "", dict(args.inputs) if args.custom else {}
