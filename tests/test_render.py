"""`python -m tooling render`: the pure pieces (wire values -> readable YAML), the render of the
real stacks (NodeConfig flags, masked secrets, unknowns, determinism) and the command line."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import stackfile
from components.plan import userdata
from components.review import urns as render_urns
from components.review import values as render_values
from components.review.values import SECRET, UNKNOWN, Decoded
from tests.support.commands import tooling_cli
from tests.support.copies import copy_project
from tests.support.paths import ROOT
from tooling import render
from tooling.__main__ import main as cli_main
from tooling.simulation import Registration

SECRET_WIRE = {render_values.SIG_KEY: render_values.SECRET_SIG, "value": "s3cr3t"}


# ---------------------------------------------------------------------------------------------
# Wire values -> display values (pure)
# ---------------------------------------------------------------------------------------------


def test_wire_markers_are_the_engines():
    from pulumi.runtime import rpc

    assert rpc._special_sig_key == render_values.SIG_KEY
    assert rpc._special_secret_sig == render_values.SECRET_SIG
    assert rpc._special_asset_sig == render_values.ASSET_SIG
    assert rpc._special_archive_sig == render_values.ARCHIVE_SIG
    assert rpc._special_resource_sig == render_values.RESOURCE_SIG
    assert rpc._special_output_value_sig == render_values.OUTPUT_VALUE_SIG
    assert render_values.UNKNOWN_SENTINEL == rpc.UNKNOWN


def test_display_masks_secrets_marks_unknowns_and_normalises_numbers():
    wire = {
        "zeta": 2.0,
        "alpha": 1.5,
        "password": SECRET_WIRE,
        "secretUnknown": {render_values.SIG_KEY: render_values.SECRET_SIG, "value": render_values.UNKNOWN_SENTINEL},
        "arn": render_values.UNKNOWN_SENTINEL,
        "list": [3.0, render_values.UNKNOWN_SENTINEL, {"b": 1.0, "a": True}],
    }
    shown = render_values.display(wire)
    assert shown == {
        "alpha": 1.5,
        "arn": UNKNOWN,
        "list": [3, UNKNOWN, {"a": True, "b": 1}],
        "password": SECRET,
        "secretUnknown": SECRET,
        "zeta": 2,
    }
    assert list(shown) == sorted(shown), "maps must come out sorted, whatever order the wire had"
    assert isinstance(shown["zeta"], int)
    assert "s3cr3t" not in render_values.dump(shown)


def test_display_output_values_follow_their_flags():
    out = render_values.OUTPUT_VALUE_SIG
    sig = render_values.SIG_KEY
    assert render_values.display({sig: out, "value": "x"}) == "x"
    assert render_values.display({sig: out}) == UNKNOWN
    assert render_values.display({sig: out, "value": "x", "secret": True}) == SECRET


def test_display_maps_simulator_urns_to_engine_urns():
    urns = {"urn:pulumi:s::p::A$b:c:D::n": "urn:pulumi:s::p::x:y:A$b:c:D::n"}
    assert render_values.display({"cluster": "urn:pulumi:s::p::A$b:c:D::n"}, urns=urns) == {
        "cluster": "urn:pulumi:s::p::x:y:A$b:c:D::n"
    }


def test_user_data_is_shown_as_mime_parts_with_the_nodeconfig_parsed():
    doc = userdata.node_config(["--node-labels=a=b", "--register-with-taints=k=v:NoSchedule"])
    user_data = userdata.render_user_data([doc])
    shown = render_values.display({"userData": user_data}, "aws:ec2/launchTemplate:LaunchTemplate")["userData"]
    assert isinstance(shown, Decoded) and shown.tag == "!base64-mime"
    (part,) = shown.value["parts"]
    assert part["contentType"] == "application/node.eks.aws"
    assert part["content"] == Decoded("!yaml", doc)
    assert len(shown.value["sha256"]) == 16
    # Any byte of the user data (even a MIME header the parts do not show) changes the digest.
    other = base64.b64encode(base64.b64decode(user_data).replace(b"7bit", b"8bit")).decode()
    assert render_values.decode_user_data(other).value["sha256"] != shown.value["sha256"]


def test_user_data_that_is_not_base64_or_not_mime():
    assert render_values.decode_user_data("#!/bin/bash\necho hi\n") is None  # not base64: left alone
    script = base64.b64encode(b"#!/bin/bash\necho hi\n").decode()
    decoded = render_values.decode_user_data(script)
    assert decoded is not None and decoded.tag == "!base64"
    assert decoded.value["content"] == "#!/bin/bash\necho hi\n"


def test_helm_device_plugin_configs_are_expanded_but_other_strings_are_not():
    config = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    wire = {"values": {"devicePlugin": {"config": {"data": {"timeslice-x4": config}}}, "other": "a: b\n"}}
    shown = render_values.display(wire, "kubernetes:helm.sh/v3:Release")
    expanded = shown["values"]["devicePlugin"]["config"]["data"]["timeslice-x4"]
    assert expanded == Decoded("!yaml", yaml.safe_load(config))
    assert shown["values"]["other"] == "a: b\n"
    # The same path on another resource type is just a string.
    assert render_values.display(wire, "aws:s3/bucket:Bucket")["values"]["devicePlugin"]["config"]["data"] == {
        "timeslice-x4": config
    }


def test_kubeconfig_is_expanded_when_plain_and_masked_when_secret():
    kubeconfig = '{"apiVersion": "v1", "kind": "Config", "clusters": []}'
    plain = render_values.display({"kubeconfig": kubeconfig}, "pulumi:providers:kubernetes")
    assert plain == {"kubeconfig": Decoded("!json", {"apiVersion": "v1", "kind": "Config", "clusters": []})}
    secret = {render_values.SIG_KEY: render_values.SECRET_SIG, "value": kubeconfig}
    assert render_values.display({"kubeconfig": secret}, "pulumi:providers:kubernetes") == {"kubeconfig": SECRET}


def test_dump_is_block_yaml_without_anchors_and_loads_back():
    shared = {"environment": "dev"}
    data = {
        "b": shared,
        "a": shared,
        "script": "line 1\nline 2\n",
        "doc": Decoded("!yaml", {"kind": "NodeConfig", "spec": {"x": [1, 2]}}),
    }
    text = render_values.dump(data)
    assert "&id" not in text and "*id" not in text, "a shared object must be written out twice, not anchored"
    assert text.index("b:") < text.index("a:"), "dump keeps insertion order"
    assert "script: |\n  line 1\n  line 2\n" in text
    assert "doc: !yaml\n  kind: NodeConfig\n" in text
    assert render_values.load(text) == {
        "b": shared,
        "a": shared,
        "script": "line 1\nline 2\n",
        "doc": {"kind": "NodeConfig", "spec": {"x": [1, 2]}},
    }


# ---------------------------------------------------------------------------------------------
# One registration -> one item (pure)
# ---------------------------------------------------------------------------------------------


def registration(name: str, typ: str, parent: str | None = None, **kw: Any) -> Registration:
    return Registration(
        urn=f"mock::{typ}::{name}",
        type=typ,
        name=name,
        custom=kw.pop("custom", True),
        parent_urn=parent,
        inputs={},
        wire_inputs=kw.pop("wire_inputs", {}),
        provider=kw.pop("provider", None),
        protect=kw.pop("protect", False),
        dependencies=kw.pop("dependencies", []),
        aliases=kw.pop("aliases", []),
        **kw,
    )


def test_resource_item_shows_optional_fields_only_when_set():
    comp = registration("c", "my:index:Comp", custom=False)
    prov = registration("k8s", "pulumi:providers:kubernetes", parent=comp.urn)
    ns = registration(
        "ns",
        "kubernetes:core/v1:Namespace",
        parent=comp.urn,
        provider=f"{prov.urn}::{render_values.UNKNOWN_SENTINEL}",
        protect=True,
        dependencies=[prov.urn, comp.urn, prov.urn],
        options={"ignoreChanges": ["metadata"], "deletedWith": comp.urn},
        wire_inputs={"metadata": {"name": "x"}},
        property_dependencies={"metadata": [comp.urn], "spec": []},
    )
    by_urn = {r.urn: r for r in (comp, prov, ns)}
    ids = render_urns.engine_identities([comp, prov, ns], "dev", "p")
    item = render.resource_item(ns, ids[ns.urn], by_urn)
    assert item == {
        "type": "kubernetes:core/v1:Namespace",
        "name": "ns",
        "parent": {"type": "my:index:Comp", "name": "c"},
        "urn": "urn:pulumi:dev::p::my:index:Comp$kubernetes:core/v1:Namespace::ns",
        "provider": "pulumi:providers:kubernetes::k8s",
        "protect": True,
        "deletedWith": "my:index:Comp::c",
        "ignoreChanges": ["metadata"],
        "dependsOn": ["my:index:Comp::c", "pulumi:providers:kubernetes::k8s"],
        "inputDependencies": {"metadata": ["my:index:Comp::c"]},
        "inputs": {"metadata": {"name": "x"}},
    }
    bare = render.resource_item(comp, ids[comp.urn], by_urn)
    assert bare == {
        "type": "my:index:Comp",
        "name": "c",
        "parent": None,
        "urn": "urn:pulumi:dev::p::my:index:Comp::c",
        "inputs": {},
    }


# ---------------------------------------------------------------------------------------------
# The real stacks, rendered in-process
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return {stack: render.render_stack(stack, ROOT) for stack in ("dev", "prod")}


@pytest.fixture(scope="module")
def docs(texts: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {stack: render_values.load(text) for stack, text in texts.items()}


def item(doc: dict[str, Any], typ: str, name: str) -> dict[str, Any]:
    found = [r for r in doc["resources"] if r["type"] == typ and r["name"] == name]
    assert len(found) == 1, f"expected one {typ} {name!r}, found {len(found)}"
    return found[0]


def test_render_lists_resources_in_declaration_order_with_parents(docs: dict[str, dict[str, Any]]):
    resources = docs["dev"]["resources"]
    assert resources[0]["type"] == "gpu-eks:index:GpuCluster"
    assert resources[0]["parent"] is None
    seen: set[tuple[str, str]] = set()
    for r in resources:
        if r["parent"] is not None:
            # A parent is always declared before its children.
            assert (r["parent"]["type"], r["parent"]["name"]) in seen, r["name"]
        seen.add((r["type"], r["name"]))
    assert set(resources[0]) == {"type", "name", "parent", "urn", "inputs"}
    names = [(r["type"].split(":")[-1], r["name"]) for r in resources]
    assert names.index(("LaunchTemplate", "gpu-eks-t4-lt")) < names.index(("NodeGroup", "gpu-eks-t4"))


def test_render_shows_the_nodeadm_flags_of_the_gpu_nodes(docs: dict[str, dict[str, Any]]):
    lt = item(docs["dev"], "aws:ec2/launchTemplate:LaunchTemplate", "gpu-eks-t4-lt")
    part, boot_part = lt["inputs"]["userData"]["parts"]
    assert boot_part["contentType"] == "text/x-shellscript"  # the boot stage, shown as its text
    assert boot_part["content"].startswith("#!/bin/bash\n")
    assert part["contentType"] == "application/node.eks.aws"
    assert part["content"]["kind"] == "NodeConfig"
    assert part["content"]["spec"]["kubelet"]["flags"] == [
        "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=t4,k8s.amazonaws.com/accelerator=nvidia-tesla-t4,"
        "nvidia.com/device-plugin.config=timeslice-x4",
        "--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
    ]


def test_render_text_tags_the_decoded_strings(texts: dict[str, str]):
    assert "userData: !base64-mime\n" in texts["dev"]
    assert "timeslice-x4: !yaml\n" in texts["dev"]
    assert "assumeRolePolicy: !json\n" in texts["dev"]


def test_render_masks_the_kubeconfig_and_marks_computed_values(docs: dict[str, dict[str, Any]]):
    doc = docs["dev"]
    assert item(doc, "pulumi:providers:kubernetes", "gpu-eks-cluster-k8s")["inputs"] == {"kubeconfig": SECRET}
    assert doc["outputs"]["kubeconfig"] == SECRET
    node_group = item(doc, "aws:eks/nodeGroup:NodeGroup", "gpu-eks-t4")["inputs"]
    # Known before deployment: chosen by the program.
    assert node_group["clusterName"] == "gpu-eks-dev"
    assert node_group["scalingConfig"] == {"desiredSize": 0, "maxSize": 1, "minSize": 0}
    # Computed by the cloud: a first preview cannot know them.
    assert node_group["nodeRoleArn"] == UNKNOWN
    assert node_group["subnetIds"] == UNKNOWN
    assert node_group["launchTemplate"] == {"id": UNKNOWN, "version": UNKNOWN}
    assert doc["outputs"]["oidcProviderArn"] == UNKNOWN


def test_render_expands_the_device_plugin_config(docs: dict[str, dict[str, Any]]):
    release = item(docs["prod"], "kubernetes:helm.sh/v3:Release", "gpu-eks-gpu-operator-release")
    config = release["inputs"]["values"]["devicePlugin"]["config"]
    assert config["default"] == "timeslice-x4"
    sharing = config["data"]["timeslice-x4"]["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert sharing["failRequestsGreaterThanOne"] is True


def test_render_shows_protection_and_options(docs: dict[str, dict[str, Any]]):
    assert item(docs["prod"], "eks:index:Cluster", "gpu-eks-cluster-eks")["protect"] is True
    assert "protect" not in item(docs["dev"], "eks:index:Cluster", "gpu-eks-cluster-eks")
    assert item(docs["dev"], "eks:index:Cluster", "gpu-eks-cluster-eks")["remote"] is True
    assert item(docs["dev"], "aws:eks/nodeGroup:NodeGroup", "gpu-eks-t4")["ignoreChanges"] == [
        "scalingConfig.desiredSize"
    ]
    ns = item(docs["dev"], "kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns")
    assert ns["provider"] == "pulumi:providers:kubernetes::gpu-eks-cluster-k8s"
    # The operator waits for the untainted system nodes (depends_on of its component).
    assert "aws:eks/nodeGroup:NodeGroup::gpu-eks-cluster-system" in ns["dependsOn"]


def test_render_urns_are_the_engines(docs: dict[str, dict[str, Any]]):
    lt = item(docs["dev"], "aws:ec2/launchTemplate:LaunchTemplate", "gpu-eks-t4-lt")
    assert lt["urn"] == (
        "urn:pulumi:dev::gpu-eks::gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup"
        "$aws:ec2/launchTemplate:LaunchTemplate::gpu-eks-t4-lt"
    )
    assert len({r["urn"] for r in docs["dev"]["resources"]}) == len(docs["dev"]["resources"])


def test_a_second_render_is_byte_identical(texts: dict[str, str]):
    assert render.render_stack("dev", ROOT) == texts["dev"]


def test_render_holds_nothing_machine_specific(texts: dict[str, str]):
    for text in texts.values():
        assert str(ROOT) not in text
        assert os.path.expanduser("~") not in text
        # The simulator's ids ("<name>-id") and URNs never leak: ids are unknown in a preview.
        assert "-id\n" not in text and "gpu-eks-cluster-k8s-id" not in text
        assert "urn:pulumi:dev::gpu-eks::pulumi:pulumi:Stack" not in text


def test_libyaml_and_pure_python_emitters_write_the_same_bytes(docs: dict[str, dict[str, Any]]):
    # Renders must not depend on whether a machine's PyYAML has libyaml.
    sim, _ = render.simulate("prod", ROOT)
    document = render.render_document(sim.resources, sim.wire_outputs, "prod", "gpu-eks")
    assert render_values.dump(document, render_values.PURE_DUMPER) == render_values.dump(document)
    assert render_values.load(render_values.dump(document)) == docs["prod"]


def test_preflight_is_never_run_by_a_render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = copy_project(tmp_path)
    config = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    config["config"]["gpu-eks:preflight"] = True
    (root / "stacks" / "Pulumi.pf.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setattr(sys, "path", list(sys.path))  # runpy adds the copy's folder

    def no_aws(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("render ran the preflight checks")

    monkeypatch.setattr("components.program.run_preflight", lambda settings: no_aws() if settings.preflight else None)
    text = render.render_stack("pf", root)
    assert "# preflight: true in the stack is skipped by render." in text


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return tooling_cli(*args, cwd=cwd, env=env)


def test_cli_writes_the_render_to_a_file(tmp_path: Path, texts: dict[str, str], capsys: pytest.CaptureFixture[str]):
    # In this process (``python -m tooling``'s main; the subprocess tests here and scripts/run prove that
    # entry point): a new Python per call cost about 2 s of imports.
    out = tmp_path / "out" / "dev.yaml"
    assert cli_main(["render", "--output", str(out)]) == 0  # --stack defaults to dev
    assert capsys.readouterr().out == ""
    assert out.read_bytes() == texts["dev"].encode()


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="scripts/run needs a virtualenv ($VIRTUAL_ENV)")
def test_scripts_run_prints_the_render_of_a_stack(texts: dict[str, str]):
    script = ROOT / "scripts" / "run"
    assert os.access(script, os.X_OK), "scripts/run must be executable"
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # The bootstrap uses the active virtualenv: this test's own, so nothing is installed.
    environ["VIRTUAL_ENV"] = sys.prefix
    done = subprocess.run(
        [str(script), "prod"], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == texts["prod"]


def test_render_names_the_resources_each_input_comes_from(docs: dict[str, dict[str, Any]]):
    group = item(docs["dev"], "aws:eks/nodeGroup:NodeGroup", "gpu-eks-t4")
    sources = group["inputDependencies"]
    assert sources["launchTemplate"] == ["aws:ec2/launchTemplate:LaunchTemplate::gpu-eks-t4-lt"]
    assert "aws:iam/role:Role::gpu-eks-cluster-node-role" in sources["nodeRoleArn"]
    assert "instanceTypes" not in sources, "a plain value comes from no resource"


def test_cli_renders_json_for_other_tools(tmp_path: Path, docs: dict[str, dict[str, Any]]):
    out = tmp_path / "dev.json"
    assert cli_main(["render", "--format", "json", "--output", str(out)]) == 0  # in this process, as above
    data = json.loads(out.read_text())
    assert (data["project"], data["stack"]) == ("gpu-eks", "dev")
    assert [(r["type"], r["name"]) for r in data["resources"]] == [
        (r["type"], r["name"]) for r in docs["dev"]["resources"]
    ]
    lt = next(r for r in data["resources"] if r["name"] == "gpu-eks-t4-lt")
    user_data = lt["inputs"]["userData"]
    assert user_data["encoding"] == "base64-mime"
    part, boot_part = user_data["decoded"]["parts"]
    assert boot_part["contentType"] == "text/x-shellscript"
    assert part["contentType"] == "application/node.eks.aws"
    assert part["content"]["encoding"] == "yaml"
    assert part["content"]["decoded"]["kind"] == "NodeConfig"
    assert data["outputs"]["kubeconfig"] == SECRET
    assert isinstance(data["notes"], list)


def test_a_render_loads_the_aws_sdk_and_the_library_folders_it_uses_only(tmp_path: Path):
    # What `python -m tooling render` imports, in a fresh process: the AWS SDK (~0.2 s of a ~2 s
    # render) is preflight's (a render turns preflight off; the region rule reads botocore's data
    # file), and the library's folders are the ones a render runs. bench/bench_render.py times it.
    code = (
        "import json, sys\n"
        "from tooling.__main__ import main\n"
        "assert main(['render', '--stack', 'dev', '--output', sys.argv[1]]) == 0\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "dev.yaml")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert sorted(m for m in loaded if m.split(".")[0] in {"boto3", "botocore", "s3transfer"}) == []
    assert sorted({m.split(".")[1] for m in loaded if m.startswith("components.")}) == [
        "__main__",
        "autoscaler",
        "blocks",
        "catalog",
        "check",
        "cluster",
        "composites",
        "config",
        "efa",
        "gpu_operator",
        "karpenter",
        "moved",
        "nodegroups",
        "observability",
        "plan",
        "program",
        "review",
        "teams",
        "verification",
        "version",
    ]
    assert [m for m in loaded if m.startswith(("components.review.diff", "components.review.impact"))] == []


def test_update_snapshots_takes_no_format():
    done = cli("render", "--update-snapshots", "--format", "json")
    assert done.returncode == 2
    assert "takes no --output or --format" in done.stderr


def test_cli_unknown_stack_exits_2_with_the_known_stacks():
    done = cli("render", "--stack", "staging")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "unknown stack 'staging'" in done.stderr
    assert ", ".join(stackfile.available_stacks(ROOT)) in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_invalid_config_exits_2_listing_every_problem(tmp_path: Path):
    root = copy_project(tmp_path)
    bad = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    bad["config"]["gpu-eks:gpuNodeGroups"][0]["scaling"] = {"minSize": 3, "desiredSize": 1, "maxSize": 2}
    bad["config"]["gpu-eks:clusterNmae"] = "typo"
    (root / "stacks" / "Pulumi.bad.yaml").write_text(yaml.safe_dump(bad))
    done = cli("render", "--stack", "bad", cwd=root)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "invalid stack configuration (2 problems)" in done.stderr
    assert "gpu-eks:gpuNodeGroups[0].scaling" in done.stderr
    assert "gpu-eks:clusterNmae" in done.stderr


def test_unreadable_stack_file_is_a_config_error_not_a_crash(tmp_path: Path):
    root = copy_project(tmp_path)
    (root / "stacks" / "Pulumi.broken.yaml").write_text("config:\n  gpu-eks:tags: [unclosed\n")
    with pytest.raises(render.RenderError) as caught:
        render.stack_config("broken", root)
    assert caught.value.status == 2
    assert "cannot read the configuration of stack 'broken'" in str(caught.value)
