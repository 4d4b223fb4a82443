"""The settings of GPU capacity on a cluster, and of a whole GPU-ready cluster, with the rules across
their keys.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from .. import catalog
from ..catalog import node_health
from ..config.addons import (
    AutoscalerSettings,
    GpuOperatorSettings,
    NodeMonitoringAgentSettings,
    ObservabilitySettings,
    VerificationSettings,
)
from ..config.addresses import gpu_group_addresses, system_group_addresses
from ..config.capacity_provider import (
    address_note,
    cluster_name_problems,
    karpenter_pods,
    nodes_held,
    scaled_by_autoscaler,
    tag_problems,
)
from ..config.errors import KeyedProblem, KeyedProblems
from ..config.fields import (
    _LOG_TYPES,
    CONTROL_PLANE_LOG_TYPES,
    MAX_PUBLIC_ACCESS_CIDRS,
    PrincipalArn,
    PublicCidr,
    Tags,
    _check,
    _cluster_name,
    _unique,
    doc,
    kubernetes_version_problem,
)
from ..config.groups import GpuNodeGroupSettings, allocation_policy_problems
from ..config.instance_types import ami_release_problem
from ..config.multinode import efa_enis_taken
from ..config.network import EKS_ADDRESSES_PER_SUBNET, NetworkSettings, created_private_subnets
from ..config.system_group import SystemNodeGroupSettings, system_service_pods
from ..config.teams import TeamSettings
from ..config.verification import OldEnabledKey, nccl_check_problems
from ..plan.group import GroupPlan, plan_groups
from .autoscaler import autoscaler_problems
from .groups import gpu_groups_problems
from .teams import settings_teams_problems


def _non_empty(groups: tuple[GpuNodeGroupSettings, ...]) -> tuple[GpuNodeGroupSettings, ...]:
    if not groups:
        raise ValueError("at least one GPU node group")
    return groups


def _default_gpu_groups() -> tuple[GpuNodeGroupSettings, ...]:
    return (GpuNodeGroupSettings(name="gpu"),)


class GpuCapacitySettings(OldEnabledKey):
    """GPU capacity for an EKS cluster (``GpuCapacity``): the GPU keys of the stack configuration.

    ``Settings`` (a whole cluster) extends it, so both have the same keys, defaults and rules;
    ``kubernetesVersion`` is the existing cluster's version, required here (EKS AMI releases are
    per Kubernetes version). Here ``gpuNodeGroups`` may be empty when every group is declared by the caller
    (``GpuCapacityArgs.node_groups``), and the autoscaler is off unless ``enabled: true``: an
    existing cluster may run its own (two autoscalers resizing the same groups fight).
    """

    # Required here: the existing cluster's version decides the AMI release and the autoscaler's
    # release, and a default would silently be wrong for every cluster not at it. It is not read
    # from the cluster: settings load without AWS access (and the cluster name may be an Output).
    kubernetes_version: str = Field(
        **doc(
            "The existing cluster's EKS Kubernetes version (quote it in YAML); required. The rules of "
            "`kubernetesVersion`.",
            type='string `"1.NN"`',
            default="required",
        ),
    )
    gpu_node_groups: tuple[GpuNodeGroupSettings, ...] = Field(
        default_factory=_default_gpu_groups,
        **doc("GPU node groups (unique names); empty when the caller declares every group itself."),
    )
    gpu_operator: GpuOperatorSettings = Field(GpuOperatorSettings(), **doc("The NVIDIA gpu-operator Helm release."))
    autoscaler: AutoscalerSettings = Field(
        AutoscalerSettings(),
        **doc(
            "A Cluster Autoscaler for these groups. Off unless `enabled: true`: an existing cluster may run its own "
            "(two autoscalers resizing the same groups fight)."
        ),
    )
    verification: VerificationSettings = Field(
        VerificationSettings(), **doc("The verification Jobs on `pulumi up` (`verification.enabled: true`).")
    )
    observability: ObservabilitySettings = Field(
        ObservabilitySettings(),
        **doc(
            "GPU metrics per pod on shared GPUs, a metrics pipeline (CloudWatch or your Prometheus), shared-GPU alerts "
            'and a Grafana dashboard (see "Observability"). Off unless `enabled: true`.'
        ),
    )
    teams: tuple[TeamSettings, ...] = Field(
        (),
        **doc(
            "Teams sharing the GPUs: a namespace each, with GPU quotas, defaults, its node groups and principals (see "
            '"Teams").',
            type="list of teams",
            default="`[]`",
        ),
    )
    tags: Tags = Field(
        {},
        **doc(
            "AWS tags on everything taggable (plus `gpu-eks/cluster`). At most 40: AWS allows 50 per resource and 10 "
            "are kept for the library's own (`gpu-eks/cluster`, `gpu-eks/node-group`, `Name`, Cluster Autoscaler "
            "tags). Keys 1–128 characters, not starting with `aws:`; values up to 256; letters, digits, spaces and "
            "`_ . : / = + - @` only (IAM's rule: the node role is tagged). From Python, values may be Outputs.",
            type="map",
            default="`{}`",
        ),
    )

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return _check(kubernetes_version_problem(value, catalog.today()), value)

    @cached_property
    def plans(self) -> tuple[GroupPlan, ...]:
        """The plan of each GPU node group (``plan.group``), in order: derived once per settings
        object, read by the rules across keys, the autoscaler's rules, the warnings and preflight."""
        return plan_groups(
            self.gpu_node_groups, self.cloudwatch_pipeline, self.node_monitoring, self.gpu_operator.isolation
        )

    @property
    def node_monitoring(self) -> bool:
        """Whether the library installs the node monitoring agent's add-on (its DaemonSet pods on the
        GPU nodes): only on a cluster it creates (``Settings``); an existing cluster's is its owner's."""
        return False

    @property
    def cloudwatch_pipeline(self) -> bool:
        """Whether the CloudWatch pipeline's add-on runs (its DaemonSet pods on every node)."""
        return self.observability.enabled and self.observability.cloudwatch

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``: off unless set to true (see the field)."""
        return self.autoscaler.enabled is True

    def _pinned_ami_releases(self) -> list[tuple[tuple[str | int, ...], str | None]]:
        """(key, amiReleaseVersion) of every node group: each must be of the cluster's minor."""
        return [
            (("gpuNodeGroups", i, "amiReleaseVersion"), g.ami_release_version)
            for i, g in enumerate(self.gpu_node_groups)
        ]

    def _problems(self) -> list[KeyedProblem]:
        """The rules across keys (one list, so every problem is reported at once); ``Settings`` adds its own."""
        problems = gpu_groups_problems(self.plans, self.verification.enabled) + settings_teams_problems(self)
        problems += self.old_enabled_key_problems()
        problems += allocation_policy_problems(
            [g.shared_devices_allocation_policy for g in self.gpu_node_groups], self.gpu_operator.chart_version
        )
        problems += tag_problems(self.gpu_node_groups, self.tags)
        minor = self.kubernetes_version.split(".")[1]
        for loc, release in self._pinned_ami_releases():
            problems += _ami_minor_problems(loc, release, minor)
        for i, g in enumerate(self.gpu_node_groups):
            too_old = ami_release_problem(g.instance_types, g.ami_release_version)
            if too_old:
                problems.append((("gpuNodeGroups", i, "amiReleaseVersion"), g.ami_release_version, too_old))
        problems += nccl_check_problems(self)
        if self.verification.enabled and self.verification.namespace == self.gpu_operator.namespace:
            problems.append(
                (
                    ("verification", "namespace"),
                    self.verification.namespace,
                    "a namespace other than gpuOperator.namespace: each component creates its namespace",
                )
            )
        return problems

    @model_validator(mode="after")
    def _consistent(self) -> GpuCapacitySettings:
        problems = self._problems()
        if self.autoscaler_enabled:
            # What the Cluster Autoscaler could not handle: loaded or built in Python alike.
            problems += autoscaler_problems(self.kubernetes_version, self.plans)
        if problems:
            raise KeyedProblems(problems)
        return self


def _ami_minor_problems(loc: tuple[str | int, ...], release: str | None, minor: str) -> list[KeyedProblem]:
    # A node group's releaseVersion is <kubernetes x.y.z>-<yyyymmdd> of the group's version, which
    # EKS keeps within the cluster's minor (botocore eks CreateNodegroupRequest.releaseVersion; EKS
    # user guide, "Amazon EKS optimized Amazon Linux AMI versions"; tests/test_settings_aws.py).
    m = catalog.AMI_RELEASE_VERSION_PATTERN.fullmatch(release or "")
    if not m or m.group(1) == minor:
        return []
    return [
        (
            loc,
            release,
            f"an AMI release of Kubernetes 1.{minor} (1.{minor}.x-yyyymmdd): EKS refuses a node group AMI of another "
            "minor than the cluster's",
        )
    ]


class Settings(GpuCapacitySettings):
    """Everything a GPU-ready EKS cluster needs, validated: the stack config keys (``gpu-eks:<key>``).

    The GPU keys and their rules are ``GpuCapacitySettings``'; here at least one GPU node group is
    required and the autoscaler is on by default when a group can change size.
    """

    kubernetes_version: str = Field(
        catalog.DEFAULT_KUBERNETES_VERSION,
        **doc(
            "EKS Kubernetes version (quote it in YAML). In extended support it is a warning (end date and cost); "
            "past it a warning too (the date, the cost and the upgrade path: a stack that rendered yesterday "
            "renders today), and preflight fails a new cluster at it; a version newer than the library's calendar "
            "(1.36 today) is an error until the library knows its dates. 1.35 is in standard support until "
            "2027-03-27, 1.36 until 2027-08-02. Stacks pin it explicitly.",
            type='string `"1.NN"`',
            default='`"1.35"`',
        ),
    )
    # Required here: the Pulumi loader fills in the default, <project>-<stack>.
    cluster_name: Annotated[str, AfterValidator(_cluster_name)] = Field(
        **doc(
            "EKS cluster name: 1–100 letters, digits, `-`, `_`, starting with a letter or digit. Changing it "
            "replaces the cluster.",
            type="string",
            default="`<project>-<stack>` (`gpu-eks-dev`)",
        )
    )
    admin_principal_arns: Annotated[list[PrincipalArn], AfterValidator(_unique)] = Field(
        [],
        **doc(
            "Principals given cluster-admin (`AmazonEKSClusterAdminPolicy`, cluster scope) through EKS access "
            "entries (authentication mode `API`). `arn:<partition>:iam::<account>:role/…` or `user/…` (a path is "
            "fine); STS `assumed-role` session ARNs and service-linked roles (`role/aws-service-role/…`) are errors "
            "(EKS refuses them); names by the IAM rule (1–64 characters); each ARN once. The same role name in two "
            "accounts is two principals: the first listed keeps the access entry key `role-<name>`, later ones get "
            "`<account>-role-<name>`, so appending never renames an existing entry (keep the order of such a pair: "
            "swapping it renames both entries, and EKS refuses the new ones while the old exist).",
            type="list of IAM role/user ARNs",
            default="`[]`",
        ),
    )
    endpoint_public_access_cidrs: Annotated[
        list[PublicCidr], Field(max_length=MAX_PUBLIC_ACCESS_CIDRS), AfterValidator(_unique)
    ] = Field(
        [],
        **doc(
            "CIDRs allowed on the public API endpoint, each once, at most 40 (EKS's fixed quota); a bare address is "
            "an error (write `/32`), so is a private or reserved block (`10.0.0.0/8`, …: no internet client has "
            "those addresses, and EKS refuses them; inside the VPC the private endpoint is used). Empty: "
            "no public endpoint (private only; then `pulumi up` must run from inside the VPC). `0.0.0.0/0` is a "
            "warning. The private endpoint is always on.",
            type="list of IPv4 CIDR blocks",
            default="`[]`",
        ),
    )
    control_plane_log_types: Annotated[list[_LOG_TYPES], AfterValidator(_unique)] = Field(
        list(CONTROL_PLANE_LOG_TYPES),
        **doc(
            "Control-plane logs sent to CloudWatch (each once).",
            type="list of `api`, `audit`, `authenticator`, `controllerManager`, `scheduler`",
            default="all five",
        ),
    )
    deletion_protection: bool = Field(
        False,
        **doc(
            "EKS deletion protection on the cluster plus Pulumi `protect` on the control plane (prod: `true`).",
            type="bool",
            default="`false`",
        ),
    )
    network: NetworkSettings = Field(
        NetworkSettings(), **doc("The VPC: an existing one (`vpcId` and its subnets) or a new one (the other keys).")
    )
    system_node_group: SystemNodeGroupSettings = Field(
        SystemNodeGroupSettings(),
        **doc("The untainted node group for cluster services (CoreDNS, gpu-operator, NFD master/gc)."),
    )
    gpu_node_groups: Annotated[tuple[GpuNodeGroupSettings, ...], AfterValidator(_non_empty)] = Field(
        default_factory=_default_gpu_groups,
        **doc(
            "GPU node groups (at least one; unique names).",
            type="list of groups",
            default="one group `gpu`, every other key at its default",
        ),
    )
    autoscaler: AutoscalerSettings = Field(
        AutoscalerSettings(), **doc("The Cluster Autoscaler that scales the GPU node groups (from zero too).")
    )
    node_monitoring_agent: NodeMonitoringAgentSettings = Field(
        NodeMonitoringAgentSettings(),
        **doc("The EKS node monitoring agent add-on: the node health conditions GPU node repair acts on."),
    )
    preflight: bool = Field(
        False,
        **doc(
            "Run the preflight checks (the read-only account checks of `python -m gpu_eks preflight`) at the "
            "start of the program, before any resource is declared; a FAIL stops it.",
            type="bool",
            default="`false`",
        ),
    )

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``, defaulting to: some GPU group can change size."""
        if self.autoscaler.enabled is not None:
            return self.autoscaler.enabled
        return any(scaled_by_autoscaler(g) for g in self.gpu_node_groups)

    @property
    def node_monitoring(self) -> bool:
        """``nodeMonitoringAgent.enabled``, defaulting to: the cluster's minor has a pinned add-on version."""
        if self.node_monitoring_agent.enabled is not None:
            return self.node_monitoring_agent.enabled
        return self.kubernetes_version in node_health.NODE_MONITORING_AGENT_ADDON_VERSIONS

    @property
    def node_monitoring_addon_version(self) -> str | None:
        """The add-on version to install, None without the add-on."""
        if not self.node_monitoring:
            return None
        pinned = node_health.NODE_MONITORING_AGENT_ADDON_VERSIONS.get(self.kubernetes_version)
        return self.node_monitoring_agent.addon_version or pinned

    def _node_monitoring_problems(self) -> list[KeyedProblem]:
        if self.node_monitoring and self.node_monitoring_addon_version is None:
            pinned = node_health.NODE_MONITORING_AGENT_ADDON_VERSIONS
            return [
                (
                    ("nodeMonitoringAgent", "enabled"),
                    True,
                    f"a kubernetesVersion with a pinned add-on version ({', '.join(pinned)}), or "
                    "nodeMonitoringAgent.addonVersion: the library pins none for "
                    f"{self.kubernetes_version} (aws eks describe-addon-versions --addon-name "
                    f"{node_health.NODE_MONITORING_AGENT_ADDON} --kubernetes-version {self.kubernetes_version})",
                )
            ]
        return []

    def _pinned_ami_releases(self) -> list[tuple[tuple[str | int, ...], str | None]]:
        system = (("systemNodeGroup", "amiReleaseVersion"), self.system_node_group.ami_release_version)
        return [system, *super()._pinned_ami_releases()]

    def _problems(self) -> list[KeyedProblem]:
        return [
            *super()._problems(),
            *cluster_name_problems(self.gpu_node_groups, self.cluster_name),
            *self._address_problems(),
            *self._system_pod_problems(),
            *self._node_monitoring_problems(),
        ]

    def _system_services(self) -> tuple[str, ...]:
        """The cluster-service pods the system nodes hold, Karpenter's controller included."""
        karpenter = karpenter_pods(self.gpu_node_groups, self.system_node_group.scaling.min_size)
        return system_service_pods(self.autoscaler_enabled, self.cloudwatch_pipeline, karpenter)

    def _system_pod_problems(self) -> list[KeyedProblem]:
        # The cluster services run on the system nodes only (the autoscaler's affinity keeps it off
        # GPU nodes; GPU nodes are tainted by default): nodes whose max pods leave too few slots
        # besides their DaemonSet pods leave some of them Pending for good.
        system = self.system_node_group
        small = [t for t in system.instance_types if t in catalog.SMALL_MAX_PODS]
        if not small:
            return []
        daemonsets = catalog.node_daemonset_pods(self.cloudwatch_pipeline)
        max_pods = min(catalog.SMALL_MAX_PODS[t] for t in small)
        per_node = max_pods - len(daemonsets)
        services = self._system_services()
        if per_node * system.scaling.desired_size >= len(services):
            return []
        fix = (
            f", or a desiredSize of at least {-(-len(services) // per_node)}"
            if per_node > 0
            else "; no node count of these helps"
        )
        return [
            (
                ("systemNodeGroup", "instanceTypes"),
                list(system.instance_types),
                f"instance types with more pod room (e.g. t3.medium, m6i.large){fix}: {', '.join(small)} run at "
                f"most {max_pods} pods, {per_node} besides the DaemonSet pods ({', '.join(daemonsets)}), so "
                f"{system.scaling.desired_size} node(s) hold {per_node * system.scaling.desired_size} of the "
                f"{len(services)} cluster-service pods ({', '.join(services)})",
            )
        ]

    def nodes_need_addresses(
        self, at_max: bool, unknown_system_node: int = catalog.MIN_NODE_ADDRESSES, subnets: int = 1
    ) -> int:
        """Addresses of the private subnets the nodes hold at least, at desired or max sizes; with
        ``subnets``, what one of that many subnets must hold (how: addresses.py)."""
        size = (lambda s: s.max_size) if at_max else (lambda s: s.desired_size)
        # A group in one availabilityZone (issue 32) puts all its nodes in that zone's subnet.
        gpu = sum(
            gpu_group_addresses(
                g.instance_types, nodes_held(g, at_max), 1 if g.availability_zone else subnets, efa_enis_taken(g)
            )
            for g in self.gpu_node_groups
        )
        system = self.system_node_group
        services = len(self._system_services())
        return gpu + system_group_addresses(
            system.instance_types,
            system.scaling.desired_size,
            size(system.scaling),
            services,
            unknown_system_node,
            subnets,
        )

    def private_subnet_room(self) -> tuple[int, int, int]:
        """(count, usable addresses each, addresses left for nodes) of a created VPC's private subnets."""
        count, usable = created_private_subnets(self.network)
        return count, usable, count * (usable - EKS_ADDRESSES_PER_SUBNET)

    def _address_problems(self) -> list[KeyedProblem]:
        # Only a created VPC's subnets are known here (an existing VPC's sizes need the AWS API).
        net = self.network
        if net.existing_vpc:
            return []
        count, usable, _ = self.private_subnet_room()
        room = usable - EKS_ADDRESSES_PER_SUBNET
        # With the autoscaler, CA takes groups up to maxSize under load; without it they stay at
        # desiredSize (nothing else resizes them): either way nodes that would get no pod addresses
        # fail long after `pulumi up` (pods stuck "failed to assign an IP address to container").
        at_max = self.autoscaler_enabled
        need = self.nodes_need_addresses(at_max, subnets=count)
        if need <= room:
            return []
        sizes = "maxSize (the Cluster Autoscaler scales up to it)" if at_max else "desiredSize"
        sizes += address_note(self.gpu_node_groups)
        return [
            (
                ("network", "cidrBlock"),
                net.cidr_block,
                f"a larger block: each of its {count} private subnets holds {room} addresses for nodes and pods "
                f"({usable} usable, less the {EKS_ADDRESSES_PER_SUBNET} EKS needs), but at {sizes} one subnet must "
                f"hold at least {need}: a node's ENIs take their addresses from its own subnet, and each group's nodes "
                f"spread evenly over the subnets, so ceil(nodes / {count}) of every group may share one (the VPC CNI "
                "holds whole ENIs of addresses: a GPU node those its max pods need, g4dn.xlarge 3 x 10 = 30; a system "
                "node those its service pods use and a warm one, m6i.large 2 x 10 = 20)",
            )
        ]
