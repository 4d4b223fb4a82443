"""The shared mock setup: resource references travel as URNs, so mocked runs neither hang nor
race ("attached to a different loop") when a resource is passed as an input."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
from google.protobuf import empty_pb2
from pulumi.runtime.proto import resource_pb2

from tooling.simulation import FakeCloud, RecordingMonitor, run_program


def test_monitor_reports_no_resource_reference_support():
    monitor = RecordingMonitor(FakeCloud())
    features = monitor.GetDeploymentInfo(empty_pb2.Empty()).supportedFeatures
    assert resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES not in features
    assert resource_pb2.RESOURCE_MONITOR_FEATURE_SECRETS in features
    request = resource_pb2.SupportsFeatureRequest(id="resourceReferences")
    assert monitor.SupportsFeature(request).hasSupport is False
    assert monitor.SupportsFeature(resource_pb2.SupportsFeatureRequest(id="secrets")).hasSupport is True


def reference_program() -> None:
    """The pattern that used to hang: a pulumi-eks node group given `cluster=` (a Resource)."""
    cluster = eks.Cluster("c", skip_default_node_group=True)
    role = aws.iam.Role("r", assume_role_policy="{}")
    eks.ManagedNodeGroup("ng", cluster=cluster, node_role_arn=role.arn, instance_types=["g4dn.xlarge"])
    pulumi.export("role", role.arn)


def test_resources_passed_as_inputs_travel_as_urns_and_runs_complete():
    for _ in range(10):
        sim = run_program(reference_program, {}, project="p", stack="s", timeout=30)
        ng = sim.one("eks:index:ManagedNodeGroup")
        # The cluster arrives as its URN string, not a rehydrated Resource.
        assert ng.inputs["cluster"] == sim.one("eks:index:Cluster").urn
        assert sim.outputs == {"role": "arn:aws:iam::123456789012:role/r"}


def test_a_hanging_program_fails_instead_of_stalling():
    import asyncio

    import pytest

    def hang() -> None:
        pulumi.Output.from_input(asyncio.sleep(3600)).apply(lambda _: None)

    with pytest.raises(TimeoutError):
        run_program(hang, {}, project="p", stack="s", timeout=1)


FAILING_PROGRAM = """
import gc

import pulumi
import pulumi_aws as aws

from components.review.simulation import run_program


def refuse(_):
    raise pulumi.RunError("refused at deploy time")


def program():
    role = aws.iam.Role("r", assume_role_policy="{}")
    aws.iam.Role("s", assume_role_policy=role.arn.apply(refuse), description=role.arn)
    pulumi.export("arn", role.arn.apply(refuse))


for _ in range(3):
    try:
        run_program(program, {}, project="p", stack="s", timeout=30)
    except pulumi.RunError as error:
        assert "refused at deploy time" in str(error)
    else:
        raise SystemExit("the program did not fail")
gc.collect()
print("done")
"""


def test_a_failing_program_leaves_nothing_on_stderr():
    """A program that fails under mocks leaves the failed resource's outputs resolved with its error;
    garbage-collected, each used to print "Future exception was never retrieved" and its traceback
    (hundreds after a one-process test run's summary): the caller got the error, so none is printed."""
    from tests.support.commands import run_python

    result = run_python("-c", FAILING_PROGRAM, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "done\n", "")


def test_an_error_the_caller_did_not_get_is_still_reported(caplog):
    import asyncio

    from components.review.simulation import _reporting_all_but

    raised, cause, other = pulumi.RunError("raised"), ValueError("cause"), ValueError("other")
    raised.__cause__ = cause
    handler = _reporting_all_but(raised)
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level("ERROR", logger="components.review.simulation"):
            for exception in (raised, cause, other):
                handler(loop, {"message": "Future exception was never retrieved", "exception": exception})
    finally:
        loop.close()
    # One line for the error nobody received (no traceback: formatting one runs ast.parse, which on
    # Python 3.11 can corrupt an ast.parse in progress), nothing for the run's own error and its cause.
    reported = [r.getMessage() for r in caplog.records if r.name == "components.review.simulation"]
    assert reported == ["Future exception was never retrieved: ValueError('other')"]
