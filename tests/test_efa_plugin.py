"""Issue 32: the AWS EFA device plugin add-on (components/efa/): its values from the plans, its
release in the example stack, none without an EFA group, and what the AL2023 NVIDIA AMI already
does for EFA (the library adds nothing to an EFA node's user data)."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import efa as chart
from components.catalog.charts import EFA_DEVICE_PLUGIN
from components.check.loading import load_settings
from components.efa import values
from components.plan.group import plan_group, plan_groups
from components.review import fakecloud
from components.review.fakecloud import FAKE_REGION
from tests.support.simulation import example, run_example


def plans(*groups: dict[str, Any]) -> Any:
    return plan_groups(load_settings({"clusterName": "c", "gpuNodeGroups": list(groups)}).gpu_node_groups)


P4D = {
    "name": "train",
    "instanceTypes": ["p4d.24xlarge"],
    "timeSlicing": {"replicas": 1},
    "efa": True,
    "availabilityZone": "us-west-2a",
}


def test_values_pin_the_plugin_to_the_efa_groups_and_their_taints():
    got = values.efa_plugin_values(
        plans(
            P4D,
            {
                **P4D,
                "name": "train2",
                "taints": [
                    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                    {"key": "ml", "effect": "NoExecute"},
                ],
            },
            {"name": "infer", "instanceTypes": ["p4d.24xlarge"], "timeSlicing": {"replicas": 1}},
        )
    )
    assert got == {
        "supportedInstanceLabels": {"keys": ["gpu-eks.io/node-group"], "values": ["train", "train2"]},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
            {"key": "ml", "operator": "Exists", "effect": "NoExecute"},
        ],
    }


def test_values_need_an_efa_group():
    with pytest.raises(ValueError, match="needs a group with efa: true"):
        values.efa_plugin_values(plans({"name": "infer"}))


def test_the_chart_is_pinned():
    pin = EFA_DEVICE_PLUGIN
    assert (pin.repository, pin.chart, pin.versions, pin.default, pin.release, pin.namespace) == (
        "https://aws.github.io/eks-charts",
        "aws-efa-k8s-device-plugin",
        ("v0.5.30",),
        "v0.5.30",
        "aws-efa-k8s-device-plugin",
        "kube-system",
    )


def test_the_example_declares_the_plugin_for_its_efa_groups():
    sim = example("multinode")
    release = sim.one("kubernetes:helm.sh/v3:Release", "gpu-eks-efa-release").inputs
    assert (release["chart"], release["version"], release["namespace"]) == (
        "aws-efa-k8s-device-plugin",
        "v0.5.30",
        "kube-system",
    )
    assert release["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert release["values"]["supportedInstanceLabels"] == {
        "keys": ["gpu-eks.io/node-group"],
        "values": ["h100-block", "a100-odcr", "h100-karpenter"],
    }
    # The image from the Region of the AWS provider (aws:getRegion; the simulation answers us-west-2).
    assert FAKE_REGION == "us-west-2"
    assert release["values"]["image"] == {
        "repository": "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    }


@pytest.mark.parametrize(
    ("region", "repository"),
    [
        ("us-west-2", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"),
        ("eu-south-2", "455263428931.dkr.ecr.eu-south-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"),
        ("us-gov-west-1", "013241004608.dkr.ecr.us-gov-west-1.amazonaws.com/eks/aws-efa-k8s-device-plugin"),
        ("cn-north-1", "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn/eks/aws-efa-k8s-device-plugin"),
    ],
)
def test_the_image_is_each_regions_eks_registry(region, repository):
    """EKS User Guide, add-ons-images: one registry per Region (catalog/efa.py: AWS's table in
    awslabs/amazon-eks-ami v20260304 templates/al2/runtime/get-ecr-uri.sh)."""
    assert chart.image_repository(region) == repository


@pytest.mark.parametrize(
    ("region", "account"),
    [
        # Regions EKS opened after the User Guide of Dec 2024: each has its own registry account
        # (get-ecr-uri.sh at v20260304; the add-ons-images page lists the same accounts).
        ("ap-east-2", "533267051163"),
        ("ap-southeast-5", "151610086707"),
        ("ap-southeast-6", "333609536671"),
        ("ap-southeast-7", "121268973566"),
        ("mx-central-1", "730335286997"),
    ],
)
def test_regions_newer_than_the_first_table_have_their_own_registry(region, account):
    assert chart.image_repository(region) == f"{account}.dkr.ecr.{region}.amazonaws.com/eks/aws-efa-k8s-device-plugin"


def test_every_eks_region_is_in_the_table():
    """Every Region botocore's eks endpoint data lists (the Regions ``aws:region`` accepts) is named:
    in the table of its own account or on the explicit list of 602401143452's. No Region falls
    through to a guessed account; a new botocore with a new Region fails here until the table has it."""
    from components.check.loading import eks_regions

    named = set(chart.REGISTRY_ACCOUNTS) | chart.SHARED_ACCOUNT_REGIONS
    assert not set(chart.REGISTRY_ACCOUNTS) & chart.SHARED_ACCOUNT_REGIONS
    assert sorted(eks_regions() - named) == []
    assert len(chart.SHARED_ACCOUNT_REGIONS) == 17
    assert "602401143452" not in chart.REGISTRY_ACCOUNTS.values()


def test_a_region_not_in_the_table_keeps_the_charts_image():
    """No account is guessed (602401143452 has no registry in a Region opened since): the chart's
    default image, as 0.3.0 rendered it."""
    assert chart.image_repository("ap-southeast-9") is None
    assert chart.image_values("ap-southeast-9") == {}
    assert chart.image_values("us-west-2") == {
        "repository": "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    }


def test_the_region_is_the_aws_providers(monkeypatch):
    """A cluster in another Region (the AWS provider's aws:getRegion answer) gets its registry."""
    monkeypatch.setattr(fakecloud, "FAKE_REGION", "eu-south-2")
    sim = run_example("multinode", {"gpu-eks:verification": {"enabled": False}})
    release = sim.one("kubernetes:helm.sh/v3:Release", "gpu-eks-efa-release").inputs
    assert release["values"]["image"] == {
        "repository": "455263428931.dkr.ecr.eu-south-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    }


def test_a_region_not_in_the_table_renders_the_charts_image_and_warns(monkeypatch):
    """A Region the catalog does not name: ``image`` is empty (the chart's default repository) and
    the deployment is warned, on the plugin's component."""
    monkeypatch.setattr(fakecloud, "FAKE_REGION", "ap-southeast-9")
    sim = run_example("multinode", {"gpu-eks:verification": {"enabled": False}})
    release = sim.one("kubernetes:helm.sh/v3:Release", "gpu-eks-efa-release").inputs
    assert release["values"]["image"] == {}
    about = [(r.type if r else None, m) for r, m in sim.warnings() if "EFA device plugin" in m]
    assert about == [
        (
            "gpu-eks:efa:EfaDevicePlugin",
            "the EFA device plugin keeps its chart's default image in ap-southeast-9: no Amazon EKS "
            "registry is known for ap-southeast-9 (components/catalog/efa.py), so its nodes pull "
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin over the internet "
            "(a NAT gateway or proxy), which a private cluster without one cannot do",
        )
    ]


def test_no_plugin_without_an_efa_group():
    sim = example("mig-h100")
    assert [r.name for r in sim.by_type("gpu-eks:efa:EfaDevicePlugin")] == []


def test_an_efa_node_needs_nothing_in_its_user_data():
    """The AL2023 NVIDIA AMI installs the EFA driver and keeps efa-nv-peermem (catalog/efa.py): the
    library's user data of an EFA group is the same group's without EFA."""
    base = {
        "name": "g",
        "instanceTypes": ["p5.48xlarge"],
        "timeSlicing": {"replicas": 1},
        "availabilityZone": "us-west-2a",
    }
    with_efa = plan_group(
        load_settings({"clusterName": "c", "gpuNodeGroups": [{**base, "efa": True}]}).gpu_node_groups[0]
    )
    without = plan_group(load_settings({"clusterName": "c", "gpuNodeGroups": [base]}).gpu_node_groups[0])
    assert with_efa.user_data == without.user_data
    assert dict(with_efa.node_labels) == dict(without.node_labels)
