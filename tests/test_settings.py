"""Config validation: every invalid value is reported with key, received value and expectation."""

from __future__ import annotations

import pulumi
import pytest

from components import catalog
from components.catalog import gpu_operator as chart
from components.check.loading import load_capacity_settings, load_settings
from components.check.settings import GpuCapacitySettings, Settings
from components.config.errors import ConfigError
from components.plan.group import plan_group
from tests.support.paths import ROOT
from tooling.simulation import run_stack


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "test", **raw})
    return [str(p) for p in info.value.problems]


def group(**overrides) -> dict:
    return {"name": "gpu", **overrides}


def test_defaults_are_documented_values():
    s = load_settings({"clusterName": "c"})
    assert s.kubernetes_version == catalog.DEFAULT_KUBERNETES_VERSION
    assert s.gpu_operator.chart_version == chart.DEFAULT_CHART_VERSION == "v26.7.0"
    (g,) = s.gpu_node_groups
    assert (g.instance_types, g.capacity_type, g.disk_size_gib) == (["g4dn.xlarge"], "ON_DEMAND", 100)
    assert [(t.key, t.value, t.effect) for t in g.taints] == [("nvidia.com/gpu", "true", "NoSchedule")]
    assert g.time_slicing.replicas == 4 and plan_group(g).profile_name == "gpu"
    assert s.verification.enabled is False and s.endpoint_public_access_cidrs == []


def test_default_kubernetes_version_is_in_standard_support_today():
    import datetime as dt

    today = dt.date(2026, 11, 21)
    assert catalog.KUBERNETES_VERSIONS[catalog.DEFAULT_KUBERNETES_VERSION].status(today) == "STANDARD_SUPPORT"
    # The reference setup's version still validates (it is in extended support).
    assert load_settings({"clusterName": "c", "kubernetesVersion": "1.32"}).kubernetes_version == "1.32"


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        (0, "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 0; expected a number of at least 1"),
        (-3, "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received -3; expected a number of at least"),
        (2.5, "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 2.5; expected a whole number"),
        ("four", 'gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received "four"; expected a whole number'),
        (True, "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received true; expected a whole number"),
    ],
)
def test_replicas_must_be_an_integer_of_at_least_one(replicas, expected):
    (line,) = problems({"gpuNodeGroups": [group(timeSlicing={"replicas": replicas})]})
    assert line.startswith(expected)


BLACKWELL = (
    "it is Blackwell, and the gpu-operator chart versions here were not checked against Blackwell "
    "(dcgm-exporter, validator)"
)


@pytest.mark.parametrize(
    ("instance_type", "detail"),
    [
        # Same-family sizes first, then the closest others, at most 3.
        ("p5.metal", "nearest known p5.4xlarge, p5.48xlarge, g5g.metal"),
        ("g6e.metal", "nearest known g6e.xlarge, g6e.2xlarge, g6e.4xlarge"),
        ("p4d.x", "nearest known p4d.24xlarge, p4de.24xlarge, g4dn.xlarge"),
        ("g4dn.24xlarge", "nearest known g4dn.2xlarge, g4dn.4xlarge, g4dn.12xlarge"),
        # Typos: in the size, in the family.
        ("g4dn.xlarg", "nearest known g4dn.xlarge, g4dn.2xlarge, g4dn.4xlarge"),
        ("g4nd.xlarge", "nearest known g4dn.xlarge, g4dn.2xlarge, g4dn.4xlarge"),
        ("g4ad.xlarge", "nearest known g4dn.xlarge, g4dn.2xlarge, g4dn.4xlarge"),  # AMD, not NVIDIA
        ("zz.top", "nearest known g5g.metal, g4dn.metal, g5.xlarge"),
        # A CPU type is not a misspelt GPU type (issue 42): no nearest GPU types for it.
        ("m5.large", "not a GPU type (the m5 family has no GPU: a systemNodeGroup type)"),
        (
            "T3.Large",
            "instance type names are lower-case; not a GPU type (the t3 family has no GPU: a systemNodeGroup type)",
        ),
        # Upper case: compared in lower case, and said.
        ("G6.XLARGE", "instance type names are lower-case; nearest known g6.xlarge, g6.2xlarge, g6.4xlarge"),
        # NVIDIA families the catalog leaves out: why.
        (
            "g7.2xlarge",
            "the library leaves g7 out, since its RTX PRO 4500 (Blackwell) needs NVIDIA driver 595, which the "
            "AL2023 NVIDIA AMI ships only from release v20260917 (amazon-eks-ami#2768, fixed by #2819), newer than "
            "the EKS max-pods tables the catalog is checked against; nearest known g5.2xlarge, g6.2xlarge, g5.12xlarge",
        ),
        (
            "g7e.12xlarge",
            f"the library leaves g7e out, since {BLACKWELL}; nearest known g6e.12xlarge, g5.12xlarge, g6.12xlarge",
        ),
        (
            "p6-b200.48xlarge",
            f"the library leaves p6-b200 out, since {BLACKWELL}; nearest known g6.48xlarge, p5.48xlarge, g6e.48xlarge",
        ),
        (
            "P6-B300.48XLARGE",
            f"instance type names are lower-case; the library leaves p6-b300 out, since {BLACKWELL}; nearest known "
            "g6.48xlarge, p5.48xlarge, g6e.48xlarge",
        ),
        (
            "p6e-gb200.36xlarge",
            "the library leaves p6e-gb200 out, since it is UltraServer-only arm64 capacity; nearest known "
            "g6e.16xlarge, g6e.xlarge, g5.16xlarge",
        ),
        (
            "p3dn.24xlarge",
            "the library leaves p3dn out, since its V100 is a previous generation; nearest known p4d.24xlarge, "
            "p4de.24xlarge, g4dn.2xlarge",
        ),
        (
            "p3.2xlarge",
            "the library leaves p3 out, since its V100 is a previous generation; nearest known p4d.24xlarge, "
            "g5.2xlarge, g6.2xlarge",
        ),
    ],
)
def test_an_unknown_instance_type_names_the_nearest_known_ones(instance_type, detail):
    (line,) = problems({"gpuNodeGroups": [group(instanceTypes=[instance_type])]})
    assert line == (
        f'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["{instance_type}"]; expected NVIDIA GPU instance types '
        "the library knows (families g4dn, g5, g5g, g6, gr6, g6e, p4d, p4de, p5, p5e, p5en, g6f, gr6f; "
        f'docs/configuration.md, "GPU families"), got {instance_type}: {detail}'
    )


def test_a_group_mixing_gpu_counts_is_rejected():
    (line,) = problems({"gpuNodeGroups": [group(instanceTypes=["g4dn.xlarge", "g4dn.12xlarge"])]})
    assert line == (
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["g4dn.xlarge", "g4dn.12xlarge"]; expected instance types '
        "with the same GPU model, memory per GPU, GPU count and CPU architecture, since the labels, slots and AMI are "
        "per node group (got g4dn.xlarge=1x T4 16384 MiB x86_64, g4dn.12xlarge=4x T4 16384 MiB x86_64); split them "
        "into separate node groups"
    )


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_a_mig_layout_is_refused_for_t4(strategy):
    (line,) = problems({"gpuNodeGroups": [group(migStrategy=strategy, mig={"layout": "all-1g.10gb"})]})
    assert line == (
        'gpu-eks:gpuNodeGroups[0].mig: received {"layout": "all-1g.10gb", "migDevices": null, "replicas": {}}; '
        "expected no key on g4dn: the T4 has no MIG (NVIDIA MIG user guide, 'Supported GPUs': A100, H100, H200; "
        "families p4d, p4de, p5, p5e, p5en)"
    )


@pytest.mark.parametrize(
    "key",
    ["kubernetes.io/role", "k8s.io/team", "foo.kubernetes.io/x", "node-role.kubernetes.io/gpu", "sub.k8s.io/a"],
)
def test_label_keys_kubelet_refuses_are_rejected(key):
    (line,) = problems({"gpuNodeGroups": [group(labels={key: "x"})]})
    assert line.startswith(f'gpu-eks:gpuNodeGroups[0].labels.{key}: received "{key}"; expected a key outside')


@pytest.mark.parametrize("key", ["bad key", "a/b/c", "-lead/x", "UPPER.example/x", "x" * 64, "team/"])
def test_label_keys_with_invalid_syntax_are_rejected(key):
    (line,) = problems({"gpuNodeGroups": [group(labels={key: "x"})]})
    assert f"gpu-eks:gpuNodeGroups[0].labels.{key}: received" in line
    assert "expected a" in line


@pytest.mark.parametrize(
    "key", ["node.kubernetes.io/pool", "kubelet.kubernetes.io/x", "sub.node.kubernetes.io/x", "team.example.com/ml"]
)
def test_label_keys_kubelet_accepts_pass(key):
    s = load_settings({"clusterName": "c", "gpuNodeGroups": [group(labels={key: "a"})]})
    assert s.gpu_node_groups[0].labels == {key: "a"}


def test_label_values_are_checked():
    (line,) = problems({"gpuNodeGroups": [group(labels={"team.example.com/x": "has space"})]})
    assert line.startswith('gpu-eks:gpuNodeGroups[0].labels.team.example.com/x: received "has space"')


def test_library_labels_cannot_be_overridden():
    (line,) = problems({"gpuNodeGroups": [group(labels={"gpu-eks.io/gpu-count": "9"})]})
    assert "no keys the library sets itself (gpu-eks.io/gpu-count)" in line


def test_the_boot_stages_label_and_taint_keys_cannot_be_used():
    """The node boot stage registers every node with gpu-eks.io/boot-stage=pending:NoSchedule until it
    succeeded, and a failed one with gpu-eks.io/boot-stage-failed and the label gpu-eks.io/boot-stage
    (components/plan/boot.py): a group's own would clash (kubelet refuses a key and effect twice)."""
    taints = [
        {"key": "gpu-eks.io/boot-stage", "value": "x", "effect": "NoExecute"},
        {"key": "gpu-eks.io/boot-stage-failed", "effect": "NoSchedule"},
        {"key": "gpu-eks.io/boot", "effect": "NoSchedule"},
    ]
    reason = (
        "expected a key the node boot stage does not set itself (gpu-eks.io/boot-stage, gpu-eks.io/boot-stage-failed): "
        "it registers every node with them until its stage succeeded or when it failed (docs/node-boot-stage.md), and "
        "kubelet refuses a key and effect twice"
    )
    assert problems({"gpuNodeGroups": [group(taints=taints)]}) == [
        f'gpu-eks:gpuNodeGroups[0].taints[0].key: received "gpu-eks.io/boot-stage"; {reason}',
        f'gpu-eks:gpuNodeGroups[0].taints[1].key: received "gpu-eks.io/boot-stage-failed"; {reason}',
    ]
    (line,) = problems({"gpuNodeGroups": [group(labels={"gpu-eks.io/boot-stage": "ok"})]})
    assert "no keys the library sets itself (gpu-eks.io/boot-stage)" in line


@pytest.mark.parametrize("effect", ["NoExec", "noschedule", "", "Evict"])
def test_taint_effect_must_be_one_of_three(effect):
    (line,) = problems({"gpuNodeGroups": [group(taints=[{"key": "dedicated", "value": "ml", "effect": effect}])]})
    assert line == (
        f'gpu-eks:gpuNodeGroups[0].taints[0].effect: received "{effect}"; '
        "expected one of 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'"
    )


@pytest.mark.parametrize(
    "scaling",
    [
        {"minSize": 3, "desiredSize": 2, "maxSize": 1},
        {"minSize": 2, "desiredSize": 1, "maxSize": 4},
        {"minSize": 1, "desiredSize": 5, "maxSize": 4},
    ],
)
def test_scaling_must_be_ordered(scaling):
    (line,) = problems({"gpuNodeGroups": [group(scaling=scaling)]})
    assert line.startswith("gpu-eks:gpuNodeGroups[0].scaling: received {")
    assert line.endswith("expected minSize <= desiredSize <= maxSize")


@pytest.mark.parametrize("version", ["v25.3.0", "latest", "v99.1.0"])
def test_unknown_chart_version_needs_opt_in(version):
    (line,) = problems({"gpuOperator": {"chartVersion": version}})
    assert line.startswith(f'gpu-eks:gpuOperator.chartVersion: received "{version}"; expected one of v25.3.1, v25.10.1')
    assert "allowUnvalidatedChartVersion: true" in line


def test_opt_in_allows_an_unvalidated_chart_version_but_not_garbage():
    s = load_settings(
        {"clusterName": "c", "gpuOperator": {"chartVersion": "v27.1.0", "allowUnvalidatedChartVersion": True}}
    )
    assert s.gpu_operator.chart_version == "v27.1.0"
    (line,) = problems({"gpuOperator": {"chartVersion": "latest", "allowUnvalidatedChartVersion": True}})
    assert line.endswith("expected a chart version such as v26.7.0")


@pytest.mark.parametrize("version", ["1.2", "1.3", "2.0", "latest", "1.35.1"])
def test_kubernetes_version_is_checked(version):
    (line,) = problems({"kubernetesVersion": version})
    assert line.startswith(f'gpu-eks:kubernetesVersion: received "{version}"; expected a Kubernetes minor version')


def test_unknown_keys_are_reported_as_typos():
    (line,) = problems({"kubernetesVerison": "1.35"})
    assert line.startswith('gpu-eks:kubernetesVerison: received "1.35"; expected no such key')


def test_profiles_with_one_name_and_two_settings_conflict():
    lines = problems(
        {
            "gpuNodeGroups": [
                group(name="a", timeSlicing={"replicas": 4, "profile": "shared"}),
                group(name="b", timeSlicing={"replicas": 2, "profile": "shared"}),
            ]
        }
    )
    assert lines == [
        'gpu-eks:gpuNodeGroups[1].timeSlicing.profile: received "shared"; expected a profile name not used by '
        "gpuNodeGroups[0] (a), whose timeSlicing settings differ: one set of settings per profile name (it is one "
        "key of the device-plugin ConfigMap)"
    ]


def test_every_problem_is_reported_at_once():
    lines = problems(
        {
            "kubernetesVersion": "1.2",
            "gpuOperator": {"chartVersion": "v1.0.0"},
            "gpuNodeGroups": [
                group(
                    instanceTypes=["p3.2xlarge"],
                    scaling={"minSize": 3, "desiredSize": 2, "maxSize": 1},
                    timeSlicing={"replicas": 0},
                    migStrategy="all",
                    labels={"kubernetes.io/foo": "x"},
                    taints=[{"key": "a", "effect": "Never"}],
                )
            ],
        }
    )
    keys = [line.split(": received")[0] for line in lines]
    assert keys == [
        "gpu-eks:kubernetesVersion",
        "gpu-eks:gpuNodeGroups[0].instanceTypes",
        "gpu-eks:gpuNodeGroups[0].scaling",
        "gpu-eks:gpuNodeGroups[0].labels.kubernetes.io/foo",
        "gpu-eks:gpuNodeGroups[0].taints[0].effect",
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas",
        "gpu-eks:gpuNodeGroups[0].migStrategy",
        "gpu-eks:gpuOperator.chartVersion",
    ]


def test_the_program_stops_with_run_error_before_declaring_anything():
    bad = {
        "gpu-eks:gpuNodeGroups": [{"name": "t4", "timeSlicing": {"replicas": 0}, "migStrategy": "all"}],
        "gpu-eks:gpuOperator": {"chartVersion": "v0.0.1"},
    }
    with pytest.raises(pulumi.RunError) as info:
        run_stack("dev", ROOT, config_overrides=bad)
    message = str(info.value)
    assert message.startswith("invalid stack configuration (3 problems):")
    assert "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 0" in message
    assert 'gpu-eks:gpuNodeGroups[0].migStrategy: received "all"' in message
    assert 'gpu-eks:gpuOperator.chartVersion: received "v0.0.1"' in message


def test_admin_principals_must_be_arns():
    (line,) = problems({"adminPrincipalArns": ["admin"]})
    assert line.startswith('gpu-eks:adminPrincipalArns[0]: received "admin"; expected an IAM role or user ARN')


# ---------------------------------------------------------------------------------------------
# One hierarchy, one loader: Settings extends GpuCapacitySettings; load_settings loads either.
# ---------------------------------------------------------------------------------------------


def capacity_problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings(raw, model=GpuCapacitySettings)
    return [str(p) for p in info.value.problems]


def test_the_cluster_settings_are_capacity_settings_with_the_cluster_keys():
    assert issubclass(Settings, GpuCapacitySettings)
    capacity_keys = {f.alias or n for n, f in GpuCapacitySettings.model_fields.items()}
    assert capacity_keys == {
        "kubernetesVersion",
        "gpuNodeGroups",
        "gpuOperator",
        "autoscaler",
        "verifyTimeSlicing",
        "verification",
        "observability",
        "teams",
        "tags",
    }
    cluster_keys = {f.alias or n for n, f in Settings.model_fields.items()} - capacity_keys
    assert cluster_keys == {
        "clusterName",
        "adminPrincipalArns",
        "endpointPublicAccessCidrs",
        "controlPlaneLogTypes",
        "deletionProtection",
        "network",
        "systemNodeGroup",
        "preflight",
        "nodeMonitoringAgent",
    }


def test_one_loader_loads_either_model():
    cluster = load_settings({"clusterName": "c"})
    capacity = load_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": []}, model=GpuCapacitySettings)
    assert type(cluster) is Settings and type(capacity) is GpuCapacitySettings
    assert capacity.gpu_node_groups == ()
    assert type(load_capacity_settings({"kubernetesVersion": "1.35"})) is GpuCapacitySettings
    # What only the cluster model requires: a GPU node group, and its own keys are unknown here.
    assert problems({"gpuNodeGroups": []}) == [
        "gpu-eks:gpuNodeGroups: received []; expected at least one GPU node group"
    ]
    (line,) = capacity_problems({"kubernetesVersion": "1.35", "clusterName": "c"})
    assert line.startswith('gpu-eks:clusterName: received "c"; expected ')


def test_the_autoscaler_default_differs_between_the_models():
    scalable = {"gpuNodeGroups": [group(scaling={"minSize": 0, "desiredSize": 0, "maxSize": 2})]}
    assert load_settings({"clusterName": "c", **scalable}).autoscaler_enabled is True
    assert (
        load_settings({"kubernetesVersion": "1.35", **scalable}, model=GpuCapacitySettings).autoscaler_enabled is False
    )


def test_capacity_settings_apply_the_cross_key_rules_of_a_cluster():
    """An AMI release of another minor and a verification namespace equal to the operator's break
    a GpuCapacity exactly as they break a GpuCluster (EKS refuses the node group; two components
    would create one namespace): one rule set, in GpuCapacitySettings."""
    assert capacity_problems(
        {
            "kubernetesVersion": "1.35",
            "gpuNodeGroups": [group(amiReleaseVersion="1.34.2-20260115")],
            "verification": {"enabled": True, "namespace": "gpu-operator"},
        }
    ) == [
        'gpu-eks:gpuNodeGroups[0].amiReleaseVersion: received "1.34.2-20260115"; expected an AMI release of '
        "Kubernetes 1.35 (1.35.x-yyyymmdd): EKS refuses a node group AMI of another minor than the cluster's",
        'gpu-eks:verification.namespace: received "gpu-operator"; expected a namespace other than '
        "gpuOperator.namespace: each component creates its namespace",
    ]


def test_the_plans_of_a_settings_object_are_derived_once():
    s = load_settings(
        {"clusterName": "c", "gpuNodeGroups": [group(name="a"), group(name="b", instanceTypes=["g4dn.12xlarge"])]}
    )
    assert s.plans is s.plans  # cached: the rules, the autoscaler's rules, warnings and preflight share them
    assert [(p.name, p.gpus_per_node, p.slots_per_node) for p in s.plans] == [("a", 1, 4), ("b", 4, 16)]
    assert "plans" not in s.model_dump()  # not a config key
