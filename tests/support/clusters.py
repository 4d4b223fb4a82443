"""The clusters of tests/data/clusters.py loaded: their settings and plans, and teams over their groups
(tests/test_cross_group.py runs every decision over several groups on each)."""

from __future__ import annotations

from functools import cache

from components.check.loading import load_settings
from components.check.settings import Settings
from components.config.teams import TeamSettings
from components.plan.group import GroupPlan
from tests.data.clusters import CLUSTERS, GROUPS


#: Teams over the groups of a cluster (the teams' decisions): the first group to one team, the
#: rest to another, each team's quota on the first resource its groups advertise.
def teams_of(plans: tuple[GroupPlan, ...]) -> list[TeamSettings]:
    first, rest = plans[:1], plans[1:]
    teams = []
    for name, mine in (("alpha", first), ("beta", rest)):
        resource = next(iter(mine[0].advertised_resources))
        teams.append(
            TeamSettings.model_validate({"name": name, "nodeGroups": [p.name for p in mine], "quota": {resource: 1}})
        )
    return teams


@cache
def settings_of(cluster: str) -> Settings:
    """The validated settings of ``cluster`` (a ConfigError here means the cluster is not valid)."""
    groups = [GROUPS[g] for g in CLUSTERS[cluster]]
    return load_settings({"clusterName": cluster, "gpuNodeGroups": groups, "autoscaler": {"enabled": False}})


def plans_of(cluster: str) -> tuple[GroupPlan, ...]:
    return settings_of(cluster).plans
