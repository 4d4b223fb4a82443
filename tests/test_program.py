"""Each stack, end to end: the real __main__.py under Pulumi mocks with the stack's config.

pulumi-eks's Cluster and awsx's Vpc are remote components: under mocks their children are never
built, so these tests check what the program *sends* them, and everything this library builds
itself (launch templates, node groups, IAM, the Helm release, Kubernetes objects) in full.
"""

from __future__ import annotations

import base64

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from components import catalog, chart, nodeconfig, placement
from components.stackconfig import settings_for_stack
from tests.conftest import ROOT, STACKS
from tooling.simulation import Simulation, run_stack

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"


def test_both_stacks_exist():
    assert set(STACKS) >= {"dev", "prod"}


def test_component_tree(stack_sim):
    _, sim = stack_sim
    parents = {
        r.name: (sim.by_urn(r.parent_urn).name if r.parent_urn != sim.stack_urn else None) for r in sim.resources
    }
    assert parents["gpu-eks"] is None
    assert sim.named("gpu-eks").type == "gpu-eks:index:GpuCluster"
    assert parents["gpu-eks-cluster"] == "gpu-eks"
    assert sim.named("gpu-eks-cluster").type == "gpu-eks:cluster:Cluster"
    assert parents["gpu-eks-cluster-eks"] == "gpu-eks-cluster"
    assert parents["gpu-eks-gpu-operator"] == "gpu-eks"
    assert parents["gpu-eks-gpu-operator-release"] == "gpu-eks-gpu-operator"
    for r in sim.resources:
        assert r.name.startswith("gpu-eks"), f"{r.name} is not named from its component"


def test_control_plane_inputs(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    eks = sim.one("eks:index:Cluster")
    i = eks.inputs
    assert i["name"] == f"gpu-eks-{stack}"
    assert i["version"] == s.kubernetes_version
    assert i["authenticationMode"] == "API"
    assert i["skipDefaultNodeGroup"] is True
    assert i["createOidcProvider"] is True
    assert i["endpointPrivateAccess"] is True
    assert i["endpointPublicAccess"] is True and i["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert i["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert i["nodeAssociatePublicIpAddress"] is False
    assert list(i["accessEntries"]) == ["role-PlatformAdmin"]
    (entry,) = i["accessEntries"].values()
    assert entry["principalArn"] == "arn:aws:iam::123456789012:role/PlatformAdmin"
    (policy,) = entry["accessPolicies"].values()
    assert policy == {
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
        "accessScope": {"type": "cluster"},
    }
    vpc = sim.one("awsx:ec2:Vpc")
    assert i["vpcId"] == "vpc-0fa4e000000000000"
    assert (
        i["privateSubnetIds"]
        == ["subnet-0a00000000000000a", "subnet-0a00000000000000b", "subnet-0a00000000000000c"][
            : s.network.availability_zone_count
        ]
    )
    assert vpc.inputs["numberOfAvailabilityZones"] == s.network.availability_zone_count
    specs = {spec["type"]: spec["tags"] for spec in vpc.inputs["subnetSpecs"]}
    assert specs == {"Private": {"kubernetes.io/role/internal-elb": "1"}, "Public": {"kubernetes.io/role/elb": "1"}}


def test_coredns_addon_waits_for_the_system_node_group(stack_sim):
    """pulumi-eks's own CoreDNS add-on would be created before any node and time out DEGRADED."""
    _, sim = stack_sim
    assert sim.one("eks:index:Cluster").inputs["corednsAddonOptions"]["enabled"] is False
    addon = sim.one("aws:eks/addon:Addon")
    assert addon.inputs["addonName"] == "coredns"
    assert sim.one(NG, "gpu-eks-cluster-system").urn in addon.dependencies


def test_prod_cluster_is_protected_dev_is_not(dev: Simulation, prod: Simulation):
    assert prod.one("eks:index:Cluster").protect is True
    assert prod.one("eks:index:Cluster").inputs["deletionProtection"] is True
    assert dev.one("eks:index:Cluster").protect is False
    assert dev.one("eks:index:Cluster").inputs["deletionProtection"] is False


def test_public_endpoint_off_without_cidrs():
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:endpointPublicAccessCidrs": []})
    i = sim.one("eks:index:Cluster").inputs
    assert i["endpointPublicAccess"] is False and "publicAccessCidrs" not in i


def test_existing_vpc_is_used_as_is():
    sim = run_stack(
        "dev",
        ROOT,
        config_overrides={
            "gpu-eks:network": {"vpcId": "vpc-0a1b2c3d", "privateSubnetIds": ["subnet-0a0a0a0a", "subnet-0b0b0b0b"]}
        },
    )
    assert sim.by_type("awsx:ec2:Vpc") == []
    i = sim.one("eks:index:Cluster").inputs
    assert (i["vpcId"], i["privateSubnetIds"]) == ("vpc-0a1b2c3d", ["subnet-0a0a0a0a", "subnet-0b0b0b0b"])
    assert {tuple(ng.inputs["subnetIds"]) for ng in sim.by_type(NG)} == {("subnet-0a0a0a0a", "subnet-0b0b0b0b")}


def test_reference_kubernetes_version_132_works():
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:kubernetesVersion": "1.32"})
    assert sim.one("eks:index:Cluster").inputs["version"] == "1.32"


def test_node_role_has_worker_cni_ecr_and_ssm_policies(dev: Simulation):
    role = dev.one("aws:iam/role:Role", "gpu-eks-cluster-node-role")
    assert '"Service": "ec2.amazonaws.com"' in role.inputs["assumeRolePolicy"]
    attached = {a.inputs["policyArn"] for a in dev.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    assert attached == {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    }


def test_every_node_has_imdsv2_encrypted_gp3_and_no_ssh(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    disks = {"gpu-eks-cluster-system-lt": s.system_node_group.disk_size_gib}
    disks.update({f"gpu-eks-{g.name}-lt": g.disk_size_gib for g in s.gpu_node_groups})
    lts = sim.by_type(LT)
    assert {lt.name for lt in lts} == set(disks)
    for lt in lts:
        meta = lt.inputs["metadataOptions"]
        assert meta["httpTokens"] == "required" and meta["httpEndpoint"] == "enabled"
        assert meta["httpPutResponseHopLimit"] == 1
        (bdm,) = lt.inputs["blockDeviceMappings"]
        assert bdm["deviceName"] == "/dev/xvda"
        assert bdm["ebs"] == {
            "volumeSize": disks[lt.name],
            "volumeType": "gp3",
            "encrypted": "true",
            "deleteOnTermination": "true",
        }
        assert "keyName" not in lt.inputs


def test_system_node_group_is_untainted_standard_al2023(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    ng = sim.named("gpu-eks-cluster-system")
    i = ng.inputs
    assert i["amiType"] == catalog.SYSTEM_AMI_TYPE == "AL2023_x86_64_STANDARD"
    assert i["capacityType"] == "ON_DEMAND"
    assert i["instanceTypes"] == s.system_node_group.instance_types
    assert "taints" not in i and "labels" not in i
    assert "userData" not in sim.named("gpu-eks-cluster-system-lt").inputs
    assert i["clusterName"] == f"gpu-eks-{stack}"


def test_gpu_node_groups(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    for g in s.gpu_node_groups:
        ng = sim.one(NG, f"gpu-eks-{g.name}")
        i = ng.inputs
        assert i["amiType"] == "AL2023_x86_64_NVIDIA"
        assert i["instanceTypes"] == g.instance_types and all(t.startswith("g4dn.") for t in i["instanceTypes"])
        assert i["capacityType"] == g.capacity_type
        assert i["scalingConfig"] == {
            "minSize": g.scaling.min_size,
            "desiredSize": g.scaling.desired_size,
            "maxSize": g.scaling.max_size,
        }
        assert i["updateConfig"] == {"maxUnavailable": 1}
        assert i["launchTemplate"] == {"id": f"gpu-eks-{g.name}-lt-id", "version": "1"}
        assert i["nodeRoleArn"] == "arn:aws:iam::123456789012:role/gpu-eks-cluster-node-role"
        # Created after the control plane and the role's policy attachments.
        assert sim.one("eks:index:Cluster").urn in ng.dependencies
        assert all(a.urn in ng.dependencies for a in sim.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"))
        # Labels and taints go through nodeadm, never the node group API.
        assert "labels" not in i and "taints" not in i
        mime = base64.b64decode(sim.one(LT, f"gpu-eks-{g.name}-lt").inputs["userData"]).decode()
        ((ctype, body),) = nodeconfig.parse_mime(mime)
        assert ctype == "application/node.eks.aws"
        flags = yaml.safe_load(body)["spec"]["kubelet"]["flags"]
        labels = dict(kv.split("=", 1) for kv in flags[0].removeprefix("--node-labels=").split(","))
        assert labels[placement.GPU_COUNT_LABEL] == str(catalog.GPU_INSTANCE_TYPES[g.instance_types[0]].gpus)
        assert labels[placement.DEVICE_PLUGIN_CONFIG_LABEL] == g.profile_name == "timeslice-x4"  # pinned in stacks/
        assert flags[1] == "--register-with-taints=nvidia.com/gpu=true:NoSchedule"


def test_dev_is_one_spot_xlarge_from_zero_prod_is_several_on_demand(dev: Simulation, prod: Simulation):
    (d,) = dev.by_type(NG)[1:]
    assert (d.inputs["instanceTypes"], d.inputs["capacityType"], d.inputs["scalingConfig"]) == (
        ["g4dn.xlarge"],
        "SPOT",
        {"minSize": 0, "desiredSize": 0, "maxSize": 1},
    )
    (p,) = prod.by_type(NG)[1:]
    assert p.inputs["capacityType"] == "ON_DEMAND" and p.inputs["scalingConfig"]["desiredSize"] > 1


def test_operator_namespace_and_release(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    provider = sim.one("pulumi:providers:kubernetes")
    ns = sim.one("kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns")
    assert ns.inputs["metadata"]["name"] == "gpu-operator"
    assert ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    rel = sim.one(RELEASE, "gpu-eks-gpu-operator-release")
    i = rel.inputs
    assert (i["chart"], i["version"]) == ("gpu-operator", s.gpu_operator.chart_version)
    assert i["repositoryOpts"] == {"repo": chart.CHART_REPOSITORY} == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert i["namespace"] == "gpu-operator" and i["createNamespace"] is False
    # The Kubernetes provider reaches the release through the component's `providers=`.
    assert rel.provider.startswith(provider.urn + "::") and ns.provider.startswith(provider.urn + "::")
    # The kubeconfig reaches the provider as a secret.
    kubeconfig = provider.inputs["kubeconfig"]
    assert kubeconfig[rpc._special_sig_key] == rpc._special_secret_sig
    assert kubeconfig["value"].startswith('{"apiVersion": "v1"')
    # The release waits for the system node group (the operator needs an untainted node):
    # through the namespace, which waits for it.
    assert ns.urn in rel.dependencies
    assert sim.one(NG, "gpu-eks-cluster-system").urn in ns.dependencies
    v = i["values"]
    assert v["driver"] == {"enabled": False} and v["toolkit"] == {"enabled": False}
    assert v["devicePlugin"]["config"]["default"] == "timeslice-x4"
    ts = yaml.safe_load(v["devicePlugin"]["config"]["data"]["timeslice-x4"])["sharing"]["timeSlicing"]
    assert ts["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]


def test_verification_in_dev_only(dev: Simulation, prod: Simulation):
    assert prod.by_type("gpu-eks:verification:TimeSlicingVerification") == []
    assert prod.by_type(JOB) == []
    dep = dev.one(JOB, "gpu-eks-verify-t4-concurrent")
    spec = dep.inputs["spec"]
    assert spec["parallelism"] == spec["completions"] == 1 * 4  # one T4 x 4 replicas
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert container["image"].startswith("nvcr.io/nvidia/k8s/cuda-sample:vectoradd")
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert pod["nodeSelector"][placement.GPU_COUNT_LABEL] == "1"
    ns = dev.one("kubernetes:core/v1:Namespace", "gpu-eks-verify-ns")
    assert dep.inputs["metadata"]["namespace"] == ns.inputs["metadata"]["name"] == "gpu-timeslicing-check"
    # It waits for the operator and the GPU node group (the Deployment through its namespace).
    assert ns.urn in dep.dependencies
    assert dev.one(RELEASE, "gpu-eks-gpu-operator-release").urn in ns.dependencies
    assert dev.one(NG, "gpu-eks-t4").urn in ns.dependencies


def test_verification_replicas_follow_the_instance_type():
    sim = run_stack(
        "dev",
        ROOT,
        config_overrides={
            "gpu-eks:gpuNodeGroups": [
                {"name": "big", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 3}},
            ]
        },
    )
    assert sim.one(JOB, "gpu-eks-verify-big-concurrent").inputs["spec"]["parallelism"] == 4 * 3
    assert sim.outputs["gpuNodeGroups"]["big"]["advertisedGpusPerNode"] == 12


def test_stack_outputs(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    out = sim.outputs
    assert out["clusterName"] == f"gpu-eks-{stack}"
    assert "kubeconfig" in sim.secret_outputs and '"current-context": "aws"' in out["kubeconfig"]
    assert out["oidcProviderArn"].startswith("arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2")
    assert out["oidcProviderUrl"].startswith("oidc.eks.us-west-2.amazonaws.com/id/")
    assert set(out["gpuNodeGroups"]) == {g.name for g in s.gpu_node_groups}
    for g in s.gpu_node_groups:
        o = out["gpuNodeGroups"][g.name]
        assert o["nodeSelector"] == nodeconfig.gpu_node_labels(g)
        assert o["tolerations"] == placement.tolerations_for(g.taint_list)
        assert o["gpusPerNode"] == g.gpus_per_node
        assert o["advertisedGpusPerNode"] == g.gpus_per_node * g.time_slicing.replicas
        assert o["resourceName"] == "nvidia.com/gpu"


@pytest.mark.parametrize("run", range(5))
def test_repeated_runs_are_identical(run):
    """Guards the resource-reference race: runs must neither hang nor differ."""
    a = run_stack("dev", ROOT)
    b = run_stack("dev", ROOT)
    assert [(r.urn, r.inputs) for r in a.resources] == [(r.urn, r.inputs) for r in b.resources]


def test_preflight_true_stops_the_program_on_a_failed_check(monkeypatch):
    """`preflight: true` runs the account checks before any resource is declared; here the
    (moto) account publishes no EKS AMI parameters, so the AMI checks FAIL."""
    from moto import mock_aws

    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws(), pytest.raises(pulumi.RunError) as info:
        run_stack("dev", ROOT, config_overrides={"gpu-eks:preflight": True})
    message = str(info.value)
    assert message.startswith("preflight failed:")
    assert "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id" in message
