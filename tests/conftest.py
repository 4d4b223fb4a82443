"""The fixtures every test module may ask for, and what pytest runs before and around each test: the
fake-AWS environment, a fixed date, the Hypothesis profiles. The plumbing they use lives in
tests/support/ (docs/development.md, "How the tests are organised"); nothing is re-exported here."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from components import catalog
from tests.support import environment
from tests.support.paths import STACKS
from tests.support.reference import load_reference_yaml
from tests.support.simulation import simulate
from tooling.simulation import Simulation

#: A separate consumer project (and its own components/ package laid over it), run by tests/test_consumer.py
#: against the installed package.
collect_ignore = ["consumer_project", "consumer_own_components"]


#: Hypothesis profiles (tests/test_properties.py; docs/property-tests.md). ``ci``, the default: derandomized
#: (the same examples on every run and machine, so a failure reproduces from the log), no example
#: database (nothing written into the checkout), a bounded budget that keeps the suite within its
#: time. ``thorough``: random examples, many more, the database in .hypothesis/ (git-ignored) so a
#: failure found once is replayed first: ``HYPOTHESIS_PROFILE=thorough pytest tests/test_properties.py``.
_NO_TIMING_CHECKS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much]}
settings.register_profile("ci", derandomize=True, database=None, max_examples=40, print_blob=False, **_NO_TIMING_CHECKS)
settings.register_profile("thorough", max_examples=3000, print_blob=True, **_NO_TIMING_CHECKS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported: a user's AWS_PROFILE (or other AWS_* variables) must
    neither reach moto nor stop boto3 sessions created at import time; boto3 sessions share
    one parse of botocore's service models, kubernetes-validate one of its schemas; and the test
    modules, once rewritten for their asserts, are cached."""
    environment.fake_aws_environ(os.environ)
    environment.share_botocore_models()
    environment.share_kubernetes_schemas()
    environment.cache_compiled_tests()


@pytest.fixture(autouse=True)
def _fixed_today(monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog's today is ``environment.TODAY`` (test_settings_aws checks the stacks against the real date)."""
    monkeypatch.setattr(catalog, "today", lambda: environment.TODAY)


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts in the fake-AWS environment, whatever an earlier test changed."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    environ: dict[str, str] = {}
    environment.fake_aws_environ(environ)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    yield


@pytest.fixture
def aws() -> Iterator[None]:
    """moto's in-process AWS for the test (the fake-AWS environment is ``fake_aws``'s)."""
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture(scope="session")
def nodeconfig_schema() -> dict:
    crd = load_reference_yaml("nodeadm", "node.eks.aws_nodeconfigs.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


@pytest.fixture(params=STACKS)
def stack_sim(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate(request.param)


@pytest.fixture
def dev() -> Simulation:
    return simulate("dev")


@pytest.fixture
def prod() -> Simulation:
    return simulate("prod")
