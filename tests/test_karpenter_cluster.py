"""Karpenter on a cluster (issue 26): what GpuCluster declares for it (examples/Pulumi.karpenter.yaml
under mocks), the controller policy statement by statement against Karpenter 1.14.1's reference
template, the interruption queue and rules in moto, the chart values against its values.yaml, and
GpuCapacity against an existing cluster's Karpenter. Literal expectations."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pulumi
import pytest
import yaml
from moto import mock_aws

from components import GpuCapacity, GpuCapacityArgs, load_capacity_settings
from components.check.loading import load_settings
from components.composites.gpu_cluster import _private_subnet_count
from components.config import stackfile
from components.config.groups import GpuNodeGroupSettings
from components.karpenter import iam, interruption
from components.nodegroups.component import GpuNodeGroup, GpuNodeGroupArgs
from tests.support.paths import ROOT
from tests.support.reference import load_reference_yaml, reference_path
from tests.support.simulation import example
from tests.support.standins.crds import crd_problems, karpenter_schema
from tooling.simulation import Registration, Simulation, program_from_file, run_program

CLUSTER = "gpu-eks-karpenter"
ACCOUNT = "123456789012"
REGION = "us-west-2"  # the fake cloud's region (tooling/simulation.py)
NODE_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/gpu-eks-karpenter-node-role"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{CLUSTER}"
KARPENTER_TYPES = ("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "kubernetes:karpenter.sh/v1:NodePool")
OVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"


@pytest.fixture(scope="module")
def sim() -> Simulation:
    return example("karpenter")


def named(sim: Simulation, name: str) -> Registration:
    (r,) = [r for r in sim.resources if r.name == name]
    return r


def test_the_karpenter_component_and_its_children(sim: Simulation):
    component = named(sim, "gpu-eks-karpenter")
    assert component.type == "gpu-eks:karpenter:Karpenter"
    children = [(r.type, r.name) for r in sim.resources if r.parent_urn == component.urn]
    rules = ("scheduled-change", "spot-interruption", "rebalance", "instance-state-change")
    assert children == [
        ("aws:iam/role:Role", "gpu-eks-karpenter-node-role"),
        *[
            ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", f"gpu-eks-karpenter-node-role-{s}")
            for s in ("worker", "cni", "ecr", "ssm")
        ],
        ("aws:eks/accessEntry:AccessEntry", "gpu-eks-karpenter-node-access"),
        ("aws:sqs/queue:Queue", "gpu-eks-karpenter-queue"),
        ("aws:sqs/queuePolicy:QueuePolicy", "gpu-eks-karpenter-queue-policy"),
        *[
            item
            for rule in (*rules, "capacity-reservation-interruption")
            for item in (
                ("aws:cloudwatch/eventRule:EventRule", f"gpu-eks-karpenter-{rule}"),
                ("aws:cloudwatch/eventTarget:EventTarget", f"gpu-eks-karpenter-{rule}-target"),
            )
        ],
        ("aws:ec2/tag:Tag", "gpu-eks-karpenter-discovery-sg"),
        ("aws:iam/role:Role", "gpu-eks-karpenter-role"),
        ("aws:iam/rolePolicy:RolePolicy", "gpu-eks-karpenter-policy"),
        ("kubernetes:helm.sh/v3:Release", "gpu-eks-karpenter-release"),
    ]


def test_the_release_and_its_values(sim: Simulation):
    release = named(sim, "gpu-eks-karpenter-release")
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["namespace"], inputs["name"]) == (
        "oci://public.ecr.aws/karpenter/karpenter",
        "1.14.1",
        "kube-system",
        "karpenter",
    )
    assert inputs["values"] == {
        "settings": {
            "clusterName": CLUSTER,
            "interruptionQueue": CLUSTER,
            # Every group of the example needs its overlay (shared, MPS, a g6f slice).
            "featureGates": {"nodeOverlay": True, "nodeRepair": True},
        },
        "serviceAccount": {
            "annotations": {"eks.amazonaws.com/role-arn": f"arn:aws:iam::{ACCOUNT}:role/gpu-eks-karpenter-role"}
        },
        "replicas": 2,
        "affinity": {
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
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
            },
        },
    }
    # It waits for the system node group (its nodes) and the queue's policy and rules.
    deps = {d.split("::")[-1] for d in release.dependencies}
    assert {"gpu-eks-cluster-system", "gpu-eks-karpenter-queue-policy", "gpu-eks-karpenter-rebalance-target"} <= deps


def _paths(values: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    if isinstance(values, dict) and values and prefix[-1:] not in (("annotations",), ("affinity",)):
        return set().union(*(_paths(v, (*prefix, k)) for k, v in values.items()))
    return {prefix}


def test_every_value_sent_is_a_value_of_the_chart(sim: Simulation):
    chart_values = load_reference_yaml("karpenter", "1.14.1", "values.yaml")
    for path in _paths(named(sim, "gpu-eks-karpenter-release").inputs["values"]):
        node = chart_values
        for key in path:
            assert isinstance(node, dict) and key in node, path
            node = node[key]


def test_the_controller_role_trusts_only_karpenters_service_account(sim: Simulation):
    trust = json.loads(named(sim, "gpu-eks-karpenter-role").inputs["assumeRolePolicy"])
    issuer = "oidc.eks.us-west-2.amazonaws.com/id/00000000000000000000000000000000"
    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{issuer}"},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    f"{issuer}:sub": "system:serviceaccount:kube-system:karpenter",
                    f"{issuer}:aud": "sts.amazonaws.com",
                }
            },
        }
    ]


# --- the reference template, cloudformation.yaml ------------------------------------------------


class _CfnLoader(yaml.SafeLoader):
    pass


for _tag in ("!Sub", "!GetAtt", "!Ref"):
    _CfnLoader.add_constructor(_tag, lambda loader, node, tag=_tag: (tag, loader.construct_scalar(node)))


def reference_template() -> dict[str, Any]:
    return yaml.load(reference_path("karpenter", "1.14.1", "cloudformation.yaml").read_text(), Loader=_CfnLoader)


SUBSTITUTIONS = {
    "${AWS::Partition}": "aws",
    "${AWS::Region}": REGION,
    "${AWS::AccountId}": ACCOUNT,
    "${ClusterName}": CLUSTER,
    "${KarpenterNodeRole.Arn}": NODE_ROLE_ARN,
    "${KarpenterInterruptionQueue.Arn}": QUEUE_ARN,
}


def substituted(text: str) -> str:
    for key, value in SUBSTITUTIONS.items():
        text = text.replace(key, value)
    assert "${" not in text, re.findall(r"\$\{[^}]+\}", text)
    return text


def reference_statements() -> list[dict[str, Any]]:
    """The statements of the template's six controller policies, in order, parameters filled in."""
    resources = reference_template()["Resources"]
    policies = [r for r in resources.values() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    assert len(policies) == 6
    return [s for p in policies for s in json.loads(substituted(p["Properties"]["PolicyDocument"][1]))["Statement"]]


def test_the_controller_policy_is_the_reference_statement_by_statement(sim: Simulation):
    policy = json.loads(named(sim, "gpu-eks-karpenter-policy").inputs["policy"])
    ours, reference = policy["Statement"], reference_statements()
    assert [s["Sid"] for s in ours] == [s["Sid"] for s in reference]
    for mine, theirs in zip(ours, reference, strict=True):
        assert mine == theirs, mine["Sid"]
    # No statement grants a mutating EC2 or IAM action without a condition or a scoped resource.
    for statement in ours:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        mutating = [a for a in actions if not re.match(r"^\w[\w-]*:(Describe|Get|List)", a)]
        if mutating and statement["Resource"] == "*":
            pytest.fail(f"{statement['Sid']}: {mutating} on every resource")


def test_the_node_role_is_the_reference(sim: Simulation):
    node_role = reference_template()["Resources"]["KarpenterNodeRole"]["Properties"]
    expected = sorted(substituted(arn[1]) for arn in node_role["ManagedPolicyArns"])
    attached = sorted(r.inputs["policyArn"] for r in sim.resources if r.name.startswith("gpu-eks-karpenter-node-role-"))
    assert attached == expected
    trust = json.loads(named(sim, "gpu-eks-karpenter-node-role").inputs["assumeRolePolicy"])
    assert trust["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    entry = named(sim, "gpu-eks-karpenter-node-access").inputs
    assert (entry["clusterName"], entry["principalArn"], entry["type"]) == (CLUSTER, NODE_ROLE_ARN, "EC2_LINUX")


def test_the_queue_and_its_rules_are_the_reference(sim: Simulation):
    resources = reference_template()["Resources"]
    queue = named(sim, "gpu-eks-karpenter-queue").inputs
    props = resources["KarpenterInterruptionQueue"]["Properties"]
    assert (queue["name"], queue["messageRetentionSeconds"], queue["sqsManagedSseEnabled"]) == (
        CLUSTER,
        props["MessageRetentionPeriod"],
        props["SqsManagedSseEnabled"],
    )
    policy = json.loads(named(sim, "gpu-eks-karpenter-queue-policy").inputs["policy"])
    reference_policy = resources["KarpenterInterruptionQueuePolicy"]["Properties"]["PolicyDocument"]
    assert policy["Id"] == reference_policy["Id"]
    for mine, theirs in zip(policy["Statement"], reference_policy["Statement"], strict=True):
        assert mine["Resource"] == QUEUE_ARN
        assert {k: v for k, v in mine.items() if k != "Resource"} == {
            k: ({"Bool": {"aws:SecureTransport": "false"}} if k == "Condition" else v)
            for k, v in theirs.items()
            if k != "Resource"
        }
    reference_rules = sorted(
        json.dumps(r["Properties"]["EventPattern"], sort_keys=True)
        for r in resources.values()
        if r["Type"] == "AWS::Events::Rule"
    )
    rules = sorted(
        json.dumps(json.loads(r.inputs["eventPattern"]), sort_keys=True)
        for r in sim.resources
        if r.type == "aws:cloudwatch/eventRule:EventRule"
    )
    assert rules == reference_rules
    targets = [r.inputs for r in sim.resources if r.type == "aws:cloudwatch/eventTarget:EventTarget"]
    assert {(t["arn"], t["targetId"]) for t in targets} == {(QUEUE_ARN, "KarpenterInterruptionQueueTarget")}


@mock_aws
def test_an_interruption_warning_reaches_the_queue_in_moto():
    sqs = boto3.client("sqs", region_name=REGION)
    events = boto3.client("events", region_name=REGION)
    url = sqs.create_queue(
        QueueName=CLUSTER,
        Attributes={
            "MessageRetentionPeriod": str(interruption.MESSAGE_RETENTION_SECONDS),
            "SqsManagedSseEnabled": "true",
        },
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": interruption.queue_policy(arn)})
    for rule in interruption.EVENT_RULES:
        events.put_rule(Name=f"karpenter-{rule}", EventPattern=interruption.event_pattern(rule))
        events.put_targets(Rule=f"karpenter-{rule}", Targets=[{"Id": "KarpenterInterruptionQueueTarget", "Arn": arn}])
    sent = [
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.health", "AWS Health Event"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
        ("aws.autoscaling", "EC2 Instance Launch Successful"),  # no rule: must not arrive
    ]
    for source, detail_type in sent:
        events.put_events(
            Entries=[{"Source": source, "DetailType": detail_type, "Detail": json.dumps({"instance-id": "i-0"})}]
        )
    received = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            break
        received += [json.loads(m["Body"])["detail-type"] for m in messages]
    assert sorted(received) == sorted(d for _, d in sent[:5])
    assert (
        json.loads(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]["Policy"])[
            "Statement"
        ][1]["Sid"]
        == "DenyHTTP"
    )


def test_discovery_tags_on_the_cluster_security_group_and_private_subnets(sim: Simulation):
    tags = {
        r.inputs["resourceId"]: (r.inputs["key"], r.inputs["value"])
        for r in sim.resources
        if r.type == "aws:ec2/tag:Tag"
    }
    # The subnets the cluster creates carry the tag in their own tags (a separate aws.ec2.Tag on a
    # subnet whose resource manages its tags would be removed by that resource after a refresh).
    assert tags == {"sg-0e5c1a55e5c0ffee0": ("karpenter.sh/discovery", CLUSTER)}
    (vpc,) = [r for r in sim.resources if r.type == "awsx:ec2:Vpc"]
    assert [spec["tags"] for spec in vpc.inputs["subnetSpecs"]] == [
        {"kubernetes.io/role/internal-elb": "1", "karpenter.sh/discovery": CLUSTER},
        {"kubernetes.io/role/elb": "1"},
    ]


# --- per group ------------------------------------------------------------------------------------

GROUPS = {"l4-shared": "4", "l40s-mps": "2", "l4-eighth": "1"}


def test_each_karpenter_group_has_its_objects_and_no_node_group(sim: Simulation):
    assert [r.name for r in sim.resources if r.type == "aws:eks/nodeGroup:NodeGroup"] == ["gpu-eks-cluster-system"]
    templates = [r.name for r in sim.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert templates == ["gpu-eks-cluster-system-lt"]
    assert not [r for r in sim.resources if r.type == "aws:autoscaling/tag:Tag"]
    release = named(sim, "gpu-eks-karpenter-release")
    provider = named(sim, "gpu-eks-cluster-k8s")
    for group, slots in GROUPS.items():
        component = named(sim, f"gpu-eks-{group}")
        children = [(r.type, r.name) for r in sim.resources if r.parent_urn == component.urn]
        assert children == [
            (KARPENTER_TYPES[0], f"gpu-eks-{group}-nodeclass"),
            (KARPENTER_TYPES[1], f"gpu-eks-{group}-nodepool"),
            (OVERLAY, f"gpu-eks-{group}-overlay"),
        ]
        for _, name in children:
            r = named(sim, name)
            assert release.urn in r.dependencies
            assert r.provider is not None and r.provider.startswith(provider.urn)
            manifest = {k: r.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
            assert crd_problems(manifest, karpenter_schema(manifest["kind"])) == [], name
        overlay = named(sim, f"gpu-eks-{group}-overlay").inputs["spec"]
        assert overlay["capacity"] == {"nvidia.com/gpu": slots}
        node_class = named(sim, f"gpu-eks-{group}-nodeclass").inputs["spec"]
        assert node_class["role"] == "gpu-eks-karpenter-node-role"
        assert node_class["tags"] == {"gpu-eks/cluster": CLUSTER, "gpu-eks/node-group": group}


def test_the_stack_outputs_name_each_node_pool(sim: Simulation):
    outputs = sim.outputs["gpuNodeGroups"]
    assert {g: (o["nodePoolName"], o["autoscalingGroupName"]) for g, o in outputs.items()} == {
        "l4-shared": ("gpu-eks-l4-shared", ""),
        "l40s-mps": ("gpu-eks-l40s-mps", ""),
        "l4-eighth": ("gpu-eks-l4-eighth", ""),
    }


def test_the_verification_runs_on_karpenter_groups_scaled_to_zero(sim: Simulation):
    jobs = sorted(r.name for r in sim.resources if r.type == "kubernetes:batch/v1:Job")
    assert [j for j in jobs if "warmup" in j] == [
        "gpu-eks-verify-l4-eighth-warmup",
        "gpu-eks-verify-l4-shared-warmup",
        "gpu-eks-verify-l40s-mps-warmup",
    ]


# --- GpuCapacity: the cluster's own Karpenter ------------------------------------------------------


def capacity(groups: list[dict[str, Any]], **karpenter: Any) -> Simulation:
    def program() -> None:
        GpuCapacity(
            "ml-gpu",
            GpuCapacityArgs(
                cluster_name="platform-cluster",
                subnet_ids=["subnet-0a000000000000001", "subnet-0a000000000000002"],
                kubeconfig=json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": []}),
                node_role_arn=f"arn:aws:iam::{ACCOUNT}:role/ml-gpu-node-role",
                settings=load_capacity_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": groups}),
                **karpenter,
            ),
        )

    return run_program(program, {}, project="consumer", stack="test", timeout=60)


ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
SHARED = {"name": "shared", "capacityProvider": "karpenter", "scaling": ZERO}
WHOLE = {"name": "whole", "capacityProvider": "karpenter", "scaling": ZERO, "timeSlicing": {"replicas": 1}}


def test_gpu_capacity_declares_only_the_groups_objects_for_the_clusters_karpenter():
    sim = capacity([WHOLE], karpenter_node_role="KarpenterNodeRole-platform")
    assert not [r for r in sim.resources if r.type.startswith("gpu-eks:karpenter") or "karpenter-" in r.name]
    node_class = named(sim, "ml-gpu-whole-nodeclass").inputs["spec"]
    assert (node_class["role"], node_class["subnetSelectorTerms"]) == (
        "KarpenterNodeRole-platform",
        [{"tags": {"karpenter.sh/discovery": "platform-cluster"}}],
    )
    # Whole GPUs: EC2's count is right, no overlay, no feature gate needed.
    assert [r.name for r in sim.resources if r.type == OVERLAY] == []
    with_overlay = capacity([SHARED], karpenter_node_role="r", karpenter_node_overlay=True, karpenter_discovery="d")
    assert named(with_overlay, "ml-gpu-shared-overlay").inputs["spec"]["capacity"] == {"nvidia.com/gpu": "4"}
    assert named(with_overlay, "ml-gpu-shared-nodeclass").inputs["spec"]["securityGroupSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "d"}}
    ]


def test_gpu_capacity_says_what_the_clusters_karpenter_must_turn_on():
    with pytest.raises(Exception) as info:
        capacity([SHARED, WHOLE])
    assert str(info.value).split("\n") == [
        "GpuCapacity 'ml-gpu': karpenter_node_role: received nothing; expected the IAM role name of the nodes the "
        "cluster's Karpenter launches (EC2NodeClass spec.role), for the capacityProvider karpenter groups",
        "GpuCapacity 'ml-gpu': gpuNodeGroups[0] (shared) advertises nvidia.com/gpu=4 per node, not the 1 GPU(s) "
        "EC2 reports: Karpenter counts it only through a NodeOverlay, which its controller ignores unless the "
        "nodeOverlay feature gate is on. Turn it on in the cluster's Karpenter (chart value "
        "settings.featureGates.nodeOverlay: true, Karpenter 1.7 or later) and pass karpenter_node_overlay=True",
    ]


def test_the_iam_documents_are_valid_json_for_any_partition():
    # The same function serves aws-cn (partition, ec2.amazonaws.com.cn kept from the reference).
    doc = json.loads(iam.controller_policy("c", "aws-cn", "cn-north-1", ACCOUNT, "arn:aws-cn:iam::1:role/n", "q"))
    assert doc["Statement"][0]["Resource"][0] == "arn:aws-cn:ec2:cn-north-1::image/*"
    assert pulumi is not None


def test_a_sharing_change_of_the_example_changes_only_the_overlays(sim: Simulation):
    """The whole program, not only the builders: replicas 4 -> 8 and MPS -> time-slicing change no
    NodePool or EC2NodeClass input (what Karpenter's drift hashes), only the NodeOverlays."""
    config = yaml.safe_load((ROOT / "examples" / "Pulumi.karpenter.yaml").read_text())["config"]
    groups = config["gpu-eks:gpuNodeGroups"]
    groups[0] = {**groups[0], "timeSlicing": {"replicas": 8}}
    groups[1] = {k: v for k, v in groups[1].items() if k != "mps"} | {"timeSlicing": {"replicas": 3}}
    changed = run_program(
        program_from_file(ROOT / "__main__.py"),
        stackfile.cli_config(config),
        project=stackfile.project_name(ROOT),
        stack="karpenter",
    )

    def karpenter_inputs(run: Simulation, types: tuple[str, ...]) -> dict[str, Any]:
        return {r.name: r.inputs for r in run.resources if r.type in types}

    assert karpenter_inputs(changed, KARPENTER_TYPES) == karpenter_inputs(sim, KARPENTER_TYPES)
    overlays = {n: i["spec"]["capacity"] for n, i in karpenter_inputs(changed, (OVERLAY,)).items()}
    assert overlays == {
        "gpu-eks-l4-shared-overlay": {"nvidia.com/gpu": "8"},
        "gpu-eks-l40s-mps-overlay": {"nvidia.com/gpu": "3"},
        "gpu-eks-l4-eighth-overlay": {"nvidia.com/gpu": "1"},
    }


def test_gpu_capacity_refuses_tags_karpenter_sets_itself():
    with pytest.raises(ValueError) as info:
        capacity([WHOLE], karpenter_node_role="r", tags={"eks:eks-cluster-name": "x"})
    assert str(info.value) == (
        "GpuCapacity 'ml-gpu': tags.eks:eks-cluster-name: no tag key Karpenter sets itself (eks:eks-cluster-name, "
        "karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, kubernetes.io/cluster*) "
        "with a Karpenter group: the EC2NodeClass CRD refuses it in spec.tags"
    )


def test_one_discovery_tag_per_private_subnet_needs_their_count():
    existing = {
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-0a000000000000001", "subnet-0a000000000000002", "subnet-0a000000000000003"],
        "publicSubnetIds": ["subnet-0b000000000000001", "subnet-0b000000000000002"],
    }
    assert _private_subnet_count(load_settings({"clusterName": "c", "network": existing})) == 3
    # Created subnets: none, their own tags carry it.
    assert _private_subnet_count(load_settings({"clusterName": "c", "network": {"availabilityZoneCount": 3}})) == 0
    whole_output = {**existing, "privateSubnetIds": pulumi.Output.from_input(existing["privateSubnetIds"])}
    with pytest.raises(ValueError) as info:
        _private_subnet_count(load_settings({"clusterName": "c", "network": whole_output}))
    assert str(info.value) == (
        "network.privateSubnetIds: received an Output; expected a list (of ids or Outputs) with a Karpenter group: "
        "each private subnet gets the karpenter.sh/discovery tag, one resource per subnet"
    )


def test_a_karpenter_group_without_the_clusters_karpenter_is_an_error():
    def program() -> None:
        GpuNodeGroup(
            "lonely",
            GpuNodeGroupArgs(
                settings=GpuNodeGroupSettings.model_validate(SHARED),
                cluster_name="c",
                node_role_arn="arn:aws:iam::123456789012:role/n",
                subnet_ids=["subnet-0a000000000000001"],
            ),
        )

    with pytest.raises(Exception, match=r"lonely: capacityProvider karpenter needs the cluster's Karpenter"):
        run_program(program, {}, project="consumer", stack="test", timeout=60)
