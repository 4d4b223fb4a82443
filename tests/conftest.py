"""Shared fixtures: the upstream reference data and simulated runs of each stack."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components import stackconfig
from components.simulation import Simulation, run_stack

ROOT = Path(__file__).resolve().parent.parent
#: Upstream contracts (byte-for-byte copies), kept beside the project: ../shared/reference.
REFERENCE = ROOT.parent / "shared" / "reference"
CHART_VERSIONS = ("v25.3.1", "v25.10.1", "v26.7.0")
STACKS = tuple(stackconfig.available_stacks(ROOT))


def reference_path(*parts: str) -> Path:
    path = REFERENCE.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"reference file {path} is missing: ../shared must sit beside the project")
    return path


def load_reference_yaml(*parts: str):
    return yaml.safe_load(reference_path(*parts).read_text())


@pytest.fixture(scope="session")
def nodeconfig_schema() -> dict:
    crd = load_reference_yaml("nodeadm", "node.eks.aws_nodeconfigs.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


_SIMULATIONS: dict[str, Simulation] = {}


def simulate(stack: str) -> Simulation:
    """One simulated run per stack per test session (runs are deterministic)."""
    if stack not in _SIMULATIONS:
        _SIMULATIONS[stack] = run_stack(stack, ROOT)
    return _SIMULATIONS[stack]


@pytest.fixture(params=STACKS)
def stack_sim(request) -> tuple[str, Simulation]:
    return request.param, simulate(request.param)


@pytest.fixture
def dev() -> Simulation:
    return simulate("dev")


@pytest.fixture
def prod() -> Simulation:
    return simulate("prod")
