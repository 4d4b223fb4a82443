"""A team's objects (issue 25): the Namespace, ResourceQuota and LimitRange as the API server must accept
them (kubernetes-validate, strict, at the cluster's version), the rules it applies to them, and the EKS
access entries against botocore's eks model; rendered by the program from examples/Pulumi.teams.yaml.
"""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import kubernetes_validate
import pulumi
import pytest

from components.check.loading import load_capacity_settings, load_settings
from components.teams import access, objects
from components.teams.component import _checked
from tests.data.samples import EXISTING_KUBECONFIG
from tests.support.simulation import example
from tooling.simulation import FakeCloud, run_program

SCALING = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
SETTINGS = load_settings(
    {
        "clusterName": "c",
        "kubernetesVersion": "1.35",
        "autoscaler": {"enabled": False},
        "gpuNodeGroups": [
            {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING},
            {"name": "shared", "scaling": SCALING, "timeSlicing": {"replicas": 2, "renameByDefault": True}},
        ],
        "teams": [
            {
                "name": "ml",
                "quota": {"nvidia.com/gpu": 8},
                "maxPerContainer": {"nvidia.com/gpu": 2},
                "nodeGroups": ["t4"],
            },
            {
                "name": "cv",
                "namespace": "vision",
                "podSecurity": "restricted",
                "quota": {"nvidia.com/gpu.shared": 4},
                "defaultPerContainer": {"nvidia.com/gpu.shared": 1},
                "nodeGroups": ["shared"],
            },
            {"name": "ops", "nodeGroups": ["t4"]},
        ],
    }
)
ML, CV, OPS = SETTINGS.teams
VERSION = SETTINGS.kubernetes_version + ".0"


def test_the_namespace_enforces_the_pod_security_level():
    assert objects.namespace(CV) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "vision",
            "labels": {
                "app.kubernetes.io/managed-by": "gpu-eks",
                "gpu-eks.io/team": "cv",
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/audit": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
            },
        },
    }
    assert objects.namespace(ML)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_the_quota_names_extended_resources_under_requests_only():
    # Kubernetes docs, "Resource Quotas", "Resource quota for extended resources": only quota items with
    # the prefix requests. are allowed for extended resources.
    assert objects.resource_quota(ML)["spec"] == {"hard": {"requests.nvidia.com/gpu": "8"}}
    assert objects.resource_quota(CV)["spec"] == {"hard": {"requests.nvidia.com/gpu.shared": "4"}}
    assert objects.resource_quota(CV)["metadata"] == {
        "name": "gpu-eks-team-cv",
        "namespace": "vision",
        "labels": {"app.kubernetes.io/managed-by": "gpu-eks", "gpu-eks.io/team": "cv"},
    }
    assert objects.resource_quota(OPS) is None


def test_the_limit_range_writes_default_equal_to_default_request():
    # Extended resources: request must equal limit (validation.go ValidateResourceRequirements, "must be
    # equal to ... limit"). A max alone would default every container's limit to the max
    # (pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem): ml's default is written as 0.
    assert objects.limit_range(ML)["spec"] == {
        "limits": [
            {
                "type": "Container",
                "default": {"nvidia.com/gpu": "0"},
                "defaultRequest": {"nvidia.com/gpu": "0"},
                "max": {"nvidia.com/gpu": "2"},
            }
        ]
    }
    assert objects.limit_range(CV)["spec"] == {
        "limits": [
            {
                "type": "Container",
                "default": {"nvidia.com/gpu.shared": "1"},
                "defaultRequest": {"nvidia.com/gpu.shared": "1"},
            }
        ]
    }
    assert objects.limit_range(OPS) is None


def test_every_team_object_validates_at_the_clusters_version():
    built = [objects.namespace(t) for t in SETTINGS.teams]
    built += [o for t in SETTINGS.teams for o in (objects.resource_quota(t), objects.limit_range(t)) if o]
    assert len(built) == 7
    for obj in built:
        kubernetes_validate.validate(obj, VERSION, strict=True)


def test_validation_catches_a_misspelt_limit_range():
    obj = objects.limit_range(ML)
    obj["spec"]["limits"][0]["defaultRequests"] = obj["spec"]["limits"][0].pop("defaultRequest")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, VERSION, strict=True)


# --- EKS access entries: botocore 1.44.5 eks 2017-11-01 -------------------------------------------

EKS = botocore.session.get_session().get_service_model("eks")


def test_the_access_scope_is_the_models_namespace_scope():
    scope = EKS.shape_for("AccessScope")
    assert scope.members["type"].enum == ["cluster", "namespace"]
    assert access.access_scope(CV) == {"type": "namespace", "namespaces": ["vision"]}
    assert access.access_scope(CV)["type"] in scope.members["type"].enum
    assert set(access.access_scope(CV)) <= set(scope.members)
    associate = EKS.operation_model("AssociateAccessPolicy").input_shape
    assert associate.required_members == ["clusterName", "principalArn", "policyArn", "accessScope"]


def test_the_access_entry_type_is_standard():
    create = EKS.operation_model("CreateAccessEntry").input_shape
    assert create.required_members == ["clusterName", "principalArn"]
    assert "<code>STANDARD</code>" in create.members["type"].documentation
    assert access.ACCESS_ENTRY_TYPE == "STANDARD"


def test_the_authentication_modes_that_take_access_entries():
    assert EKS.shape_for("AuthenticationMode").enum == ["API", "API_AND_CONFIG_MAP", "CONFIG_MAP"]
    assert access.authentication_mode_problem("API") is None
    assert access.authentication_mode_problem("API_AND_CONFIG_MAP") is None
    arn = "arn:aws:iam::123456789012:role/MlEngineers"
    assert _checked(arn, "gpu-eks:teams[0].principals[0]", "aws", None) == arn
    assert _checked(arn, "gpu-eks:teams[0].principals[0]", "aws", "API_AND_CONFIG_MAP") == arn
    with pytest.raises(pulumi.RunError) as err:
        _checked(arn, "gpu-eks:teams[0].principals[0]", "aws-cn", "CONFIG_MAP")
    assert str(err.value) == (
        "invalid stack configuration (2 problems):\n"
        f'  gpu-eks:teams[0].principals[0]: received "{arn}"; expected an ARN of the provider\'s partition, '
        "arn:aws-cn:...\n"
        f'  gpu-eks:teams[0].principals[0]: received "{arn}"; expected an EKS cluster whose authentication mode is '
        "API or API_AND_CONFIG_MAP for teams[].principals (access entries): the cluster's is CONFIG_MAP; change it "
        "(aws eks update-cluster-config --access-config authenticationMode=API_AND_CONFIG_MAP) or leave principals out"
    )


# --- The program: examples/Pulumi.teams.yaml, two teams on two groups -----------------------------


@pytest.fixture(scope="module")
def teams_example():
    return example("teams")


def test_the_example_declares_each_teams_objects(teams_example):
    sim = teams_example
    teams = sim.one("gpu-eks:teams:Teams", "gpu-eks-teams")
    children = sorted((r.type.split(":")[-1], r.name) for r in sim.resources if r.parent_urn == teams.urn)
    assert children == [
        ("AccessEntry", "gpu-eks-teams-cv-role-VisionEngineers"),
        ("AccessEntry", "gpu-eks-teams-ml-role-MlEngineers"),
        ("AccessPolicyAssociation", "gpu-eks-teams-cv-role-VisionEngineers-admin"),
        ("AccessPolicyAssociation", "gpu-eks-teams-ml-role-MlEngineers-admin"),
        ("Job", "gpu-eks-teams-cv-check"),
        ("Job", "gpu-eks-teams-ml-check"),
        ("LimitRange", "gpu-eks-teams-cv-limits"),
        ("LimitRange", "gpu-eks-teams-ml-limits"),
        ("Namespace", "gpu-eks-teams-cv-ns"),
        ("Namespace", "gpu-eks-teams-ml-ns"),
        ("NetworkPolicy", "gpu-eks-teams-check-egress"),
        ("ResourceQuota", "gpu-eks-teams-cv-quota"),
        ("ResourceQuota", "gpu-eks-teams-ml-quota"),
        ("Role", "gpu-eks-teams-cv-check"),
        ("Role", "gpu-eks-teams-ml-check"),
        ("RoleBinding", "gpu-eks-teams-cv-admin"),
        ("RoleBinding", "gpu-eks-teams-cv-check"),
        ("RoleBinding", "gpu-eks-teams-ml-admin"),
        ("RoleBinding", "gpu-eks-teams-ml-check"),
        ("ServiceAccount", "gpu-eks-teams-cv-check"),
        ("ServiceAccount", "gpu-eks-teams-ml-check"),
        ("ValidatingAdmissionPolicy", "gpu-eks-teams-cv-policy"),
        ("ValidatingAdmissionPolicy", "gpu-eks-teams-ml-policy"),
        ("ValidatingAdmissionPolicyBinding", "gpu-eks-teams-cv-binding"),
        ("ValidatingAdmissionPolicyBinding", "gpu-eks-teams-ml-binding"),
    ]
    association = sim.one(
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "gpu-eks-teams-cv-role-VisionEngineers-admin"
    )
    assert association.inputs == {
        "clusterName": "gpu-eks-teams",
        "principalArn": "arn:aws:iam::123456789012:role/VisionEngineers",
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy",
        "accessScope": {"type": "namespace", "namespaces": ["vision"]},
    }
    # A changed namespace replaces the association; EKS knows it by (cluster, principal, policy), so
    # the old one is deleted first (else its delete, DisassociateAccessPolicy, removes the new one).
    assert association.options == {"deleteBeforeReplace": True}
    entry = sim.one("aws:eks/accessEntry:AccessEntry", "gpu-eks-teams-ml-role-MlEngineers").inputs
    assert entry == {
        "clusterName": "gpu-eks-teams",
        "principalArn": "arn:aws:iam::123456789012:role/MlEngineers",
        "type": "STANDARD",
        "kubernetesGroups": ["gpu-eks-team-ml"],
    }
    # The team's group holds admin in its namespace through RBAC itself: the API server's escalation
    # check reads RBAC only, so the EKS access policy alone cannot create a RoleBinding
    # (aws/containers-roadmap#2682); with this one, the team can bind its own ServiceAccounts.
    binding = sim.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "gpu-eks-teams-cv-admin").inputs
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "gpu-eks-team-cv-admin", "namespace": "vision"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpu-eks-team-cv"}],
    }
    # Every Kubernetes object goes to the cluster through its provider.
    for r in sim.resources:
        if r.parent_urn == teams.urn and r.type.startswith("kubernetes:"):
            assert "::gpu-eks-cluster-k8s::" in (r.provider or ""), r.name


def test_the_example_objects_validate(teams_example):
    kinds = {
        "kubernetes:core/v1:Namespace": ("v1", "Namespace"),
        "kubernetes:core/v1:ResourceQuota": ("v1", "ResourceQuota"),
        "kubernetes:core/v1:LimitRange": ("v1", "LimitRange"),
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy": (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
        ),
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
        ),
    }
    kinds.update(
        {
            "kubernetes:core/v1:ServiceAccount": ("v1", "ServiceAccount"),
            "kubernetes:rbac.authorization.k8s.io/v1:Role": ("rbac.authorization.k8s.io/v1", "Role"),
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            "kubernetes:batch/v1:Job": ("batch/v1", "Job"),
            "kubernetes:networking.k8s.io/v1:NetworkPolicy": ("networking.k8s.io/v1", "NetworkPolicy"),
        }
    )
    found = [r for r in teams_example.resources if r.type in kinds and "teams" in r.name]
    assert len(found) == 21  # the two admin RoleBindings included
    for r in found:
        api_version, kind = kinds[r.type]
        kubernetes_validate.validate({**r.inputs, "apiVersion": api_version, "kind": kind}, "1.35.0", strict=True)


# --- GpuCapacity: the existing cluster's authentication mode ---------------------------------------


class _ConfigMapCluster(FakeCloud):
    def _answer(self, token: str) -> dict[str, Any]:
        if token == "aws:eks/getCluster:getCluster":
            return {"accessConfigs": [{"authenticationMode": "CONFIG_MAP"}]}
        return super()._answer(token)


def _capacity_with_a_team(principals: list[str], **extra: Any):
    def program() -> None:
        from components import GpuCapacity, GpuCapacityArgs

        settings = load_capacity_settings(
            {
                "kubernetesVersion": "1.35",
                "gpuNodeGroups": [{"name": "t4"}],
                "teams": [
                    {"name": "ml", "quota": {"nvidia.com/gpu": 2}, "nodeGroups": ["t4"], "principals": principals},
                    {"name": "ops", "nodeGroups": ["t4"]},
                ],
                **extra,
            }
        )
        GpuCapacity(
            "ml-gpu",
            GpuCapacityArgs(
                cluster_name="platform",
                subnet_ids=["subnet-0ccccccccccccccc1"],
                kubeconfig=EXISTING_KUBECONFIG,
                settings=settings,
            ),
        )

    return program


def test_gpu_capacity_declares_teams_and_checks_the_authentication_mode():
    arn = "arn:aws:iam::123456789012:role/MlEngineers"
    sim = run_program(_capacity_with_a_team([arn]), {}, project="consumer", stack="test", timeout=60)
    assert sim.one("gpu-eks:teams:Teams").name == "ml-gpu-teams"
    assert sim.one("aws:eks/accessEntry:AccessEntry").inputs["principalArn"] == arn
    # ops has no quota, default or maximum: no ResourceQuota or LimitRange of its own.
    assert sim.one("kubernetes:core/v1:ResourceQuota").inputs["spec"] == {"hard": {"requests.nvidia.com/gpu": "2"}}
    assert sim.by_type("kubernetes:core/v1:LimitRange") == []
    assert sim.one("kubernetes:core/v1:Namespace", "ml-gpu-teams-ops-ns").inputs["metadata"]["name"] == "ops"
    # verification.enabled is off (GpuCapacity's default): no check Job.
    assert [r.name for r in sim.by_type("kubernetes:batch/v1:Job")] == []
    with pytest.raises(pulumi.RunError) as err:
        run_program(
            _capacity_with_a_team([arn]), {}, project="consumer", stack="test", mocks=_ConfigMapCluster(), timeout=60
        )
    assert "the cluster's is CONFIG_MAP" in str(err.value)
    # Without principals the cluster is not read: a CONFIG_MAP cluster takes the namespace objects.
    sim = run_program(
        _capacity_with_a_team([]), {}, project="consumer", stack="test", mocks=_ConfigMapCluster(), timeout=60
    )
    assert sim.by_type("aws:eks/accessEntry:AccessEntry") == []
    assert sim.one("kubernetes:core/v1:Namespace", "ml-gpu-teams-ml-ns").inputs["metadata"]["name"] == "ml"


def test_the_team_check_follows_verification_teams():
    on = run_program(
        _capacity_with_a_team([], verification={"enabled": True}), {}, project="consumer", stack="t", timeout=60
    )
    assert sorted(r.name for r in on.by_type("kubernetes:batch/v1:Job") if "teams" in r.name) == [
        "ml-gpu-teams-ml-check",
        "ml-gpu-teams-ops-check",
    ]
    # ops has no quota: its check proves placement only.
    cases = {
        r.name: json.loads(
            next(
                e["value"] for e in r.inputs["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "CASES"
            )
        )
        for r in on.by_type("kubernetes:batch/v1:Job")
        if "teams" in r.name
    }
    rules = ["device-variable", "env-from", "node-name", "gpu-taints", "gpu-labels", "device-mounts"]
    assert [c["name"] for c in cases["ml-gpu-teams-ml-check"]] == ["admitted", "outside-groups", *rules, "over-quota"]
    assert [c["name"] for c in cases["ml-gpu-teams-ops-check"]] == ["admitted", "outside-groups", *rules]
    off = run_program(
        _capacity_with_a_team([], verification={"enabled": True, "teams": False}),
        {},
        project="consumer",
        stack="t",
        timeout=60,
    )
    assert [r.name for r in off.by_type("kubernetes:batch/v1:Job") if "teams" in r.name] == []
    assert off.by_type("kubernetes:rbac.authorization.k8s.io/v1:Role") == []
