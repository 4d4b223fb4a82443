"""The README stays true: its import example runs, and its configuration table covers every key."""

from __future__ import annotations

import re

from pydantic import BaseModel

from components.config.settings import Settings
from tests.support import ROOT
from tooling.simulation import run_program

README = (ROOT / "README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_import_example_runs_under_mocks():
    (example,) = [b for b in python_blocks() if "GpuCluster(" in b]
    sim = run_program(lambda: exec(example, {}), {}, project="other", stack="test")
    assert sim.one("eks:index:Cluster").inputs["name"] == "ml-platform"
    assert sim.one("aws:eks/nodeGroup:NodeGroup", "ml-t4").inputs["instanceTypes"] == ["g4dn.xlarge"]
    assert sim.outputs["t4NodeSelector"]["gpu-eks.io/gpu-count"] == "1"
    assert sim.outputs["t4Tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]


def config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every leaf config key of ``model`` (``scaling`` and ``taints`` count as leaves)."""
    keys = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        annotation = field.annotation
        nested = [
            t
            for t in getattr(annotation, "__args__", (annotation,))
            if isinstance(t, type) and issubclass(t, BaseModel) and t.__name__ not in ("Scaling", "Taint")
        ]
        if not nested:
            keys.append(prefix + alias)
        for t in nested:
            sep = "[]." if "tuple" in str(annotation) else "."
            keys += config_keys(t, prefix + alias + sep)
    return keys


def test_configuration_reference_lists_every_key():
    table = {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", README, flags=re.M)}
    keys = set(config_keys(Settings))
    assert {"gpuNodeGroups[].timeSlicing.replicas", "network.vpcId", "systemNodeGroup.diskSizeGiB"} <= keys
    assert keys - table == set(), "document these keys in the README's configuration reference"


def test_lazy_exports_match_all():
    import components

    assert sorted(components.__all__) == sorted(components._EXPORTS)
    assert all(getattr(components, name) is not None for name in components.__all__)


def test_the_capacity_key_list_is_every_gpu_capacity_key_in_order():
    from components.config.settings import GpuCapacitySettings

    m = re.search(r"`load_capacity_settings` takes (.+?), with the defaults", README, re.DOTALL)
    assert m, "README: the sentence listing load_capacity_settings' keys"
    listed = re.findall(r"`([A-Za-z]+)`", m.group(1))
    assert listed == [f.alias or name for name, f in GpuCapacitySettings.model_fields.items()]
    assert listed[-3:] == ["observability", "teams", "tags"]
