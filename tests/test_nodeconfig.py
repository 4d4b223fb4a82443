"""nodeadm user data: NodeConfig against the upstream CRD schema and MIME structure.

The exact bytes of each stack's user data are held once, in the stack snapshots
(tests/snapshots/<stack>.yaml: the decoded parts plus the sha256 of the raw MIME); the literal
kubelet flags each group promises are in tests/test_promises_nodegroups.py."""

from __future__ import annotations

import base64

import jsonschema
import pytest
import yaml

from components import catalog
from components.catalog import labels
from components.check.loading import load_settings
from components.plan import userdata
from components.plan.group import GroupPlan, plan_group
from tests.support.paths import STACKS
from tests.support.simulation import simulate
from tests.support.standins.crds import strict
from tooling.simulation import Simulation


def group_plan(**overrides) -> GroupPlan:
    """The plan of one GPU node group named ``gpu`` with ``overrides``."""
    return plan_group(
        load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "gpu", **overrides}]}).gpu_node_groups[0]
    )


def user_data_of(sim: Simulation) -> dict[str, str]:
    """Launch template name → decoded MIME, for every launch template with user data."""
    out = {}
    for lt in sim.by_type("aws:ec2/launchTemplate:LaunchTemplate"):
        if lt.inputs.get("userData"):
            out[lt.name] = base64.b64decode(lt.inputs["userData"]).decode()
    return out


#: Every catalog type with more than one GPU (EC2 GpuInfo); every other advertises one, the vGPU
#: slices (g6f, gr6f) included.
_MULTI_GPU = {
    "g4dn.12xlarge": "4",
    "g4dn.metal": "8",
    "g5.12xlarge": "4",
    "g5.24xlarge": "4",
    "g5.48xlarge": "8",
    "g5g.16xlarge": "2",
    "g5g.metal": "2",
    "g6.12xlarge": "4",
    "g6.24xlarge": "4",
    "g6.48xlarge": "8",
    "g6e.12xlarge": "4",
    "g6e.24xlarge": "4",
    "g6e.48xlarge": "8",
    "p4d.24xlarge": "8",
    "p4de.24xlarge": "8",
    "p5.48xlarge": "8",
    "p5e.48xlarge": "8",
    "p5en.48xlarge": "8",
}


@pytest.mark.parametrize("size", sorted(catalog.GPU_INSTANCE_TYPES))
def test_gpu_count_label_per_size(size):
    expected = _MULTI_GPU.get(size, "1")
    # A vGPU slice cannot be time-sliced (catalog.instances): its group stays unshared.
    sharing = {"replicas": 1} if size.startswith(("g6f.", "gr6f.")) else {"replicas": 2}
    node_labels = group_plan(instanceTypes=[size], timeSlicing=sharing).node_labels
    assert node_labels[labels.GPU_COUNT_LABEL] == expected


def test_labels_and_taints_become_kubelet_flags():
    g = group_plan(
        labels={"team.example.com/owner": "ml", "node.kubernetes.io/pool": "t4"},
        taints=[
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "dedicated", "effect": "NoExecute"},
        ],
        timeSlicing={"replicas": 8},
    )
    flags = userdata.gpu_node_config(g.node_labels, g.taints)["spec"]["kubelet"]["flags"]
    assert flags == [
        "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=gpu,"
        "k8s.amazonaws.com/accelerator=nvidia-tesla-t4,node.kubernetes.io/pool=t4,"
        "nvidia.com/device-plugin.config=gpu,team.example.com/owner=ml",
        "--register-with-taints=nvidia.com/gpu=true:NoSchedule,dedicated:NoExecute",
    ]
    assert not any(" " in f for f in flags)


def test_no_taints_means_no_taint_flag():
    g = group_plan(taints=[])
    flags = userdata.gpu_node_config(g.node_labels, g.taints)["spec"]["kubelet"]["flags"]
    assert [f.split("=")[0] for f in flags] == ["--node-labels"]


def test_white_space_in_a_flag_is_refused():
    with pytest.raises(ValueError, match="white space"):
        userdata.kubelet_flags({"a": "b c"}, [])


def test_strict_schema_rejects_a_misspelt_field(nodeconfig_schema):
    doc = userdata.node_config(["--node-labels=a=b"])
    jsonschema.validate(doc, strict(nodeconfig_schema))
    doc["spec"]["kubelet"]["flag"] = doc["spec"]["kubelet"].pop("flags")
    with pytest.raises(jsonschema.ValidationError, match="'flag' was unexpected"):
        jsonschema.validate(doc, strict(nodeconfig_schema))
    bad = userdata.node_config(["--x"])
    bad["spec"]["kubelet"]["flags"] = "--not-a-list"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, nodeconfig_schema)


def test_mime_round_trips_through_the_email_parser():
    docs = [
        userdata.node_config(["--node-labels=a=b"]),
        userdata.node_config(["--register-with-taints=k:NoSchedule"]),
    ]
    text = userdata.render_mime(docs)
    parts = userdata.parse_mime(text)
    assert [ct for ct, _ in parts] == ["application/node.eks.aws"] * 2
    assert [yaml.safe_load(body) for _, body in parts] == docs
    # Structure nodeadm depends on: the declared boundary delimits the parts, and a blank line
    # separates each part's headers from its body.
    boundary = text.split('boundary="', 1)[1].split('"', 1)[0]
    assert text.count(f"--{boundary}\n") == 2 and text.rstrip().endswith(f"--{boundary}--")
    for chunk in text.split(f"--{boundary}\n")[1:]:
        headers, sep, _ = chunk.partition("\n\n")
        assert sep and "Content-Type: application/node.eks.aws" in headers


def test_mime_is_deterministic_and_content_addressed():
    a = userdata.render_mime([userdata.node_config(["--node-labels=a=b"])])
    assert a == userdata.render_mime([userdata.node_config(["--node-labels=a=b"])])
    assert a != userdata.render_mime([userdata.node_config(["--node-labels=a=c"])])


@pytest.mark.parametrize("stack", STACKS)
def test_every_emitted_node_config_satisfies_the_crd(stack, nodeconfig_schema):
    user_data = user_data_of(simulate(stack))
    assert user_data, "the GPU launch templates carry nodeadm user data"
    for name, mime in user_data.items():
        parts = userdata.parse_mime(mime)
        # The NodeConfig, then the boot stage's shell part, which nodeadm skips (configprovider/mime.go
        # reads only application/node.eks.aws parts) and cloud-init runs (tests/test_boot_stage.py).
        assert [ct for ct, _ in parts] == [userdata.NODECONFIG_CONTENT_TYPE, userdata.SHELL_CONTENT_TYPE], name
        for _, body in parts[:1]:
            doc = yaml.safe_load(body)
            assert doc["apiVersion"] == "node.eks.aws/v1alpha1" and doc["kind"] == "NodeConfig"
            jsonschema.validate(doc, strict(nodeconfig_schema))
