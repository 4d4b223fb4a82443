"""nodeadm user data: the one builder of a GPU group's user data for both capacity providers
(``group_user_data``, the model being terraform-aws-eks's ``_user_data`` module): the NodeConfig
that labels and taints GPU nodes, the boot stage's part, and their MIME envelope.

AL2023 nodes are configured by nodeadm, which reads only the MIME parts of type
``application/node.eks.aws`` (YAML NodeConfig documents) from the instance user data. EKS
managed node groups prepend their own NodeConfig (cluster endpoint, CA, ...) to the user data
of the launch template, so ours carries only what we add: kubelet flags. nodeadm *appends*
``spec.kubelet.flags`` across documents, so our flags add to EKS's rather than replace them.
Karpenter writes a NodeConfig of its own too, with the node's labels and taints from the NodePool
(aws/karpenter-provider-aws v1.14.1 pkg/providers/amifamily/bootstrap/nodeadm.go ``Script``,
``getNodeConfigYAML``): a Karpenter group's part leaves them out (``CapacityProvider.writes_node_labels``).

A malformed MIME (boundary mismatch, no blank line after a part's headers) makes nodeadm fail
and the node never join, so the MIME is built with the standard library's email package and
parsed back in tests, never assembled by string concatenation.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email import message_from_string
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart
from typing import Any

import yaml

from .. import catalog
from ..catalog import labels
from ..config.capacity_provider import CapacityProvider
from ..config.coldstart import ColdStart
from ..config.groups import Taint

NODECONFIG_API_VERSION = "node.eks.aws/v1alpha1"
NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
#: cloud-init's content type of a shell script part (cloud-init "User data formats").
SHELL_CONTENT_TYPE = "text/x-shellscript"


def accelerator_labels(instance: catalog.GpuInstanceType) -> dict[str, str]:
    """``k8s.amazonaws.com/accelerator=<gpu type>`` (Cluster Autoscaler's AWS README, "Special
    note on GPU instances"): CA holds a node with this label as "GPU not ready" until it has
    allocatable ``nvidia.com/gpu``, so it does not add more nodes while the device plugin starts
    (processors/customresources/gpu_processor.go, cluster-autoscaler-1.35.2).

    Every GPU node carries it, whatever the sharing settings: a node label is launch-template user
    data, and sharing changes (replicas, renameByDefault, ...) must never replace nodes. Because a
    renamed resource (``nvidia.com/gpu.shared``) would leave a labelled node "not ready" to CA for
    good, settings refuse ``renameByDefault`` while the autoscaler is enabled.
    """
    return {labels.ACCELERATOR_LABEL: instance.accelerator}


def kubelet_flags(labels: Mapping[str, str], taints: Sequence[Taint]) -> list[str]:
    """``--node-labels`` and ``--register-with-taints`` in kubelet's syntax (sorted, stable).

    nodeadm passes each flag as one argument; a space inside a value would split it, so it is
    rejected here even though the settings validation already rules it out.
    """
    flags = []
    if labels:
        flags.append("--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())))
    if taints:
        flags.append("--register-with-taints=" + ",".join(t.kubelet_form() for t in taints))
    for flag in flags:
        if any(c.isspace() for c in flag):
            raise ValueError(f"kubelet flag contains white space: {flag!r}")
    return flags


def node_config(flags: Sequence[str]) -> dict[str, Any]:
    """A NodeConfig document adding ``flags`` to kubelet."""
    return {
        "apiVersion": NODECONFIG_API_VERSION,
        "kind": "NodeConfig",
        "spec": {"kubelet": {"flags": list(flags)}},
    }


def gpu_node_config(
    node_labels: Mapping[str, str], taints: Sequence[Taint], cold_start: ColdStart | None = None
) -> dict[str, Any]:
    """The NodeConfig for the nodes of one GPU node group (its plan's labels and taints, and the
    group's cold-start levers: ``cold_start_spec``)."""
    doc = node_config(kubelet_flags(node_labels, taints))
    doc["spec"] = {**cold_start_spec(cold_start or ColdStart()), **doc["spec"]}
    return doc


def cold_start_spec(cold: ColdStart) -> dict[str, Any]:
    """The NodeConfig ``spec`` keys of the cold-start levers (config/coldstart.py names each one's
    consumer); empty when none is set, so a group without levers keeps its user data byte for byte.
    EKS's own NodeConfig comes first in the user data; nodeadm merges ours over it
    (nodeadm/internal/api/merge.go: maps deep-merged, scalars later-wins)."""
    spec: dict[str, Any] = {}
    if cold.fast_image_pull:
        spec["featureGates"] = {"FastImagePull": True}
    if cold.local_storage is not None:
        spec["instance"] = {"localStorage": {"strategy": cold.local_storage}}
    return spec


def render_mime(documents: Sequence[Mapping[str, Any]], scripts: Sequence[str] = ()) -> str:
    """A MIME multipart/mixed user data with one ``application/node.eks.aws`` part per document,
    then one ``text/x-shellscript`` part per script (the boot stage: plan/boot.py).

    nodeadm reads only the NodeConfig parts and skips the others (nodeadm/internal/configprovider/
    mime.go: parts whose media type is not ``application/node.eks.aws`` are passed over);
    cloud-init's ``cloud-final`` runs the shell parts once per instance, before ``nodeadm-run``
    (../shared/reference/amazon-eks-ami SOURCE.md). Karpenter keeps every part of a MIME
    ``userData`` with its Content-Type and appends its own NodeConfig
    (pkg/providers/amifamily/bootstrap/nodeadm.go ``parseUserData``, ``Script``, v1.14.1).

    The boundary is derived from the content, so the same input always renders the same bytes
    (a stable launch template version, a quiet diff) and cannot collide with the content.
    """
    bodies = ["---\n" + yaml.safe_dump(dict(doc), sort_keys=False) for doc in documents]
    boundary = "==gpu-eks-" + hashlib.sha256("".join([*bodies, *scripts]).encode()).hexdigest()[:24] + "=="
    outer = MIMEMultipart("mixed", boundary=boundary)
    parts = [(NODECONFIG_CONTENT_TYPE, body) for body in bodies] + [(SHELL_CONTENT_TYPE, s) for s in scripts]
    for content_type, body in parts:
        maintype, subtype = content_type.split("/")
        part = MIMENonMultipart(maintype, subtype, charset="us-ascii")
        part.set_payload(body)
        # Without this header the email package would add none either; nodeadm reads the body
        # as it is (it decodes no transfer encoding), so the YAML must stay plain 7-bit text.
        part["Content-Transfer-Encoding"] = "7bit"
        outer.attach(part)
    return outer.as_string()


def render_user_data(documents: Sequence[Mapping[str, Any]], scripts: Sequence[str] = ()) -> str:
    """Base64 of ``render_mime(documents, scripts)``: what an EC2 launch template's ``userData`` takes."""
    return _base64(render_mime(documents, scripts))


def _base64(mime: str) -> str:
    return base64.b64encode(mime.encode("ascii")).decode("ascii")


@dataclass(frozen=True)
class GroupUserData:
    """A group's user data as its capacity provider is sent it, and its size."""

    #: A managed node group's launch template takes it base64-encoded (``render_user_data``), a
    #: Karpenter group's EC2NodeClass as text (``spec.userData``: Karpenter encodes it with its own part).
    sent: str
    #: What EC2's 16 KB limit counts of the group's own (rules: ``check/groups.py``): the MIME text
    #: before base64, and where the provider writes the node's labels into its own NodeConfig part,
    #: that flag too (it grows with the group's labels as ours would).
    size: int


def group_user_data(
    provider: CapacityProvider,
    node_labels: Mapping[str, str],
    taints: Sequence[Taint],
    cold_start: ColdStart,
    scripts: Sequence[str],
) -> GroupUserData:
    """The user data of a group on ``provider`` whose nodes register with ``node_labels`` and
    ``taints`` (the boot stage's pending taint included), with the group's ``cold_start`` levers and
    the boot stage's ``scripts`` (cloud-init shell parts, run before nodeadm-run starts kubelet).

    A managed node group's part holds the whole NodeConfig (``gpu_node_config``). Karpenter writes
    the labels, the NodePool's taints, max pods and the instance store's strategy into its own part
    (the EC2NodeClass's fields: plan/karpenter.py), so a Karpenter group's part holds only the
    ``--register-with-taints`` flag, which wins over Karpenter's ``registerWithTaints`` and so repeats
    them with the boot stage's pending taint (plan/boot.py ``registration_taints``), and FastImagePull's
    gate, which no EC2NodeClass field sets. Not a NodePool taint: Karpenter would put it back at
    registration (nodeclaim/lifecycle/registration.go syncNode) and plan pods against it."""
    if not provider.writes_node_labels:
        documents = [gpu_node_config(node_labels, taints, cold_start)]
        extra = 0
    else:
        document = node_config(kubelet_flags({}, taints))
        if cold_start.fast_image_pull:
            document["spec"] = {"featureGates": cold_start_spec(cold_start)["featureGates"], **document["spec"]}
        documents = [document]
        extra = sum(len(flag) for flag in kubelet_flags(node_labels, ()))
    mime = render_mime(documents, scripts)
    sent = _base64(mime) if provider.user_data_base64 else mime
    return GroupUserData(sent=sent, size=len(mime.encode("ascii")) + extra)


def parse_mime(text: str) -> list[tuple[str, str]]:
    """(content type, body) of every leaf part: the inverse of ``render_mime``."""
    msg = message_from_string(text)
    if not msg.is_multipart():
        raise ValueError(f"user data is not MIME multipart (Content-Type {msg.get_content_type()})")
    return [
        (part.get_content_type(), part.get_payload(decode=True).decode())
        for part in msg.walk()
        if not part.is_multipart()
    ]
