"""The EKS node monitoring agent add-on (``eks-node-monitoring-agent``): its configuration values.
Pure: no Pulumi. Declared by ``cluster.component.Cluster`` on the clusters the library creates.

One DCGM host engine or two? Two, each serving its own reader:

* the gpu-operator's dcgm-exporter runs its embedded nv-hostengine (chart values ``dcgm.enabled:
  false``, "disabled by default to use embedded nv-hostengine by exporter", in v25.3.1, v25.10.1 and
  v26.7.0): in the exporter's process, listening on no port;
* the agent connects to a standalone nv-hostengine at ``localhost:5555`` from the host network
  (monitors/nvidia/dcgm/dcgm_client.go ``NewDCGM``), which its add-on runs as the ``dcgm-server``
  DaemonSet with ``hostPort`` 5555 (templates/dcgm-daemonset.yaml, aws/eks-node-monitoring-agent v1.7.0).

Sharing one would mean the operator's standalone engine (``dcgm.enabled: true``, which restarts the
exporter of every existing stack) reachable on the node's localhost: only v26.7.0 has
``dcgm.hostNetwork``, and with both on hostPort 5555 one of the two DaemonSets stays Pending. Two
engines read the same GPUs without conflict: health watches, policies and field reads are per
client; the one exclusive operation, the agent's active diagnostics, is off unless
``DCGM_DIAG_LEVEL`` is set (dcgm_activediagnostic.go ``GetDiagType``: level 0), and the library
does not set it. The cost: one more privileged pod per amd64 GPU node (``catalog.NODE_MONITORING_DCGM_POD``).
"""

from __future__ import annotations

import json
from typing import Any

from ..catalog import labels

#: Tolerate every taint. The chart's ``dcgmAgent.tolerations`` is ``[]`` (values.yaml v1.7.0), so
#: on the GPU groups' tainted nodes (``nvidia.com/gpu=true:NoSchedule`` by default) the host engine
#: would never run, while the agent itself does (``nodeAgent.tolerations: [{operator: Exists}]``):
#: the agent then fails to reach DCGM and sets AcceleratedHardwareReady=False, reason ``DCGMError``
#: (Fatal), on every GPU node, which Karpenter's repair replaces. The add-on's configuration schema
#: takes it (charts/configuration.schema.json ``DCGMAgent.tolerations``).
DCGM_TOLERATIONS: tuple[dict[str, str], ...] = ({"operator": "Exists"},)


#: The chart's own rule for the agent (values.yaml ``nodeAgent.affinity``, v1.7.0): not on Fargate,
#: Auto Mode, hybrid or HyperPod nodes, amd64 or arm64 only. Kept whole: the value replaces it.
_AGENT_DEFAULT_EXPRESSIONS: tuple[dict[str, Any], ...] = (
    {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate", "auto", "hybrid"]},
    {"key": "sagemaker.amazonaws.com/compute-type", "operator": "NotIn", "values": ["hyperpod"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
)


def agent_affinity() -> dict[str, Any]:
    """The agent on the GPU groups' nodes only (their ``gpu-eks.io/node-group`` label): repair is
    set up for them; on the system nodes its pod would take one of the few pods a small instance
    runs (``check.settings`` counts them) and repair nothing (the system group has no repair)."""
    expressions = [*_AGENT_DEFAULT_EXPRESSIONS, {"key": labels.NODE_GROUP_LABEL, "operator": "Exists"}]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in expressions]}]
            }
        }
    }


def addon_configuration() -> dict[str, Any]:
    """The add-on's ``configurationValues`` (its chart's values, as its configuration schema allows:
    charts/configuration.schema.json ``NodeAgent.affinity``, ``DCGMAgent.tolerations``)."""
    return {
        "nodeAgent": {"affinity": agent_affinity()},
        "dcgmAgent": {"tolerations": [dict(t) for t in DCGM_TOLERATIONS]},
    }


def addon_configuration_json() -> str:
    """``configurationValues`` as EKS takes it: a JSON string (stable key order)."""
    return json.dumps(addon_configuration(), sort_keys=True)
