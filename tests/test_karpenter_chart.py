"""The real Karpenter chart (1.14.1) rendered by a real Helm with the values the library sends
(issue 26; issue 31 "Rules"): the controller gets the cluster name, the interruption queue, the
nodeOverlay gate and the IRSA role, in kube-system under the ServiceAccount the role trusts.

The chart is ../shared/reference/karpenter/1.14.1/chart (charts/karpenter of aws/karpenter-provider-aws
at the tag v1.14.1, bde00654cd316fddb3dccfba3f5ac07039865429, with the release's Chart.yaml and its crds/
links resolved: its SOURCE.md); Helm is the pinned wheel's (tests/support/tools/helm.py). The Karpenter objects the
library declares are checked here against the tag's CRDs, whose EC2NodeClass ``kubelet`` is a typed
schema (issue 35 item 6): a field the schema does not know would be pruned by the API server, so none
may be sent.
"""

from __future__ import annotations

import copy
import subprocess
from typing import Any

import kubernetes_validate
import pytest

from components.karpenter import values as karpenter_values
from tests.support.reference import reference_path
from tests.support.simulation import example
from tests.support.standins.crds import crd_problems, karpenter_schema, pruned_fields
from tests.support.tools import helm

RELEASE = "kubernetes:helm.sh/v3:Release"
KINDS = {
    "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": "EC2NodeClass",
    "kubernetes:karpenter.sh/v1:NodePool": "NodePool",
    "kubernetes:karpenter.sh/v1alpha1:NodeOverlay": "NodeOverlay",
}


def chart():
    return helm.chart_dir("karpenter", "1.14.1", "chart")


def render(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return helm.by_kind_and_name(helm.template(chart(), "karpenter", "kube-system", values))


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, Any]]:
    """The karpenter example's release values (the simulated program's), rendered."""
    (release,) = [r for r in example("karpenter").resources if r.name == "gpu-eks-karpenter-release"]
    return render(release.inputs["values"])


def test_the_helm_is_the_pinned_one():
    out = subprocess.run([str(helm.helm()), "version", "--short"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(helm.HELM_VERSION + "+"), out.stdout


def test_the_chart_is_the_release_1_14_1():
    root = chart()
    assert (root / "Chart.yaml").read_bytes() == reference_path("karpenter", "1.14.1", "Chart.yaml").read_bytes()
    assert (root / "values.yaml").read_bytes() == reference_path("karpenter", "1.14.1", "values.yaml").read_bytes()


def test_the_controller_reads_the_librarys_settings(rendered):
    assert sorted(rendered) == [
        "ClusterRole/karpenter",
        "ClusterRole/karpenter-admin",
        "ClusterRole/karpenter-core",
        "ClusterRoleBinding/karpenter",
        "ClusterRoleBinding/karpenter-core",
        "Deployment/karpenter",
        "PodDisruptionBudget/karpenter",
        "Role/karpenter",
        "Role/karpenter-dns",
        "RoleBinding/karpenter",
        "RoleBinding/karpenter-dns",
        "Service/karpenter",
        "ServiceAccount/karpenter",
    ]
    deployment = rendered["Deployment/karpenter"]
    assert deployment["metadata"]["namespace"] == "kube-system"
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "karpenter"
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert (env["CLUSTER_NAME"], env["INTERRUPTION_QUEUE"]) == ("gpu-eks-karpenter", "gpu-eks-karpenter")
    # NodeRepair: the example's Karpenter groups repair at the defaults (docs/node-health.md).
    assert env["FEATURE_GATES"] == (
        "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true,"
        "StaticCapacity=false,CapacityBuffer=false"
    )
    # The library's affinity replaces the chart's: never on a Karpenter node nor a GPU node; the
    # chart adds its pod selector to the anti-affinity term (templates/_helpers.tpl patchAffinity).
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                            {"key": "gpu-eks.io/gpu-count", "operator": "DoesNotExist"},
                            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
                            {"key": "eks.amazonaws.com/instance-gpu-count", "operator": "DoesNotExist"},
                        ]
                    }
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchLabels": {
                            "app.kubernetes.io/instance": "karpenter",
                            "app.kubernetes.io/name": "karpenter",
                        }
                    },
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    }


def test_the_service_account_carries_the_irsa_role(rendered):
    account = rendered["ServiceAccount/karpenter"]
    assert account["metadata"]["namespace"] == "kube-system"
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/gpu-eks-karpenter-role"
    }


def test_every_rendered_object_is_valid_for_the_api_server(rendered):
    for obj in rendered.values():
        kubernetes_validate.validate(obj, "1.35.0", strict=True)


def test_one_system_node_gets_one_replica_and_no_overlay_gate():
    """karpenter_values with a one-node system group and no group needing an overlay."""
    values = karpenter_values.karpenter_values(
        cluster_name="c", interruption_queue="q", role_arn="arn:aws:iam::1:role/r", node_overlay=False, system_nodes=1
    )
    out = render(values)
    deployment = out["Deployment/karpenter"]
    assert deployment["spec"]["replicas"] == 1
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "NodeOverlay=false" in env["FEATURE_GATES"].split(",")
    assert (env["CLUSTER_NAME"], env["INTERRUPTION_QUEUE"]) == ("c", "q")


def test_the_chart_installs_the_crds_the_objects_were_validated_against():
    crds = chart() / "crds"
    for name in (
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
        "karpenter.sh_nodepools.yaml",
        "karpenter.sh_nodeoverlays.yaml",
        "karpenter.sh_nodeclaims.yaml",
    ):
        assert (crds / name).read_bytes() == reference_path("karpenter", "1.14.1", "crds", name).read_bytes(), name


def test_the_examples_karpenter_objects_meet_the_tags_stricter_schemas():
    """Issue 35 item 6: every EC2NodeClass, NodePool and NodeOverlay of the karpenter example is
    accepted by the 1.14.1 tag's CRDs (schema, CEL rules) and has no field they would prune."""
    sim = example("karpenter")
    objects = [(KINDS[r.type], r.inputs) for r in sim.resources if r.type in KINDS]
    assert sorted(kind for kind, _ in objects) == [
        "EC2NodeClass",
        "EC2NodeClass",
        "EC2NodeClass",
        "NodeOverlay",
        "NodeOverlay",
        "NodeOverlay",
        "NodePool",
        "NodePool",
        "NodePool",
    ]
    for kind, obj in objects:
        schema = dict(karpenter_schema(kind))
        # crd_problems includes the fields the API server would prune (crd_cel.pruned_fields).
        assert crd_problems(obj, schema) == [], (kind, obj["metadata"]["name"])


def test_the_pruning_check_sees_an_unknown_kubelet_field():
    # The tag's EC2NodeClass kubelet is typed (maxPods, clusterDNS, ...): an unknown field is dropped.
    schema = dict(karpenter_schema("EC2NodeClass"))
    kubelet = schema["properties"]["spec"]["properties"]["kubelet"]
    assert "x-kubernetes-preserve-unknown-fields" not in kubelet and "maxPods" in kubelet["properties"]
    obj = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "spec": {"kubelet": {"maxPods": 29}}}
    assert pruned_fields(obj, schema) == []
    obj["spec"]["kubelet"]["cpuManagerPolicy"] = "static"
    assert pruned_fields(obj, schema) == [".spec.kubelet.cpuManagerPolicy"]
    # crd_problems reports it on a whole EC2NodeClass of the example.
    (node_class,) = [
        copy.deepcopy(r.inputs)
        for r in example("karpenter").resources
        if r.type.endswith(":EC2NodeClass") and r.inputs["metadata"]["name"] == "gpu-eks-l4-shared"
    ]
    node_class["spec"]["kubelet"]["cpuManagerPolicy"] = "static"
    assert crd_problems(node_class, schema) == [
        "spec.kubelet.cpuManagerPolicy: unknown to the schema (the API server prunes it)"
    ]
