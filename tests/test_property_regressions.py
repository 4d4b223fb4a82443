"""Defects the property tests (tests/test_properties.py) found, each as a plain example: the input
Hypothesis reduced it to, and the rule that now refuses it (or the fix)."""

from __future__ import annotations

import pytest

from components.config.errors import ConfigError
from components.config.loading import load_settings


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "ml", **raw})
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_an_empty_mig_layout_is_refused_on_its_key(strategy):
    # Found: RuntimeError "generator raised StopIteration" in plan_group under mixed, and
    # "min() arg is an empty sequence" in the dashboard under single. The rule: config/mig.py
    # EMPTY_LAYOUT (mig-parted's all-enabled: MIG on, no slice, nothing advertised).
    group = {"name": "a", "instanceTypes": ["p4d.24xlarge"], "migStrategy": strategy, "mig": {"migDevices": {}}}
    (problem,) = problems({"gpuNodeGroups": [group]})
    assert problem.startswith("gpu-eks:gpuNodeGroups[0].mig.migDevices: received {}; expected at least one MIG profile")
