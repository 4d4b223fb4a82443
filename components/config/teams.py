"""Teams on the shared GPUs: a namespace per team, GPU quotas, per-container defaults and maxima, the
node groups the team may use and the IAM principals that administer its namespace; with the rules
across teams and capacity (``teams_problems``, errors; ``teams_warnings``, warnings).

Everything a team names about capacity is read from the group plans (``GroupPlan.node_resources``,
``slots_at_max_size``): a quota names a resource its groups advertise, MIG profiles included once
groups advertise them, and `vpc.amazonaws.com/efa` on EFA groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from ..plan.group import GroupPlan
from .errors import KeyedProblem, KeyedProblems
from .fields import RESERVED_NAMESPACES, Count, NamespaceName, PrincipalArn, ResourceName, _Model, _unique, doc

#: Pod Security Standards levels (Kubernetes docs, "Pod Security Admission": the label
#: ``pod-security.kubernetes.io/<mode>: privileged | baseline | restricted``).
PodSecurityLevel = Literal["privileged", "baseline", "restricted"]

#: Namespaces the library creates or uses besides the settings' own (``gpuOperator.namespace``,
#: ``verification.namespace``, ``observability.namespace``): the CloudWatch add-on's
#: (observability/values.py CLOUDWATCH_NAMESPACE; repeated here, config/ imports no component).
LIBRARY_FIXED_NAMESPACES = ("amazon-cloudwatch",)


def _non_empty_groups(groups: list[str]) -> list[str]:
    if not groups:
        raise ValueError("at least one GPU node group name (a team's GPU pods must land somewhere)")
    return groups


class TeamSettings(_Model):
    """One team: its namespace, GPU quota, defaults, node groups and principals."""

    model_config = ConfigDict(title="TeamSettings")

    name: ResourceName = Field(
        **doc(
            "The team's name (1–40 lower-case alphanumerics or `-`): names its objects (`gpu-eks-team-<name>`). "
            "Changing it replaces them.",
            type="string",
            default="required",
        )
    )
    namespace: NamespaceName | None = Field(
        None,
        **doc(
            "The team's namespace, created by the library (a DNS label); one team per namespace, not one the "
            "library uses (`gpuOperator.namespace`, `verification.namespace`, `observability.namespace`, "
            "`amazon-cloudwatch`) nor one Kubernetes creates (`default`, `kube-system`, `kube-public`, "
            "`kube-node-lease`).",
            type="string",
            default="the team's `name`",
        ),
    )
    pod_security: PodSecurityLevel = Field(
        "baseline",
        **doc(
            "The namespace's Pod Security Standard, enforced (and warned and audited) by the API server's Pod "
            "Security admission: `privileged`, `baseline` or `restricted`. `baseline` by default: most CUDA images "
            "run as root, which `restricted` refuses.",
            type="`privileged` | `baseline` | `restricted`",
            default="`baseline`",
        ),
    )
    quota: dict[str, Annotated[Count, Field(ge=0)]] = Field(
        {},
        **doc(
            "GPU quota of the namespace per extended resource (`nvidia.com/gpu`, `nvidia.com/gpu.shared`, MIG "
            "resources, `vpc.amazonaws.com/efa` of EFA groups): the sum of the requests of the namespace's pods (a "
            "ResourceQuota `requests.<resource>`). Each resource must be one a node group of the team advertises "
            "(`gpuNodeGroups` stack output `resourceName`). Above the slots the team's groups have at their "
            "maxSize is a warning. A resource left out is not limited.",
            type="map of resource name: int ≥ 0",
            default="`{}` (no quota)",
        ),
    )
    default_per_container: dict[str, Annotated[Count, Field(ge=0)]] = Field(
        {},
        **doc(
            "GPU request (= limit) the LimitRange gives each container of the namespace that asks for none of "
            "the resource, per resource. Every container gets it, sidecars and init containers included: set it "
            "only where the namespace runs GPU pods alone. Each resource as for `quota`.",
            type="map of resource name: int ≥ 0",
            default="`{}` (none)",
        ),
    )
    max_per_container: dict[str, Annotated[Count, Field(ge=1)]] = Field(
        {},
        **doc(
            "Most of a resource one container may request (a LimitRange `max`). A container that asks for none "
            "gets `defaultPerContainer` or 0 (written out: the API server would otherwise default it to the max, "
            "giving every container GPUs). Each resource as for `quota`; at least `defaultPerContainer`.",
            type="map of resource name: int ≥ 1",
            default="`{}` (no maximum)",
        ),
    )
    node_groups: Annotated[list[str], AfterValidator(_non_empty_groups), AfterValidator(_unique)] = Field(
        **doc(
            "Names of the `gpuNodeGroups` the team's GPU pods may run on (each once): a ValidatingAdmissionPolicy "
            "refuses the namespace's GPU pods that do not select them by `gpu-eks.io/node-group`.",
            type="list of group names",
            default="required",
        )
    )
    principals: Annotated[list[PrincipalArn], AfterValidator(_unique)] = Field(
        [],
        **doc(
            "IAM roles or users that administer the namespace: an EKS access entry each, with "
            "`AmazonEKSAdminPolicy` scoped to the namespace (Kubernetes `admin` there: no quota, LimitRange or "
            "namespace changes). The rules of `adminPrincipalArns`; a principal in one team only, and not an "
            "`adminPrincipalArns` one (EKS keeps one access entry per principal).",
            type="list of IAM role/user ARNs",
            default="`[]`",
        ),
    )

    @property
    def namespace_name(self) -> str:
        """The namespace: ``namespace``, or the team's name."""
        return self.namespace or self.name

    @property
    def limited_resources(self) -> tuple[str, ...]:
        """The resources of the LimitRange (with a default or a maximum), sorted."""
        return tuple(sorted({*self.default_per_container, *self.max_per_container}))

    @model_validator(mode="after")
    def _default_within_max(self) -> TeamSettings:
        # Kubernetes ValidateLimitRange (pkg/apis/core/validation/validation.go, v1.35): "default value
        # %s is greater than max value %s" for a default above the max.
        problems: list[KeyedProblem] = [
            (("defaultPerContainer", resource), value, f"at most maxPerContainer.{resource} ({top})")
            for resource, value in self.default_per_container.items()
            if (top := self.max_per_container.get(resource)) is not None and value > top
        ]
        if problems:
            raise KeyedProblems(problems)
        return self


def own_namespaces(operator: str, verification: str, observability: str | None) -> tuple[str, ...]:
    """The namespaces no team may take: Kubernetes' own and the library's."""
    extra = (observability,) if observability else ()
    return (*RESERVED_NAMESPACES, operator, verification, *LIBRARY_FIXED_NAMESPACES, *extra)


def _team_plans(team: TeamSettings, plans: Sequence[GroupPlan]) -> list[GroupPlan]:
    return [p for p in plans if p.name in team.node_groups]


def teams_problems(
    teams: Sequence[TeamSettings],
    plans: Sequence[GroupPlan],
    reserved: Sequence[str],
    admin_principals: Sequence[str] = (),
) -> list[KeyedProblem]:
    """Why ``teams`` cannot share the cluster of ``plans``: keyed problems (from the stack's root), or [].

    * Names and namespaces are unique (objects are named after the team; a ResourceQuota and a
      LimitRange are per namespace, so two teams in one would share and fight over them).
    * A namespace is not Kubernetes' or the library's (``reserved``): the team's Namespace object
      would collide with the one that exists, and its policy would bind the library's pods.
    * A team's groups exist, and each resource of its quota, default and maximum is advertised by one
      of them (``GroupPlan.node_resources``: GPU resources and EFA): a quota on anything else never admits a pod that
      can run on the team's groups.
    * A principal has one access entry: in one team, and not among ``admin_principals``
      (botocore eks CreateAccessEntryRequest.principalArn: "You can't specify the same ARN in more
      than one access entry").
    """
    problems: list[KeyedProblem] = []
    names = {p.name for p in plans}
    first_name: dict[str, int] = {}
    first_namespace: dict[str, int] = {}
    first_principal: dict[str, int] = {}
    for i, team in enumerate(teams):
        j = first_name.setdefault(team.name, i)
        if j != i:
            problems.append((("teams", i, "name"), team.name, f"a name of its own (teams[{j}] has it)"))
        ns = team.namespace_name
        j = first_namespace.setdefault(ns, i)
        if j != i:
            problems.append(
                (
                    ("teams", i, "namespace"),
                    ns,
                    f"a namespace of its own (teams[{j}] ({teams[j].name}) has it): a namespace has one quota and "
                    "one LimitRange per team, two teams in one would share them",
                )
            )
        if ns in reserved:
            problems.append(
                (
                    ("teams", i, "namespace"),
                    ns,
                    f"a namespace that is neither Kubernetes' nor the library's "
                    f"({', '.join(dict.fromkeys(reserved))}): "
                    "the library creates the team's namespace and binds its GPU policy to it",
                )
            )
        for k, group in enumerate(team.node_groups):
            if group not in names:
                problems.append(
                    (
                        ("teams", i, "nodeGroups", k),
                        group,
                        f"the name of a gpuNodeGroups entry ({', '.join(sorted(names)) or 'none'})",
                    )
                )
        mine = _team_plans(team, plans)
        advertised = sorted({r for p in mine for r in p.node_resources})
        for key, resources in (
            ("quota", team.quota),
            ("defaultPerContainer", team.default_per_container),
            ("maxPerContainer", team.max_per_container),
        ):
            for resource in resources:
                if resource not in advertised:
                    problems.append(
                        (
                            ("teams", i, key, resource),
                            resource,
                            f"a resource the team's node groups advertise ({', '.join(advertised) or 'none'}): a "
                            "pod asking for another never lands on them",
                        )
                    )
        for k, arn in enumerate(team.principals):
            if arn in admin_principals:
                problems.append(
                    (
                        ("teams", i, "principals", k),
                        arn,
                        "a principal that is not in adminPrincipalArns: EKS keeps one access entry per principal "
                        "(it is cluster admin already)",
                    )
                )
                continue
            j = first_principal.setdefault(arn, i)
            if j != i:
                problems.append(
                    (
                        ("teams", i, "principals", k),
                        arn,
                        f"a principal of one team (teams[{j}] ({teams[j].name}) has it): EKS keeps one access entry "
                        "per principal",
                    )
                )
    return problems


def unused_groups(teams: Sequence[TeamSettings], plans: Sequence[GroupPlan]) -> list[tuple[int, GroupPlan]]:
    """(index, plan) of the groups no team names, when there are teams."""
    if not teams:
        return []
    named = {g for t in teams for g in t.node_groups}
    return [(i, p) for i, p in enumerate(plans) if p.name not in named]


def slots_at_max_size(plans: Sequence[GroupPlan], resource: str) -> int:
    """Slots of ``resource`` the groups of ``plans`` advertise with every group at its maxSize."""
    return sum(p.node_resources.get(resource, 0) * p.settings.scaling.max_size for p in plans)


def oversubscribed_quotas(
    teams: Sequence[TeamSettings], plans: Sequence[GroupPlan]
) -> list[tuple[int, str, int, int, str]]:
    """(team index, resource, quota, slots, why) of every quota above the slots at maxSize: the team's
    own quota above its groups' slots, or the quotas of every team on a resource above the slots of
    all the groups of those teams."""
    out = []
    for i, team in enumerate(teams):
        for resource, quota in team.quota.items():
            slots = slots_at_max_size(_team_plans(team, plans), resource)
            if quota > slots:
                out.append((i, resource, quota, slots, "the team's node groups"))
    for resource in sorted({r for t in teams for r in t.quota}):
        sharing = [(i, t) for i, t in enumerate(teams) if resource in t.quota]
        groups = {g for _, t in sharing for g in t.node_groups}
        slots = slots_at_max_size([p for p in plans if p.name in groups], resource)
        total = sum(t.quota[resource] for _, t in sharing)
        if len(sharing) > 1 and total > slots:
            i = sharing[-1][0]
            names = ", ".join(t.name for _, t in sharing)
            out.append((i, resource, total, slots, f"the node groups of {names} (their quotas added up)"))
    return out


def settings_teams_problems(settings: Any) -> list[KeyedProblem]:
    """``teams_problems`` of a ``GpuCapacitySettings`` or ``Settings`` (admin principals: Settings only)."""
    obs = settings.observability
    reserved = own_namespaces(
        settings.gpu_operator.namespace, settings.verification.namespace, obs.namespace if obs.enabled else None
    )
    return teams_problems(settings.teams, settings.plans, reserved, getattr(settings, "admin_principal_arns", ()))
