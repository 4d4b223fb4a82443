"""Shared fixtures: the upstream reference data and simulated runs of each stack."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
import yaml

from components import catalog, stackconfig
from tests import reference
from tooling.simulation import Simulation, run_stack

ROOT = Path(__file__).resolve().parent.parent
#: Upstream contracts (byte-for-byte copies), kept beside the project: ../shared/reference.
REFERENCE = reference.LOCAL
CHART_VERSIONS = ("v25.3.1", "v25.10.1", "v26.7.0")
STACKS = tuple(stackconfig.available_stacks(ROOT))
#: A separate consumer project, run by tests/test_consumer.py against the installed package.
collect_ignore = ["consumer_project"]


#: The date the suite judges Kubernetes versions against (EKS support calendar): fixed, so that a
#: test's outcome does not change with the day it runs. test_settings_aws checks the stacks against
#: the real date.
TODAY = dt.date(2026, 11, 21)


@pytest.fixture(autouse=True)
def _fixed_today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "today", lambda: TODAY)


def reference_path(*parts: str) -> Path:
    """A file of the upstream reference data.

    ../shared/reference when it sits beside the project (here, .ci/run); otherwise the pinned
    upstream copy, downloaded once and verified by sha256 (tests/reference.py, GitHub Actions).
    When neither is available the test fails if GPU_EKS_REQUIRE_REFERENCE is set (.ci/run and
    the workflows set it) and is skipped otherwise, saying why.
    """
    try:
        return reference.locate("/".join(parts))
    except reference.ReferenceUnavailable as err:
        if os.environ.get("GPU_EKS_REQUIRE_REFERENCE"):
            pytest.fail(str(err))
        pytest.skip(str(err))


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
