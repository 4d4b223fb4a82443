"""Teams' settings (issue 25): the rules across teams and capacity, every problem at once, keyed.

Sources: a quota names a resource the team's groups advertise (GroupPlan.advertised_resources; a
ResourceQuota on any other never limits a pod that can run there); one team per namespace (one
ResourceQuota and LimitRange per team); Kubernetes' initial namespaces (Kubernetes docs,
"Namespaces"); EKS keeps one access entry per principal (botocore eks 2017-11-01
CreateAccessEntryRequest.principalArn: "You can't specify the same ARN in more than one access
entry"); LimitRange default <= max (k8s.io/kubernetes pkg/apis/core/validation ValidateLimitRange,
"default value ... is greater than max value").
"""

from __future__ import annotations

from typing import Any

import pytest

from components.check.loading import load_capacity_settings, load_settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError

ADMIN = "arn:aws:iam::123456789012:role/PlatformAdmin"
ML = "arn:aws:iam::123456789012:role/MlEngineers"
SCALING = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
#: Two groups that differ: t4 (g4dn.xlarge, 1 GPU x 4 replicas: 4 nvidia.com/gpu per node), a10g
#: (g5.12xlarge, 4 GPUs, exclusive: 4 nvidia.com/gpu per node), a renamed one (g4dn.12xlarge, 4 GPUs x 2
#: replicas renamed: 8 nvidia.com/gpu.shared per node), all at maxSize 2.
GROUPS = [
    {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING},
    {"name": "a10g", "instanceTypes": ["g5.12xlarge"], "scaling": SCALING, "timeSlicing": {"replicas": 1}},
    {
        "name": "shared",
        "instanceTypes": ["g4dn.12xlarge"],
        "scaling": SCALING,
        "timeSlicing": {"replicas": 2, "renameByDefault": True},
    },
]


def settings(teams: list[dict[str, Any]], **extra: Any):
    return load_settings(
        {"clusterName": "c", "autoscaler": {"enabled": False}, "gpuNodeGroups": GROUPS, "teams": teams, **extra}
    )


def problems(teams: list[dict[str, Any]], **extra: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        settings(teams, **extra)
    return [str(p) for p in info.value.problems]


def team_warnings(teams: list[dict[str, Any]]) -> list[str]:
    return [str(w) for w in settings_warnings(settings(teams)) if "team" in str(w)]


def test_no_teams_by_default():
    assert load_settings({"clusterName": "c"}).teams == ()


def test_a_team_gets_its_defaults():
    (team,) = settings([{"name": "ml", "nodeGroups": ["t4"]}]).teams
    assert team.namespace_name == "ml"
    assert team.pod_security == "baseline"
    assert (team.quota, team.default_per_container, team.max_per_container, team.principals) == ({}, {}, {}, [])


def test_every_problem_across_teams_at_once():
    assert problems(
        [
            {
                "name": "ml",
                "namespace": "gpu-operator",
                "quota": {"nvidia.com/gpu.shared": 8, "nvidia.com/gpu": 4},
                "nodeGroups": ["t4", "v100"],
                "principals": [ADMIN, ML],
            },
            {"name": "ml", "namespace": "gpu-operator", "nodeGroups": ["shared"], "principals": [ML]},
            {
                "name": "cv",
                "namespace": "kube-system",
                "maxPerContainer": {"nvidia.com/gpu": 1},
                "nodeGroups": ["shared"],
            },
        ],
        adminPrincipalArns=[ADMIN],
    ) == [
        'gpu-eks:teams[0].namespace: received "gpu-operator"; expected a namespace that is neither Kubernetes\' nor '
        "the library's (default, kube-system, kube-public, kube-node-lease, gpu-operator, gpu-timeslicing-check, "
        "amazon-cloudwatch): the library creates the team's namespace and binds its GPU policy to it",
        'gpu-eks:teams[0].nodeGroups[1]: received "v100"; expected the name of a gpuNodeGroups entry '
        "(a10g, shared, t4)",
        'gpu-eks:teams[0].quota.nvidia.com/gpu.shared: received "nvidia.com/gpu.shared"; expected a resource the '
        "team's node groups advertise (nvidia.com/gpu): a pod asking for another never lands on them",
        f'gpu-eks:teams[0].principals[0]: received "{ADMIN}"; expected a principal that is not in adminPrincipalArns: '
        "EKS keeps one access entry per principal (it is cluster admin already)",
        'gpu-eks:teams[1].name: received "ml"; expected a name of its own (teams[0] has it)',
        'gpu-eks:teams[1].namespace: received "gpu-operator"; expected a namespace of its own (teams[0] (ml) has it): '
        "a namespace has one quota and one LimitRange per team, two teams in one would share them",
        'gpu-eks:teams[1].namespace: received "gpu-operator"; expected a namespace that is neither Kubernetes\' nor '
        "the library's (default, kube-system, kube-public, kube-node-lease, gpu-operator, gpu-timeslicing-check, "
        "amazon-cloudwatch): the library creates the team's namespace and binds its GPU policy to it",
        f'gpu-eks:teams[1].principals[0]: received "{ML}"; expected a principal of one team (teams[0] (ml) has it): '
        "EKS keeps one access entry per principal",
        'gpu-eks:teams[2].namespace: received "kube-system"; expected a namespace that is neither Kubernetes\' nor '
        "the library's (default, kube-system, kube-public, kube-node-lease, gpu-operator, gpu-timeslicing-check, "
        "amazon-cloudwatch): the library creates the team's namespace and binds its GPU policy to it",
        'gpu-eks:teams[2].maxPerContainer.nvidia.com/gpu: received "nvidia.com/gpu"; expected a resource the team\'s '
        "node groups advertise (nvidia.com/gpu.shared): a pod asking for another never lands on them",
    ]


def test_the_renamed_resource_of_a_group_is_the_one_its_team_names():
    (team,) = settings([{"name": "ml", "quota": {"nvidia.com/gpu.shared": 16}, "nodeGroups": ["shared"]}]).teams
    assert team.quota == {"nvidia.com/gpu.shared": 16}


def test_the_verification_and_observability_namespaces_are_the_librarys():
    lines = problems(
        [
            {"name": "a", "namespace": "checks", "nodeGroups": ["t4"]},
            {"name": "b", "namespace": "mon", "nodeGroups": ["t4"]},
        ],
        verification={"namespace": "checks"},
        observability={"enabled": True, "pipeline": "prometheus", "namespace": "mon"},
    )
    assert [line.split(";")[0] for line in lines] == [
        'gpu-eks:teams[0].namespace: received "checks"',
        'gpu-eks:teams[1].namespace: received "mon"',
    ]


def test_a_default_above_the_max_is_an_error():
    assert problems(
        [
            {
                "name": "ml",
                "defaultPerContainer": {"nvidia.com/gpu": 2},
                "maxPerContainer": {"nvidia.com/gpu": 1},
                "nodeGroups": ["t4"],
            }
        ]
    ) == [
        "gpu-eks:teams[0].defaultPerContainer.nvidia.com/gpu: received 2; expected at most "
        "maxPerContainer.nvidia.com/gpu (1)"
    ]


@pytest.mark.parametrize(
    ("team", "line"),
    [
        ({"name": "ml", "nodeGroups": []}, "gpu-eks:teams[0].nodeGroups: received []"),
        ({"name": "ml", "nodeGroups": ["t4", "t4"]}, 'gpu-eks:teams[0].nodeGroups: received ["t4", "t4"]'),
        ({"name": "ML", "nodeGroups": ["t4"]}, 'gpu-eks:teams[0].name: received "ML"'),
        (
            {"name": "ml", "quota": {"nvidia.com/gpu": -1}, "nodeGroups": ["t4"]},
            "gpu-eks:teams[0].quota.nvidia.com/gpu",
        ),
        (
            {"name": "ml", "maxPerContainer": {"nvidia.com/gpu": 0}, "nodeGroups": ["t4"]},
            "gpu-eks:teams[0].maxPerContainer",
        ),
        (
            {"name": "ml", "podSecurity": "strict", "nodeGroups": ["t4"]},
            'gpu-eks:teams[0].podSecurity: received "strict"',
        ),
        (
            {"name": "ml", "nodeGroups": ["t4"], "principals": ["arn:aws:sts::123456789012:assumed-role/A/s"]},
            "principals[0]",
        ),
    ],
)
def test_each_team_key_is_checked(team, line):
    (found,) = problems([team])
    assert line in found


def test_groups_no_team_names_are_a_warning_only_with_teams():
    assert team_warnings([]) == []
    assert [
        str(w) for w in settings_warnings(settings([{"name": "ml", "nodeGroups": ["t4"]}])) if "nodeGroups" in str(w)
    ] == [
        'gpu-eks:gpuNodeGroups[1].name: received "a10g"; expected a group some team\'s nodeGroups names: no '
        "team's GPU pods may run on it (pods of namespaces without a team still may)",
        "gpu-eks:gpuNodeGroups[2].name: received \"shared\"; expected a group some team's nodeGroups names: no team's "
        "GPU pods may run on it (pods of namespaces without a team still may)",
    ]


def test_quotas_above_the_slots_at_max_size_are_warnings():
    # t4: 4 slots per node x maxSize 2 = 8; a10g: 4 GPUs x 2 = 8. ml alone asks 9 of t4's 8; ml and cv
    # together ask 9 + 8 = 17 of the 16 of t4 and a10g.
    found = team_warnings(
        [
            {"name": "ml", "quota": {"nvidia.com/gpu": 9}, "nodeGroups": ["t4"]},
            {"name": "cv", "quota": {"nvidia.com/gpu": 8}, "nodeGroups": ["a10g"]},
            {"name": "ops", "quota": {"nvidia.com/gpu.shared": 16}, "nodeGroups": ["shared"]},
        ]
    )
    assert found == [
        "gpu-eks:teams[0].quota.nvidia.com/gpu: received 9; expected at most 8, the nvidia.com/gpu slots of the "
        "team's node groups at maxSize, or an oversubscription you chose: pods within the quota beyond those slots "
        "stay Pending",
        "gpu-eks:teams[1].quota.nvidia.com/gpu: received 17; expected at most 16, the nvidia.com/gpu slots of the "
        "node groups of ml, cv (their quotas added up) at maxSize, or an oversubscription you chose: pods within the "
        "quota beyond those slots stay Pending",
    ]


def test_quotas_within_the_slots_warn_nothing():
    assert (
        team_warnings(
            [
                {"name": "ml", "quota": {"nvidia.com/gpu": 8}, "nodeGroups": ["t4"]},
                {"name": "cv", "quota": {"nvidia.com/gpu": 8}, "nodeGroups": ["a10g"]},
                {"name": "ops", "quota": {"nvidia.com/gpu.shared": 16}, "nodeGroups": ["shared"]},
            ]
        )
        == []
    )


def test_gpu_capacity_settings_take_teams_with_the_same_rules():
    raw = {"kubernetesVersion": "1.35", "gpuNodeGroups": [{"name": "t4"}]}
    ok = load_capacity_settings(
        {**raw, "teams": [{"name": "ml", "quota": {"nvidia.com/gpu": 4}, "nodeGroups": ["t4"]}]}
    )
    assert ok.teams[0].quota == {"nvidia.com/gpu": 4}
    with pytest.raises(ConfigError) as info:
        load_capacity_settings({**raw, "teams": [{"name": "ml", "nodeGroups": ["a10g"]}]})
    assert [str(p) for p in info.value.problems] == [
        'gpu-eks:teams[0].nodeGroups[0]: received "a10g"; expected the name of a gpuNodeGroups entry (t4)'
    ]


def test_the_component_package_passes_whole_numbers_of_a_quota():
    # Numbers cross the wire as floats (ComponentProvider.map_inputs, pulumi 3.272): a user map's
    # values are made whole again, its keys (resource names) kept as data.
    from components.multilang import settings_from_inputs

    s = settings_from_inputs(
        {"cluster_name": "c", "teams": [{"name": "ml", "quota": {"nvidia.com/gpu": 2.0}, "node_groups": ["gpu"]}]}
    )
    assert s.teams[0].quota == {"nvidia.com/gpu": 2}


def test_a_default_names_a_resource_of_the_teams_groups_too():
    assert problems([{"name": "ml", "defaultPerContainer": {"nvidia.com/mig-1g.5gb": 1}, "nodeGroups": ["a10g"]}]) == [
        'gpu-eks:teams[0].defaultPerContainer.nvidia.com/mig-1g.5gb: received "nvidia.com/mig-1g.5gb"; expected a '
        "resource the team's node groups advertise (nvidia.com/gpu): a pod asking for another never lands on them"
    ]
