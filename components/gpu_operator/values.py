"""Values for the NVIDIA gpu-operator Helm chart, computed from the GPU node groups.

Nothing here is typed by hand per cluster: tolerations come from the node groups' taints,
the device-plugin config from their sharing profiles, and the chart's own list defaults from
``chart.SUPPORTED_CHART_VERSIONS`` (checked against the chart's values.yaml in tests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..config.groups import Taint
from ..nodegroups import placement
from ..sharing import device_plugin
from ..sharing.plan import GroupPlan
from . import chart


def gpu_taints(plans: Sequence[GroupPlan]) -> list[Taint]:
    """Every distinct taint of every GPU node group, in group order."""
    out: list[Taint] = []
    for p in plans:
        out += [t for t in p.taints if t not in out]
    return out


def profile_configs(plans: Sequence[GroupPlan]) -> dict[str, Mapping[str, Any]]:
    """The device-plugin config file of every sharing profile a GPU node group uses, by profile
    name (first use wins; the settings rules guarantee one set of settings per name)."""
    out: dict[str, Mapping[str, Any]] = {}
    for p in plans:
        out.setdefault(p.profile_name, p.device_plugin_config)
    return out


def mig_strategy(plans: Sequence[GroupPlan]) -> str:
    """The one MIG strategy of the cluster (the chart's ``mig.strategy`` is cluster-wide;
    settings validation guarantees every group agrees)."""
    strategies = {p.mig_strategy for p in plans}
    if len(strategies) != 1:
        raise ValueError(f"GPU node groups disagree on migStrategy: {sorted(strategies)}")
    return strategies.pop()


def gpu_operator_values(plans: Sequence[GroupPlan], chart_version: str, cdi_enabled: bool = False) -> dict[str, Any]:
    """The gpu-operator values for a cluster whose GPU nodes are the groups of ``plans``."""
    if not plans:
        raise ValueError("gpu_operator_values needs at least one GPU node group, received none")
    defaults = chart.chart_defaults(chart_version)
    # Groups declared outside the settings (GpuOperator covers any group) meet the rule here too.
    if not defaults.shared_devices_allocation_policy:
        named = [p.name for p in plans if p.settings.shared_devices_allocation_policy is not None]
        if named:
            raise ValueError(
                f"GPU node groups {named} set sharedDevicesAllocationPolicy, which the device plugin "
                f"{defaults.device_plugin_version} of chart {chart_version} does not read (v0.20.0 / chart v26.7.0 "
                "and newer)"
            )
    taints = gpu_taints(plans)
    mig = mig_strategy(plans)
    data = device_plugin.device_plugin_config_data(profile_configs(plans))
    values: dict[str, Any] = {
        # The EKS AL2023 NVIDIA AMI ships the driver and the container toolkit, and nodeadm makes
        # `nvidia` containerd's default runtime: the operator must not install either (AWS docs).
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        # Pinned explicitly: the chart default flipped from false (v25.3) to true (v25.10+).
        "cdi": {"enabled": cdi_enabled},
        # The operator passes mig.strategy (chart default: single) to the device plugin and GFD
        # as the MIG_STRATEGY env (controllers/object_controls.go applyMIGConfiguration), which
        # overrides flags.migStrategy in the config file (the plugin's mig-strategy flag reads
        # MIG_STRATEGY; gpu-operator v25.3.1, v25.10.1, v26.7.0): both come from one setting.
        "mig": {"strategy": mig},
        "devicePlugin": {
            "config": {
                "create": True,
                # Content-addressed name: see device_plugin.config_map_name for why.
                "name": device_plugin.config_map_name(data),
                # Nodes without the profile label (e.g. launched by Karpenter) get the first
                # node group's profile; `default` must name a key of `data`.
                "default": plans[0].profile_name,
                "data": data,
            }
        },
        # Helm replaces lists: keep the chart's own entries and add ours.
        "daemonsets": {
            "tolerations": placement.extend_tolerations(defaults.daemonset_tolerations, taints),
        },
        "node-feature-discovery": {
            "worker": {
                # NFD workers only on GPU nodes: labelling CPU nodes is wasted work and would let
                # the operator's DaemonSets consider them.
                "affinity": placement.gpu_node_affinity(),
                "tolerations": placement.extend_tolerations(defaults.nfd_worker_tolerations, taints),
            }
        },
    }
    # MPS needs no value here: the chart never copies devicePlugin.mps into the ClusterPolicy
    # (templates/clusterpolicy.yaml, v25.3.1, v25.10.1, v26.7.0; checked with helm template), and the
    # operator always deploys state-mps-control-daemon with the root device_plugin.MPS_ROOT.
    return values
