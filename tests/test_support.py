"""The tests' own environment: they must pass for a user whose shell has AWS variables set."""

from __future__ import annotations

import os

from tests.support.commands import run_python
from tests.support.paths import ROOT


def test_preflight_tests_pass_with_a_users_aws_profile_set():
    """A user with an AWS profile has AWS_PROFILE (and often AWS_REGION, AWS_ENDPOINT_URL) set.
    boto3 refuses to create a session for a profile it cannot find, and the preflight tests create
    one at import time: without the scrubbing in tests/conftest.py they fail at collection."""
    env = {
        "AWS_PROFILE": "nonexistent",
        "AWS_DEFAULT_PROFILE": "nonexistent",
        "AWS_REGION": "eu-north-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "AKIAREALLOOKING00000",
    }
    done = run_python(
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_preflight_checks.py",
        "-k",
        "test_ami_passes_when_eks_publishes_the_parameter or test_run_checks_on_a_healthy_account_passes_everything",
        cwd=ROOT,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout


def test_the_session_runs_in_the_fake_aws_environment():
    assert "AWS_PROFILE" not in os.environ
    assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
    assert os.environ["AWS_DEFAULT_REGION"] == "us-west-2"
    assert os.environ["AWS_CONFIG_FILE"].endswith("no-such-aws-config")


def test_the_recordings_of_the_real_nvidia_smi_skip_where_shared_is_absent_and_fail_where_it_is_broken(
    tmp_path, monkeypatch
):
    """reference.observed_path: no upstream to download them from, so a clone without ../shared (GitHub
    Actions) skips the tests that need them; a ../shared without them fails under
    GPU_EKS_REQUIRE_REFERENCE (.ci/run)."""
    import pytest

    from tests.support import reference
    from tests.support.standins import nvidia_smi_grammar

    monkeypatch.setattr(nvidia_smi_grammar, "OBSERVED", tmp_path / "shared" / "observed" / "nvidia-smi" / "v")
    monkeypatch.setenv("GPU_EKS_REQUIRE_REFERENCE", "1")
    with pytest.raises(pytest.skip.Exception, match="is absent"):
        reference.observed_path("nvidia-smi-h.txt")
    (tmp_path / "shared").mkdir()
    with pytest.raises(pytest.fail.Exception, match="is missing"):
        reference.observed_path("nvidia-smi-h.txt")
