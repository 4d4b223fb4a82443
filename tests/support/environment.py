"""The environment every test runs in: a fake AWS that boto3 can only reach through moto, shared
parses of botocore's models and kubernetes-validate's schemas, a fixed date, and a clean environment
for a subprocess. tests/conftest.py applies them (before any test module is imported, and per test)."""

from __future__ import annotations

import datetime as dt
import functools
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

import botocore.loaders
import botocore.session
import kubernetes_validate.utils

from tests.support.paths import DATA

#: The date the suite judges Kubernetes versions against (EKS support calendar): fixed, so that a
#: test's outcome does not change with the day it runs (tests/conftest.py). test_settings_aws checks
#: the stacks against the real date.
TODAY = dt.date(2026, 11, 21)

#: Fake credentials and region for moto (in-process mocks and moto's server).
FAKE_AWS_ENV: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-west-2",
    # No instance-metadata probe for credentials: nothing to find there, and it costs seconds.
    "AWS_EC2_METADATA_DISABLED": "true",
}


#: The AMIs moto's EC2 backend holds (``MOTO_AMIS_PATH``, read when moto.ec2 is imported): only
#: the one the tests launch instances from (tests/support/preflight.py MOTO_AMI_ID, a record of
#: moto 5.2.5's default list, moto/ec2/resources/amis.json.gz). By default moto also builds its
#: ~1,300 "latest" AMIs of the region at every reset, that is at the end of every mocked test:
#: 0.1-0.8 s each, 6 s of the preflight tests.
MOTO_AMIS = DATA / "moto_amis.json"


def fake_aws_environ(environ: MutableMapping[str, str], home: Path | None = None) -> None:
    """Make ``environ`` (os.environ, or a subprocess's env) one in which boto3 can only reach moto.

    Every inherited ``AWS_*`` variable goes (a user's AWS_PROFILE names a profile that moto's
    tests must not read, and boto3 refuses to create a session for an unknown one), the shared
    config and credentials files point nowhere, fake credentials are set, and moto holds one AMI
    (``MOTO_AMIS``). With ``home``,
    the files are placed under it (a subprocess gets its own HOME).
    """
    for key in [k for k in environ if k.startswith("AWS_")]:
        del environ[key]
    nowhere = home or Path("/nonexistent-gpu-eks-tests")
    environ["AWS_CONFIG_FILE"] = str(nowhere / "no-such-aws-config")
    environ["AWS_SHARED_CREDENTIALS_FILE"] = str(nowhere / "no-such-aws-credentials")
    environ.update(FAKE_AWS_ENV)
    environ["MOTO_AMIS_PATH"] = str(MOTO_AMIS)


def share_botocore_models() -> None:
    """Every botocore session in this process reads the service models through one loader.

    A new ``boto3.Session`` gets a loader of its own, and its first client of a service parses that
    service's model JSON again (EC2's alone is megabytes): the preflight command makes a session per
    run, and the tests run it and its checks dozens of times (~7 s of the suite). The models are
    botocore's own data files and are only read, so one parse serves every session; what a session
    resolves from the environment (credentials, region, endpoint) stays per session."""
    botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)


def share_kubernetes_schemas() -> None:
    """kubernetes-validate reads its packaged JSON schemas once per process, not on every call.

    Its ``validate`` parses the kind's schema and the version's ``_definitions.json`` (megabytes)
    from its package data each time (kubernetes_validate/utils.py ``schema_contents``); the tests
    validate hundreds of objects (~3 s of the suite). The files are the package's and only read."""
    kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def cache_compiled_tests() -> None:
    """This process writes the compiled code of the modules it imports and has no cache for: in
    practice the checkout's own (the venv's packages come compiled), above all the test modules
    pytest rewrites for its asserts, into their folders' ``__pycache__/`` (git-ignored).

    Where ``PYTHONDONTWRITEBYTECODE`` is set (a container's default, as on the machines this suite
    is measured on) nothing was ever cached: every worker of every run parsed and rewrote the ~100
    test modules again, about 3 s of CPU each (tests/conftest.py calls this before they are
    imported). The subprocesses the tests start keep the environment they are given."""
    sys.dont_write_bytecode = False


def subprocess_env(home: Path, *, credentials: bool = True, **extra: str) -> dict[str, str]:
    """A clean environment for a subprocess: PATH, its own HOME, no inherited AWS_* or
    PYTHONPATH, no region, fake credentials unless ``credentials=False``, then ``extra``."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    fake_aws_environ(env, home)
    # The region comes from the stack file (or ``extra``), as for a user.
    del env["AWS_DEFAULT_REGION"]
    if not credentials:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            del env[key]
    env.update(extra)
    return env
