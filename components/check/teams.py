"""The rules across a cluster's teams and its GPU node groups' plans (``teams_problems``, errors; the
warnings read ``unused_groups`` and ``oversubscribed_quotas``).

Everything a team names about capacity is read from the group plans (``GroupPlan.node_resources``,
``slots_at_max_size``): a quota names a resource its groups advertise, MIG profiles included once
groups advertise them, and `vpc.amazonaws.com/efa` on EFA groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config.errors import KeyedProblem
from ..config.teams import TeamSettings, own_namespaces
from ..plan.group import GroupPlan


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
